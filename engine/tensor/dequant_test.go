package tensor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// halfRef decodes binary16 by its definition, in float64.
func halfRef(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return sign * m / 1024 * math.Pow(2, -14)
	case 31:
		if m == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * (1 + m/1024) * math.Pow(2, float64(e-15))
}

func TestHalfToFloat32AllValues(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got, want := float64(HalfToFloat32(uint16(h))), halfRef(uint16(h))
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("half %#04x: got %v, want NaN", h, got)
			}
			continue
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("half %#04x: got %v, want %v", h, got, want)
		}
	}
}

func TestBFloat16(t *testing.T) {
	// 0x3FC0 = sign 0, exponent 127, mantissa 0x40<<16: 1.5. 0xC000 = -2.
	if got := BFloat16ToFloat32(0x3FC0); got != 1.5 {
		t.Fatalf("bf16 0x3FC0 = %v, want 1.5", got)
	}
	if got := BFloat16ToFloat32(0xC000); got != -2 {
		t.Fatalf("bf16 0xC000 = %v, want -2", got)
	}
}

// randHalf returns a random finite, normal half of moderate magnitude and its value.
func randHalf(r *rand.Rand) (uint16, float64) {
	h := uint16(r.IntN(2))<<15 | uint16(8+r.IntN(14))<<10 | uint16(r.IntN(1024))
	return h, halfRef(h)
}

func putHalf(b []byte, h uint16) { binary.LittleEndian.PutUint16(b, h) }

// setBits writes the n-bit value v at bit offset off (little-endian bit order) of b.
func setBits(b []byte, off, n int, v int) {
	for i := range n {
		if v>>i&1 != 0 {
			b[(off+i)/8] |= 1 << ((off + i) % 8)
		}
	}
}

// encoder builds one row of a format from random logical values, following the format's spec,
// and returns the bytes and the float64 values the row stands for.
type encoder func(r *rand.Rand, cols int) ([]byte, []float64)

var encoders = map[DType]encoder{
	F32: func(r *rand.Rand, cols int) ([]byte, []float64) {
		b, w := make([]byte, 4*cols), make([]float64, cols)
		for i := range w {
			f := float32(r.NormFloat64())
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
			w[i] = float64(f)
		}
		return b, w
	},
	F16: func(r *rand.Rand, cols int) ([]byte, []float64) {
		b, w := make([]byte, 2*cols), make([]float64, cols)
		for i := range w {
			h := uint16(r.IntN(1 << 16))
			for h>>10&0x1f == 0x1f { // skip Inf/NaN
				h = uint16(r.IntN(1 << 16))
			}
			putHalf(b[2*i:], h)
			w[i] = halfRef(h)
		}
		return b, w
	},
	BF16: func(r *rand.Rand, cols int) ([]byte, []float64) {
		b, w := make([]byte, 2*cols), make([]float64, cols)
		for i := range w {
			sign, exp, man := r.IntN(2), 100+r.IntN(50), r.IntN(128)
			putHalf(b[2*i:], uint16(sign<<15|exp<<7|man))
			w[i] = (1 - 2*float64(sign)) * (1 + float64(man)/128) * math.Pow(2, float64(exp-127))
		}
		return b, w
	},
	Q8_0: func(r *rand.Rand, cols int) ([]byte, []float64) {
		b, w := make([]byte, cols/32*34), make([]float64, cols)
		for blk := 0; blk < cols/32; blk++ {
			h, d := randHalf(r)
			putHalf(b[34*blk:], h)
			for j := range 32 {
				q := r.IntN(256) - 128
				b[34*blk+2+j] = byte(int8(q))
				w[32*blk+j] = d * float64(q)
			}
		}
		return b, w
	},
	Q4_0: func(r *rand.Rand, cols int) ([]byte, []float64) {
		b, w := make([]byte, cols/32*18), make([]float64, cols)
		for blk := 0; blk < cols/32; blk++ {
			h, d := randHalf(r)
			putHalf(b[18*blk:], h)
			for j := range 32 {
				q := r.IntN(16)
				// element j < 16 is the low nibble of byte j, element j >= 16 the high nibble of byte j-16
				setBits(b[18*blk+2:], 8*(j%16)+4*(j/16), 4, q)
				w[32*blk+j] = d * float64(q-8)
			}
		}
		return b, w
	},
	Q5_0: func(r *rand.Rand, cols int) ([]byte, []float64) {
		b, w := make([]byte, cols/32*22), make([]float64, cols)
		for blk := 0; blk < cols/32; blk++ {
			h, d := randHalf(r)
			putHalf(b[22*blk:], h)
			for j := range 32 {
				q := r.IntN(32)
				setBits(b[22*blk+2:], j, 1, q>>4) // bit j of the 32-bit qh holds element j's fifth bit
				setBits(b[22*blk+6:], 8*(j%16)+4*(j/16), 4, q&15)
				w[32*blk+j] = d * float64(q-16)
			}
		}
		return b, w
	},
	Q4_K: func(r *rand.Rand, cols int) ([]byte, []float64) { return encodeK(r, cols, false) },
	Q5_K: func(r *rand.Rand, cols int) ([]byte, []float64) { return encodeK(r, cols, true) },
	Q6_K: func(r *rand.Rand, cols int) ([]byte, []float64) {
		b, w := make([]byte, cols/256*210), make([]float64, cols)
		for blk := 0; blk < cols/256; blk++ {
			x := b[210*blk : 210*blk+210]
			h, d := randHalf(r)
			putHalf(x[208:], h)
			var sc [16]int
			for s := range sc {
				sc[s] = r.IntN(256) - 128
				x[192+s] = byte(int8(sc[s]))
			}
			for j := range 256 {
				q := r.IntN(64)
				// Within each 128-element half: element l+32k (l < 32, k < 4) keeps its low 4 bits in
				// ql byte l (k even) or l+32 (k odd), low nibble for k < 2, high for k >= 2, and its
				// top 2 bits at bit 2k of qh byte l. Its scale is sc[8*half + l/16 + 2k].
				half, e := j/128, j%128
				k, l := e/32, e%32
				qlByte := 64*half + l + 32*(k%2)
				setBits(x, 8*qlByte+4*(k/2), 4, q&15)
				setBits(x, 8*(128+32*half+l)+2*k, 2, q>>4)
				w[256*blk+j] = d * float64(sc[8*half+l/16+2*k]) * float64(q-32)
			}
		}
		return b, w
	},
}

// encodeK builds Q4_K (or Q5_K with fifth bits) super-blocks: eight 32-element sub-blocks with
// 6-bit scales and mins, w = d*scale*q - dmin*min.
func encodeK(r *rand.Rand, cols int, five bool) ([]byte, []float64) {
	size := 144
	if five {
		size = 176
	}
	b, w := make([]byte, cols/256*size), make([]float64, cols)
	for blk := 0; blk < cols/256; blk++ {
		x := b[size*blk : size*blk+size]
		hd, d := randHalf(r)
		hm, dmin := randHalf(r)
		putHalf(x, hd)
		putHalf(x[2:], hm)
		sc := x[4:16]
		var scale, min [8]int
		for j := range 8 {
			scale[j], min[j] = r.IntN(64), r.IntN(64)
			if j < 4 {
				setBits(sc, 8*j, 6, scale[j])
				setBits(sc, 8*(j+4), 6, min[j])
			} else {
				setBits(sc, 8*(j+4), 4, scale[j]&15)
				setBits(sc, 8*(j+4)+4, 4, min[j]&15)
				setBits(sc, 8*(j-4)+6, 2, scale[j]>>4)
				setBits(sc, 8*j+6, 2, min[j]>>4)
			}
		}
		qs := x[16:]
		if five {
			qs = x[48:]
		}
		for i := range 256 {
			sub := i / 32 // sub-block; pairs of sub-blocks share 32 bytes, low nibble first
			l := i % 32
			q := r.IntN(16)
			if five {
				q = r.IntN(32)
				setBits(x[16:], 8*l+sub, 1, q>>4) // qh byte l, bit sub
			}
			setBits(qs, 8*(32*(sub/2)+l)+4*(sub%2), 4, q&15)
			w[256*blk+i] = d*float64(scale[sub])*float64(q) - dmin*float64(min[sub])
		}
	}
	return b, w
}

func checkRows(t *testing.T, tn *Tensor, want [][]float64, tol float64) {
	t.Helper()
	dst := make([]float32, tn.Cols())
	for r, row := range want {
		if err := DequantizeRow(tn, r, dst); err != nil {
			t.Fatal(err)
		}
		for i, w := range row {
			if diff := math.Abs(float64(dst[i]) - w); diff > tol*math.Max(1, math.Abs(w)) {
				t.Fatalf("%v %v row %d col %d: got %v, want %v", tn.DType, tn.Shape, r, i, dst[i], w)
			}
		}
	}
}

func TestDequantizeRowFormats(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for dt, enc := range encoders {
		e, _ := dt.BlockSize()
		for _, blocks := range []int{1, 3} {
			cols := e * blocks
			if e == 1 {
				cols = 37 // plain types take any width
			}
			rows := 3
			var data []byte
			want := make([][]float64, rows)
			for i := range rows {
				b, w := enc(r, cols)
				data = append(data, b...)
				want[i] = w
			}
			tn := &Tensor{Name: "w", DType: dt, Shape: []int{rows, cols}, Data: data}
			if err := tn.Validate(); err != nil {
				t.Fatal(err)
			}
			// float32 products of exactly representable factors round once: relative 2^-23 per op.
			checkRows(t, tn, want, 1e-6)
		}
	}
}

func TestDequantizeRowHandValues(t *testing.T) {
	// Q4_0: d = 0.5 (half 0x3800), byte 0 = 0x9F: element 0 = 0.5*(15-8) = 3.5, element 16 = 0.5*(9-8).
	blk := make([]byte, 18)
	putHalf(blk, 0x3800)
	blk[2] = 0x9F
	for i := 3; i < 18; i++ {
		blk[i] = 0x88
	}
	tn := &Tensor{Name: "q", DType: Q4_0, Shape: []int{1, 32}, Data: blk}
	dst := make([]float32, 32)
	if err := DequantizeRow(tn, 0, dst); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 3.5 || dst[16] != 0.5 || dst[1] != 0 || dst[31] != 0 {
		t.Fatalf("Q4_0 hand block: got %v", dst)
	}
	// Q8_0: d = 2 (0x4000), q[5] = -3: -6.
	blk = make([]byte, 34)
	putHalf(blk, 0x4000)
	blk[2+5] = 0xFD
	tn = &Tensor{Name: "q", DType: Q8_0, Shape: []int{32}, Data: blk}
	if err := DequantizeRow(tn, 0, dst); err != nil {
		t.Fatal(err)
	}
	if dst[5] != -6 || dst[4] != 0 {
		t.Fatalf("Q8_0 hand block: got %v", dst)
	}
}

func encodeAffine(r *rand.Rand, rows, cols, bits, group int, sdt DType) (*Tensor, [][]float64) {
	ng := cols / group
	data := make([]byte, rows*cols*bits/8)
	want := make([][]float64, rows)
	comp := func(name string) *Tensor {
		_, sz := sdt.BlockSize()
		return &Tensor{Name: name, DType: sdt, Shape: []int{rows, ng}, Data: make([]byte, rows*ng*sz)}
	}
	scales, biases := comp("w.scales"), comp("w.biases")
	put := func(c *Tensor, i int) float64 {
		switch sdt {
		case F32:
			f := float32(r.NormFloat64())
			binary.LittleEndian.PutUint32(c.Data[4*i:], math.Float32bits(f))
			return float64(f)
		case BF16:
			sign, exp, man := r.IntN(2), 115+r.IntN(15), r.IntN(128)
			putHalf(c.Data[2*i:], uint16(sign<<15|exp<<7|man))
			return (1 - 2*float64(sign)) * (1 + float64(man)/128) * math.Pow(2, float64(exp-127))
		}
		h, v := randHalf(r) // random sign: negative scales occur in MLX files
		putHalf(c.Data[2*i:], h)
		return v
	}
	for row := range rows {
		want[row] = make([]float64, cols)
		for g := range ng {
			s, b := put(scales, row*ng+g), put(biases, row*ng+g)
			for i := g * group; i < (g+1)*group; i++ {
				q := r.IntN(1 << bits)
				setBits(data, (row*cols+i)*bits, bits, q) // element 0 in the low bits of each word
				want[row][i] = s*float64(q) + b
			}
		}
	}
	return &Tensor{Name: "w", DType: Affine, Shape: []int{rows, cols}, Data: data, Bits: bits, GroupSize: group, Scales: scales, Biases: biases}, want
}

func TestDequantizeRowAffine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, bits := range []int{4, 8} {
		for _, group := range []int{32, 64} {
			for _, sdt := range []DType{F16, BF16, F32} {
				tn, want := encodeAffine(r, 3, 3*group, bits, group, sdt)
				if err := tn.Validate(); err != nil {
					t.Fatal(err)
				}
				// s*q+b in float32: two roundings relative to the larger of |s*q| and |b|.
				dst := make([]float32, tn.Cols())
				for row := range want {
					if err := DequantizeRow(tn, row, dst); err != nil {
						t.Fatal(err)
					}
					for i, w := range want[row] {
						s, b, _ := AffineScaleBias(tn, row, i/group)
						scale := math.Abs(float64(s))*float64(int(1)<<bits) + math.Abs(float64(b))
						if math.Abs(float64(dst[i])-w) > 1e-6*scale {
							t.Fatalf("affine %d-bit g%d %v row %d col %d: got %v, want %v", bits, group, sdt, row, i, dst[i], w)
						}
					}
				}
			}
		}
	}
}

func TestDequantizeRowErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	b, _ := encoders[Q4_0](r, 64)
	ok := &Tensor{Name: "w", DType: Q4_0, Shape: []int{1, 64}, Data: b}
	aff, _ := encodeAffine(r, 2, 64, 4, 32, F16)
	short := *aff.Scales
	short.Data = short.Data[:3]
	affShort := *aff
	affShort.Scales = &short
	cases := []struct {
		name string
		t    *Tensor
		row  int
		n    int
	}{
		{"row out of range", ok, 1, 64},
		{"negative row", ok, -1, 64},
		{"short dst", ok, 0, 63},
		{"truncated data", &Tensor{Name: "w", DType: Q4_0, Shape: []int{1, 64}, Data: b[:20]}, 0, 64},
		{"partial block", &Tensor{Name: "w", DType: Q4_0, Shape: []int{1, 48}, Data: b}, 0, 48},
		{"I32", &Tensor{Name: "w", DType: I32, Shape: []int{1, 4}, Data: make([]byte, 16)}, 0, 4},
		{"unknown dtype", &Tensor{Name: "w", DType: DType(99), Shape: []int{1, 4}, Data: make([]byte, 16)}, 0, 4},
		{"affine bits", &Tensor{Name: "w", DType: Affine, Shape: []int{2, 64}, Data: aff.Data, Bits: 3, GroupSize: 32, Scales: aff.Scales, Biases: aff.Biases}, 0, 64},
		{"affine no biases", &Tensor{Name: "w", DType: Affine, Shape: []int{2, 64}, Data: aff.Data, Bits: 4, GroupSize: 32, Scales: aff.Scales}, 0, 64},
		{"affine truncated scales", &affShort, 1, 64},
		{"affine truncated data", &Tensor{Name: "w", DType: Affine, Shape: []int{2, 64}, Data: aff.Data[:40], Bits: 4, GroupSize: 32, Scales: aff.Scales, Biases: aff.Biases}, 1, 64},
	}
	for _, c := range cases {
		if err := DequantizeRow(c.t, c.row, make([]float32, c.n)); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}
