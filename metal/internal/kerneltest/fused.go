package kerneltest

import (
	"fmt"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/metal"
)

// The fused operations of a decode step (one row: the matvecs_<fmt>, matvec_glu_<fmt> and
// attention_decode kernels) and of a block (the unfused paths), against the CPU backend.

// norms are the folded norms the fused mat-vecs are run with: none, and each weight dtype with
// offset 0 and 1.
func (p *pair) norms(cols int) []backend.Norm {
	ns := []backend.Norm{{}}
	for i, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		w := randomPlain(p.rng, fmt.Sprintf("norm%d", i), dt, 1, cols, 13, 15)
		p.prepare(w)
		ns = append(ns, backend.Norm{W: w, Eps: 1e-5, Offset: float32(i % 2)})
	}
	ns = append(ns, backend.Norm{W: ns[1].W, Eps: 1e-6, Offset: 1})
	return ns
}

func normName(n backend.Norm) string {
	if n.W == nil {
		return "no norm"
	}
	return fmt.Sprintf("norm %v offset %g", n.W.DType, n.Offset)
}

// testMatMuls runs q/k/v-like projections (3 weights of 37, 8 and 13 rows, the middle one
// without a bias), pairs, and a lone head-like weight, with and without a folded norm.
func testMatMuls(t *testing.T, open Open) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			p := newPair(t, open)
			outs := []int{37, 8, 13}
			var ws, wfs, bs []*tensor.Tensor
			for i, o := range outs {
				w := randomMatrix(p.rng, fmt.Sprint("w", i), f.dt, o, f.cols, f.aff)
				ws, wfs = append(ws, w), append(wfs, dequantized(t, w))
				bs = append(bs, randomPlain(p.rng, fmt.Sprint("bias", i), tensor.F16, 1, o, 12, 15))
				p.prepare(w, wfs[i], bs[i])
			}
			bs[1] = nil
			norms := p.norms(f.cols)
			for ni, norm := range norms {
				// A block (the unfused path, slow under the emulator) once per format.
				for _, rows := range []int{1, 3} {
					for n := 1; n <= len(ws); n++ {
						for _, bias := range [][]*tensor.Tensor{nil, bs[:n]} {
							if rows > 1 && (ni != 1 || n != len(ws) || bias == nil) {
								continue
							}
							x := p.random(rows, f.cols)
							ys := make([]bufs, n)
							dr, dg := make([]backend.Buffer, n), make([]backend.Buffer, n)
							for i := range ys {
								ys[i] = p.zeros(rows * outs[i])
								dr[i], dg[i] = ys[i].ref, ys[i].gpu
							}
							p.ref.MatMuls(dr, x.ref, norm, wfs[:n], bias, rows)
							p.gpu.MatMuls(dg, x.gpu, norm, ws[:n], bias, rows)
							for i := range ys {
								p.check(fmt.Sprintf("%s rows %d weights %d bias %v out %d", normName(norm), rows, n, bias != nil, i),
									ys[i], rows*outs[i], tol32)
							}
						}
					}
				}
			}
		})
	}
}

func testGLU(t *testing.T, open Open) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			p := newPair(t, open)
			const ffn = 45
			wg := randomMatrix(p.rng, "gate", f.dt, ffn, f.cols, f.aff)
			wu := randomMatrix(p.rng, "up", f.dt, ffn, f.cols, f.aff)
			wgf, wuf := dequantized(t, wg), dequantized(t, wu)
			p.prepare(wg, wu, wgf, wuf)
			for ni, norm := range p.norms(f.cols) {
				for _, act := range []backend.Activation{backend.SiLU, backend.GELUTanh} {
					for _, rows := range []int{1, 3} {
						if rows > 1 && ni != 2 {
							continue // a block (unfused, slow under the emulator) twice per format
						}
						x := p.random(rows, f.cols)
						y := p.zeros(rows * ffn)
						p.ref.GLU(y.ref, x.ref, norm, wgf, wuf, act, rows)
						p.gpu.GLU(y.gpu, x.gpu, norm, wg, wu, act, rows)
						p.check(fmt.Sprintf("%s act %d rows %d", normName(norm), act, rows), y, rows*ffn, tol32)
					}
				}
			}
		})
	}
}

// testDecodeAttention runs a prefill block and decode steps through StoreKV and Attention (q
// and k rotated inside) for every head size with an entry point of its own and one without,
// GQA, windows, partial rotation, and the split of long contexts forced on short ones.
func testDecodeAttention(t *testing.T, open Open) {
	for _, c := range []struct {
		s       backend.AttnShape
		prefill int
		window  int
		split   [2]int // metal.AttentionSplit's arguments; zero: the default
	}{
		{backend.AttnShape{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, Context: 48}, 37, 0, [2]int{}},
		{backend.AttnShape{Layers: 1, Heads: 4, KVHeads: 1, HeadDim: 128, Context: 48}, 20, 0, [2]int{}},
		{backend.AttnShape{Layers: 1, Heads: 2, KVHeads: 2, HeadDim: 256, Context: 48}, 9, 6, [2]int{}},
		{backend.AttnShape{Layers: 1, Heads: 3, KVHeads: 1, HeadDim: 40, Context: 48}, 30, 0, [2]int{}},
		// The split: 38..40 positions in 5 parts, and a window of 11 in 3.
		{backend.AttnShape{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, Context: 48}, 37, 0, [2]int{4, 8}},
		{backend.AttnShape{Layers: 1, Heads: 3, KVHeads: 1, HeadDim: 40, Context: 48}, 30, 11, [2]int{3, 4}},
	} {
		s := c.s
		for _, style := range []backend.RopeStyle{backend.RopeHalf, backend.RopeInterleaved} {
			// Both caches: half (the default) with the half-split style, float32 with the other.
			var opts []metal.Option
			if style == backend.RopeInterleaved {
				opts = append(opts, metal.Float32KV())
			}
			if c.split[0] > 0 {
				opts = append(opts, metal.AttentionSplit(c.split[0], c.split[1]))
			}
			p := newPair(t, open, opts...)
			r := newRope(p.rng, s.HeadDim, style)
			if style == backend.RopeInterleaved {
				r.InvFreq = r.InvFreq[:len(r.InvFreq)-2] // a partial rotation
			}
			kr, kg := p.ref.NewKVCache(s), p.gpu.NewKVCache(s)
			qw, kvw := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
			pos := 0
			for step, rows := range []int{c.prefill, 1, 1, 1} {
				for layer := 0; layer < s.Layers; layer++ {
					q, k, v := p.random(rows, qw), p.random(rows, kvw), p.random(rows, kvw)
					p.ref.StoreKV(kr, layer, pos, rows, k.ref, v.ref, r)
					p.gpu.StoreKV(kg, layer, pos, rows, k.gpu, v.gpu, r)
					o := p.zeros(rows * qw)
					p.ref.Attention(o.ref, q.ref, kr, layer, pos, rows, c.window, r)
					p.gpu.Attention(o.gpu, q.gpu, kg, layer, pos, rows, c.window, r)
					p.check(fmt.Sprintf("%+v window %d split %v style %d step %d layer %d", s, c.window, c.split, style, step, layer),
						o, rows*qw, tol32)
				}
				pos += rows
			}
		}
	}
}
