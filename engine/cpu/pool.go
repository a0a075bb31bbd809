package cpu

import (
	"runtime"
	"sync/atomic"
)

// job is work split over n items; run handles items [lo, hi) on worker w (0 <= w < threads),
// so a job can keep per-worker scratch without locking.
type job interface {
	run(w, lo, hi int)
}

// spinRounds is how many times an idle worker polls for the next job before it sleeps. A decode
// step dispatches a few hundred matmuls with microseconds of serial work between them, so a
// worker that just finished is usually needed again within a few microseconds: polling meets it
// there, where sleeping would cost an OS wake-up per matmul.
const spinRounds = 1 << 14

// pool is a fixed set of goroutines that live as long as the backend. The calling goroutine works
// as worker 0. A job is published by bumping seq; idle workers poll it for a while, then sleep on
// their wake channel.
//
// Each worker owns a contiguous share of a job's items and takes chunks from its front, so that
// in decode each core streams one run of weight rows, which its prefetches cover, rather than
// jumping between chunks that start cold. A worker that runs out takes chunks from the others'
// shares: on a machine shared with other programs a worker that gets descheduled does less of
// the work instead of holding everyone up.
type pool struct {
	threads int
	seq     atomic.Uint64
	cur     job
	pending atomic.Int32 // workers that have not finished cur
	shares  []share
	chunk   int64
	closed  atomic.Bool
	asleep  []atomic.Bool
	wake    []chan struct{}
}

// share is one worker's items [next, end) of the current job, on a cache line of its own.
type share struct {
	next atomic.Int64
	end  int64
	_    [48]byte
}

func newPool(threads int) *pool {
	p := &pool{threads: threads, shares: make([]share, threads), asleep: make([]atomic.Bool, threads),
		wake: make([]chan struct{}, threads)}
	for w := 1; w < threads; w++ {
		p.wake[w] = make(chan struct{}, 1)
		go p.worker(w)
	}
	return p
}

func (p *pool) worker(w int) {
	var seen uint64
	for {
		s := p.seq.Load()
		for i := 0; s == seen && i < spinRounds; i++ {
			s = p.seq.Load()
		}
		if s == seen {
			// Announce sleep before the last look at seq: parallel bumps seq before it looks at
			// asleep, so one of the two sees the other and no job goes unnoticed.
			p.asleep[w].Store(true)
			if s = p.seq.Load(); s == seen {
				<-p.wake[w]
			}
			p.asleep[w].Store(false)
			continue
		}
		seen = s
		if p.closed.Load() {
			return
		}
		// Every worker takes part in every job (one with nothing left to take returns at
		// once), so each acknowledges each seq exactly once.
		p.drain(p.cur, w)
		p.pending.Add(-1)
	}
}

// drain runs chunks of worker w's share, then of the others' in turn.
func (p *pool) drain(j job, w int) {
	for i := range p.threads {
		s := &p.shares[(w+i)%p.threads]
		for {
			lo := s.next.Add(p.chunk) - p.chunk
			if lo >= s.end {
				break
			}
			j.run(w, int(lo), int(min(lo+p.chunk, s.end)))
		}
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
	p.cur = j
	p.chunk = int64(chunk)
	// Shares are whole chunks, so no chunk crosses into the next share.
	nc := (n + chunk - 1) / chunk
	for w := range p.shares {
		s := &p.shares[w]
		s.next.Store(int64(nc * w / p.threads * chunk))
		s.end = int64(min(n, nc*(w+1)/p.threads*chunk))
	}
	p.pending.Store(int32(p.threads - 1))
	p.publish()
	p.drain(j, 0)
	for i := 0; p.pending.Load() != 0; i++ {
		if i >= spinRounds {
			runtime.Gosched() // a worker was descheduled: let it run
		}
	}
	p.cur = nil
}

// publish bumps seq and wakes the workers that went to sleep.
func (p *pool) publish() {
	p.seq.Add(1)
	for w := 1; w < p.threads; w++ {
		if p.asleep[w].Load() {
			select {
			case p.wake[w] <- struct{}{}:
			default:
			}
		}
	}
}

func (p *pool) close() {
	p.closed.Store(true)
	p.publish()
}
