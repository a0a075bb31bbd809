package kerneltest

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// recurrent returns both backends' backend.Recurrent.
func (p *pair) recurrent() (ref, gpu backend.Recurrent) {
	p.t.Helper()
	ref, ok1 := p.ref.(backend.Recurrent)
	gpu, ok2 := p.gpu.(backend.Recurrent)
	if !ok1 || !ok2 {
		p.t.Fatal("a backend lacks the recurrent operations")
	}
	return ref, gpu
}

func f32Tensor(name string, shape []int, v []float32) *tensor.Tensor {
	data := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	return &tensor.Tensor{Name: name, DType: tensor.F32, Shape: shape, Data: data}
}

// testRecurrent compares the recurrent layers' operations with the CPU backend, on sizes that
// are multiples of nothing the kernels tile by and in runs split as prefill and decode split
// them (the state carried between calls, position 0 ignoring what the state holds).
func testRecurrent(t *testing.T, open Open) {
	t.Run("CausalConv", func(t *testing.T) {
		for _, kind := range []backend.ConvKind{backend.ConvSiLU, backend.ConvGated} {
			for _, k := range []int{3, 4} {
				p := newPair(t, open)
				ref, gpu := p.recurrent()
				const ch = 37
				in := ch
				if kind == backend.ConvGated {
					in = 3 * ch
				}
				w := randomPlain(p.rng, "conv", tensor.BF16, ch, k, 13, 15)
				p.prepare(w)
				state := p.random(k-1, ch) // garbage that position 0 must ignore
				pos := 0
				for i, rows := range []int{5, 1, 1, 17} {
					x := p.random(rows, in)
					y := p.zeros(rows * ch)
					ref.CausalConv(y.ref, x.ref, w, state.ref, kind, pos, rows)
					gpu.CausalConv(y.gpu, x.gpu, w, state.gpu, kind, pos, rows)
					p.check(fmt.Sprintf("kind %d kernel %d call %d", kind, k, i), y, rows*ch, tol32)
					pos += rows
				}
				p.check(fmt.Sprintf("kind %d kernel %d state", kind, k), state, (k-1)*ch, tol32)
			}
		}
	})
	t.Run("GatedDelta", func(t *testing.T) {
		for _, llama := range []bool{false, true} {
			p := newPair(t, open)
			ref, gpu := p.recurrent()
			s := backend.DeltaShape{KHeads: 2, VHeads: 6, KDim: 12, VDim: 10, Tiled: llama, NegExpA: llama}
			aw, dtb := make([]float32, s.VHeads), make([]float32, s.VHeads)
			for h := range aw {
				aw[h] = float32(math.Log(0.01 + 2*p.rng.Float64()))
				if llama {
					aw[h] = -float32(math.Exp(float64(aw[h])))
				}
				dtb[h] = float32(p.rng.NormFloat64())
			}
			aT, dtT := f32Tensor("A", []int{s.VHeads}, aw), f32Tensor("dt_bias", []int{s.VHeads}, dtb)
			p.prepare(aT, dtT)
			width := 2*s.KHeads*s.KDim + s.VHeads*s.VDim
			state := p.random(s.VHeads, s.KDim*s.VDim)
			pos := 0
			for i, rows := range []int{70, 1, 1, 9} {
				qkv, a, b := p.random(rows, width), p.random(rows, s.VHeads), p.random(rows, s.VHeads)
				y := p.zeros(rows * s.VHeads * s.VDim)
				ref.GatedDelta(y.ref, qkv.ref, a.ref, b.ref, aT, dtT, state.ref, s, pos, rows)
				gpu.GatedDelta(y.gpu, qkv.gpu, a.gpu, b.gpu, aT, dtT, state.gpu, s, pos, rows)
				p.check(fmt.Sprintf("llama.cpp order %v call %d", llama, i), y, rows*s.VHeads*s.VDim, tol32)
				pos += rows
			}
			p.check(fmt.Sprintf("llama.cpp order %v state", llama), state, s.StateLen(), tol32)
		}
	})
	t.Run("GatedRMSNormSplitSigmoidCopy", func(t *testing.T) {
		p := newPair(t, open)
		ref, gpu := p.recurrent()
		const rows, n = 7, 150
		w := randomPlain(p.rng, "norm", tensor.BF16, 1, n, 13, 15)
		w.Shape = []int{n}
		p.prepare(w)
		x, z := p.random(rows, n), p.random(rows, n)
		y := p.zeros(rows * n)
		ref.GatedRMSNorm(y.ref, x.ref, z.ref, w, rows, 1e-6)
		gpu.GatedRMSNorm(y.gpu, x.gpu, z.gpu, w, rows, 1e-6)
		p.check("gated rmsnorm", y, rows*n, tol32)

		const blocks, half = 9, 13
		src := p.random(blocks, 2*half)
		qa, qb := p.zeros(blocks*half), p.zeros(blocks*half)
		ref.SplitHeads(qa.ref, qb.ref, src.ref, blocks, half)
		gpu.SplitHeads(qa.gpu, qb.gpu, src.gpu, blocks, half)
		p.check("split heads: first halves", qa, blocks*half, 0)
		p.check("split heads: second halves", qb, blocks*half, 0)

		ref.SigmoidMul(qa.ref, qb.ref, blocks*half)
		gpu.SigmoidMul(qa.gpu, qb.gpu, blocks*half)
		p.check("sigmoid mul", qa, blocks*half, tol32)

		orig, c := p.random(rows, n), p.zeros(rows*n)
		ref.Copy(c.ref, orig.ref, rows*n-5)
		gpu.Copy(c.gpu, orig.gpu, rows*n-5)
		p.check("copy", c, rows*n, 0)
	})
}
