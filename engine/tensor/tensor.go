// Package tensor describes weight tensors as they lie in a model file: a dtype, a shape and the raw
// bytes, which point into the memory-mapped file and are never copied.
package tensor

import "fmt"

// DType is the storage type of a tensor's elements.
type DType uint8

// Storage types. The GGML block types follow ggml's layouts exactly; Affine is MLX's affine
// quantization (packed uint32 codes with per-group scales and biases held in companion tensors).
const (
	F32 DType = iota
	F16
	BF16
	Q8_0   // ggml block of 32: f16 d, int8 qs[32]
	Q4_0   // ggml block of 32: f16 d, uint8 qs[16]; w = d*(q-8)
	Q5_0   // ggml block of 32: f16 d, uint8 qh[4], uint8 qs[16]
	Q4_K   // ggml super-block of 256: f16 d, f16 dmin, uint8 scales[12], uint8 qs[128]
	Q5_K   // ggml super-block of 256: f16 d, f16 dmin, uint8 scales[12], uint8 qh[32], uint8 qs[128]
	Q6_K   // ggml super-block of 256: uint8 ql[128], uint8 qh[64], int8 scales[16], f16 d
	Affine // MLX: uint32 words of Bits-bit codes, element 0 in the low bits; w = scale*q + bias
	I32    // plain int32 (e.g. token type tables); never a weight
)

var dtypeNames = [...]string{"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q5_K", "Q6_K", "Affine", "I32"}

func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// BlockSize returns how many elements one storage block holds and how many bytes it takes.
// Affine tensors have no fixed block (they depend on Bits); BlockSize reports (0, 0) for them.
func (d DType) BlockSize() (elems, bytes int) {
	switch d {
	case F32, I32:
		return 1, 4
	case F16, BF16:
		return 1, 2
	case Q8_0:
		return 32, 34
	case Q4_0:
		return 32, 18
	case Q5_0:
		return 32, 22
	case Q4_K:
		return 256, 144
	case Q5_K:
		return 256, 176
	case Q6_K:
		return 256, 210
	}
	return 0, 0
}

// Tensor is one named weight. Shape is row-major with the contiguous dimension last, so a matrix
// is [rows (outputs), cols (inputs)] whatever order the file format writes its dimensions in.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	// Data is the tensor's bytes inside the mapped file.
	Data []byte

	// Affine quantization (DType == Affine): Bits per code (4 or 8), GroupSize elements per
	// scale/bias pair, and the companion tensors, each [rows, cols/GroupSize] of F16/BF16/F32.
	// Shape is the logical (unpacked) shape.
	Bits, GroupSize int
	Scales, Biases  *Tensor
}

// Rows is the product of all dimensions but the last (1 for a vector).
func (t *Tensor) Rows() int {
	n := 1
	for _, d := range t.Shape[:max(len(t.Shape)-1, 0)] {
		n *= d
	}
	return n
}

// Cols is the last (contiguous) dimension.
func (t *Tensor) Cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

// Elems is the total number of logical elements.
func (t *Tensor) Elems() int { return t.Rows() * t.Cols() }

// RowBytes is the number of bytes one row of Data takes.
func (t *Tensor) RowBytes() int {
	if t.DType == Affine {
		return t.Cols() * t.Bits / 8
	}
	e, b := t.DType.BlockSize()
	return t.Cols() / e * b
}

// ByteSize is the number of bytes all rows take, as Data must hold them.
func (t *Tensor) ByteSize() int { return t.Rows() * t.RowBytes() }

// Validate checks that the shape is consistent with the dtype and that Data holds exactly the
// bytes the shape needs, so a later kernel can index it without bounds surprises.
func (t *Tensor) Validate() error {
	if len(t.Shape) == 0 {
		return fmt.Errorf("tensor %q: no shape", t.Name)
	}
	for _, d := range t.Shape {
		if d <= 0 {
			return fmt.Errorf("tensor %q: bad shape %v", t.Name, t.Shape)
		}
	}
	switch t.DType {
	case Affine:
		if t.Bits != 4 && t.Bits != 8 {
			return fmt.Errorf("tensor %q: affine bits %d, want 4 or 8", t.Name, t.Bits)
		}
		if t.GroupSize <= 0 || t.Cols()%t.GroupSize != 0 || (t.Cols()*t.Bits)%32 != 0 {
			return fmt.Errorf("tensor %q: %d columns do not fit group size %d at %d bits", t.Name, t.Cols(), t.GroupSize, t.Bits)
		}
		for _, c := range []*Tensor{t.Scales, t.Biases} {
			if c == nil {
				return fmt.Errorf("tensor %q: affine tensor without scales or biases", t.Name)
			}
			if c.Rows() != t.Rows() || c.Cols() != t.Cols()/t.GroupSize {
				return fmt.Errorf("tensor %q: companion %q has shape %v, want [%d %d]", t.Name, c.Name, c.Shape, t.Rows(), t.Cols()/t.GroupSize)
			}
			if err := c.Validate(); err != nil {
				return err
			}
		}
	default:
		e, _ := t.DType.BlockSize()
		if e == 0 {
			return fmt.Errorf("tensor %q: unknown dtype %v", t.Name, t.DType)
		}
		if t.Cols()%e != 0 {
			return fmt.Errorf("tensor %q: %d columns is not a multiple of the %v block of %d", t.Name, t.Cols(), t.DType, e)
		}
	}
	if len(t.Data) != t.ByteSize() {
		return fmt.Errorf("tensor %q: %d bytes of data, shape %v of %v needs %d", t.Name, len(t.Data), t.Shape, t.DType, t.ByteSize())
	}
	return nil
}
