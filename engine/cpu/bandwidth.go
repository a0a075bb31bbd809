package cpu

import (
	"sync"
	"time"
)

// MemoryBandwidth measures streaming read bandwidth in GB/s the way the decode kernels read
// weights: threads goroutines each read their share of a buffer of size bytes (make it larger
// than any cache) in order, with the decode kernels' software prefetch distance; best of five passes. A plain
// Go loop reads less than the kernels on machines where one core cannot keep enough misses in
// flight by itself, which would put a floor below what decode reaches.
func MemoryBandwidth(size, threads int) float64 {
	threads = max(threads, 1)
	buf := make([]uint64, size/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	per := len(buf) / threads
	sums := make([]uint64, threads)
	best := 0.0
	for range 5 {
		var wg sync.WaitGroup
		start := time.Now()
		for t := range threads {
			wg.Add(1)
			go func(part []uint64) {
				defer wg.Done()
				sums[t] = streamSum(part)
			}(buf[t*per : (t+1)*per])
		}
		wg.Wait()
		best = max(best, float64(per*threads*8)/time.Since(start).Seconds()/1e9)
	}
	return best
}
