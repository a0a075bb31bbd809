package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

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

// Deps are the controller's connections to the world. Observe may be nil.
type Deps struct {
	Fields   FocusedField
	Overlay  Overlay
	Inserter Inserter
	Engine   Engine
	Clock    Clock
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
}

// Key is one key press seen by the event tap.
type Key struct {
	Code hotkey.Key
	Mods hotkey.Modifier
	Text string // the characters it types, "" for none
}

// pending is the request in flight.
type pending struct {
	cancel  context.CancelFunc
	el      Element
	info    FieldInfo
	caret   int // UTF-16 offset
	length  int // field length in UTF-16 units when captured
	rect    Rect
	started time.Time
	partial strings.Builder // streamed so far
	visible bool            // partial is on screen
}

// shown is the suggestion on screen.
type shown struct {
	text  string
	el    Element
	caret int // where the remaining text would be inserted
	style Style
}

// Controller is the app's state machine. All methods are safe for concurrent use.
type Controller struct {
	d Deps

	mu         sync.Mutex
	cfg        config.Config
	hotkey     hotkey.Spec
	acceptWord hotkey.Spec
	gen        uint64 // bumped by every input that makes an in-progress capture obsolete
	req        *pending
	sug        *shown
	timer      Timer
	timerGen   uint64
}

// New returns a controller using cfg, which must be valid (config.Validate).
func New(d Deps, cfg config.Config) *Controller {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.Before <= 0 {
		d.Before = DefaultBefore
	}
	if d.After <= 0 {
		d.After = DefaultAfter
	}
	c := &Controller{d: d}
	c.setConfig(cfg)
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
}

func (c *Controller) setConfig(cfg config.Config) {
	c.cfg = cfg
	c.hotkey = cfg.HotkeySpec()
	c.acceptWord = cfg.AcceptWordSpec()
}

// Hotkey handles a press of the global hotkey: it replaces whatever is shown or pending with a
// fresh request for the focused field.
func (c *Controller) Hotkey() {
	c.mu.Lock()
	c.reset()
	c.stopTimer()
	c.gen++
	gen, cfg := c.gen, c.cfg
	c.mu.Unlock()
	c.capture(gen, cfg)
}

// Dismiss hides the suggestion and cancels any request: focus moved, the mouse was clicked,
// or the user switched apps.
func (c *Controller) Dismiss() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset()
	c.stopTimer()
	c.gen++
}

// KeyDown handles a key press before the focused app sees it and reports whether to swallow
// it. Only Tab, Esc and the accept-word key while a suggestion shows are swallowed.
func (c *Controller) KeyDown(k Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hotkey.Matches(k.Code, k.Mods) {
		return false // the hotkey's own keystroke is Hotkey's business
	}
	c.gen++
	c.promote()
	if s := c.sug; s != nil {
		switch {
		case k.Code == hotkey.KeyTab && k.Mods == 0:
			c.sug = nil
			c.d.Overlay.Hide()
			c.insert(s.el, s.text, Accepted)
			s.el.Close()
			return true
		case k.Code == hotkey.KeyEscape && k.Mods == 0:
			c.hide()
			return true
		case c.acceptWord.Matches(k.Code, k.Mods):
			c.acceptNextWord(s)
			return true
		}
		c.hide()
	}
	c.cancelRequest()
	if c.cfg.Mode == config.ModeAutomatic && c.cfg.Enabled && typesText(k) {
		c.schedule()
	} else {
		c.stopTimer()
	}
	return false
}

// typesText reports whether k edits text the way typing does (not a shortcut or navigation).
func typesText(k Key) bool {
	if k.Mods&(hotkey.ModCmd|hotkey.ModCtrl) != 0 {
		return false
	}
	return k.Text != "" || k.Code == hotkey.KeyDelete
}

func (c *Controller) acceptNextWord(s *shown) {
	w := nextWord(s.text)
	if !c.insert(s.el, w, AcceptedWord) {
		c.hide()
		return
	}
	s.text = s.text[len(w):]
	s.caret += utf16Len(w)
	if s.text == "" {
		c.sug = nil
		c.d.Overlay.Hide()
		s.el.Close()
		return
	}
	// Typed insertions reach the app asynchronously, so the caret's new position is only
	// known a moment later; meanwhile the stale ghost text must not overlap the new word.
	c.d.Overlay.Hide()
	c.d.Clock.AfterFunc(repositionDelay, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.sug != s {
			return
		}
		rect, err := caretRect(s.el, s.caret)
		if err != nil {
			c.hide()
			return
		}
		c.d.Overlay.Show(s.text, rect, s.style)
	})
}

func (c *Controller) insert(el Element, text string, kind EventKind) bool {
	if err := c.d.Inserter.Insert(el, text); err != nil {
		c.emit(Event{Kind: Failed, App: el.Info().App, Err: err})
		return false
	}
	c.emit(Event{Kind: kind, App: el.Info().App})
	return true
}

// hide removes the suggestion on screen, if any.
func (c *Controller) hide() {
	if c.sug == nil {
		return
	}
	app := c.sug.el.Info().App
	c.sug.el.Close()
	c.sug = nil
	c.d.Overlay.Hide()
	c.emit(Event{Kind: Dismissed, App: app})
}

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
	c.req.el.Close()
	c.emit(Event{Kind: Canceled, App: c.req.info.App})
	c.req = nil
}

func (c *Controller) reset() {
	c.hide()
	c.cancelRequest()
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
		c.capture(capGen, cfg)
	})
}

// refuse reports why no request is made.
func (c *Controller) refuse(app, reason string) {
	c.emit(Event{Kind: Refused, App: app, Reason: reason})
}

// capture reads the focused field and, if it may be completed, starts a request. It runs
// without the lock, because Accessibility reads take up to tens of milliseconds per call and
// the event tap must never wait that long for a keystroke; gen detects any input meanwhile.
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
	rect, err := caretRect(el, caret)
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
	// A code point is at most two UTF-16 units, so 2n units hold at least n code points.
	start := max(0, caret-2*c.d.Before)
	before, err := el.Text(Range{start, caret - start})
	if err != nil {
		return "", "", 0, 0, errors.New("text unreadable: " + err.Error())
	}
	end := min(length, caret+2*c.d.After)
	after, err := el.Text(Range{caret, end - caret})
	if err != nil {
		return "", "", 0, 0, errors.New("text unreadable: " + err.Error())
	}
	return lastRunes(decodeWindow(before), c.d.Before), firstRunes(decodeWindow(after), c.d.After), caret, length, nil
}

// caretRect finds the caret on screen. Many apps return an empty rectangle for a zero-length
// range, so fall back to the right edge of the character before the caret.
func caretRect(el Element, caret int) (Rect, error) {
	r, err := el.Bounds(Range{caret, 0})
	if err == nil && r.H > 0 {
		return r, nil
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

// stream shows the suggestion growing while p is current. Focus is re-checked before the
// first piece appears; after that, anything that could move it (keys, clicks, app switches)
// cancels p.
func (c *Controller) stream(p *pending, piece string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.req != p {
		return
	}
	p.partial.WriteString(piece)
	text := p.partial.String()
	if strings.TrimSpace(text) == "" {
		return
	}
	if !p.visible {
		if !c.stillThere(p) {
			c.cancelRequest()
			return
		}
		p.visible = true
	}
	c.d.Overlay.Show(text, p.rect, p.info.Style)
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
	c.sug = &shown{text: p.partial.String(), el: p.el, caret: p.caret, style: p.info.Style}
}

// finish handles the engine's answer to p. The answer is shown only if p is still the current
// request and the same field still has focus with the caret where it was.
func (c *Controller) finish(p *pending, text string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.req != p {
		c.emit(Event{Kind: Stale, App: p.info.App})
		return
	}
	c.req = nil
	p.cancel()
	if err != nil {
		p.el.Close()
		if errors.Is(err, context.Canceled) {
			c.emit(Event{Kind: Canceled, App: p.info.App})
		} else {
			c.emit(Event{Kind: Failed, App: p.info.App, Err: err})
		}
		return
	}
	if strings.TrimSpace(text) == "" {
		if p.visible {
			c.d.Overlay.Hide()
		}
		p.el.Close()
		c.emit(Event{Kind: Empty, App: p.info.App})
		return
	}
	if !c.stillThere(p) {
		if p.visible {
			c.d.Overlay.Hide()
		}
		p.el.Close()
		c.emit(Event{Kind: Stale, App: p.info.App, Reason: "focus or caret moved"})
		return
	}
	c.sug = &shown{text: text, el: p.el, caret: p.caret, style: p.info.Style}
	c.d.Overlay.Show(text, p.rect, p.info.Style)
	c.emit(Event{Kind: Shown, App: p.info.App, Latency: c.d.Clock.Now().Sub(p.started)})
}

// stillThere re-reads focus: same app, same element, same caret, same text length.
func (c *Controller) stillThere(p *pending) bool {
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
