package kerneltest

import (
	"fmt"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/metal"
)

// The operations the 2026 model families added (Qwen3, SmolLM3, Gemma 3, and partial RoPE for
// Qwen3.5), on sizes that are not multiples of the kernels' tiles.

func testNormOffset(t *testing.T, open Open) {
	for _, dt := range []tensor.DType{tensor.F32, tensor.BF16} {
		p := newPair(t, open)
		w := randomPlain(p.rng, "norm", dt, 1, 1000, 13, 15)
		qn := randomPlain(p.rng, "qnorm", dt, 1, 40, 13, 15)
		p.prepare(w, qn)
		x := p.random(3, 1000)
		y := p.zeros(3 * 1000)
		p.ref.RMSNorm(y.ref, x.ref, w, 3, 1e-6, 1)
		p.gpu.RMSNorm(y.gpu, x.gpu, w, 3, 1e-6, 1)
		p.check(fmt.Sprintf("%v (1+w)", dt), y, 3*1000, tol32)
		// Per-head q/k norms: 5 rows of 3 heads of 40, in place.
		q := p.random(5*3, 40)
		p.ref.RMSNorm(q.ref, q.ref, qn, 5*3, 1e-6, 1)
		p.gpu.RMSNorm(q.gpu, q.gpu, qn, 5*3, 1e-6, 1)
		p.check(fmt.Sprintf("%v per-head (1+w) in place", dt), q, 5*3*40, tol32)
	}
}

func testScale(t *testing.T, open Open) {
	p := newPair(t, open)
	const n = 1000
	y := p.random(1, n)
	p.ref.Scale(y.ref, n-3, 33.941124)
	p.gpu.Scale(y.gpu, n-3, 33.941124)
	p.check("scale", y, n, tol32)
}

// partialRope rotates the first 2*pairs of headDim dimensions.
func partialRope(p *pair, headDim, pairs int, style backend.RopeStyle) *backend.Rope {
	r := newRope(p.rng, 2*pairs, style)
	r.HeadDim = headDim
	return r
}

func testPartialRope(t *testing.T, open Open) {
	for _, style := range []backend.RopeStyle{backend.RopeHalf, backend.RopeInterleaved} {
		p := newPair(t, open, metal.Float32KV())
		testRotation(p, fmt.Sprintf("partial style %d", style), partialRope(p, 40, 5, style), 3, 1000, 5)
	}
}

// testWindowedAttention runs prefill blocks and decode steps of sliding-window attention with a
// given score scale, partial RoPE folded into the cache write, windows smaller and larger than
// a block, and decode past several 32-position chunks.
func testWindowedAttention(t *testing.T, open Open) {
	for _, c := range []struct {
		s      backend.AttnShape
		window int
		steps  []int
	}{
		{backend.AttnShape{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 40, Context: 64, Scale: 0.2}, 7, []int{37, 1, 1, 5, 1}},
		{backend.AttnShape{Layers: 1, Heads: 3, KVHeads: 1, HeadDim: 64, Context: 64, Scale: 0.125}, 16, []int{9, 1, 13, 1}},
		{backend.AttnShape{Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 32, Context: 600}, 45, []int{517, 1, 1, 6, 1}},
	} {
		s := c.s
		p := newPair(t, open)
		r := partialRope(p, s.HeadDim, s.HeadDim/4+1, backend.RopeHalf)
		kr, kg := p.ref.NewKVCache(s), p.gpu.NewKVCache(s)
		qw, kvw := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
		pos := 0
		for step, rows := range c.steps {
			for layer := 0; layer < s.Layers; layer++ {
				q, k, v := p.random(rows, qw), p.random(rows, kvw), p.random(rows, kvw)
				o := p.zeros(rows * qw)
				p.ref.StoreKV(kr, layer, pos, rows, k.ref, v.ref, r)
				p.gpu.StoreKV(kg, layer, pos, rows, k.gpu, v.gpu, r)
				p.ref.Attention(o.ref, q.ref, kr, layer, pos, rows, c.window, r)
				p.gpu.Attention(o.gpu, q.gpu, kg, layer, pos, rows, c.window, r)
				name := fmt.Sprintf("%+v window %d step %d layer %d", s, c.window, step, layer)
				p.check(name+" out", o, rows*qw, tol32)
			}
			pos += rows
		}
	}
}
