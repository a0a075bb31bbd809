package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// deltaRef is the gated delta rule step by step in float64, written from the definition in
// backend.Recurrent (transformers' torch_recurrent_gated_delta_rule), independently of the
// backend's code. It returns every row's output and the final state.
func deltaRef(s backend.DeltaShape, qkv, a, b, aLog, dtBias []float32, state []float64, rows int) ([]float64, []float64) {
	dk, dv := s.KDim, s.VDim
	width := 2*s.KHeads*dk + s.VHeads*dv
	st := append([]float64(nil), state...)
	out := make([]float64, rows*s.VHeads*dv)
	norm := func(x []float32, scale float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = float64(v) / math.Sqrt(ss+1e-6) * scale
		}
		return y
	}
	for r := range rows {
		row := qkv[r*width : (r+1)*width]
		for h := range s.VHeads {
			kh := h / (s.VHeads / s.KHeads)
			if s.Tiled {
				kh = h % s.KHeads
			}
			q := norm(row[kh*dk:(kh+1)*dk], 1/math.Sqrt(float64(dk)))
			k := norm(row[(s.KHeads+kh)*dk:(s.KHeads+kh+1)*dk], 1)
			v := row[2*s.KHeads*dk+h*dv : 2*s.KHeads*dk+(h+1)*dv]
			x := float64(a[r*s.VHeads+h] + dtBias[h])
			sp := math.Log1p(math.Exp(x))
			negA := -math.Exp(float64(aLog[h]))
			if s.NegExpA {
				negA = float64(aLog[h])
			}
			g := math.Exp(negA * sp)
			beta := 1 / (1 + math.Exp(-float64(b[r*s.VHeads+h])))
			S := st[h*dk*dv : (h+1)*dk*dv]
			for i := range S {
				S[i] *= g
			}
			for vv := range dv {
				var mem float64
				for kk := range dk {
					mem += S[kk*dv+vv] * k[kk]
				}
				delta := (float64(v[vv]) - mem) * beta
				for kk := range dk {
					S[kk*dv+vv] += k[kk] * delta
				}
			}
			for vv := range dv {
				var o float64
				for kk := range dk {
					o += S[kk*dv+vv] * q[kk]
				}
				out[(r*s.VHeads+h)*dv+vv] = o
			}
		}
	}
	return out, st
}

type deltaCase struct {
	s                     backend.DeltaShape
	qkv, a, b, aLog, dtBs []float32
	rows                  int
}

func newDeltaCase(r *rand.Rand, s backend.DeltaShape, rows int) deltaCase {
	width := 2*s.KHeads*s.KDim + s.VHeads*s.VDim
	c := deltaCase{s: s, rows: rows, qkv: randVec(r, rows*width), a: randVec(r, rows*s.VHeads),
		b: randVec(r, rows*s.VHeads), aLog: make([]float32, s.VHeads), dtBs: randVec(r, s.VHeads)}
	for h := range c.aLog {
		// A in (0.01, 16) as transformers initializes it, but mostly small, so that the state
		// keeps a memory over a whole chunk and the inter-chunk terms matter.
		c.aLog[h] = float32(math.Log(0.01 + 2*r.Float64()))
	}
	c.aLog[0] = float32(math.Log(16)) // one head that forgets fast
	return c
}

// run feeds the case to the backend in calls of the given sizes, returning the outputs and the
// final state.
func (dc deltaCase) run(t *testing.T, c *cpuBackend, calls []int) ([]float32, []float32) {
	t.Helper()
	s := dc.s
	width := 2*s.KHeads*s.KDim + s.VHeads*s.VDim
	state := bufOf(c, randVec(rand.New(rand.NewPCG(9, 9)), s.StateLen())) // garbage: pos 0 ignores it
	aLog, dt := f32Tensor("A_log", dc.aLog), f32Tensor("dt_bias", dc.dtBs)
	var outs []float32
	pos := 0
	for _, n := range calls {
		out := c.NewBuffer(n * s.VHeads * s.VDim)
		c.GatedDelta(out, bufOf(c, dc.qkv[pos*width:(pos+n)*width]), bufOf(c, dc.a[pos*s.VHeads:(pos+n)*s.VHeads]),
			bufOf(c, dc.b[pos*s.VHeads:(pos+n)*s.VHeads]), aLog, dt, state, s, pos, n)
		outs = append(outs, read(t, c, out)...)
		pos += n
	}
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	return outs, read(t, c, state)
}

func maxDiff(a []float32, b []float64) (float64, float64) {
	var d, mag float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-b[i]))
		mag = max(mag, math.Abs(b[i]))
	}
	return d, mag
}

// TestGatedDeltaForms checks the chunked form (prefill) and the step-by-step form (decode)
// against a float64 reference and so against each other, over more than two chunks, with
// sizes that are not multiples of anything the code tiles by, and with a run split mid-chunk.
func TestGatedDeltaForms(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 5))
	c := newCPU(t, 3)
	s := backend.DeltaShape{KHeads: 2, VHeads: 6, KDim: 12, VDim: 10}
	rows := 150
	dc := newDeltaCase(r, s, rows)
	wantOut, wantState := deltaRef(s, dc.qkv, dc.a, dc.b, dc.aLog, dc.dtBs, make([]float64, s.StateLen()), rows)
	steps := make([]int, rows)
	for i := range steps {
		steps[i] = 1
	}
	for _, tc := range []struct {
		name  string
		calls []int
	}{
		{"chunked", []int{rows}},
		{"recurrent", steps},
		{"split", []int{70, 1, 1, 50, 28}},
	} {
		out, state := dc.run(t, c, tc.calls)
		if d, mag := maxDiff(out, wantOut); d > 2e-5*max(mag, 1) {
			t.Errorf("%s: outputs differ from the reference by %.3g (magnitude %.3g)", tc.name, d, mag)
		}
		if d, mag := maxDiff(state, wantState); d > 2e-5*max(mag, 1) {
			t.Errorf("%s: state differs from the reference by %.3g (magnitude %.3g)", tc.name, d, mag)
		}
	}
	// Chunks are aligned to positions, so a run resumed at a chunk boundary (a session's
	// snapshot) computes exactly what the run in one call does.
	whole, wholeState := dc.run(t, c, []int{rows})
	split, splitState := dc.run(t, c, []int{deltaChunk, rows - deltaChunk})
	if !slices.Equal(whole, split) || !slices.Equal(wholeState, splitState) {
		t.Error("a run split at a chunk boundary differs from the run in one call")
	}

	// llama.cpp's conventions: value head h reads key head h%KHeads, and A holds -exp(A_log).
	ll := dc
	ll.s.Tiled, ll.s.NegExpA = true, true
	ll.aLog = make([]float32, s.VHeads)
	for h, v := range dc.aLog {
		ll.aLog[h] = -float32(math.Exp(float64(v)))
	}
	wantOut, wantState = deltaRef(ll.s, ll.qkv, ll.a, ll.b, ll.aLog, ll.dtBs, make([]float64, s.StateLen()), rows)
	out, state := ll.run(t, c, []int{rows})
	if d, mag := maxDiff(out, wantOut); d > 2e-5*max(mag, 1) {
		t.Errorf("llama.cpp order: outputs differ from the reference by %.3g (magnitude %.3g)", d, mag)
	}
	if d, mag := maxDiff(state, wantState); d > 2e-5*max(mag, 1) {
		t.Errorf("llama.cpp order: state differs from the reference by %.3g (magnitude %.3g)", d, mag)
	}
	if slices.Equal(out, whole) {
		t.Error("llama.cpp's value-head order changed nothing")
	}
}

// convRef is a causal depthwise convolution in float64 from position 0.
func convRef(w []float32, ch, k int, x []float32, kind backend.ConvKind, rows int) []float64 {
	in := ch
	if kind == backend.ConvGated {
		in = 3 * ch
	}
	u := func(p, i int) float64 {
		if p < 0 {
			return 0
		}
		if kind == backend.ConvGated {
			return float64(x[p*in+i]) * float64(x[p*in+2*ch+i])
		}
		return float64(x[p*in+i])
	}
	out := make([]float64, rows*ch)
	for p := range rows {
		for i := range ch {
			var s float64
			for j := range k {
				s += float64(w[i*k+j]) * u(p-(k-1)+j, i)
			}
			if kind == backend.ConvGated {
				s *= float64(x[p*in+ch+i])
			} else {
				s /= 1 + math.Exp(-s)
			}
			out[p*ch+i] = s
		}
	}
	return out
}

func TestCausalConv(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	c := newCPU(t, 2)
	ch, rows := 37, 23
	for _, k := range []int{1, 3, 4} {
		w := randVec(r, ch*k)
		wt := &tensor.Tensor{Name: "conv", DType: tensor.F32, Shape: []int{ch, k}, Data: f32Tensor("", w).Data}
		for _, kind := range []backend.ConvKind{backend.ConvSiLU, backend.ConvGated} {
			in := ch
			if kind == backend.ConvGated {
				in = 3 * ch
			}
			x := randVec(r, rows*in)
			want := convRef(w, ch, k, x, kind, rows)
			for _, calls := range [][]int{{rows}, {1, 1, 5, 1, 15}, {2, 21}} {
				state := bufOf(c, randVec(r, max(k-1, 0)*ch)) // garbage: pos 0 ignores it
				var got []float32
				pos := 0
				for _, n := range calls {
					out := c.NewBuffer(n * ch)
					c.CausalConv(out, bufOf(c, x[pos*in:(pos+n)*in]), wt, state, kind, pos, n)
					got = append(got, read(t, c, out)...)
					pos += n
				}
				if err := c.Sync(); err != nil {
					t.Fatal(err)
				}
				if d, mag := maxDiff(got, want); d > 1e-5*max(mag, 1) {
					t.Errorf("kernel %d kind %d calls %v: differs from the reference by %.3g", k, kind, calls, d)
				}
			}
		}
	}
	// A state too small for the kernel is an error, not a read past it.
	wt := &tensor.Tensor{Name: "conv", DType: tensor.F32, Shape: []int{ch, 4}, Data: make([]byte, 4*ch*4)}
	c.CausalConv(c.NewBuffer(ch), c.NewBuffer(ch), wt, c.NewBuffer(ch), backend.ConvSiLU, 0, 1)
	if c.Sync() == nil {
		t.Error("conv with a short state: no error")
	}
}

func TestGatedRMSNormSplitSigmoid(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	c := newCPU(t, 2)
	n, rows := 10, 7
	x, z, w := randVec(r, rows*n), randVec(r, rows*n), randVec(r, n)
	dst := c.NewBuffer(rows * n)
	c.GatedRMSNorm(dst, bufOf(c, x), bufOf(c, z), f32Tensor("norm", w), rows, 1e-6)
	got := read(t, c, dst)
	for i := range rows {
		var ss float64
		for _, v := range x[i*n : (i+1)*n] {
			ss += float64(v) * float64(v)
		}
		for j := range n {
			zv := float64(z[i*n+j])
			want := float64(x[i*n+j]) / math.Sqrt(ss/float64(n)+1e-6) * float64(w[j]) * zv / (1 + math.Exp(-zv))
			if math.Abs(float64(got[i*n+j])-want) > 1e-5 {
				t.Fatalf("gated rmsnorm [%d][%d] = %g, want %g", i, j, got[i*n+j], want)
			}
		}
	}

	src := randVec(r, 2*rows*n)
	qa, qb := c.NewBuffer(rows*n), c.NewBuffer(rows*n)
	c.SplitHeads(qa, qb, bufOf(c, src), rows, n)
	ga, gb := read(t, c, qa), read(t, c, qb)
	for i := range rows {
		for j := range n {
			if ga[i*n+j] != src[2*i*n+j] || gb[i*n+j] != src[(2*i+1)*n+j] {
				t.Fatalf("split heads block %d value %d: %g, %g from %g, %g", i, j, ga[i*n+j], gb[i*n+j], src[2*i*n+j], src[(2*i+1)*n+j])
			}
		}
	}

	c.SigmoidMul(qa, qb, rows*n)
	sm := read(t, c, qa)
	for i := range sm {
		want := float64(ga[i]) / (1 + math.Exp(-float64(gb[i])))
		if math.Abs(float64(sm[i])-want) > 1e-6 {
			t.Fatalf("sigmoid mul [%d] = %g, want %g", i, sm[i], want)
		}
	}
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCausalConv is Qwen3.5-0.8B's q/k/v convolution (6144 channels, kernel 4) over a
// prefill chunk of 256 rows.
func BenchmarkCausalConv(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	c := newCPU(b, 1)
	const ch, k, rows = 6144, 4, 256
	w := &tensor.Tensor{Name: "conv", DType: tensor.F32, Shape: []int{ch, k}, Data: f32Tensor("", randVec(r, ch*k)).Data}
	x, out, state := bufOf(c, randVec(r, rows*ch)), c.NewBuffer(rows*ch), c.NewBuffer((k-1)*ch)
	for b.Loop() {
		c.CausalConv(out, x, w, state, backend.ConvSiLU, 256, rows)
	}
}
