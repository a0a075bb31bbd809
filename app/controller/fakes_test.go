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

// fakeElem is a text field holding UTF-16 text, like an AX element.
type fakeElem struct {
	mu         sync.Mutex
	info       FieldInfo
	text       []uint16
	sel        Range
	emptyCaret bool   // Bounds of a zero-length range is empty, as in many apps
	onRead     func() // runs as the controller reads the selection
	boundsLog  []Range
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
	if e.onRead != nil {
		e.onRead()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sel, nil
}
func (e *fakeElem) Length() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.text), nil
}
func (e *fakeElem) Text(r Range) ([]uint16, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.Loc < 0 || r.Len < 0 || r.Loc+r.Len > len(e.text) {
		return nil, errors.New("range out of bounds")
	}
	return append([]uint16(nil), e.text[r.Loc:r.Loc+r.Len]...), nil
}

// Bounds lays characters out 10 points wide on one line at y=500.
func (e *fakeElem) Bounds(r Range) (Rect, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.boundsLog = append(e.boundsLog, r)
	if r.Len == 0 && e.emptyCaret {
		return Rect{}, nil
	}
	return Rect{X: 100 + 10*float64(r.Loc), Y: 500, W: 10 * float64(r.Len), H: 16}, nil
}
func (e *fakeElem) Close() {}

// typeText inserts s at the caret, as the host app would.
func (e *fakeElem) typeText(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
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
	mu     sync.Mutex
	focus  *fakeElem
	secure bool
}

func (f *fakeFields) Focus() (Element, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.focus == nil {
		return nil, errors.New("nothing focused")
	}
	return f.focus, nil
}
func (f *fakeFields) SecureInput() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.secure
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

// fakeInserter types into the fake element, like CGEvent typing would.
type fakeInserter struct {
	mu   sync.Mutex
	got  []string
	fail error
}

func (in *fakeInserter) Insert(e Element, text string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.fail != nil {
		return in.fail
	}
	in.got = append(in.got, text)
	e.(*fakeElem).typeText(text)
	return nil
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
	ins    *fakeInserter
	eng    *fakeEngine
	clock  *fakeClock
	events chan Event
}

func newRig(t *testing.T, cfg config.Config, el *fakeElem) *rig {
	r := &rig{
		t:      t,
		fields: &fakeFields{focus: el},
		ov:     &fakeOverlay{},
		ins:    &fakeInserter{},
		eng:    &fakeEngine{calls: make(chan *engineCall, 8)},
		clock:  &fakeClock{now: time.Unix(1000, 0)},
		events: make(chan Event, 256),
	}
	r.c = New(Deps{
		Fields: r.fields, Overlay: r.ov, Inserter: r.ins, Engine: r.eng, Clock: r.clock,
		Observe: func(e Event) { r.events <- e },
	}, cfg)
	return r
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
