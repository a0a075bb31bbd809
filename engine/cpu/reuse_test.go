package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine/tensor"
)

// TestQuantizedInputReuse checks that matmuls of one input quantize it once, and that every
// write to that input, by any op or by a matmul whose output overlaps it, makes the next matmul
// quantize it again: each result must equal a fresh backend's.
func TestQuantizedInputReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const cols = 256
	w1, w2 := randTensor(r, wcase{tensor.Q4_0, 0}, 64, cols), randTensor(r, wcase{tensor.Q4_0, 0}, 48, cols)
	a8 := randTensor(r, wcase{tensor.Affine, 8}, 32, cols)
	for a8.GroupSize != 64 {
		a8 = randTensor(r, wcase{tensor.Affine, 8}, 32, cols)
	}
	if _, _, ok := kernelKind(w1); !ok {
		t.Skip("no quantized kernels in this build (cgo off): nothing is quantized")
	}
	for _, rows := range []int{1, 3, 40} {
		c := newCPU(t, 2)
		vals := randVec(r, rows*cols)
		x := bufOf(c, vals)
		fresh := func(w *tensor.Tensor, in []float32) []float32 {
			f := newCPU(t, 2)
			out := f.NewBuffer(rows * w.Shape[0])
			f.MatMul(out, bufOf(f, in), w, nil, rows)
			return read(t, f, out)
		}
		check := func(step string, w *tensor.Tensor, quantized int) {
			t.Helper()
			out := c.NewBuffer(rows * w.Shape[0])
			c.MatMul(out, x, w, nil, rows)
			if got, want := read(t, c, out), fresh(w, read(t, c, x)); !slices.Equal(got, want) {
				t.Fatalf("rows %d, %s: result differs from a fresh backend's", rows, step)
			}
			if c.quantizations != quantized {
				t.Fatalf("rows %d, %s: %d quantizations, want %d", rows, step, c.quantizations, quantized)
			}
		}
		check("first matmul", w1, 1)
		check("same input, other weights", w2, 1)
		c.Add(x, bufOf(c, randVec(r, rows*cols)), rows*cols)
		check("after Add", w2, 2)
		c.SiLUMul(x, x, x, rows*cols)
		check("after SiLUMul", w1, 3)
		// A matmul writing into x (its output, 64 per row, overlaps x's first rows) uses the
		// quantization it finds, then drops it.
		c.MatMul(c.View(x, 0, rows*64), x, w1, nil, rows)
		check("after a matmul into x", w1, 4)
		check("again", w2, 4)
		other := bufOf(c, vals)
		check("unrelated buffer written", w1, 4)
		c.Add(other, other, rows*cols)
		check("after a write elsewhere", w1, 5)
		// Prefill's activations of 64-group weights share a scale per pair of blocks (8-bit
		// Affine keeps Q4_0's element order, so only that differs).
		want := 5
		if rows >= 16 {
			want = 6
		}
		check("8-bit Affine with 64-groups", a8, want)
	}
}
