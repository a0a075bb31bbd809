package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/hotkey"
)

// Default bounds on the text read around the caret, in code points. The engine's prompt budget
// is tokens, but AX reads are cheap and a bound in characters keeps them so.
const (
	DefaultBefore = 3000
	DefaultAfter  = 1000
)

// repositionDelay is how long after accepting a word the rest of the suggestion reappears at
// the moved caret.
const repositionDelay = 50 * time.Millisecond

// Deps are the controller's connections to the world. Observe and Sleep may be nil.
type Deps struct {
	Fields  FocusedField
	Overlay Overlay
	Keys    Keyboard
	Engine  Engine
	Clock   Clock
	// Sleep pauses the worker between polls of an insertion and between typed chunks;
	// nil is time.Sleep.
	Sleep func(time.Duration)
	// Before and After bound the text read around the caret, in code points; 0 is the default.
	Before, After int
	// Observe receives every Event, possibly with the controller's lock held: it must not call
	// the controller.
	Observe func(Event)
}

// EventKind says what happened.
type EventKind int

// Event kinds.
const (
	Requested    EventKind = iota // a completion request was sent to the engine
	Shown                         // a suggestion is on screen; Latency is hotkey/pause to show
	Accepted                      // the whole suggestion was inserted
	AcceptedWord                  // its next word was inserted
	Dismissed                     // it was hidden without inserting
	Refused                       // the field may not or cannot be read; Reason says why
	Canceled                      // an in-flight request was canceled by a keystroke or focus change
	Stale                         // a result arrived for a request no longer current; dropped
	Empty                         // the engine had nothing to suggest
	Failed                        // the engine or an insertion failed; Err says how
)

// Event reports one step, for the status line and logs.
type Event struct {
	Kind    EventKind
	App     string
	Reason  string
	Err     error
	Latency time.Duration
	Chars   int // Accepted and AcceptedWord: the characters (code points) inserted
}

// Key is one key press seen by the event tap.
type Key struct {
	Code hotkey.Key
	Mods hotkey.Modifier
	Text string // the characters it types, "" for none
}

// pending is the request in flight.
type pending struct {
	cancel   context.CancelFunc
	el       Element
	info     FieldInfo
	caret    int // UTF-16 offset
	length   int // field length in UTF-16 units when captured
	rect     Rect
	started  time.Time
	partial  strings.Builder // streamed so far
	checking bool            // a focus check before the first piece shows is on the worker
	visible  bool            // partial is on screen
	id       uint64          // the suggestion id once visible
}

// shown is the suggestion on screen.
type shown struct {
	id    uint64
	text  string
	el    Element
	caret int    // where the remaining text would be inserted
	typed string // what the user typed through, for Backspace
	ver   uint64 // bumped by every change of text or caret
	style Style
}

// tapState is what the event tap decides from: an immutable snapshot the controller replaces
// (under its lock) whenever it changes, and the tap loads without waiting for anything.
type tapState struct {
	hotkey, acceptWord hotkey.Spec
	showing            uint64 // id of the suggestion on screen, 0 for none
}

// Controller is the app's state machine. All methods are safe for concurrent use.
//
// Three kinds of goroutine touch it. KeyDown, Hotkey and Dismiss only post the user's action
// to the input goroutine and return; KeyDown decides swallow-or-pass from the tapState
// snapshot, so the event tap never waits for a lock, an Accessibility call or an insertion.
// The input goroutine applies actions to the state under mu. Every call into another app
// (Accessibility reads, insertions, Element.Close) runs on one serial worker goroutine without
// mu: it copies what it needs, unlocks, calls, re-locks and checks that its request or
// suggestion is still current (gen, req, sug).
type Controller struct {
	d Deps

	snap     atomic.Pointer[tapState]
	in       chan input
	inputs   atomic.Int64 // posted inputs not yet handled
	overflow atomic.Bool  // an input was dropped because the queue was full
	busy     atomic.Int64 // worker jobs posted and not finished
	worker   *serial

	mu         sync.Mutex
	cfg        config.Config
	hotkey     hotkey.Spec
	acceptWord hotkey.Spec
	gen        uint64 // bumped by every input that makes an in-progress capture obsolete
	req        *pending
	sug        *shown
	nextID     uint64
	timer      Timer
	timerGen   uint64
}

// New returns a controller using cfg, which must be valid (config.Validate).
func New(d Deps, cfg config.Config) *Controller {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.Sleep == nil {
		d.Sleep = time.Sleep
	}
	if d.Before <= 0 {
		d.Before = DefaultBefore
	}
	if d.After <= 0 {
		d.After = DefaultAfter
	}
	c := &Controller{d: d, in: make(chan input, inputCap)}
	c.worker = newSerial(&c.busy)
	c.mu.Lock()
	c.setConfig(cfg)
	c.publish()
	c.mu.Unlock()
	go c.inputLoop()
	return c
}

// SetConfig applies new preferences. Disabling hides any suggestion and cancels any request.
func (c *Controller) SetConfig(cfg config.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setConfig(cfg)
	c.gen++
	if !cfg.Enabled || cfg.Mode != config.ModeAutomatic {
		c.stopTimer()
	}
	if !cfg.Enabled {
		c.reset()
	}
	c.publish()
}

func (c *Controller) setConfig(cfg config.Config) {
	c.cfg = cfg
	c.hotkey = cfg.HotkeySpec()
	c.acceptWord = cfg.AcceptWordSpec()
}

// publish replaces the event tap's snapshot; mu held.
func (c *Controller) publish() {
	st := &tapState{hotkey: c.hotkey, acceptWord: c.acceptWord}
	switch {
	case c.sug != nil:
		st.showing = c.sug.id
	case c.req != nil && c.req.visible:
		st.showing = c.req.id
	}
	c.snap.Store(st)
}

// Hotkey handles a press of the global hotkey: it replaces whatever is shown or pending with a
// fresh request for the focused field.
func (c *Controller) Hotkey() { c.postInput(input{kind: inHotkey}) }

// Dismiss hides the suggestion and cancels any request: focus moved, the mouse was clicked or
// scrolled, or the user switched apps.
func (c *Controller) Dismiss() { c.postInput(input{kind: inDismiss}) }

// KeyDown handles a key press before the focused app sees it and reports whether to swallow
// it. Only Tab, Esc and the accept-word key while a suggestion shows are swallowed. It never
// waits: the decision comes from a snapshot, and the key itself is handled on the input
// goroutine.
func (c *Controller) KeyDown(k Key) bool {
	st := c.snap.Load()
	if st.hotkey.Matches(k.Code, k.Mods) {
		return false // the hotkey's own keystroke is Hotkey's business
	}
	swallow := st.showing != 0 && (isPlain(k, hotkey.KeyTab) || isPlain(k, hotkey.KeyEscape) ||
		st.acceptWord.Matches(k.Code, k.Mods))
	c.postInput(input{kind: inKey, key: k, swallowed: swallow, showing: st.showing})
	return swallow
}

func isPlain(k Key, code hotkey.Key) bool { return k.Code == code && k.Mods == 0 }

// handle applies one input on the input goroutine.
func (c *Controller) handle(in input) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.publish()
	if c.overflow.Swap(false) {
		// Inputs were lost, so nothing on screen can be trusted to match the field.
		c.startOver()
	}
	switch in.kind {
	case inHotkey:
		c.startOver()
		gen, cfg := c.gen, c.cfg
		c.worker.post(func() { c.capture(gen, cfg) })
	case inDismiss:
		c.startOver()
	case inKey:
		c.key(in)
	}
}

// key handles a key press; mu held.
func (c *Controller) key(in input) {
	k := in.key
	c.gen++
	c.promote()
	if s := c.sug; s != nil {
		if in.swallowed && s.id == in.showing {
			switch {
			case isPlain(k, hotkey.KeyTab):
				c.sug = nil
				c.d.Overlay.Hide()
				c.accept(s, s.text, Accepted)
				return
			case isPlain(k, hotkey.KeyEscape):
				c.hide()
				return
			case c.acceptWord.Matches(k.Code, k.Mods):
				c.acceptNextWord(s)
				return
			}
		}
		if !in.swallowed && c.typeThrough(s, k) {
			return
		}
		c.hide()
	}
	c.cancelRequest()
	if in.swallowed {
		// The suggestion the key was swallowed for is gone (a race with its end): the key
		// did nothing, which is the safe outcome.
		return
	}
	if c.cfg.Mode == config.ModeAutomatic && c.cfg.Enabled && typesText(k) {
		c.schedule()
	} else {
		c.stopTimer()
	}
}

// typeThrough keeps s on screen when k types its next characters, or Backspace takes back one
// that was typed through; mu held. It asks for nothing new: the suggestion is still right.
func (c *Controller) typeThrough(s *shown, k Key) bool {
	if k.Mods&(hotkey.ModCmd|hotkey.ModCtrl) != 0 {
		return false
	}
	switch {
	case k.Code == hotkey.KeyDelete:
		if s.typed == "" {
			return false
		}
		back := lastCluster(s.typed)
		s.typed = s.typed[:len(s.typed)-len(back)]
		s.text = back + s.text
		s.caret -= utf16Len(back)
	case k.Text != "" && !strings.ContainsFunc(k.Text, unicode.IsControl) && strings.HasPrefix(s.text, k.Text):
		s.text = s.text[len(k.Text):]
		s.typed += k.Text
		s.caret += utf16Len(k.Text)
		if s.text == "" {
			c.sug = nil
			c.release(s.el)
			c.d.Overlay.Hide()
			c.stopTimer()
			return true
		}
	default:
		return false
	}
	c.stopTimer()
	c.cancelRequest()
	// The ghost text stays where it is (the typed character covers its own ghost) until the
	// app has moved the caret; then the rest moves there.
	c.later(s)
	return true
}

// typesText reports whether k edits text the way typing does (not a shortcut or navigation).
func typesText(k Key) bool {
	if k.Mods&(hotkey.ModCmd|hotkey.ModCtrl) != 0 {
		return false
	}
	return k.Text != "" || k.Code == hotkey.KeyDelete
}

func (c *Controller) acceptNextWord(s *shown) {
	w := NextWord(s.text)
	if w == s.text {
		c.sug = nil
		c.d.Overlay.Hide()
		c.accept(s, w, AcceptedWord)
		return
	}
	// The rest stays the suggestion (Tab accepts it, Esc dismisses it) while it is off
	// screen: inserted text reaches the app asynchronously, so the caret's new position is
	// only known a moment later, and the stale ghost text must not overlap the new word.
	s.text = s.text[len(w):]
	c.d.Overlay.Hide()
	c.accept(&shown{id: s.id, el: s.el, caret: s.caret, style: s.style}, w, AcceptedWord)
	s.caret += utf16Len(w)
	c.later(s)
}

// later repositions s once the app has had time to move the caret; mu held.
func (c *Controller) later(s *shown) {
	s.ver++
	ver := s.ver
	c.d.Clock.AfterFunc(repositionDelay, func() { c.worker.post(func() { c.reposition(s, ver, 0) }) })
}

// repositionTries bounds how often reposition waits for a slow app to move the caret.
const repositionTries = 4

// reposition shows the rest of s at the caret after an accepted word or a typed-through
// character; on the worker. ver is the version of s it was scheduled for: a newer change
// schedules its own.
func (c *Controller) reposition(s *shown, ver uint64, try int) {
	c.mu.Lock()
	current := c.sug == s && s.ver == ver
	caret := s.caret
	c.mu.Unlock()
	if !current {
		return // s.el may already be closed by a job queued before this one
	}
	sel, err := s.el.Selection()
	length, lerr := s.el.Length()
	var rect Rect
	if err == nil && lerr == nil && sel == (Range{caret, 0}) {
		rect, err = caretRect(s.el, caret, length)
	} else if err == nil {
		err = errors.New("the caret is not where the accepted text ends")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sug != s || s.ver != ver {
		return
	}
	if err != nil && try+1 < repositionTries {
		c.d.Clock.AfterFunc(repositionDelay, func() { c.worker.post(func() { c.reposition(s, ver, try+1) }) })
		return
	}
	if err != nil {
		c.hide()
		c.publish()
		return
	}
	c.d.Overlay.Show(s.text, rect, s.style)
}

// accept inserts text for s on the worker; mu held. The element is closed after the insertion
// unless s stays on screen (an accepted word with more to come).
func (c *Controller) accept(s *shown, text string, kind EventKind) {
	el, app, keep := s.el, s.el.Info().App, c.sug != nil && c.sug.el == s.el
	c.worker.post(func() {
		res, err := c.insertText(el, text)
		if !keep {
			el.Close()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.emit(Event{Kind: Failed, App: app, Err: err})
			if c.sug != nil && c.sug.id == s.id {
				c.hide()
				c.publish()
			}
			return
		}
		c.emit(Event{Kind: kind, App: app, Reason: res, Chars: utf8.RuneCountInString(text)})
	})
}

// hide removes the suggestion on screen, if any; mu held.
func (c *Controller) hide() {
	if c.sug == nil {
		return
	}
	s := c.sug
	c.sug = nil
	c.release(s.el)
	c.d.Overlay.Hide()
	c.emit(Event{Kind: Dismissed, App: s.el.Info().App})
}

// release closes el on the worker, after any job still using it.
func (c *Controller) release(el Element) { c.worker.post(el.Close) }

// cancelRequest cancels the request in flight, if any, and takes down what it streamed; its
// result will be stale.
func (c *Controller) cancelRequest() {
	if c.req == nil {
		return
	}
	if c.req.visible {
		c.d.Overlay.Hide()
	}
	c.req.cancel()
	c.release(c.req.el)
	c.emit(Event{Kind: Canceled, App: c.req.info.App})
	c.req = nil
}

// reset hides the suggestion and cancels the request; mu held.
func (c *Controller) reset() {
	c.hide()
	c.cancelRequest()
}

// startOver resets, stops the pause timer and makes work queued for the worker stale; mu held.
func (c *Controller) startOver() {
	c.reset()
	c.stopTimer()
	c.gen++
}

func (c *Controller) stopTimer() {
	c.timerGen++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// schedule (re)starts the automatic-mode pause timer. A generation number makes a timer that
// fires after being stopped harmless.
func (c *Controller) schedule() {
	c.stopTimer()
	gen := c.timerGen
	c.timer = c.d.Clock.AfterFunc(time.Duration(c.cfg.PauseMS)*time.Millisecond, func() {
		c.mu.Lock()
		if gen != c.timerGen || c.cfg.Mode != config.ModeAutomatic {
			c.mu.Unlock()
			return
		}
		c.timer = nil
		capGen, cfg := c.gen, c.cfg
		c.mu.Unlock()
		c.worker.post(func() { c.capture(capGen, cfg) })
	})
}

// refuse reports why no request is made.
func (c *Controller) refuse(app, reason string) {
	c.emit(Event{Kind: Refused, App: app, Reason: reason})
}

// capture reads the focused field and, if it may be completed, starts a request. It runs on
// the worker without the lock, because Accessibility reads take up to hundreds of milliseconds
// in a busy app; gen detects any input meanwhile.
func (c *Controller) capture(gen uint64, cfg config.Config) {
	started := c.d.Clock.Now()
	if !cfg.Enabled {
		c.refuse("", "Laya is disabled")
		return
	}
	if c.d.Fields.SecureInput() {
		c.refuse("", "secure input is on")
		return
	}
	if c.d.Fields.Composing() {
		c.refuse("", "an input method is composing")
		return
	}
	el, err := c.d.Fields.Focus()
	if err != nil {
		c.refuse("", "no readable text field: "+err.Error())
		return
	}
	info := el.Info()
	ok := false
	defer func() {
		if !ok {
			el.Close()
		}
	}()
	if !cfg.AppEnabled(info.App) {
		c.refuse(info.App, "disabled for this app")
		return
	}
	if r := refusal(info); r != "" {
		c.refuse(info.App, r)
		return
	}
	prefix, suffix, caret, length, err := c.read(el)
	if err != nil {
		c.refuse(info.App, err.Error())
		return
	}
	rect, err := caretRect(el, caret, length)
	if err != nil {
		c.refuse(info.App, "caret position unknown: "+err.Error())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		c.emit(Event{Kind: Canceled, App: info.App, Reason: "input arrived while reading the field"})
		return
	}
	c.reset() // normally a no-op: whatever was there ended when gen last changed
	c.publish()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pending{cancel: cancel, el: el, info: info, caret: caret, length: length, rect: rect, started: started}
	c.req = p
	ok = true
	req := Request{
		Prefix: prefix, Suffix: suffix, App: info.App,
		MaxTokens: cfg.MaxTokens, Temperature: float32(cfg.Temperature),
		TopK: cfg.TopK, TopP: float32(cfg.TopP),
	}
	c.emit(Event{Kind: Requested, App: info.App})
	go func() {
		text, err := c.d.Engine.Complete(ctx, req, func(piece string) { c.stream(p, piece) })
		c.finish(p, text, err)
	}()
}

// read returns the text around the caret, bounded to Before/After code points.
func (c *Controller) read(el Element) (prefix, suffix string, caret, length int, err error) {
	sel, err := el.Selection()
	if err != nil {
		return "", "", 0, 0, errors.New("no caret: " + err.Error())
	}
	if sel.Len != 0 {
		return "", "", 0, 0, errors.New("text is selected")
	}
	length, err = el.Length()
	if err != nil {
		return "", "", 0, 0, errors.New("text length unreadable: " + err.Error())
	}
	caret = sel.Loc
	if caret < 0 || caret > length {
		return "", "", 0, 0, errors.New("caret outside the text")
	}
	start := windowStart(caret, c.d.Before)
	before, err := el.Text(Range{start, caret - start})
	if err != nil {
		return "", "", 0, 0, errors.New("text unreadable: " + err.Error())
	}
	// A code point is at most two UTF-16 units, so 2n units hold at least n code points.
	end := min(length, caret+2*c.d.After)
	after, err := el.Text(Range{caret, end - caret})
	if err != nil {
		return "", "", 0, 0, errors.New("text unreadable: " + err.Error())
	}
	return decodeWindow(before), firstRunes(decodeWindow(after), c.d.After), caret, length, nil
}

// windowStart is where the text read before the caret begins: at most n UTF-16 units (so at most
// n code points) back, on a multiple of n/8 units. The engine reuses its cache only for a prompt
// that starts where the last one did, so the start must stay put while the user types and jump
// only once every n/8 units; a window of exactly the last n code points would start one
// keystroke later each time and be computed from scratch for every request.
func windowStart(caret, n int) int {
	if caret <= n {
		return 0
	}
	step := max(n/8, 1)
	return (caret - n + step - 1) / step * step
}

// caretRect finds the caret in a field of length units (-1 if unknown). Many apps return an
// empty rectangle for a zero-length range. Then the left edge of the character at the caret is
// right, even at the start of a line (where the character before is the previous line's end);
// past the last character only the right edge of the one before is left.
func caretRect(el Element, caret, length int) (Rect, error) {
	r, err := el.Bounds(Range{caret, 0})
	if err == nil && r.H > 0 {
		return r, nil
	}
	if caret < length {
		if next, nerr := el.Bounds(Range{caret, 1}); nerr == nil && next.H > 0 {
			return Rect{X: next.X, Y: next.Y, W: 0, H: next.H}, nil
		}
	}
	if caret == 0 {
		if err == nil {
			err = errors.New("empty caret bounds")
		}
		return Rect{}, err
	}
	prev, perr := el.Bounds(Range{caret - 1, 1})
	if perr != nil {
		return Rect{}, perr
	}
	if prev.H <= 0 {
		return Rect{}, errors.New("empty caret bounds")
	}
	return Rect{X: prev.X + prev.W, Y: prev.Y, W: 0, H: prev.H}, nil
}

// stream shows the suggestion growing while p is current. Focus is re-checked on the worker
// before the first piece appears; after that, anything that could move it (keys, clicks,
// app switches) cancels p.
func (c *Controller) stream(p *pending, piece string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.req != p {
		return
	}
	p.partial.WriteString(piece)
	text := p.text()
	switch {
	case p.visible:
		c.d.Overlay.Show(text, p.rect, p.info.Style)
	case !p.checking && strings.TrimSpace(text) != "":
		p.checking = true
		c.worker.post(func() {
			ok := c.stillThere(p)
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.req != p || p.visible {
				return
			}
			if !ok {
				c.cancelRequest()
				c.publish()
				return
			}
			c.nextID++
			p.visible, p.id = true, c.nextID
			c.d.Overlay.Show(p.text(), p.rect, p.info.Style)
			c.publish()
		})
	}
}

// promote turns a request whose text is already streaming on screen into the shown
// suggestion, so that Tab accepts what the user sees; the rest is not waited for.
func (c *Controller) promote() {
	p := c.req
	if p == nil || !p.visible {
		return
	}
	c.req = nil
	p.cancel()
	c.sug = &shown{id: p.id, text: p.text(), el: p.el, caret: p.caret, style: p.info.Style}
}

// text is what p has streamed so far, as it would be inserted.
func (p *pending) text() string { return p.partial.String() }

// finish handles the engine's answer to p. The answer is shown only if p is still the current
// request and, checked on the worker, the same field still has focus with the caret where it
// was.
func (c *Controller) finish(p *pending, text string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.req != p {
		c.emit(Event{Kind: Stale, App: p.info.App})
		return
	}
	if err != nil || strings.TrimSpace(text) == "" {
		c.req = nil
		p.cancel()
		if p.visible {
			c.d.Overlay.Hide()
		}
		c.release(p.el)
		c.publish()
		switch {
		case err == nil:
			c.emit(Event{Kind: Empty, App: p.info.App})
		case errors.Is(err, context.Canceled):
			c.emit(Event{Kind: Canceled, App: p.info.App})
		default:
			c.emit(Event{Kind: Failed, App: p.info.App, Err: err})
		}
		return
	}
	p.cancel()
	c.worker.post(func() {
		ok := c.stillThere(p)
		c.mu.Lock()
		defer c.mu.Unlock()
		defer c.publish()
		if c.req != p {
			c.emit(Event{Kind: Stale, App: p.info.App})
			return
		}
		c.req = nil
		if !ok {
			if p.visible {
				c.d.Overlay.Hide()
			}
			c.release(p.el)
			c.emit(Event{Kind: Stale, App: p.info.App, Reason: "focus or caret moved"})
			return
		}
		id := p.id
		if id == 0 {
			c.nextID++
			id = c.nextID
		}
		c.sug = &shown{id: id, text: text, el: p.el, caret: p.caret, style: p.info.Style}
		c.d.Overlay.Show(text, p.rect, p.info.Style)
		c.publish() // before anyone hears of it
		c.emit(Event{Kind: Shown, App: p.info.App, Latency: c.d.Clock.Now().Sub(p.started)})
	})
}

// stillThere re-reads focus: same app, same element, same caret, same text length. On the
// worker, without the lock.
func (c *Controller) stillThere(p *pending) bool {
	if c.d.Fields.Composing() {
		return false
	}
	el, err := c.d.Fields.Focus()
	if err != nil {
		return false
	}
	defer el.Close()
	info := el.Info()
	if info.App != p.info.App || info.ID != p.info.ID {
		return false
	}
	sel, err := el.Selection()
	if err != nil || sel != (Range{p.caret, 0}) {
		return false
	}
	n, err := el.Length()
	return err == nil && n == p.length
}

func (c *Controller) emit(e Event) {
	if c.d.Observe != nil {
		c.d.Observe(e)
	}
}
