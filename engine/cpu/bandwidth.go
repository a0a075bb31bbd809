package cpu

import (
	"sync"
	"sync/atomic"
	"time"
)

// sink keeps the sums live, so no compiler may drop the reads.
var sink atomic.Uint64

// Bandwidth measures streaming read bandwidth in GB/s over data, which should be the model's
// weights so that it reads the pages decode reads, the way the decode kernels read them: threads
// goroutines each read an equal contiguous share in order, with the kernels' software prefetch
// distance. It reads all of data pass after pass for at least d and at least three passes, and
// returns the rate sustained over them all, which is what a decode of length d can get from a
// machine whose other tenants come and go, and the fastest single pass, closer to the machine's
// peak. A plain Go loop reads less than the kernels on machines where one core cannot keep enough
// misses in flight by itself, which would put a floor below what decode reaches.
func Bandwidth(data [][]byte, threads int, d time.Duration) (sustained, peak float64) {
	parts := shares(data, max(threads, 1))
	var total int
	for _, p := range data {
		total += len(p)
	}
	if total == 0 {
		return 0, 0
	}
	start := time.Now()
	passes := 0
	for ; passes < 3 || time.Since(start) < d; passes++ {
		t0 := time.Now()
		var wg sync.WaitGroup
		for _, share := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var s uint64
				for _, seg := range share {
					s += streamSum(seg)
				}
				sink.Add(s)
			}()
		}
		wg.Wait()
		peak = max(peak, float64(total)/time.Since(t0).Seconds()/1e9)
	}
	return float64(total) * float64(passes) / time.Since(start).Seconds() / 1e9, peak
}

// shares splits the concatenation of data into n contiguous runs of equal length (to a byte),
// each as the segments of data it covers.
func shares(data [][]byte, n int) [][][]byte {
	var total int
	for _, p := range data {
		total += len(p)
	}
	out := make([][][]byte, n)
	off := 0 // offset of data[0] in the concatenation
	for _, p := range data {
		for t := range n {
			lo, hi := total*t/n, total*(t+1)/n
			a, b := max(lo, off), min(hi, off+len(p))
			if a < b {
				out[t] = append(out[t], p[a-off:b-off])
			}
		}
		off += len(p)
	}
	return out
}
