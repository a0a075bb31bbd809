// Package kerneltest compares every kernel of the metal backend, run on some Device, with the CPU
// backend on fresh random inputs. The emulator's tests (Linux CI) and the darwin device test (a
// Mac) run the same suite.
package kerneltest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/cpu"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/metal"
)

// pair runs every operation on the CPU backend (the reference) and the emulated Metal backend.
type pair struct {
	t        *testing.T
	rng      *rand.Rand
	ref, gpu backend.Backend
}

// Open returns a fresh Device for one test.
type Open func(t *testing.T) metal.Device

// Run runs every kernel comparison on devices from open.
func Run(t *testing.T, open Open) {
	t.Run("MatVecAndMatMul", func(t *testing.T) { testMatVecAndMatMul(t, open) })
	t.Run("MatMuls", func(t *testing.T) { testMatMuls(t, open) })
	t.Run("MatMulsMixed", func(t *testing.T) { testMatMulsMixed(t, open) })
	t.Run("GLU", func(t *testing.T) { testGLU(t, open) })
	t.Run("MatMulAdd", func(t *testing.T) { testMatMulAdd(t, open) })
	t.Run("Embed", func(t *testing.T) { testEmbed(t, open) })
	t.Run("RMSNorm", func(t *testing.T) { testRMSNorm(t, open) })
	t.Run("Elementwise", func(t *testing.T) { testElementwise(t, open) })
	t.Run("Rope", func(t *testing.T) { testRope(t, open) })
	t.Run("Attention", func(t *testing.T) { testAttention(t, open) })
	t.Run("DecodeAttention", func(t *testing.T) { testDecodeAttention(t, open) })
	t.Run("Recurrent", func(t *testing.T) { testRecurrent(t, open) })
	t.Run("NormOffset", func(t *testing.T) { testNormOffset(t, open) })
	t.Run("Scale", func(t *testing.T) { testScale(t, open) })
	t.Run("PartialRope", func(t *testing.T) { testPartialRope(t, open) })
	t.Run("WindowedAttention", func(t *testing.T) { testWindowedAttention(t, open) })
}

func newPair(t *testing.T, open Open, opts ...metal.Option) *pair {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ref, err := cpu.New(1)
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := metal.New(open(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close(); gpu.Close() })
	return &pair{t: t, rng: rand.New(rand.NewPCG(seed, 7)), ref: ref, gpu: gpu}
}

func (p *pair) prepare(ts ...*tensor.Tensor) {
	p.t.Helper()
	if err := p.ref.Prepare(ts); err != nil {
		p.t.Fatal(err)
	}
	if err := p.gpu.Prepare(ts); err != nil {
		p.t.Fatal(err)
	}
}

// bufs holds the same logical buffer on both backends.
type bufs struct{ ref, gpu backend.Buffer }

func (p *pair) zeros(n int) bufs { return bufs{p.ref.NewBuffer(n), p.gpu.NewBuffer(n)} }

// fill returns buffers holding vals, written through Embed of an F32 table (the interface has
// no host write).
func (p *pair) fill(rows, cols int, vals []float32) bufs {
	p.t.Helper()
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	table := &tensor.Tensor{Name: fmt.Sprintf("fill%d", p.rng.Uint64()), DType: tensor.F32, Shape: []int{rows, cols}, Data: data}
	p.prepare(table)
	ids := make([]int32, rows)
	for i := range ids {
		ids[i] = int32(i)
	}
	b := p.zeros(rows * cols)
	p.ref.Embed(b.ref, table, ids)
	p.gpu.Embed(b.gpu, table, ids)
	return b
}

func (p *pair) random(rows, cols int) bufs {
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(p.rng.NormFloat64())
	}
	return p.fill(rows, cols, v)
}

// check reads n values of b from both backends and compares them with a norm-relative error:
// max |gpu - ref| / max |ref|.
func (p *pair) check(name string, b bufs, n int, tol float64) []float32 {
	p.t.Helper()
	want, got := make([]float32, n), make([]float32, n)
	if err := p.ref.Read(want, b.ref); err != nil {
		p.t.Fatalf("%s: cpu: %v", name, err)
	}
	if err := p.gpu.Read(got, b.gpu); err != nil {
		p.t.Fatalf("%s: metal: %v", name, err)
	}
	var diff, scale float64
	for i := range want {
		diff = max(diff, math.Abs(float64(got[i])-float64(want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
		if math.IsNaN(float64(got[i])) {
			p.t.Fatalf("%s: NaN at %d", name, i)
		}
	}
	if scale == 0 {
		p.t.Fatalf("%s: reference is all zeros; the test checks nothing", name)
	}
	if diff/scale > tol {
		for i := range want {
			if math.Abs(float64(got[i])-float64(want[i])) > tol*scale {
				p.t.Errorf("%s: first bad element %d: got %g, want %g", name, i, got[i], want[i])
				break
			}
		}
		p.t.Fatalf("%s: relative error %.3g > %g", name, diff/scale, tol)
	}
	return want
}

const tol32 = 1e-3

// halfBits returns a random binary16 with magnitude in [2^(lo-15), 2^(hi-14)).
func halfBits(rng *rand.Rand, lo, hi int) uint16 {
	e := lo + rng.IntN(hi-lo+1)
	return uint16(rng.IntN(2))<<15 | uint16(e)<<10 | uint16(rng.IntN(1024))
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// randomMatrix builds a [rows, cols] tensor of the given format with random contents whose
// scales keep the dequantized values of order one.
func randomMatrix(rng *rand.Rand, name string, dt tensor.DType, rows, cols int, aff affine) *tensor.Tensor {
	t := &tensor.Tensor{Name: name, DType: dt, Shape: []int{rows, cols}}
	putHalf := func(b []byte, lo, hi int) { binary.LittleEndian.PutUint16(b, halfBits(rng, lo, hi)) }
	switch dt {
	case tensor.F32:
		t.Data = make([]byte, 4*rows*cols)
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		}
	case tensor.F16:
		t.Data = make([]byte, 2*rows*cols)
		for i := 0; i < rows*cols; i++ {
			putHalf(t.Data[2*i:], 10, 15)
		}
	case tensor.BF16:
		t.Data = make([]byte, 2*rows*cols)
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint16(t.Data[2*i:], uint16(math.Float32bits(float32(rng.NormFloat64()))>>16))
		}
	case tensor.Q8_0, tensor.Q4_0, tensor.Q5_0:
		_, bs := dt.BlockSize()
		t.Data = randBytes(rng, rows*cols/32*bs)
		for o := 0; o < len(t.Data); o += bs {
			putHalf(t.Data[o:], 7, 11)
		}
	case tensor.Q4_K:
		t.Data = randBytes(rng, rows*cols/256*144)
		for o := 0; o < len(t.Data); o += 144 {
			putHalf(t.Data[o:], 5, 8)
			putHalf(t.Data[o+2:], 5, 8)
		}
	case tensor.Q5_K:
		t.Data = randBytes(rng, rows*cols/256*176)
		for o := 0; o < len(t.Data); o += 176 {
			putHalf(t.Data[o:], 5, 8)
			putHalf(t.Data[o+2:], 5, 8)
		}
	case tensor.Q6_K:
		t.Data = randBytes(rng, rows*cols/256*210)
		for o := 0; o < len(t.Data); o += 210 {
			putHalf(t.Data[o+208:], 3, 6)
		}
	case tensor.Affine:
		t.Bits, t.GroupSize = aff.bits, aff.group
		t.Data = randBytes(rng, rows*cols*aff.bits/8)
		g := cols / aff.group
		t.Scales = randomPlain(rng, name+".scales", aff.dt, rows, g, 6, 10)
		t.Biases = randomPlain(rng, name+".biases", aff.dt, rows, g, 10, 14)
	}
	if err := t.Validate(); err != nil {
		panic(err)
	}
	return t
}

// dequantized is t as an F32 tensor, through package tensor's reference dequantization.
func dequantized(t *testing.T, w *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	row := make([]float32, w.Cols())
	f := &tensor.Tensor{Name: w.Name + ".f32", DType: tensor.F32, Shape: []int{w.Rows(), w.Cols()}}
	for r := 0; r < w.Rows(); r++ {
		if err := tensor.DequantizeRow(w, r, row); err != nil {
			t.Fatal(err)
		}
		for _, v := range row {
			f.Data = binary.LittleEndian.AppendUint32(f.Data, math.Float32bits(v))
		}
	}
	return f
}

type affine struct {
	bits, group int
	dt          tensor.DType
}

// randomPlain is an F32/F16/BF16 [rows, cols] tensor with magnitudes in [2^(lo-15), 2^(hi-14)).
func randomPlain(rng *rand.Rand, name string, dt tensor.DType, rows, cols, lo, hi int) *tensor.Tensor {
	t := &tensor.Tensor{Name: name, DType: dt, Shape: []int{rows, cols}}
	n := rows * cols
	if rows == 1 {
		t.Shape = []int{cols}
	}
	for i := 0; i < n; i++ {
		h := halfBits(rng, lo, hi)
		f := tensor.HalfToFloat32(h)
		switch dt {
		case tensor.F32:
			t.Data = binary.LittleEndian.AppendUint32(t.Data, math.Float32bits(f))
		case tensor.F16:
			t.Data = binary.LittleEndian.AppendUint16(t.Data, h)
		case tensor.BF16:
			t.Data = binary.LittleEndian.AppendUint16(t.Data, uint16(math.Float32bits(f)>>16))
		}
	}
	return t
}

// formats lists every weight format with a column count that exercises its edge cases: fewer
// chunks than lanes, a partial 512-input step, F32 columns that are not a multiple of 16.
var formats = []struct {
	name string
	dt   tensor.DType
	cols int
	aff  affine
}{
	{"f32", tensor.F32, 83, affine{}},
	{"f16", tensor.F16, 600, affine{}},
	{"bf16", tensor.BF16, 40, affine{}},
	{"q8_0", tensor.Q8_0, 96, affine{}},
	{"q4_0", tensor.Q4_0, 544, affine{}},
	{"q5_0", tensor.Q5_0, 160, affine{}},
	{"q4_k", tensor.Q4_K, 768, affine{}},
	{"q5_k", tensor.Q5_K, 1280, affine{}},
	{"q6_k", tensor.Q6_K, 512, affine{}},
	{"affine4-g64-f16", tensor.Affine, 192, affine{4, 64, tensor.F16}},
	{"affine4-g32-bf16", tensor.Affine, 544, affine{4, 32, tensor.BF16}},
	{"affine8-g32-f16", tensor.Affine, 96, affine{8, 32, tensor.F16}},
	{"affine8-g64-f32", tensor.Affine, 640, affine{8, 64, tensor.F32}},
}

func testMatVecAndMatMul(t *testing.T, open Open) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			p := newPair(t, open)
			const out = 37 // not a multiple of the 8 rows of a mat-vec threadgroup or the 32 of a tile
			w := randomMatrix(p.rng, "w", f.dt, out, f.cols, f.aff)
			// The CPU backend quantizes activations to int8 for quantized weights; the exact
			// reference is its F32 path on the weights dequantized by package tensor.
			wf := dequantized(t, w)
			bias := randomPlain(p.rng, "bias", tensor.F16, 1, out, 12, 15)
			p.prepare(w, wf, bias)
			for _, rows := range []int{1, 3, 33} {
				x := p.random(rows, f.cols)
				for _, b := range []*tensor.Tensor{nil, bias} {
					y := p.zeros(rows * out)
					p.ref.MatMul(y.ref, x.ref, wf, b, rows)
					p.gpu.MatMul(y.gpu, x.gpu, w, b, rows)
					p.check(fmt.Sprintf("rows %d bias %v", rows, b != nil), y, rows*out, tol32)
				}
			}
		})
	}
}

// testMatMulsMixed runs the shared-input matmuls of weights of two formats (two matvecs passes
// for one row), with a bias on one, on one row and a block, with a folded norm and without.
func testMatMulsMixed(t *testing.T, open Open) {
	p := newPair(t, open)
	const cols = 96
	w0 := randomMatrix(p.rng, "w0", tensor.Q4_0, 37, cols, affine{})
	w1 := randomMatrix(p.rng, "w1", tensor.Affine, 21, cols, affine{4, 32, tensor.F16})
	w0f, w1f := dequantized(t, w0), dequantized(t, w1)
	bias := randomPlain(p.rng, "bias", tensor.F16, 1, 21, 12, 15)
	nw := randomPlain(p.rng, "norm", tensor.BF16, 1, cols, 13, 15)
	p.prepare(w0, w1, w0f, w1f, bias, nw)
	for _, rows := range []int{1, 3} {
		for _, n := range []backend.Norm{{}, {W: nw, Eps: 1e-5, Offset: 1}} {
			x := p.random(rows, cols)
			y0, y1 := p.zeros(rows*37), p.zeros(rows*21)
			biases := []*tensor.Tensor{nil, bias}
			p.ref.MatMuls([]backend.Buffer{y0.ref, y1.ref}, x.ref, n, []*tensor.Tensor{w0f, w1f}, biases, rows)
			p.gpu.MatMuls([]backend.Buffer{y0.gpu, y1.gpu}, x.gpu, n, []*tensor.Tensor{w0, w1}, biases, rows)
			name := fmt.Sprintf("rows %d norm %v", rows, n.W != nil)
			p.check(name+" first", y0, rows*37, tol32)
			p.check(name+" second", y1, rows*21, tol32)
		}
	}
}

// testMatMulAdd runs the matmul plus residual on one row (the mat-vec adding its output) and on
// a block.
func testMatMulAdd(t *testing.T, open Open) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			p := newPair(t, open)
			w := randomMatrix(p.rng, "w", f.dt, f.cols, f.cols, f.aff)
			wf := dequantized(t, w)
			p.prepare(w, wf)
			for _, rows := range []int{1, 3} {
				x, res := p.random(rows, f.cols), p.random(rows, f.cols)
				p.ref.MatMulAdd(res.ref, x.ref, wf, rows)
				p.gpu.MatMulAdd(res.gpu, x.gpu, w, rows)
				p.check(fmt.Sprintf("rows %d", rows), res, rows*f.cols, tol32)
			}
		})
	}
}

func testEmbed(t *testing.T, open Open) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			p := newPair(t, open)
			table := randomMatrix(p.rng, "table", f.dt, 11, f.cols, f.aff)
			p.prepare(table)
			ids := []int32{3, 0, 10, 3}
			y := p.zeros(len(ids) * f.cols)
			p.ref.Embed(y.ref, table, ids)
			p.gpu.Embed(y.gpu, table, ids)
			p.check("embed", y, len(ids)*f.cols, tol32)
		})
	}
}

func testRMSNorm(t *testing.T, open Open) {
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, n := range []int{200, 1000} { // below and above one 256-thread pass
			p := newPair(t, open)
			w := randomPlain(p.rng, "norm", dt, 1, n, 13, 15)
			p.prepare(w)
			x := p.random(3, n)
			y := p.zeros(3 * n)
			p.ref.RMSNorm(y.ref, x.ref, w, 3, 1e-5, 0)
			p.gpu.RMSNorm(y.gpu, x.gpu, w, 3, 1e-5, 0)
			p.check(fmt.Sprintf("%v n=%d", dt, n), y, 3*n, tol32)
			// In place, as models normalize the residual stream into itself.
			p.ref.RMSNorm(x.ref, x.ref, w, 3, 1e-5, 0)
			p.gpu.RMSNorm(x.gpu, x.gpu, w, 3, 1e-5, 0)
			p.check(fmt.Sprintf("%v n=%d in place", dt, n), x, 3*n, tol32)
		}
	}
}

func testElementwise(t *testing.T, open Open) {
	p := newPair(t, open)
	const n = 1000
	g, y := p.random(1, n), p.random(1, n)
	p.ref.Add(y.ref, g.ref, n-3)
	p.gpu.Add(y.gpu, g.gpu, n-3)
	p.check("add", y, n, tol32)
}

func newRope(rng *rand.Rand, headDim int, style backend.RopeStyle) *backend.Rope {
	r := &backend.Rope{HeadDim: headDim, Style: style, InvFreq: make([]float32, headDim/2)}
	theta := 10000 * (1 + rng.Float64())
	for i := range r.InvFreq {
		r.InvFreq[i] = float32(math.Pow(theta, -2*float64(i)/float64(headDim)))
	}
	return r
}

// testRotation compares RoPE on both backends through StoreKV and Attention, on float32
// caches: keys of positions [0, pos) unrotated, then rows at pos.. rotated by r, attended by
// queries rotated by r within a window of 3, so every output depends on both rotations.
func testRotation(p *pair, name string, r *backend.Rope, heads, pos, rows int) {
	p.t.Helper()
	s := backend.AttnShape{Layers: 1, Heads: heads, KVHeads: heads, HeadDim: r.HeadDim, Context: pos + rows}
	kr, kg := p.ref.NewKVCache(s), p.gpu.NewKVCache(s)
	w := heads * r.HeadDim
	k, v := p.random(pos, w), p.random(pos, w)
	p.ref.StoreKV(kr, 0, 0, pos, k.ref, v.ref, nil)
	p.gpu.StoreKV(kg, 0, 0, pos, k.gpu, v.gpu, nil)
	q, k, v := p.random(rows, w), p.random(rows, w), p.random(rows, w)
	p.ref.StoreKV(kr, 0, pos, rows, k.ref, v.ref, r)
	p.gpu.StoreKV(kg, 0, pos, rows, k.gpu, v.gpu, r)
	o := p.zeros(rows * w)
	p.ref.Attention(o.ref, q.ref, kr, 0, pos, rows, 3, r)
	p.gpu.Attention(o.gpu, q.gpu, kg, 0, pos, rows, 3, r)
	p.check(name, o, rows*w, tol32)
}

func testRope(t *testing.T, open Open) {
	for _, style := range []backend.RopeStyle{backend.RopeHalf, backend.RopeInterleaved} {
		p := newPair(t, open, metal.Float32KV())
		testRotation(p, fmt.Sprintf("style %d", style), newRope(p.rng, 40, style), 3, 1000, 5)
	}
}

// testAttention runs a prefill block, a decode step and a second block against the cache, with
// RoPE of k in the cache write and of q in attention, and once without it.
func testAttention(t *testing.T, open Open) {
	for _, c := range []struct {
		s     backend.AttnShape
		steps []int // rows per step; the last step runs without RoPE
	}{
		{backend.AttnShape{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, Context: 16}, []int{5, 1, 3, 2}},
		{backend.AttnShape{Layers: 2, Heads: 3, KVHeads: 1, HeadDim: 40, Context: 16}, []int{5, 1, 3, 2}},
		// Decode past several 32-position chunks per simdgroup, ending in a partial chunk.
		{backend.AttnShape{Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 32, Context: 600}, []int{517, 1, 1, 6, 1}},
	} {
		s := c.s
		// Both caches: half (the default) with the half-rounded RoPE style, float32 with the other.
		for _, style := range []backend.RopeStyle{backend.RopeHalf, backend.RopeInterleaved} {
			var opts []metal.Option
			if style == backend.RopeInterleaved {
				opts = append(opts, metal.Float32KV())
			}
			p := newPair(t, open, opts...)
			r := newRope(p.rng, s.HeadDim, style)
			kr, kg := p.ref.NewKVCache(s), p.gpu.NewKVCache(s)
			qw, kvw := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
			pos := 0
			for step, rows := range c.steps {
				for layer := 0; layer < s.Layers; layer++ {
					q, k, v := p.random(rows, qw), p.random(rows, kvw), p.random(rows, kvw)
					rope := r
					if step == len(c.steps)-1 {
						rope = nil
					}
					o := p.zeros(rows * qw)
					p.ref.StoreKV(kr, layer, pos, rows, k.ref, v.ref, rope)
					p.gpu.StoreKV(kg, layer, pos, rows, k.gpu, v.gpu, rope)
					p.ref.Attention(o.ref, q.ref, kr, layer, pos, rows, 0, rope)
					p.gpu.Attention(o.gpu, q.gpu, kg, layer, pos, rows, 0, rope)
					name := fmt.Sprintf("%+v style %d (%d-byte cache) step %d layer %d", s, style, p.gpu.(*metal.Backend).KVBytesPerElement(), step, layer)
					p.check(name+" out", o, rows*qw, tol32)
				}
				pos += rows
			}
			if kr.Len() != pos || kg.Len() != pos {
				t.Fatalf("cache lengths %d (cpu) %d (metal), want %d", kr.Len(), kg.Len(), pos)
			}
		}
	}
}
