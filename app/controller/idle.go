package controller

import (
	"sync"
	"time"
)

// Idle releases the model when no request has used it for a while, and at once when the
// system runs short of memory; the next request loads it again. Its methods are safe for
// concurrent use, and unload runs outside its lock.
type Idle struct {
	clock  Clock
	unload func()

	mu     sync.Mutex
	after  time.Duration // 0: never on a timer
	loaded bool
	timer  Timer
	gen    uint64 // makes a stopped timer that fires anyway harmless
}

// NewIdle returns an Idle that calls unload after a quiet spell of after (0 = never).
func NewIdle(clock Clock, after time.Duration, unload func()) *Idle {
	if clock == nil {
		clock = SystemClock{}
	}
	return &Idle{clock: clock, after: after, unload: unload}
}

// Used says the model is loaded and was just used (a request began or ended, or a load
// finished): the quiet spell starts over.
func (i *Idle) Used() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.loaded = true
	i.restart()
}

// SetAfter changes the quiet spell; 0 keeps the model loaded.
func (i *Idle) SetAfter(d time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.after = d
	if i.loaded {
		i.restart()
	}
}

// Pressure releases the model now: the system asked processes to give memory back.
func (i *Idle) Pressure() { i.release(0, false) }

// Loaded reports whether the model is loaded as far as Idle knows.
func (i *Idle) Loaded() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.loaded
}

// restart stops the pending timer and, with a quiet spell set, starts a new one; mu held.
func (i *Idle) restart() {
	i.gen++
	if i.timer != nil {
		i.timer.Stop()
		i.timer = nil
	}
	if i.after > 0 {
		gen := i.gen
		i.timer = i.clock.AfterFunc(i.after, func() { i.release(gen, true) })
	}
}

func (i *Idle) release(gen uint64, timed bool) {
	i.mu.Lock()
	if !i.loaded || timed && gen != i.gen {
		i.mu.Unlock()
		return
	}
	i.loaded = false
	i.gen++
	if i.timer != nil {
		i.timer.Stop()
		i.timer = nil
	}
	i.mu.Unlock()
	i.unload()
}
