package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
)

// HalfToFloat32 converts an IEEE 754 binary16 value to float32 exactly.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN keeps its payload.
		return math.Float32frombits(sign | 0xff<<23 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: every one is a normal float32, so renormalize the mantissa.
	e := uint32(113)
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// BFloat16ToFloat32 converts a bfloat16 value (the top half of a float32) to float32.
func BFloat16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// DequantizeRow writes row `row` of t (a row of Cols() elements, counting rows over all leading
// dimensions) as float32 into dst, which must hold exactly Cols() values. It is the reference
// every fast kernel is checked against, so it follows the storage layouts literally.
func DequantizeRow(t *Tensor, row int, dst []float32) error {
	if row < 0 || row >= t.Rows() {
		return fmt.Errorf("tensor %q: row %d out of range [0, %d)", t.Name, row, t.Rows())
	}
	cols := t.Cols()
	if len(dst) != cols {
		return fmt.Errorf("tensor %q: destination holds %d values, row has %d", t.Name, len(dst), cols)
	}
	if t.DType == Affine {
		return dequantAffine(t, row, dst)
	}
	e, _ := t.DType.BlockSize()
	if e == 0 || t.DType == I32 {
		return fmt.Errorf("tensor %q: cannot dequantize dtype %v", t.Name, t.DType)
	}
	if cols%e != 0 {
		return fmt.Errorf("tensor %q: %d columns is not a multiple of the %v block of %d", t.Name, cols, t.DType, e)
	}
	rb := t.RowBytes()
	if (row+1)*rb > len(t.Data) {
		return fmt.Errorf("tensor %q: row %d needs bytes up to %d, data has %d", t.Name, row, (row+1)*rb, len(t.Data))
	}
	src := t.Data[row*rb : (row+1)*rb]
	switch t.DType {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = HalfToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BFloat16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q8_0:
		for b := 0; b < cols/32; b++ {
			blk, y := src[b*34:b*34+34], dst[b*32:b*32+32]
			d := HalfToFloat32(binary.LittleEndian.Uint16(blk))
			for j := range 32 {
				y[j] = d * float32(int8(blk[2+j]))
			}
		}
	case Q4_0:
		for b := 0; b < cols/32; b++ {
			blk, y := src[b*18:b*18+18], dst[b*32:b*32+32]
			d := HalfToFloat32(binary.LittleEndian.Uint16(blk))
			qs := blk[2:]
			for j := range 16 {
				y[j] = d * float32(int(qs[j]&0xf)-8)
				y[j+16] = d * float32(int(qs[j]>>4)-8)
			}
		}
	case Q5_0:
		for b := 0; b < cols/32; b++ {
			blk, y := src[b*22:b*22+22], dst[b*32:b*32+32]
			d := HalfToFloat32(binary.LittleEndian.Uint16(blk))
			qh := binary.LittleEndian.Uint32(blk[2:])
			qs := blk[6:]
			for j := range 16 {
				lo := int(qs[j]&0xf) | int(qh>>j&1)<<4
				hi := int(qs[j]>>4) | int(qh>>(j+16)&1)<<4
				y[j] = d * float32(lo-16)
				y[j+16] = d * float32(hi-16)
			}
		}
	case Q4_K:
		for b := 0; b < cols/256; b++ {
			blk, y := src[b*144:b*144+144], dst[b*256:b*256+256]
			d := HalfToFloat32(binary.LittleEndian.Uint16(blk))
			dmin := HalfToFloat32(binary.LittleEndian.Uint16(blk[2:]))
			sc, qs := blk[4:16], blk[16:144]
			for g := range 4 { // four 64-element groups: 32 low nibbles, then 32 high nibbles
				s0, m0 := ScaleMinK4(sc, 2*g)
				s1, m1 := ScaleMinK4(sc, 2*g+1)
				d0, d1 := d*float32(s0), d*float32(s1)
				n0, n1 := dmin*float32(m0), dmin*float32(m1)
				q := qs[32*g : 32*g+32]
				for l := range 32 {
					y[64*g+l] = d0*float32(q[l]&0xf) - n0
					y[64*g+32+l] = d1*float32(q[l]>>4) - n1
				}
			}
		}
	case Q5_K:
		for b := 0; b < cols/256; b++ {
			blk, y := src[b*176:b*176+176], dst[b*256:b*256+256]
			d := HalfToFloat32(binary.LittleEndian.Uint16(blk))
			dmin := HalfToFloat32(binary.LittleEndian.Uint16(blk[2:]))
			sc, qh, qs := blk[4:16], blk[16:48], blk[48:176]
			for g := range 4 {
				s0, m0 := ScaleMinK4(sc, 2*g)
				s1, m1 := ScaleMinK4(sc, 2*g+1)
				d0, d1 := d*float32(s0), d*float32(s1)
				n0, n1 := dmin*float32(m0), dmin*float32(m1)
				q := qs[32*g : 32*g+32]
				for l := range 32 {
					lo := int(q[l]&0xf) | int(qh[l]>>(2*g)&1)<<4
					hi := int(q[l]>>4) | int(qh[l]>>(2*g+1)&1)<<4
					y[64*g+l] = d0*float32(lo) - n0
					y[64*g+32+l] = d1*float32(hi) - n1
				}
			}
		}
	case Q6_K:
		for b := 0; b < cols/256; b++ {
			blk, y := src[b*210:b*210+210], dst[b*256:b*256+256]
			d := HalfToFloat32(binary.LittleEndian.Uint16(blk[208:]))
			for h := range 2 { // two 128-element halves
				ql, qh, sc := blk[64*h:64*h+64], blk[128+32*h:128+32*h+32], blk[192+8*h:192+8*h+8]
				yh := y[128*h : 128*h+128]
				for l := range 32 {
					is := l / 16
					q1 := int(ql[l]&0xf) | int(qh[l]&3)<<4
					q2 := int(ql[l+32]&0xf) | int(qh[l]>>2&3)<<4
					q3 := int(ql[l]>>4) | int(qh[l]>>4&3)<<4
					q4 := int(ql[l+32]>>4) | int(qh[l]>>6&3)<<4
					yh[l] = d * float32(int8(sc[is])) * float32(q1-32)
					yh[l+32] = d * float32(int8(sc[is+2])) * float32(q2-32)
					yh[l+64] = d * float32(int8(sc[is+4])) * float32(q3-32)
					yh[l+96] = d * float32(int8(sc[is+6])) * float32(q4-32)
				}
			}
		}
	}
	return nil
}

// ScaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes of a
// Q4_K or Q5_K super-block: sub-blocks 0-3 use the low 6 bits of bytes j and j+4; sub-blocks 4-7
// take their low 4 bits from byte j+4 and their top 2 bits from the spare bits of bytes j-4 and j.
func ScaleMinK4(sc []byte, j int) (scale, min uint8) {
	if j < 4 {
		return sc[j] & 63, sc[j+4] & 63
	}
	return sc[j+4]&0xf | (sc[j-4]>>6)<<4, sc[j+4]>>4 | (sc[j]>>6)<<4
}

// AffineScaleBias returns the scale and bias of group g of row `row` of an Affine tensor.
func AffineScaleBias(t *Tensor, row, g int) (scale, bias float32, err error) {
	if scale, err = companionAt(t.Scales, row, g); err != nil {
		return 0, 0, err
	}
	if bias, err = companionAt(t.Biases, row, g); err != nil {
		return 0, 0, err
	}
	return scale, bias, nil
}

func companionAt(c *Tensor, row, col int) (float32, error) {
	if c == nil {
		return 0, fmt.Errorf("affine tensor without scales or biases")
	}
	i := row*c.Cols() + col
	switch c.DType {
	case F32:
		if 4*i+4 > len(c.Data) {
			break
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(c.Data[4*i:])), nil
	case F16, BF16:
		if 2*i+2 > len(c.Data) {
			break
		}
		h := binary.LittleEndian.Uint16(c.Data[2*i:])
		if c.DType == F16 {
			return HalfToFloat32(h), nil
		}
		return BFloat16ToFloat32(h), nil
	default:
		return 0, fmt.Errorf("tensor %q: scales/biases dtype %v, want F16, BF16 or F32", c.Name, c.DType)
	}
	return 0, fmt.Errorf("tensor %q: element [%d, %d] beyond its %d bytes", c.Name, row, col, len(c.Data))
}

func dequantAffine(t *Tensor, row int, dst []float32) error {
	cols := t.Cols()
	if t.Bits != 4 && t.Bits != 8 {
		return fmt.Errorf("tensor %q: affine bits %d, want 4 or 8", t.Name, t.Bits)
	}
	if t.GroupSize <= 0 || cols%t.GroupSize != 0 || (cols*t.Bits)%32 != 0 {
		return fmt.Errorf("tensor %q: %d columns do not fit group size %d at %d bits", t.Name, cols, t.GroupSize, t.Bits)
	}
	for _, c := range []*Tensor{t.Scales, t.Biases} {
		if c == nil {
			return fmt.Errorf("tensor %q: affine tensor without scales or biases", t.Name)
		}
		if c.Cols() != cols/t.GroupSize || c.Rows() != t.Rows() {
			return fmt.Errorf("tensor %q: companion %q has shape %v, want [%d %d]", t.Name, c.Name, c.Shape, t.Rows(), cols/t.GroupSize)
		}
	}
	rb := t.RowBytes()
	if (row+1)*rb > len(t.Data) {
		return fmt.Errorf("tensor %q: row %d needs bytes up to %d, data has %d", t.Name, row, (row+1)*rb, len(t.Data))
	}
	src := t.Data[row*rb : (row+1)*rb]
	perWord := 32 / t.Bits
	mask := uint32(1)<<t.Bits - 1
	for g := 0; g < cols/t.GroupSize; g++ {
		s, b, err := AffineScaleBias(t, row, g)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		for i := g * t.GroupSize; i < (g+1)*t.GroupSize; i++ {
			w := binary.LittleEndian.Uint32(src[4*(i/perWord):])
			q := w >> (uint(i%perWord) * uint(t.Bits)) & mask
			dst[i] = s*float32(q) + b
		}
	}
	return nil
}
