package cpu

import (
	"sync"
	"sync/atomic"
)

// job is work split over n items; run handles items [lo, hi) on worker w (0 <= w < threads),
// so a job can keep per-worker scratch without locking.
type job interface {
	run(w, lo, hi int)
}

// pool is a fixed set of goroutines that live as long as the backend, so a matmul costs a channel
// send per worker instead of goroutine creation. The calling goroutine works as worker 0.
// Workers take chunks from a shared counter: on a machine shared with other programs a worker
// that gets descheduled does less of the work instead of holding everyone up.
type pool struct {
	threads int
	start   []chan job
	done    sync.WaitGroup
	next    atomic.Int64
	n       int64
	chunk   int64
}

func newPool(threads int) *pool {
	p := &pool{threads: threads, start: make([]chan job, threads)}
	for w := 1; w < threads; w++ {
		p.start[w] = make(chan job, 1)
		go p.worker(w)
	}
	return p
}

func (p *pool) worker(w int) {
	for j := range p.start[w] {
		p.drain(j, w)
		p.done.Done()
	}
}

func (p *pool) drain(j job, w int) {
	for {
		lo := p.next.Add(p.chunk) - p.chunk
		if lo >= p.n {
			return
		}
		j.run(w, int(lo), int(min(lo+p.chunk, p.n)))
	}
}

// parallel runs j over [0, n) in chunks of chunk items and returns when all are done.
func (p *pool) parallel(j job, n, chunk int) {
	chunk = max(chunk, 1)
	workers := min(p.threads, (n+chunk-1)/chunk)
	if workers <= 1 {
		if n > 0 {
			j.run(0, 0, n)
		}
		return
	}
	p.n, p.chunk = int64(n), int64(chunk)
	p.next.Store(0)
	p.done.Add(workers - 1)
	for w := 1; w < workers; w++ {
		p.start[w] <- j
	}
	p.drain(j, 0)
	p.done.Wait()
}

func (p *pool) close() {
	for w := 1; w < p.threads; w++ {
		close(p.start[w])
	}
}
