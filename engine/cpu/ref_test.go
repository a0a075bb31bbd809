package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// wcase is a weight format under test; bits matters for Affine only.
type wcase struct {
	dt   tensor.DType
	bits int
}

func (w wcase) String() string {
	if w.dt == tensor.Affine {
		return fmt.Sprintf("Affine%d", w.bits)
	}
	return w.dt.String()
}

// allFormats are the weight formats MatMul and Embed accept.
var allFormats = []wcase{{tensor.F32, 0}, {tensor.F16, 0}, {tensor.BF16, 0}, {tensor.Q8_0, 0},
	{tensor.Q4_0, 0}, {tensor.Q5_0, 0}, {tensor.Q4_K, 0}, {tensor.Q5_K, 0}, {tensor.Q6_K, 0},
	{tensor.Affine, 4}, {tensor.Affine, 8}}

// smallHalf is a random f16 of magnitude in [2^-6, 2^-3), either sign.
func smallHalf(r *rand.Rand) uint16 {
	return uint16(r.IntN(2))<<15 | uint16(9+r.IntN(3))<<10 | uint16(r.IntN(1024))
}

// randTensor fills a tensor of format wc with random codes and sane random scales at the offsets
// the format puts them, so values stay finite and of order one. Affine tensors get a random
// group size (32 or 64) and scale dtype (F16, BF16 or F32).
func randTensor(r *rand.Rand, wc wcase, rows, cols int) *tensor.Tensor {
	dt := wc.dt
	t := &tensor.Tensor{Name: "w", DType: dt, Shape: []int{rows, cols}}
	if dt == tensor.Affine {
		group := 32
		if cols%64 == 0 && r.IntN(2) == 0 {
			group = 64
		}
		t.Bits, t.GroupSize = wc.bits, group
		t.Data = make([]byte, rows*cols*wc.bits/8)
		for i := range t.Data {
			t.Data[i] = byte(r.IntN(256))
		}
		ng := cols / group
		sdt := []tensor.DType{tensor.F16, tensor.BF16, tensor.F32}[r.IntN(3)]
		mk := func(name string) *tensor.Tensor {
			_, sz := sdt.BlockSize()
			c := &tensor.Tensor{Name: name, DType: sdt, Shape: []int{rows, ng}, Data: make([]byte, sz*rows*ng)}
			for i := range rows * ng {
				f := tensor.HalfToFloat32(smallHalf(r))
				switch sdt {
				case tensor.F16:
					binary.LittleEndian.PutUint16(c.Data[2*i:], smallHalf(r))
				case tensor.BF16:
					binary.LittleEndian.PutUint16(c.Data[2*i:], uint16(math.Float32bits(f)>>16))
				default:
					binary.LittleEndian.PutUint32(c.Data[4*i:], math.Float32bits(f))
				}
			}
			return c
		}
		t.Scales, t.Biases = mk("w.scales"), mk("w.biases")
		return t
	}
	e, b := dt.BlockSize()
	t.Data = make([]byte, rows*cols/e*b)
	switch dt {
	case tensor.F32:
		for i := range rows * cols {
			binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(float32(r.NormFloat64())))
		}
		return t
	case tensor.F16, tensor.BF16:
		for i := range rows * cols {
			f := float32(r.NormFloat64())
			h := uint16(math.Float32bits(f) >> 16)
			if dt == tensor.F16 {
				h = smallHalf(r)
			}
			binary.LittleEndian.PutUint16(t.Data[2*i:], h)
		}
		return t
	}
	for i := range t.Data {
		t.Data[i] = byte(r.IntN(256))
	}
	for blk := 0; blk < len(t.Data)/b; blk++ {
		x := t.Data[blk*b : (blk+1)*b]
		switch dt {
		case tensor.Q6_K:
			binary.LittleEndian.PutUint16(x[208:], smallHalf(r)&0x7fff>>2)
		case tensor.Q4_K, tensor.Q5_K:
			binary.LittleEndian.PutUint16(x, smallHalf(r)&0x7fff>>1)
			binary.LittleEndian.PutUint16(x[2:], smallHalf(r)&0x7fff>>1)
		default:
			binary.LittleEndian.PutUint16(x, smallHalf(r))
		}
	}
	return t
}

// dequant is the whole matrix through the reference dequantizer, in float64.
func dequant(t *testing.T, w *tensor.Tensor) [][]float64 {
	t.Helper()
	out := make([][]float64, w.Rows())
	row := make([]float32, w.Cols())
	for o := range out {
		if err := tensor.DequantizeRow(w, o, row); err != nil {
			t.Fatal(err)
		}
		out[o] = make([]float64, w.Cols())
		for i, v := range row {
			out[o][i] = float64(v)
		}
	}
	return out
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func newCPU(t testing.TB, threads int) *cpuBackend {
	t.Helper()
	b, err := New(threads)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*cpuBackend)
}

func bufOf(c *cpuBackend, v []float32) backend.Buffer {
	b := c.NewBuffer(len(v))
	copy(b.(*buffer).d, v)
	return b
}

func read(t *testing.T, c *cpuBackend, b backend.Buffer) []float32 {
	t.Helper()
	out := make([]float32, b.Len())
	if err := c.Read(out, b); err != nil {
		t.Fatal(err)
	}
	return out
}

// refMatMul computes dst[r][o] = sum_i x[r][i]*W[o][i] + bias[o] in float64, and the sum of
// |x*W| terms, the scale that float32 rounding errors are relative to.
func refMatMul(w [][]float64, x []float32, bias []float32, rows int) (want, mag []float64) {
	out, in := len(w), len(w[0])
	want, mag = make([]float64, rows*out), make([]float64, rows*out)
	for r := range rows {
		for o := range out {
			var s, a float64
			for i := range in {
				p := w[o][i] * float64(x[r*in+i])
				s += p
				a += math.Abs(p)
			}
			if bias != nil {
				s += float64(bias[o])
				a += math.Abs(float64(bias[o]))
			}
			want[r*out+o], mag[r*out+o] = s, a
		}
	}
	return want, mag
}

func TestMatMulAllTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, wc := range allFormats {
		e, _ := wc.dt.BlockSize()
		cols := 512
		if e == 1 {
			cols = 77
		}
		for threads := 1; threads <= 3; threads++ {
			for _, rows := range []int{1, 3} {
				c := newCPU(t, threads)
				w := randTensor(r, wc, 37, cols)
				var bias *tensor.Tensor
				var bv []float32
				if rows == 3 {
					bv = randVec(r, 37)
					bias = &tensor.Tensor{Name: "b", DType: tensor.F32, Shape: []int{37}, Data: make([]byte, 4*37)}
					for i, v := range bv {
						binary.LittleEndian.PutUint32(bias.Data[4*i:], math.Float32bits(v))
					}
				}
				x := randVec(r, rows*cols)
				dst := c.NewBuffer(rows * 37)
				c.MatMul(dst, bufOf(c, x), w, bias, rows)
				got := read(t, c, dst)
				wd := dequant(t, w)
				want, mag := refMatMul(wd, x, bv, rows)
				qerr := actQuantBound(t, c, w, wd, x, rows, c.residual)
				for i := range want {
					tol := 1e-5*mag[i] + 1e-6 + qerr[i]
					if d := math.Abs(float64(got[i]) - want[i]); d > tol {
						t.Fatalf("%v threads %d rows %d: out %d = %v, want %v (tol %g)", wc, threads, rows, i, got[i], want[i], tol)
					}
				}
			}
		}
	}
}

// actQuantBound is, per output, the most that quantizing x to int8 blocks of 32 can move it when
// the backend's kernel does that: each x is off by at most half a step of its block, amax/254
// (amax/64516 with residual pairs: the remainder, at most amax/254, is quantized again), so the
// output moves by at most the sum over blocks of that times sum |w| (zero for float kernels).
func actQuantBound(t *testing.T, c *cpuBackend, w *tensor.Tensor, wd [][]float64, x []float32, rows int, resid bool) []float64 {
	t.Helper()
	m, err := c.matrix(w)
	if err != nil {
		t.Fatal(err)
	}
	out, in := len(wd), len(wd[0])
	bound := make([]float64, rows*out)
	if !m.fast || kindIsFloat(m.kind) {
		return bound
	}
	div := 254.0
	if resid {
		div = 254 * 254
	}
	// Prefill activations of 64-group weights take the larger amax of each pair of blocks.
	pair := rows >= 16 && w.DType == tensor.Affine && w.GroupSize%64 == 0
	for r := range rows {
		for o := range out {
			for b := 0; b < in/32; b++ {
				var amax, wsum float64
				for i := 32 * b; i < 32*b+32; i++ {
					wsum += math.Abs(wd[o][i])
				}
				lo, hi := 32*b, 32*b+32
				if pair {
					lo, hi = 64*(b/2), 64*(b/2)+64
				}
				for i := lo; i < hi; i++ {
					amax = math.Max(amax, math.Abs(float64(x[r*in+i])))
				}
				bound[r*out+o] += amax / div * wsum * (1 + 1e-5)
			}
		}
	}
	return bound
}

func TestEmbedAllTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	c := newCPU(t, 1)
	for _, wc := range allFormats {
		e, _ := wc.dt.BlockSize()
		cols := 256
		if e == 1 {
			cols = 40
		}
		w := randTensor(r, wc, 11, cols)
		ref := dequant(t, w)
		ids := []int32{3, 0, 10, 3}
		dst := c.NewBuffer(len(ids) * cols)
		c.Embed(dst, w, ids)
		got := read(t, c, dst)
		for i, id := range ids {
			for j := range cols {
				if float64(got[i*cols+j]) != ref[id][j] {
					t.Fatalf("%v id %d col %d: %v, want %v", wc, id, j, got[i*cols+j], ref[id][j])
				}
			}
		}
	}
	c.Embed(c.NewBuffer(40), randTensor(r, wcase{tensor.F32, 0}, 11, 40), []int32{11})
	if err := c.Sync(); err == nil {
		t.Fatal("embed of an id past the table: no error")
	}
}

func f32Tensor(name string, v []float32) *tensor.Tensor {
	t := &tensor.Tensor{Name: name, DType: tensor.F32, Shape: []int{len(v)}, Data: make([]byte, 4*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(x))
	}
	return t
}

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	c := newCPU(t, 2)
	n, rows := 70, 3
	w := randVec(r, n)
	x := randVec(r, rows*n)
	dst := c.NewBuffer(rows * n)
	c.RMSNorm(dst, bufOf(c, x), f32Tensor("norm", w), rows, 1e-5, 0)
	got := read(t, c, dst)
	for row := range rows {
		var ss float64
		for i := range n {
			ss += float64(x[row*n+i]) * float64(x[row*n+i])
		}
		inv := 1 / math.Sqrt(ss/float64(n)+1e-5)
		for i := range n {
			want := float64(x[row*n+i]) * inv * float64(w[i])
			if math.Abs(float64(got[row*n+i])-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Fatalf("row %d col %d: %v, want %v", row, i, got[row*n+i], want)
			}
		}
	}
}

func TestRopeStyles(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	c := newCPU(t, 1)
	hd, heads, rows, pos := 8, 3, 4, 1500 // pos beyond the first table size makes it grow
	inv := make([]float32, hd/2)
	for i := range inv {
		inv[i] = float32(math.Pow(10000, -2*float64(i)/float64(hd)))
	}
	for _, style := range []backend.RopeStyle{backend.RopeHalf, backend.RopeInterleaved} {
		rope := &backend.Rope{HeadDim: hd, Style: style, InvFreq: inv}
		rotated(t, c, make([]float32, heads*hd), 1, heads, 0, rope) // builds a first, smaller table
		x := randVec(r, rows*heads*hd)
		got := rotated(t, c, x, rows, heads, pos, rope)
		for row := range rows {
			for h := range heads {
				base := (row*heads + h) * hd
				for i := range hd / 2 {
					a := float64(pos+row) * float64(inv[i])
					i0, i1 := i, i+hd/2 // rotate_half pairs
					if style == backend.RopeInterleaved {
						i0, i1 = 2*i, 2*i+1
					}
					x0, x1 := float64(x[base+i0]), float64(x[base+i1])
					w0 := x0*math.Cos(a) - x1*math.Sin(a)
					w1 := x1*math.Cos(a) + x0*math.Sin(a)
					if math.Abs(float64(got[base+i0])-w0) > 1e-5 || math.Abs(float64(got[base+i1])-w1) > 1e-5 {
						t.Fatalf("style %d row %d head %d pair %d: got (%v, %v), want (%v, %v)", style, row, h, i, got[base+i0], got[base+i1], w0, w1)
					}
				}
			}
		}
	}
}

// rotated returns rows of x (heads of rope.HeadDim) rotated at positions pos.. as StoreKV
// writes them to the cache, failing t unless Attention's rotation of q is the same.
func rotated(t *testing.T, c *cpuBackend, x []float32, rows, heads, pos int, rope *backend.Rope) []float32 {
	t.Helper()
	s := backend.AttnShape{Layers: 1, Heads: heads, KVHeads: heads, HeadDim: rope.HeadDim, Context: pos + rows}
	cache := c.NewKVCache(s)
	w := heads * rope.HeadDim
	zeros := c.NewBuffer(pos * w)
	c.StoreKV(cache, 0, 0, pos, zeros, zeros, nil)
	b := bufOf(c, x)
	c.StoreKV(cache, 0, pos, rows, b, bufOf(c, x), rope)
	c.Attention(c.NewBuffer(rows*w), b, cache, 0, pos, rows, 0, rope)
	q := read(t, c, b)
	k := cache.(*kvCache).k[0][pos*w : (pos+rows)*w]
	if !slices.Equal(q, k) {
		t.Fatalf("Attention rotated q to %v, StoreKV k to %v", q, k)
	}
	return k
}

// attend stores k and v at pos without rotation and attends q over the cache.
func attend(c backend.Backend, out, q, k, v backend.Buffer, cache backend.KVCache, layer, pos, rows, window int) {
	c.StoreKV(cache, layer, pos, rows, k, v, nil)
	c.Attention(out, q, cache, layer, pos, rows, window, nil)
}

// refAttention is causal softmax attention over all stored keys in float64.
func refAttention(q, ks, vs []float32, heads, kvHeads, hd, pos, rows int) []float64 {
	out := make([]float64, rows*heads*hd)
	kvw := kvHeads * hd
	for r := range rows {
		for h := range heads {
			kh := h / (heads / kvHeads)
			n := pos + r + 1
			s := make([]float64, n)
			m := math.Inf(-1)
			for t := range n {
				for i := range hd {
					s[t] += float64(q[(r*heads+h)*hd+i]) * float64(ks[t*kvw+kh*hd+i])
				}
				s[t] /= math.Sqrt(float64(hd))
				m = math.Max(m, s[t])
			}
			var z float64
			for t := range n {
				s[t] = math.Exp(s[t] - m)
				z += s[t]
			}
			for t := range n {
				for i := range hd {
					out[(r*heads+h)*hd+i] += s[t] / z * float64(vs[t*kvw+kh*hd+i])
				}
			}
		}
	}
	return out
}

// TestAttentionShapes runs head sizes on every path of the kernels (a multiple of 64, 8 and 4
// without one, 8 with a 64-wide part, a multiple of 4 but not of 8, and neither) over a prefill
// long enough for whole groups of 8 keys and a tail, then a batch on top of it.
func TestAttentionShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, hd := range []int{64, 8, 72, 20, 18} {
		for threads := 1; threads <= 2; threads++ {
			c := newCPU(t, threads)
			shape := backend.AttnShape{Layers: 1, Heads: 4, KVHeads: 2, HeadDim: hd, Context: 48}
			cache := c.NewKVCache(shape)
			qw, kvw := 4*hd, 2*hd
			var ks, vs []float32
			pos := 0
			for _, rows := range []int{37, 3} {
				q, k, v := randVec(r, rows*qw), randVec(r, rows*kvw), randVec(r, rows*kvw)
				ks, vs = append(ks, k...), append(vs, v...)
				out := c.NewBuffer(rows * qw)
				attend(c, out, bufOf(c, q), bufOf(c, k), bufOf(c, v), cache, 0, pos, rows, 0)
				got := read(t, c, out)
				want := refAttention(q, ks, vs, 4, 2, hd, pos, rows)
				for i := range want {
					if math.Abs(float64(got[i])-want[i]) > 1e-5 {
						t.Fatalf("hd %d threads %d pos %d: out %d = %v, want %v", hd, threads, pos, i, got[i], want[i])
					}
				}
				pos += rows
			}
		}
	}
}

func TestAttentionGQA(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for threads := 1; threads <= 3; threads++ {
		c := newCPU(t, threads)
		shape := backend.AttnShape{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Context: 12}
		cache := c.NewKVCache(shape)
		qw, kvw := 4*16, 2*16
		var ks, vs []float32
		pos := 0
		for _, rows := range []int{5, 1, 3} { // prefill, decode, a second batch
			q, k, v := randVec(r, rows*qw), randVec(r, rows*kvw), randVec(r, rows*kvw)
			ks, vs = append(ks, k...), append(vs, v...)
			for layer := range 2 {
				out := c.NewBuffer(rows * qw)
				attend(c, out, bufOf(c, q), bufOf(c, k), bufOf(c, v), cache, layer, pos, rows, 0)
				got := read(t, c, out)
				want := refAttention(q, ks, vs, 4, 2, 16, pos, rows)
				for i := range want {
					if math.Abs(float64(got[i])-want[i]) > 1e-5 {
						t.Fatalf("threads %d pos %d layer %d: out %d = %v, want %v", threads, pos, layer, i, got[i], want[i])
					}
				}
			}
			pos += rows
			if cache.Len() != pos {
				t.Fatalf("cache len %d, want %d", cache.Len(), pos)
			}
		}
		// Reusing a prefix: truncate to 4 and write a new position 4.
		cache.Truncate(4)
		ks, vs = ks[:4*kvw], vs[:4*kvw]
		q, k, v := randVec(r, qw), randVec(r, kvw), randVec(r, kvw)
		ks, vs = append(ks, k...), append(vs, v...)
		out := c.NewBuffer(qw)
		attend(c, out, bufOf(c, q), bufOf(c, k), bufOf(c, v), cache, 0, 4, 1, 0)
		got := read(t, c, out)
		want := refAttention(q, ks, vs, 4, 2, 16, 4, 1)
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-5 {
				t.Fatalf("after truncate: out %d = %v, want %v", i, got[i], want[i])
			}
		}
		// Past the context, or leaving a gap, is an error, not a panic.
		attend(c, out, bufOf(c, q), bufOf(c, k), bufOf(c, v), cache, 0, 12, 1, 0)
		if err := c.Sync(); err == nil {
			t.Fatal("attention past the context: no error")
		}
		attend(c, out, bufOf(c, q), bufOf(c, k), bufOf(c, v), cache, 1, 9, 1, 0)
		if err := c.Sync(); err == nil {
			t.Fatal("attention leaving a gap: no error")
		}
	}
}

func TestElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	c := newCPU(t, 1)
	n := 1001
	g, u, a := randVec(r, n), randVec(r, n), randVec(r, n)
	g[0], g[1] = 30, -30 // saturated ends of the sigmoid
	got := make([]float32, n)
	siluMul(got, g, u)
	for i := range n {
		x := float64(g[i])
		want := x / (1 + math.Exp(-x)) * float64(u[i])
		if math.Abs(float64(got[i])-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Fatalf("silumul %d: %v, want %v", i, got[i], want)
		}
	}
	acc := bufOf(c, a)
	c.Add(acc, bufOf(c, u), n)
	got = read(t, c, acc)
	for i := range n {
		if got[i] != a[i]+u[i] {
			t.Fatalf("add %d: %v, want %v", i, got[i], a[i]+u[i])
		}
	}
}

func TestViewRead(t *testing.T) {
	c := newCPU(t, 1)
	b := bufOf(c, []float32{0, 1, 2, 3, 4, 5})
	v := c.View(b, 2, 3)
	if v.Len() != 3 {
		t.Fatalf("view len %d", v.Len())
	}
	c.Add(v, bufOf(c, []float32{10, 10, 10}), 3)
	got := read(t, c, b)
	want := []float32{0, 1, 12, 13, 14, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after add through view: %v, want %v", got, want)
		}
	}
	if c.View(b, 2, 3) != v {
		t.Fatal("same view twice: not the cached buffer")
	}
	c.View(b, 4, 3)
	if err := c.Sync(); err == nil {
		t.Fatal("view past the end: no error")
	}
	if err := c.Read(make([]float32, 7), b); err == nil {
		t.Fatal("read past the end: no error")
	}
}

func TestBadInputsDoNotPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	c := newCPU(t, 2)
	w := randTensor(r, wcase{tensor.Q4_0, 0}, 8, 64)
	small := c.NewBuffer(10)
	c.MatMul(small, small, w, nil, 1)
	if err := c.Sync(); err == nil {
		t.Fatal("matmul into a short buffer: no error")
	}
	bad := *w
	bad.Data = bad.Data[:10]
	c.MatMul(c.NewBuffer(8), c.NewBuffer(64), &bad, nil, 1)
	if err := c.Sync(); err == nil {
		t.Fatal("matmul with truncated weights: no error")
	}
	if err := c.Prepare([]*tensor.Tensor{&bad}); err == nil {
		t.Fatal("prepare with truncated weights: no error")
	}
	c.RMSNorm(small, small, f32Tensor("n", make([]float32, 64)), 1, 1e-5, 0)
	if err := c.Sync(); err == nil {
		t.Fatal("rmsnorm on a short buffer: no error")
	}
	rc := c.NewKVCache(backend.AttnShape{Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 4, Context: 4})
	c.StoreKV(rc, 0, 0, 1, small, small, &backend.Rope{HeadDim: 4, InvFreq: []float32{1, 1, 1}})
	if err := c.Sync(); err == nil {
		t.Fatal("rope with more frequencies than pairs: no error")
	}
	other := struct{ backend.Buffer }{}
	c.Add(other, small, 1)
	if err := c.Sync(); err == nil {
		t.Fatal("foreign buffer: no error")
	}
	c.MatMuls([]backend.Buffer{small, other}, small, backend.Norm{}, []*tensor.Tensor{w, w}, nil, 1)
	if err := c.Sync(); err == nil {
		t.Fatal("foreign buffer in MatMuls: no error")
	}
	cache := c.NewKVCache(backend.AttnShape{Layers: 1, Heads: 3, KVHeads: 2, HeadDim: 4, Context: 4})
	if err := c.Sync(); err == nil {
		t.Fatal("kv heads not dividing heads: no error")
	}
	attend(c, small, small, small, small, cache, 0, 0, 1, 0)
	if err := c.Sync(); err == nil {
		t.Fatal("attention on an invalid cache: no error")
	}
}
