//go:build cgo

package cpu

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/tensor"
)

// TestMatMulDecodeBufferFailure: when the prefill kernels cannot allocate their buffer of decoded
// weight rows, the step fails with an error (Sync) instead of aborting the process, and the next
// step, with memory available, computes normally.
func TestMatMulDecodeBufferFailure(t *testing.T) {
	c := newCPU(t, 2)
	// The tile kernels that decode weight rows first: AVX2 and up, NEON with dotprod.
	if simdLevel == 0 || (runtime.GOARCH == "arm64" && simdLevel < 2) {
		t.Skipf("kernel level %d has no wide prefill kernels", simdLevel)
	}
	r := rand.New(rand.NewPCG(5, 5))
	const rows, out, cols = 32, 64, 256
	w := randTensor(r, wcase{tensor.Q4_0, 0}, out, cols)
	x, dst := bufOf(c, randVec(r, rows*cols)), c.NewBuffer(rows*out)
	setDecodeLimit(1)
	c.MatMul(dst, x, w, nil, rows)
	setDecodeLimit(0)
	if err := c.Sync(); err == nil || !strings.Contains(err.Error(), "no memory") {
		t.Fatalf("MatMul with no memory for decoding: %v", err)
	}
	c.MatMul(dst, x, w, nil, rows)
	if err := c.Sync(); err != nil {
		t.Fatalf("MatMul after the limit is lifted: %v", err)
	}
	want, _ := refMatMul(dequant(t, w), read(t, c, x), nil, rows)
	for i, v := range read(t, c, dst) {
		if d := float64(v) - want[i]; d > 0.1 || d < -0.1 {
			t.Fatalf("out %d = %v, want %v", i, v, want[i])
		}
	}
}
