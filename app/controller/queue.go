package controller

import (
	"sync"
	"sync/atomic"
	"time"
)

// inputCap bounds the keys, hotkey presses and dismissals waiting for the input goroutine.
// It only fills if that goroutine stalls; then the overflow flag makes it start over clean.
const inputCap = 1024

// inputKind says what an input is.
type inputKind int

const (
	inKey inputKind = iota
	inHotkey
	inDismiss
)

// input is one user action, in the order the user made them.
type input struct {
	kind      inputKind
	key       Key
	swallowed bool   // what the event tap was told to do with key
	showing   uint64 // the suggestion id the swallow decision was made for
}

// serial runs posted functions one at a time, in order, on one goroutine. Posting never
// blocks: the queue grows instead.
type serial struct {
	mu   sync.Mutex // guards q only; held for an append or a pop, never across a job
	q    []func()
	wake chan struct{}
	busy *atomic.Int64 // the controller's count of posted, unfinished work
}

func newSerial(busy *atomic.Int64) *serial {
	s := &serial{wake: make(chan struct{}, 1), busy: busy}
	go s.run()
	return s
}

func (s *serial) post(f func()) {
	s.busy.Add(1)
	s.mu.Lock()
	s.q = append(s.q, f)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *serial) run() {
	for range s.wake {
		for {
			s.mu.Lock()
			if len(s.q) == 0 {
				s.mu.Unlock()
				break
			}
			f := s.q[0]
			s.q[0] = nil
			s.q = s.q[1:]
			s.mu.Unlock()
			f()
			s.busy.Add(-1)
		}
	}
}

// Flush waits until every input posted so far, and all the work it caused on the worker, is
// done (not the engine's requests in flight). It is for tests and `laya replay`, which drive
// the controller with fakes; the event tap never calls it.
func (c *Controller) Flush() {
	for c.inputs.Load() > 0 || c.busy.Load() > 0 {
		time.Sleep(50 * time.Microsecond)
	}
}

// drainInputs waits for the input goroutine only, for code running on the worker.
func (c *Controller) drainInputs() {
	for c.inputs.Load() > 0 {
		time.Sleep(50 * time.Microsecond)
	}
}

// postInput hands an input to the input goroutine without blocking.
func (c *Controller) postInput(in input) {
	c.inputs.Add(1)
	select {
	case c.in <- in:
	default:
		c.inputs.Add(-1)
		c.overflow.Store(true)
	}
}

func (c *Controller) inputLoop() {
	for in := range c.in {
		c.handle(in)
		c.inputs.Add(-1)
	}
}
