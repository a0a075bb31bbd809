package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// TestQuantizedInputReuse checks that the named operations quantize their input once for the
// weights that share a quantization, and that each result equals a separate MatMul's bit for
// bit: MatMuls of three weights, with and without a folded norm, and GLU.
func TestQuantizedInputReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const cols, ffn = 256, 64
	w1, w2 := randTensor(r, wcase{tensor.Q4_0, 0}, 64, cols), randTensor(r, wcase{tensor.Q4_0, 0}, 48, cols)
	a4 := randTensor(r, wcase{tensor.Affine, 4}, 32, cols)
	a8 := randTensor(r, wcase{tensor.Affine, 8}, 32, cols)
	for a8.GroupSize != 64 {
		a8 = randTensor(r, wcase{tensor.Affine, 8}, 32, cols)
	}
	gate, up := randTensor(r, wcase{tensor.Q4_0, 0}, ffn, cols), randTensor(r, wcase{tensor.Q4_0, 0}, ffn, cols)
	if _, _, ok := kernelKind(w1); !ok {
		t.Skip("no quantized kernels in this build (cgo off): nothing is quantized")
	}
	norm := backend.Norm{W: f32Tensor("norm", randVec(r, cols)), Eps: 1e-5, Offset: 0.5}
	for _, rows := range []int{1, 3, 40} {
		c := newCPU(t, 2)
		vals := randVec(r, rows*cols)
		x := bufOf(c, vals)
		// The separate MatMuls on a fresh backend, of x normalized by RMSNorm when norm is set.
		separate := func(n backend.Norm, ws ...*tensor.Tensor) [][]float32 {
			f := newCPU(t, 2)
			in := bufOf(f, vals)
			if n.W != nil {
				f.RMSNorm(in, in, n.W, rows, n.Eps, n.Offset)
			}
			var outs [][]float32
			for _, w := range ws {
				out := f.NewBuffer(rows * w.Shape[0])
				f.MatMul(out, in, w, nil, rows)
				outs = append(outs, read(t, f, out))
			}
			return outs
		}
		check := func(step string, n backend.Norm, quantized int, ws ...*tensor.Tensor) {
			t.Helper()
			before := c.quantizations
			dst := make([]backend.Buffer, len(ws))
			for i, w := range ws {
				dst[i] = c.NewBuffer(rows * w.Shape[0])
			}
			c.MatMuls(dst, x, n, ws, nil, rows)
			want := separate(n, ws...)
			for i := range ws {
				if got := read(t, c, dst[i]); !slices.Equal(got, want[i]) {
					t.Fatalf("rows %d, %s: output %d differs from a separate MatMul's", rows, step, i)
				}
			}
			if got := c.quantizations - before; got != quantized {
				t.Fatalf("rows %d, %s: %d quantizations, want %d", rows, step, got, quantized)
			}
		}
		check("three weights", backend.Norm{}, 1, w1, w2, w1)
		check("three weights, norm folded", norm, 1, w1, w2, w1)
		// 4-bit Affine takes its activations in another element order: each change of order
		// quantizes again.
		check("permuted and plain", backend.Norm{}, 3, w1, a4, w2)
		// Prefill's activations of 64-group weights share a scale per pair of blocks (8-bit
		// Affine keeps Q4_0's element order, so only that differs).
		pairs := 1
		if rows >= 16 {
			pairs = 2
		}
		check("8-bit Affine with 64-groups", backend.Norm{}, pairs, w1, a8)

		before := c.quantizations
		dst := c.NewBuffer(rows * ffn)
		c.GLU(dst, x, norm, gate, up, backend.SiLU, rows)
		if got := c.quantizations - before; got != 1 {
			t.Fatalf("rows %d, GLU: %d quantizations, want 1", rows, got)
		}
		gu := separate(norm, gate, up)
		want := make([]float32, rows*ffn)
		siluMul(want, gu[0], gu[1])
		if got := read(t, c, dst); !slices.Equal(got, want) {
			t.Fatalf("rows %d, GLU: differs from MatMuls and SiLU", rows)
		}
	}
}
