//go:build !cgo

package cpu

import (
	"encoding/binary"
	"math"

	"github.com/layaapp/laya/engine/tensor"
)

// Without cgo every matmul takes the generic dequantize-and-dot path and the other kernels run
// in Go: correct everywhere, several times slower.

var simdLevel = -1

func kernelKind(*tensor.Tensor) (kind, sdt int, ok bool) { return 0, 0, false }

func kindIsFloat(int) bool { return true }

func kindPermutes(int) bool { return false }

func quantize([]float32, int, int, []uint32, bool, bool, bool, []float32, []float32, []int8) {}

func quantizeRows([]float32, int, int, int, int, []uint32, bool, bool, bool, []float32, []float32, []int8) {
}

// runKernel is never reached: kernelKind reports no kernels without cgo.
func (j *matmulJob) runKernel(lo, hi int) error { return nil }

func (j *attnJob) attend(w int, qs, ks, vs, out []float32, pos, lo, hi int) {
	sc := j.scores[w]
	hd := j.hd
	for i := lo; i < hi; i++ {
		r, h := i/j.heads, i%j.heads
		kvOff := (h / j.group) * hd
		q := qs[i*hd : (i+1)*hd]
		n := pos + r + 1
		m := float32(math.Inf(-1))
		for t := range n {
			s := dot(q, ks[t*j.kvw+kvOff:t*j.kvw+kvOff+hd]) * j.scale
			sc[t] = s
			m = max(m, s)
		}
		var sum float32
		for t := range n {
			e := float32(math.Exp(float64(sc[t] - m)))
			sc[t] = e
			sum += e
		}
		o := out[i*hd : (i+1)*hd]
		clear(o)
		inv := 1 / sum
		for t := range n {
			a := sc[t] * inv
			v := vs[t*j.kvw+kvOff : t*j.kvw+kvOff+hd]
			for d := range o {
				o[d] += a * v[d]
			}
		}
	}
}

func siluMul(dst, gate, up []float32) {
	for i, g := range gate {
		dst[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
	}
}

// geluMul is GELU's tanh form as x*sigmoid(2y), y = sqrt(2/pi)*(x + 0.044715x^3), as the C
// kernels compute it.
func geluMul(dst, gate, up []float32) {
	const k = -2 * 0.7978845608028654
	for i, g := range gate {
		x := float64(g)
		dst[i] = float32(x/(1+math.Exp(k*(x+0.044715*x*x*x)))) * up[i]
	}
}

func streamSum(p []byte) uint64 {
	var a, b uint64
	for ; len(p) >= 16; p = p[16:] {
		a, b = a+binary.LittleEndian.Uint64(p), b+binary.LittleEndian.Uint64(p[8:])
	}
	if len(p) >= 8 {
		a += binary.LittleEndian.Uint64(p)
		p = p[8:]
	}
	for _, v := range p {
		b += uint64(v)
	}
	return a + b
}
