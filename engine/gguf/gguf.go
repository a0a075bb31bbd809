// Package gguf reads and writes GGUF files (versions 2 and 3, little-endian), the format of
// llama.cpp: a header, typed metadata key/value pairs, tensor descriptions, then aligned tensor
// data. Files are memory-mapped and tensors point into the mapping.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/weights/mmap"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// maxNesting bounds arrays of arrays, which no model uses, so a corrupt file cannot recurse deeply.
const maxNesting = 4

// File is a parsed GGUF file.
type File struct {
	Path    string
	Version uint32
	// Keys lists the metadata keys in file order; Metadata holds their values (see ValueType).
	Keys     []string
	Metadata map[string]any
	// Alignment of tensor data, from general.alignment.
	Alignment int
	// Tensors in file order, under their GGUF names (e.g. "blk.0.attn_q.weight"), with Shape
	// row-major (GGUF's innermost-first dimensions reversed).
	Tensors []*tensor.Tensor

	byName map[string]*tensor.Tensor
	mm     *mmap.File
}

// Open maps and parses the file at path.
func Open(path string) (*File, error) {
	f, mm, err := mmap.Parse(path, Parse)
	if err != nil {
		return nil, err
	}
	f.Path, f.mm = path, mm
	return f, nil
}

// Close unmaps a file returned by Open; its tensors' Data must not be used afterwards.
func (f *File) Close() error {
	err := f.mm.Close()
	f.mm = nil
	return err
}

// Size is the number of bytes of the mapped file (0 for a File from Parse).
func (f *File) Size() int64 {
	if f.mm == nil {
		return 0
	}
	return int64(len(f.mm.Data))
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*tensor.Tensor, bool) {
	t, ok := f.byName[name]
	return t, ok
}

// reader decodes little-endian values from data, failing (not panicking) at the end.
type reader struct {
	data []byte
	pos  int
}

var errShort = errors.New("unexpected end of file")

func (r *reader) left() int { return len(r.data) - r.pos }

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, errShort
	}
	b := r.data[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

func (r *reader) u32() (uint32, error) {
	b, err := r.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64() (uint64, error) {
	b, err := r.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) str() (string, error) {
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(r.left()) {
		return "", fmt.Errorf("string of %d bytes runs past the end of the file", n)
	}
	b, _ := r.bytes(int(n))
	return string(b), nil
}

// Parse reads a whole GGUF file held in data. Tensors point into data. Every tensor's byte range is
// checked against its type and shape and against the file size, and ranges may not overlap.
func Parse(data []byte) (*File, error) {
	r := &reader{data: data}
	magic, err := r.bytes(4)
	if err != nil || string(magic) != Magic {
		return nil, errors.New("gguf: not a GGUF file (bad magic)")
	}
	f := &File{Metadata: map[string]any{}, byName: map[string]*tensor.Tensor{}}
	if f.Version, err = r.u32(); err != nil {
		return nil, fmt.Errorf("gguf: header: %w", err)
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("gguf: version %d is not supported (want 2 or 3, little-endian)", f.Version)
	}
	nTensors, err := r.u64()
	if err != nil {
		return nil, fmt.Errorf("gguf: header: %w", err)
	}
	nKV, err := r.u64()
	if err != nil {
		return nil, fmt.Errorf("gguf: header: %w", err)
	}
	// Each pair takes at least 13 bytes and each tensor info 32, so larger counts are lies; checking
	// first keeps a corrupt count from sizing allocations.
	if nKV > uint64(r.left()/13) {
		return nil, fmt.Errorf("gguf: header claims %d metadata pairs, more than the file can hold", nKV)
	}
	if nTensors > uint64(r.left()/32) {
		return nil, fmt.Errorf("gguf: header claims %d tensors, more than the file can hold", nTensors)
	}

	f.Keys = make([]string, 0, nKV)
	for i := range nKV {
		key, err := r.str()
		if err != nil {
			return nil, fmt.Errorf("gguf: metadata pair %d: key: %w", i, err)
		}
		if key == "" {
			return nil, fmt.Errorf("gguf: metadata pair %d: empty key", i)
		}
		if _, dup := f.Metadata[key]; dup {
			return nil, fmt.Errorf("gguf: metadata key %q appears twice", key)
		}
		vt, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("gguf: metadata %q: %w", key, err)
		}
		v, err := r.value(ValueType(vt), 0)
		if err != nil {
			return nil, fmt.Errorf("gguf: metadata %q: %w", key, err)
		}
		f.Keys = append(f.Keys, key)
		f.Metadata[key] = v
	}

	f.Alignment = DefaultAlignment
	if _, ok := f.Metadata["general.alignment"]; ok {
		a, ok := f.Uint("general.alignment")
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<30 {
			return nil, fmt.Errorf("gguf: general.alignment %v is not a power of two", f.Metadata["general.alignment"])
		}
		f.Alignment = int(a)
	}

	type info struct {
		t    *tensor.Tensor
		off  uint64
		size uint64
	}
	infos := make([]info, 0, nTensors)
	for i := range nTensors {
		t, off, size, err := r.tensorInfo()
		if err != nil {
			if t != nil {
				return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
			}
			return nil, fmt.Errorf("gguf: tensor info %d: %w", i, err)
		}
		if _, dup := f.byName[t.Name]; dup {
			return nil, fmt.Errorf("gguf: tensor %q appears twice", t.Name)
		}
		if off%uint64(f.Alignment) != 0 {
			return nil, fmt.Errorf("gguf: tensor %q: offset %d is not a multiple of the alignment %d", t.Name, off, f.Alignment)
		}
		f.byName[t.Name] = t
		f.Tensors = append(f.Tensors, t)
		infos = append(infos, info{t, off, size})
	}
	if len(infos) == 0 {
		return f, nil
	}

	start := (r.pos + f.Alignment - 1) / f.Alignment * f.Alignment
	if start > len(data) {
		return nil, fmt.Errorf("gguf: file ends at %d, before the tensor data at %d", len(data), start)
	}
	body := data[start:]
	for _, in := range infos {
		if in.off > uint64(len(body)) || in.size > uint64(len(body))-in.off {
			return nil, fmt.Errorf("gguf: tensor %q: data [%d, %d) runs past the end of the %d-byte data section", in.t.Name, in.off, in.off+in.size, len(body))
		}
		in.t.Data = body[in.off : in.off+in.size : in.off+in.size]
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].off < infos[j].off })
	var end uint64
	for _, in := range infos {
		if in.off < end {
			return nil, fmt.Errorf("gguf: tensor %q: data at %d overlaps the previous tensor's, which ends at %d", in.t.Name, in.off, end)
		}
		end = in.off + in.size
	}
	return f, nil
}

// tensorInfo reads one tensor description. It returns the tensor (without Data) as soon as the name
// is known, so errors can name it.
func (r *reader) tensorInfo() (t *tensor.Tensor, off, size uint64, err error) {
	name, err := r.str()
	if err != nil {
		return nil, 0, 0, err
	}
	t = &tensor.Tensor{Name: name}
	nd, err := r.u32()
	if err != nil {
		return t, 0, 0, err
	}
	if nd == 0 || nd > maxDims {
		return t, 0, 0, fmt.Errorf("%d dimensions, want 1 to %d", nd, maxDims)
	}
	ne := make([]uint64, nd)
	for i := range ne {
		if ne[i], err = r.u64(); err != nil {
			return t, 0, 0, err
		}
	}
	typ, err := r.u32()
	if err != nil {
		return t, 0, 0, err
	}
	if off, err = r.u64(); err != nil {
		return t, 0, 0, err
	}
	dt, ok := Type(typ).DType()
	if !ok {
		return t, 0, 0, fmt.Errorf("ggml type %v is not supported (want F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K or Q6_K)", Type(typ))
	}
	t.DType = dt
	blockElems, blockBytes := dt.BlockSize()
	// Bounding the element count keeps the products below from overflowing; no real tensor comes
	// near it.
	const maxElems = 1 << 48
	elems := uint64(1)
	t.Shape = make([]int, nd)
	for i, d := range ne {
		if d == 0 || d > maxElems/elems {
			return t, 0, 0, fmt.Errorf("bad dimensions %v", ne)
		}
		elems *= d
		t.Shape[int(nd)-1-i] = int(d)
	}
	if ne[0]%uint64(blockElems) != 0 {
		return t, 0, 0, fmt.Errorf("innermost dimension %d is not a multiple of the %v block of %d", ne[0], dt, blockElems)
	}
	return t, off, elems / uint64(blockElems) * uint64(blockBytes), nil
}

// value reads one metadata value of type vt.
func (r *reader) value(vt ValueType, depth int) (any, error) {
	if vt == ValueArray {
		return r.array(depth)
	}
	if vt == ValueString {
		return r.str()
	}
	n := vt.scalarSize()
	if n == 0 {
		return nil, fmt.Errorf("unknown value type %d", vt)
	}
	b, err := r.bytes(n)
	if err != nil {
		return nil, err
	}
	return scalar(vt, b)
}

func scalar(vt ValueType, b []byte) (any, error) {
	le := binary.LittleEndian
	switch vt {
	case ValueUint8:
		return b[0], nil
	case ValueInt8:
		return int8(b[0]), nil
	case ValueBool:
		if b[0] > 1 {
			return nil, fmt.Errorf("bool byte %d is neither 0 nor 1", b[0])
		}
		return b[0] == 1, nil
	case ValueUint16:
		return le.Uint16(b), nil
	case ValueInt16:
		return int16(le.Uint16(b)), nil
	case ValueUint32:
		return le.Uint32(b), nil
	case ValueInt32:
		return int32(le.Uint32(b)), nil
	case ValueFloat32:
		return math.Float32frombits(le.Uint32(b)), nil
	case ValueUint64:
		return le.Uint64(b), nil
	case ValueInt64:
		return int64(le.Uint64(b)), nil
	case ValueFloat64:
		return math.Float64frombits(le.Uint64(b)), nil
	}
	return nil, fmt.Errorf("unknown value type %d", vt)
}

func (r *reader) array(depth int) (any, error) {
	if depth >= maxNesting {
		return nil, fmt.Errorf("arrays nested more than %d deep", maxNesting)
	}
	et, err := r.u32()
	if err != nil {
		return nil, err
	}
	n, err := r.u64()
	if err != nil {
		return nil, err
	}
	vt := ValueType(et)
	// The smallest encoding of one element bounds how many the rest of the file can hold.
	min := vt.scalarSize()
	switch vt {
	case ValueString:
		min = 8
	case ValueArray:
		min = 12
	}
	if min == 0 {
		return nil, fmt.Errorf("array of unknown value type %d", et)
	}
	if n > uint64(r.left()/min) {
		return nil, fmt.Errorf("array of %d elements runs past the end of the file", n)
	}
	count := int(n)
	switch vt {
	case ValueString:
		out := make([]string, count)
		for i := range out {
			if out[i], err = r.str(); err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return out, nil
	case ValueArray:
		out := make([]any, count)
		for i := range out {
			if out[i], err = r.array(depth + 1); err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return out, nil
	}
	b, _ := r.bytes(count * min)
	return scalarArray(vt, b, count)
}

func scalarArray(vt ValueType, b []byte, n int) (any, error) {
	le := binary.LittleEndian
	switch vt {
	case ValueUint8:
		return append([]uint8(nil), b...), nil
	case ValueInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(b[i])
		}
		return out, nil
	case ValueBool:
		out := make([]bool, n)
		for i := range out {
			if b[i] > 1 {
				return nil, fmt.Errorf("array element %d: bool byte %d is neither 0 nor 1", i, b[i])
			}
			out[i] = b[i] == 1
		}
		return out, nil
	case ValueUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(b[2*i:])
		}
		return out, nil
	case ValueInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(b[2*i:]))
		}
		return out, nil
	case ValueUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(b[4*i:])
		}
		return out, nil
	case ValueInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(b[4*i:]))
		}
		return out, nil
	case ValueFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return out, nil
	case ValueUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(b[8*i:])
		}
		return out, nil
	case ValueInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(b[8*i:]))
		}
		return out, nil
	case ValueFloat64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("array of unknown value type %d", vt)
}
