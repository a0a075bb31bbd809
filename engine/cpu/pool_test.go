package cpu

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// countJob counts how often each item runs and which worker ran it.
type countJob struct {
	counts []atomic.Int32
	by     []atomic.Int32 // items run per worker
	slow   int            // worker whose first chunk sleeps, -1 for none
	slept  atomic.Bool
}

func (j *countJob) run(w, lo, hi int) {
	if w == j.slow && j.slept.CompareAndSwap(false, true) {
		time.Sleep(50 * time.Millisecond)
	}
	for i := lo; i < hi; i++ {
		j.counts[i].Add(1)
	}
	j.by[w].Add(int32(hi - lo))
}

func TestPoolRunsEachItemOnce(t *testing.T) {
	for threads := 1; threads <= 4; threads++ {
		p := newPool(threads)
		for _, n := range []int{0, 1, 3, 7, 64, 1000, 1001} {
			for _, chunk := range []int{0, 1, 3, 16, 5000} {
				for round := range 3 { // the same pool, job after job
					j := &countJob{counts: make([]atomic.Int32, n), by: make([]atomic.Int32, threads), slow: -1}
					p.parallel(j, n, chunk)
					for i := range j.counts {
						if c := j.counts[i].Load(); c != 1 {
							t.Fatalf("threads %d, n %d, chunk %d, round %d: item %d ran %d times", threads, n, chunk, round, i, c)
						}
					}
				}
			}
		}
		p.close()
	}
}

// A worker that stalls on its first chunk must not hold up its share: the others take it.
func TestPoolSharesAreTaken(t *testing.T) {
	for _, slow := range []int{0, 1} {
		t.Run(fmt.Sprint("slow worker ", slow), func(t *testing.T) {
			p := newPool(2)
			defer p.close()
			j := &countJob{counts: make([]atomic.Int32, 100), by: make([]atomic.Int32, 2), slow: slow}
			p.parallel(j, 100, 1)
			if got := j.by[1-slow].Load(); got <= 50 {
				t.Fatalf("the other worker ran %d of 100 items while worker %d slept; want more than its share of 50", got, slow)
			}
		})
	}
}
