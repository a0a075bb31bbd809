//go:build goexperiment.simd && amd64 && cgo

package cpu

import (
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"

	"github.com/layaapp/laya/engine/tensor"
)

// The kernels are C because Go's simd/archsimd (GOEXPERIMENT=simd, Go 1.26) was measured
// against them: this file holds the Q4_0 int8 decode mat-vec written with archsimd, the same
// algorithm as the C AVX2 kernel (vec_n in kernels_x86.h), and the benchmark that compares them
// side by side. archsimd has no VNNI dot products and no F16C conversion, so it cannot express
// the AVX-512 VNNI kernel at all. Run it with
//
//	GOEXPERIMENT=simd go test -run ArchSIMD -bench ArchSIMD ./engine/cpu

// vecQ40Go computes rows [r0, r1) of a Q4_0 matrix (cols a multiple of 256: the C kernel's tail
// loop is left out) against one int8 activation row laid out as
// laya_quantize writes it for decode: block scales xt[b], d-scaled sums xt[nb+b], and codes x8
// by block pairs.
func vecQ40Go(w []byte, cols, r0, r1 int, xt []float32, x8 []int8, out []float32) {
	nb := cols / 32
	m4 := archsimd.BroadcastUint8x32(15)
	ones := archsimd.BroadcastInt16x16(1)
	order := archsimd.LoadUint32x8Slice([]uint32{0, 4, 1, 5, 2, 6, 3, 7})
	abs := archsimd.BroadcastUint32x8(0x7fff)
	sign := archsimd.BroadcastUint32x8(0x8000)
	// A half's magnitude bits shifted into a float's and scaled by 2^112 is its value (normals
	// and subnormals; scales are finite).
	rebias := archsimd.BroadcastFloat32x8(0x1p112)
	m8 := archsimd.BroadcastFloat32x8(-8)
	var lanes [8]float32
	for row := r0; row < r1; row++ {
		p := w[row*nb*18 : (row+1)*nb*18]
		acc, corr := archsimd.BroadcastFloat32x8(0), archsimd.BroadcastFloat32x8(0)
		for b := 0; b+8 <= nb; b += 8 {
			blk := p[18*b : 18*b+144]
			xa := x8[32*b : 32*b+256]
			d0 := pairQ40(blk[0:36], xa[0:64], m4, ones)
			d1 := pairQ40(blk[36:72], xa[64:128], m4, ones)
			d2 := pairQ40(blk[72:108], xa[128:192], m4, ones)
			d3 := pairQ40(blk[108:144], xa[192:256], m4, ones)
			t0 := d0.InterleaveLoGrouped(d1).Add(d0.InterleaveHiGrouped(d1))
			t1 := d2.InterleaveLoGrouped(d3).Add(d2.InterleaveHiGrouped(d3))
			g := t0.AsInt64x4().InterleaveLoGrouped(t1.AsInt64x4()).AsInt32x8().Add(t0.AsInt64x4().InterleaveHiGrouped(t1.AsInt64x4()).AsInt32x8())
			sum := g.Permute(order)
			// Inserted one by one: stored to memory and loaded as a vector they would stall on
			// store forwarding.
			hv := archsimd.Uint16x8{}.SetElem(0, le16(blk[0:])).SetElem(1, le16(blk[18:])).SetElem(2, le16(blk[36:])).
				SetElem(3, le16(blk[54:])).SetElem(4, le16(blk[72:])).SetElem(5, le16(blk[90:])).
				SetElem(6, le16(blk[108:])).SetElem(7, le16(blk[126:])).ExtendToUint32()
			scale := hv.And(abs).ShiftAllLeft(13).AsFloat32x8().Mul(rebias)
			scale = scale.AsUint32x8().Or(hv.And(sign).ShiftAllLeft(16)).AsFloat32x8()
			xs := archsimd.LoadFloat32x8Slice(xt[b : b+8])
			xds := archsimd.LoadFloat32x8Slice(xt[nb+b : nb+b+8])
			acc = sum.ConvertToFloat32().MulAdd(scale.Mul(xs), acc)
			corr = scale.Mul(m8).MulAdd(xds, corr)
		}
		acc.Add(corr).Store(&lanes)
		var s float32
		for _, v := range lanes {
			s += v
		}
		out[row] = s
	}
}

// pairQ40 is the integer dot product of two Q4_0 blocks (36 bytes) with their 64 activation
// codes (by block pairs): lanes 0-3 sum the first block, 4-7 the second.
func pairQ40(blk []byte, xa []int8, m4 archsimd.Uint8x32, ones archsimd.Int16x16) archsimd.Int32x8 {
	v := archsimd.Uint8x32{}.SetLo(archsimd.LoadUint8x16Slice(blk[2:18])).SetHi(archsimd.LoadUint8x16Slice(blk[20:36]))
	lo := v.And(m4)
	hi := v.AsUint16x16().ShiftAllRight(4).AsUint8x32().And(m4)
	s := lo.DotProductPairsSaturated(archsimd.LoadInt8x32Slice(xa[:32])).Add(hi.DotProductPairsSaturated(archsimd.LoadInt8x32Slice(xa[32:64])))
	return s.DotProductPairs(ones)
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// archsimdCase is a Q4_0 matrix with one activation row quantized for decode.
func archsimdCase(rows, cols int) (w *tensor.Tensor, x []float32, xt []float32, x8 []int8) {
	r := rand.New(rand.NewPCG(5, 5))
	w = randTensor(r, wcase{tensor.Q4_0, 0}, rows, cols)
	x = randVec(r, cols)
	q := make([]uint32, cols/32*lq8Size/4)
	xt = make([]float32, 4*cols/32)
	x8 = make([]int8, cols)
	quantize(x, 1, cols, q, false, false, false, make([]float32, cols), xt, x8)
	return
}

func TestArchSIMDQ40(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2")
	}
	const rows, cols = 37, 2048
	w, x, xt, x8 := archsimdCase(rows, cols)
	got := make([]float32, rows)
	vecQ40Go(w.Data, cols, 0, rows, xt, x8, got)
	c := newCPU(t, 1)
	c.residual = false
	dst := c.NewBuffer(rows)
	c.MatMul(dst, bufOf(c, x), w, nil, 1)
	want := read(t, c, dst)
	for i := range rows {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("row %d: archsimd %v, C %v", i, got[i], want[i])
		}
	}
}

// BenchmarkArchSIMD runs the Q4_0 int8 decode mat-vec on one thread: the archsimd kernel, then
// the C kernels at AVX2 and at the best level (AVX-512 VNNI where present), on the same rows.
func BenchmarkArchSIMD(b *testing.B) {
	const rows, cols = 1024, 2048 // 1.2 MB: streamed from L2/L3, as compute-bound as decode gets
	w, x, xt, x8 := archsimdCase(rows, cols)
	out := make([]float32, rows)
	b.Run("archsimd", func(b *testing.B) {
		b.SetBytes(int64(len(w.Data)))
		for range b.N {
			vecQ40Go(w.Data, cols, 0, rows, xt, x8, out)
		}
	})
	for _, level := range []int{1, -1} {
		name := "C-AVX2"
		if level < 0 {
			name = "C-best"
		}
		b.Run(name, func(b *testing.B) {
			defer useSIMD(-1)
			useSIMD(level)
			c := newCPU(b, 1)
			c.residual = false
			dst := c.NewBuffer(rows)
			xb := bufOf(c, x)
			b.SetBytes(int64(len(w.Data)))
			for range b.N {
				c.MatMul(dst, xb, w, nil, 1)
			}
			if err := c.Sync(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
