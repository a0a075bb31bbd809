package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/layaapp/laya/config"
)

// gate blocks every call into a fake "other app" while closed, as a hung app would.
type gate struct {
	mu      sync.Mutex
	blocked chan struct{} // nil while open
	waiting int           // calls blocked now
}

func (g *gate) pass() {
	if g == nil {
		return
	}
	g.mu.Lock()
	ch := g.blocked
	if ch != nil {
		g.waiting++
	}
	g.mu.Unlock()
	if ch != nil {
		<-ch
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}
}

func (g *gate) close() {
	g.mu.Lock()
	g.blocked = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) open() {
	g.mu.Lock()
	if g.blocked != nil {
		close(g.blocked)
		g.blocked = nil
	}
	g.mu.Unlock()
}

func (g *gate) stuck() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

// fakeElem is a text field holding UTF-16 text, like an AX element.
type fakeElem struct {
	mu         sync.Mutex
	info       FieldInfo
	text       []uint16
	sel        Range
	emptyCaret bool   // Bounds of a zero-length range is empty, as in many apps
	onRead     func() // runs as the controller reads the selection
	boundsLog  []Range
	gate       *gate
	// settable makes SetSelectedText succeed; the text then appears after lag more reads of
	// the selection (Chromium applies a set asynchronously). lag < 0: never appears.
	settable bool
	lag      int
	pending  []string // sets accepted, not yet applied
	sets     []string
	closed   int
	selErr   error // Selection fails (an AX read that timed out)
}

func newElem(app string, id uint64, before, after string) *fakeElem {
	b := utf16.Encode([]rune(before))
	return &fakeElem{
		info: FieldInfo{App: app, ID: id, Role: "AXTextArea"},
		text: append(b, utf16.Encode([]rune(after))...),
		sel:  Range{len(b), 0},
	}
}

func (e *fakeElem) Info() FieldInfo { return e.info }
func (e *fakeElem) Selection() (Range, error) {
	e.gate.pass()
	if e.onRead != nil {
		e.onRead()
	}
	e.mu.Lock()
	if e.selErr != nil {
		defer e.mu.Unlock()
		return Range{}, e.selErr
	}
	if len(e.pending) > 0 && e.lag >= 0 {
		if e.lag == 0 {
			for _, s := range e.pending {
				e.insertLocked(s)
			}
			e.pending = nil
		} else {
			e.lag--
		}
	}
	defer e.mu.Unlock()
	return e.sel, nil
}

func (e *fakeElem) SetSelectedText(s string) error {
	e.gate.pass()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.settable {
		return errors.New("kAXSelectedText is not settable")
	}
	e.sets = append(e.sets, s)
	e.pending = append(e.pending, s)
	return nil
}

func (e *fakeElem) Length() (int, error) {
	e.gate.pass()
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.text), nil
}
func (e *fakeElem) Text(r Range) ([]uint16, error) {
	e.gate.pass()
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.Loc < 0 || r.Len < 0 || r.Loc+r.Len > len(e.text) {
		return nil, errors.New("range out of bounds")
	}
	return append([]uint16(nil), e.text[r.Loc:r.Loc+r.Len]...), nil
}

// Bounds lays characters out 10 points wide, 20 points per line, the first line at y=500
// (Cocoa's y grows upwards).
func (e *fakeElem) Bounds(r Range) (Rect, error) {
	e.gate.pass()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.boundsLog = append(e.boundsLog, r)
	if r.Len == 0 && e.emptyCaret {
		return Rect{}, nil
	}
	line, col := 0, 0
	for _, u := range e.text[:min(r.Loc, len(e.text))] {
		col++
		if u == '\n' {
			line, col = line+1, 0
		}
	}
	return Rect{X: 100 + 10*float64(col), Y: 500 - 20*float64(line), W: 10 * float64(r.Len), H: 16}, nil
}
func (e *fakeElem) Close() {
	e.mu.Lock()
	e.closed++
	e.mu.Unlock()
}

// typeText inserts s at the caret, as the host app would.
func (e *fakeElem) typeText(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.insertLocked(s)
}

func (e *fakeElem) insertLocked(s string) {
	u := utf16.Encode([]rune(s))
	t := append([]uint16(nil), e.text[:e.sel.Loc]...)
	t = append(t, u...)
	e.text = append(t, e.text[e.sel.Loc:]...)
	e.sel.Loc += len(u)
}

func (e *fakeElem) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return string(utf16.Decode(e.text))
}

type fakeFields struct {
	mu        sync.Mutex
	focus     *fakeElem
	secure    bool
	composing bool
	gate      *gate
}

func (f *fakeFields) Composing() bool {
	f.gate.pass()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.composing
}

func (f *fakeFields) setComposing(on bool) {
	f.mu.Lock()
	f.composing = on
	f.mu.Unlock()
}

func (f *fakeFields) Focus() (Element, error) {
	f.gate.pass()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.focus == nil {
		return nil, errors.New("nothing focused")
	}
	return f.focus, nil
}
func (f *fakeFields) SecureInput() bool {
	f.gate.pass()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.secure
}
func (f *fakeFields) focused() *fakeElem {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.focus
}

func (f *fakeFields) set(e *fakeElem) {
	f.mu.Lock()
	f.focus = e
	f.mu.Unlock()
}

type showCall struct {
	text string
	at   Rect
}

type fakeOverlay struct {
	mu      sync.Mutex
	shows   []showCall
	visible bool
}

func (o *fakeOverlay) Show(text string, at Rect, _ Style) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shows = append(o.shows, showCall{text, at})
	o.visible = true
}
func (o *fakeOverlay) Hide() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.visible = false
}
func (o *fakeOverlay) state() (bool, []showCall) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.visible, append([]showCall(nil), o.shows...)
}

// fakeKeys types and pastes into the focused fake element, like CGEvent typing would.
type fakeKeys struct {
	mu       sync.Mutex
	fields   *fakeFields
	typed    []string // chunks
	pasted   []string
	restored int
	// restoredEarly counts clipboard restores before the paste reached the field.
	restoredEarly int
	fail          error
	// pasteLag delays a paste's arrival by that many reads of the selection.
	pasteLag int
}

func (k *fakeKeys) Type(text string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fail != nil {
		return k.fail
	}
	k.typed = append(k.typed, text)
	k.fields.focused().typeText(text)
	return nil
}

func (k *fakeKeys) Paste(text string) (func(), error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fail != nil {
		return nil, k.fail
	}
	k.pasted = append(k.pasted, text)
	e := k.fields.focused()
	e.mu.Lock()
	e.pending = append(e.pending, text)
	e.lag = k.pasteLag
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		early := len(e.pending) > 0
		e.mu.Unlock()
		k.mu.Lock()
		k.restored++
		if early {
			k.restoredEarly++
		}
		k.mu.Unlock()
	}, nil
}

func (k *fakeKeys) got() (typed, pasted []string, restored int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.typed...), append([]string(nil), k.pasted...), k.restored
}

type engineCall struct {
	req    Request
	ctx    context.Context
	onText func(string)
	reply  chan engineReply
}

type engineReply struct {
	text string
	err  error
}

// fakeEngine hands each request to the test and waits for its answer (or cancellation).
type fakeEngine struct{ calls chan *engineCall }

func (f *fakeEngine) Complete(ctx context.Context, r Request, onText func(string)) (string, error) {
	c := &engineCall{req: r, ctx: ctx, onText: onText, reply: make(chan engineReply, 1)}
	f.calls <- c
	rep := <-c.reply
	return rep.text, rep.err
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves time forward and runs the timers that come due, outside the clock's lock.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			due = append(due, t)
		} else if !t.stopped {
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

type rig struct {
	t      *testing.T
	c      *Controller
	fields *fakeFields
	ov     *fakeOverlay
	keys   *fakeKeys
	gate   *gate
	sleeps []time.Duration // as the worker asked; the fake does not wait
	eng    *fakeEngine
	clock  *fakeClock
	events chan Event
}

func newRig(t *testing.T, cfg config.Config, el *fakeElem) *rig {
	g := &gate{}
	if el != nil {
		el.gate = g
	}
	r := &rig{
		t:      t,
		fields: &fakeFields{focus: el, gate: g},
		gate:   g,
		ov:     &fakeOverlay{},
		eng:    &fakeEngine{calls: make(chan *engineCall, 8)},
		clock:  &fakeClock{now: time.Unix(1000, 0)},
		events: make(chan Event, 256),
	}
	r.keys = &fakeKeys{fields: r.fields}
	var smu sync.Mutex
	r.c = New(Deps{
		Fields: r.fields, Overlay: r.ov, Keys: r.keys, Engine: r.eng, Clock: r.clock,
		Sleep: func(d time.Duration) {
			smu.Lock()
			r.sleeps = append(r.sleeps, d)
			smu.Unlock()
		},
		Observe: func(e Event) { r.events <- e },
	}, cfg)
	return r
}

// key presses k and waits until the controller has handled it.
func (r *rig) key(k Key) bool {
	r.t.Helper()
	swallowed := r.c.KeyDown(k)
	r.c.Flush()
	return swallowed
}

// focus moves focus to e, which shares the rig's gate.
func (r *rig) focus(e *fakeElem) {
	if e != nil {
		e.gate = r.gate
	}
	r.fields.set(e)
}

// call waits for the engine to be asked.
func (r *rig) call() *engineCall {
	r.t.Helper()
	select {
	case c := <-r.eng.calls:
		return c
	case <-time.After(5 * time.Second):
		r.t.Fatal("engine was never called")
		return nil
	}
}

func (r *rig) noCall() {
	r.t.Helper()
	select {
	case c := <-r.eng.calls:
		r.t.Fatalf("engine called unexpectedly with %+v", c.req)
	case <-time.After(20 * time.Millisecond):
	}
}

// until reads events up to one of kind and returns it, failing on timeout.
func (r *rig) until(kind EventKind) Event {
	r.t.Helper()
	for {
		select {
		case e := <-r.events:
			if e.Kind == kind {
				return e
			}
		case <-time.After(5 * time.Second):
			r.t.Fatalf("no event of kind %d", kind)
		}
	}
}

// advance moves the fake clock and waits for the work its timers posted.
func (r *rig) advance(d time.Duration) {
	r.clock.Advance(d)
	r.c.Flush()
}

// piece streams s from the engine and waits for the controller to show it.
func (r *rig) piece(c *engineCall, s string) {
	c.onText(s)
	r.c.Flush()
}
