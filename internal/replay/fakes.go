package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/layaapp/laya/app/controller"
)

// clock is virtual time that real engine time moves on: while a request runs, Now adds the
// real time since it started, and when it ends that time is kept.
type clock struct {
	mu      sync.Mutex
	now     time.Time
	running int       // requests in the engine
	since   time.Time // real time the engine became busy
	timers  []*timer
}

type timer struct {
	c       *clock
	at      time.Time
	f       func()
	stopped bool
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *clock) nowLocked() time.Time {
	if c.running > 0 {
		return c.now.Add(time.Since(c.since))
	}
	return c.now
}

func (c *clock) AfterFunc(d time.Duration, f func()) controller.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.nowLocked().Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// next removes the earliest pending timer due by end, moves the time to it and returns its
// function, which the caller runs without the lock.
func (c *clock) next(end time.Time) (func(), bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	best := -1
	for i := 0; i < len(c.timers); {
		t := c.timers[i]
		if t.stopped {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			continue
		}
		if !t.at.After(end) && (best < 0 || t.at.Before(c.timers[best].at)) {
			best = i
		}
		i++
	}
	if best < 0 {
		return nil, false
	}
	t := c.timers[best]
	c.timers = append(c.timers[:best], c.timers[best+1:]...)
	t.stopped = true
	if t.at.After(c.now) {
		c.now = t.at
	}
	return t.f, true
}

// set moves the time on to t (never back).
func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *clock) engineStart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == 0 {
		c.since = time.Now()
	}
	c.running++
}

func (c *clock) engineEnd() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running--; c.running == 0 {
		c.now = c.now.Add(time.Since(c.since))
	}
}

// field is the focused text field: the text typed so far, caret at its end unless an
// insertion is under way.
type field struct {
	mu    sync.Mutex
	units []uint16
	caret int
}

func (f *field) Info() controller.FieldInfo {
	return controller.FieldInfo{App: "laya.replay", ID: 1, Role: "AXTextArea"}
}

func (f *field) Selection() (controller.Range, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return controller.Range{Loc: f.caret}, nil
}

func (f *field) Length() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.units), nil
}

func (f *field) Text(r controller.Range) ([]uint16, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Loc < 0 || r.Len < 0 || r.Loc+r.Len > len(f.units) {
		return nil, errors.New("range outside the text")
	}
	return append([]uint16(nil), f.units[r.Loc:r.Loc+r.Len]...), nil
}

func (f *field) Bounds(r controller.Range) (controller.Rect, error) {
	return controller.Rect{X: float64(r.Loc), H: 16}, nil
}

func (f *field) SetSelectedText(text string) error {
	f.insert(text)
	return nil
}

func (f *field) Close() {}

// insert puts s at the caret and moves the caret after it.
func (f *field) insert(s string) {
	u := utf16.Encode([]rune(s))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.units = append(f.units[:f.caret], append(u, f.units[f.caret:]...)...)
	f.caret += len(u)
}

func (f *field) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(utf16.Decode(f.units))
}

// fields always has the one field focused; no secure input, no input method.
type fields struct{ f *field }

func (fs fields) Focus() (controller.Element, error) { return fs.f, nil }
func (fields) SecureInput() bool                     { return false }
func (fields) Composing() bool                       { return false }

// noKeys is never used: the field takes insertions itself.
type noKeys struct{}

var errNoKeys = errors.New("replay: the field takes insertions itself")

func (noKeys) Type(string) error            { return errNoKeys }
func (noKeys) Paste(string) (func(), error) { return nil, errNoKeys }

// overlay is the ghost text on screen.
type overlay struct {
	mu     sync.Mutex
	text   string
	shown  bool
	events *events
}

func (o *overlay) Show(text string, _ controller.Rect, _ controller.Style) {
	o.mu.Lock()
	o.text, o.shown = text, true
	o.mu.Unlock()
	if strings.TrimSpace(text) != "" {
		o.events.visible()
	}
}

func (o *overlay) Hide() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.text, o.shown = "", false
}

func (o *overlay) current() (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.text, o.shown
}

func (o *overlay) visible() bool {
	_, ok := o.current()
	return ok
}

// timedEngine measures each request's engine time, which also runs the virtual clock.
type timedEngine struct {
	e      controller.Engine
	clock  *clock
	events *events

	mu sync.Mutex
	ds []time.Duration
}

func (t *timedEngine) Complete(ctx context.Context, r controller.Request, onText func(string)) (string, error) {
	t.clock.engineStart()
	start := time.Now()
	text, err := t.e.Complete(ctx, r, onText)
	d := time.Since(start)
	t.clock.engineEnd()
	t.mu.Lock()
	t.ds = append(t.ds, d)
	t.mu.Unlock()
	return text, err
}

func (t *timedEngine) times() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.ds)
}

// events follows the controller's events.
type events struct {
	clock *clock

	mu            sync.Mutex
	requested     int
	ended         int // requests whose end the controller reported
	reqStart      time.Time
	firstVisible  time.Time // zero until the current request shows a character
	shown         int
	cur           bool // something of the latest shown suggestion was accepted
	acceptedSugs  int
	charsAccepted int
	latency       []time.Duration
	failed        error
}

// visible notes the first character of the current request on screen.
func (e *events) visible() {
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.firstVisible.IsZero() {
		e.firstVisible = now
	}
}

func (e *events) observe(ev controller.Event) {
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Kind {
	case controller.Requested:
		e.requested++
		e.reqStart, e.firstVisible = now, time.Time{}
	case controller.Shown:
		e.ended++
		e.shown++
		e.cur = false
		vis := e.firstVisible
		if vis.IsZero() {
			vis = now
		}
		e.latency = append(e.latency, vis.Sub(e.reqStart))
	case controller.Stale, controller.Empty:
		e.ended++
	case controller.Failed:
		if e.failed == nil {
			e.failed = ev.Err
			if e.failed == nil {
				e.failed = errors.New("the controller reported a failure")
			}
		}
		e.ended++
	case controller.Accepted, controller.AcceptedWord:
		e.charsAccepted += ev.Chars
		if !e.cur {
			e.cur = true
			e.acceptedSugs++
		}
	}
}

// err is the first failure the controller reported: of a request, or of an insertion.
func (e *events) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed != nil {
		return fmt.Errorf("replay: %w", e.failed)
	}
	return nil
}

// settled reports whether every request has ended.
func (e *events) settled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended >= e.requested
}
