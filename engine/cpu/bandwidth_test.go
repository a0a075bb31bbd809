package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// streamSum must read every word once, whatever the length's remainder modulo a cache line.
func TestStreamSum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{0, 1, 7, 8, 9, 1000, 4097, 100003} {
		p := make([]uint64, n)
		var want uint64
		for i := range p {
			p[i] = r.Uint64()
			want += p[i]
		}
		if got := streamSum(p); got != want {
			t.Errorf("%d words: sum %#x, want %#x", n, got, want)
		}
	}
}

func TestMemoryBandwidth(t *testing.T) {
	if bw := MemoryBandwidth(8<<20, 2); !(bw > 0) || math.IsInf(bw, 0) {
		t.Fatalf("MemoryBandwidth = %v GB/s", bw)
	}
}
