// Package replay measures what suggestions are worth: it types a text character by character
// into a fake text field through the app's own controller (app/controller) and completion
// engine, with a simulated user who accepts a suggestion when it matches what comes next, and
// counts requests, suggestions, acceptances, keystrokes saved and latency.
//
// Time is virtual for the typist (keys at a fixed rate, pauses of a fixed length) and real for
// the engine: the time each request takes is measured and moves the virtual clock on, so the
// latency reported is what a user of this machine would see.
package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/hotkey"
)

// Options configures a replay. Zero values select the defaults given per field.
type Options struct {
	// Text is what the simulated user types.
	Text string
	// Engine completes text, as in the app.
	Engine controller.Engine
	// Mode is config.ModeAutomatic (a request after each pause; the default) or
	// config.ModeHotkey (the user presses the hotkey where they would pause).
	Mode string
	// PauseMS is how long the user pauses at a word start, and the automatic mode's pause
	// before a request; 0 = 300.
	PauseMS int
	// CPS is the typing speed in characters per second; 0 = 8.
	CPS float64
	// MaxTokens is the controller's max_tokens; 0 = the app's default.
	MaxTokens int
	// Settle bounds the real time one request may take before Run gives up; 0 = 1 minute.
	Settle time.Duration
}

// Stats summarizes durations in milliseconds.
type Stats struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Report is the outcome of a replay.
type Report struct {
	Mode  string  `json:"mode"`
	Chars int     `json:"chars"` // code points in the text
	CPS   float64 `json:"cps"`
	// PauseMS is the length of the user's pauses and the automatic mode's delay.
	PauseMS int `json:"pause_ms"`
	// Pauses is how often the user paused (or pressed the hotkey).
	Pauses   int `json:"pauses"`
	Requests int `json:"requests"`
	// Shown counts suggestions that completed on screen.
	Shown int `json:"suggestions_shown"`
	// Wrong counts shown suggestions of which nothing was accepted.
	Wrong int `json:"wrong_suggestions"`
	// WrongShare is Wrong over Shown.
	WrongShare float64 `json:"wrong_share"`
	// Accepted counts suggestions of which something was accepted.
	Accepted int `json:"suggestions_accepted"`
	// CharsAccepted is the code points inserted by accepting.
	CharsAccepted int `json:"chars_accepted"`
	// AcceptKeys is the presses of Tab and of the accept-word key.
	AcceptKeys int `json:"accept_key_presses"`
	// EscKeys is the presses of Esc, needed to type a Tab while a wrong suggestion shows.
	EscKeys int `json:"esc_key_presses"`
	// KeystrokesSaved is (CharsAccepted - AcceptKeys - EscKeys) / Chars.
	KeystrokesSaved float64 `json:"keystrokes_saved"`
	// Latency is from the request's start (the pause timer or the hotkey) to the first
	// character of the suggestion on screen, for suggestions shown.
	Latency Stats `json:"latency_ms"`
	// Engine is the engine's time per request, all requests.
	Engine Stats `json:"engine_ms_per_request"`
}

// Run replays o.Text and reports. ctx bounds the whole run.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Engine == nil {
		return Report{}, errors.New("replay: no engine")
	}
	if !utf8.ValidString(o.Text) {
		return Report{}, errors.New("replay: the text is not valid UTF-8")
	}
	if o.Mode == "" {
		o.Mode = config.ModeAutomatic
	}
	if o.Mode != config.ModeAutomatic && o.Mode != config.ModeHotkey {
		return Report{}, fmt.Errorf("replay: mode %q: must be %q or %q", o.Mode, config.ModeAutomatic, config.ModeHotkey)
	}
	if o.PauseMS == 0 {
		o.PauseMS = 300
	}
	if o.CPS == 0 {
		o.CPS = 8
	}
	if !(o.CPS > 0 && o.CPS <= 1000) {
		return Report{}, fmt.Errorf("replay: %v characters per second: must be more than 0 and at most 1000", o.CPS)
	}
	if o.Settle <= 0 {
		o.Settle = time.Minute
	}
	cfg := config.Default()
	cfg.Mode, cfg.PauseMS = o.Mode, o.PauseMS
	if o.MaxTokens > 0 {
		cfg.MaxTokens = o.MaxTokens
	}
	if err := cfg.Validate(); err != nil {
		return Report{}, fmt.Errorf("replay: %w", err)
	}
	r := newRun(o, cfg)
	defer r.ctl.Dismiss()
	if err := r.typeAll(ctx); err != nil {
		return Report{}, err
	}
	return r.report(), nil
}

// run is one replay in progress. Only the main goroutine (typeAll) drives the controller; the
// fakes are called from the controller's goroutines and lock their own state.
type run struct {
	o      Options
	cfg    config.Config
	text   []rune
	clock  *clock
	field  *field
	ov     *overlay
	eng    *timedEngine
	ctl    *controller.Controller
	events *events

	acceptWord  hotkey.Spec
	keyInterval time.Duration
	rep         Report
}

func newRun(o Options, cfg config.Config) *run {
	r := &run{o: o, cfg: cfg, text: []rune(o.Text), clock: &clock{now: time.Unix(1e9, 0)},
		acceptWord: cfg.AcceptWordSpec(), keyInterval: time.Duration(float64(time.Second) / o.CPS)}
	r.field = &field{}
	r.events = &events{clock: r.clock}
	r.ov = &overlay{events: r.events}
	r.eng = &timedEngine{e: o.Engine, clock: r.clock, events: r.events}
	r.ctl = controller.New(controller.Deps{
		Fields:  fields{r.field},
		Overlay: r.ov,
		Keys:    noKeys{},
		Engine:  r.eng,
		Clock:   r.clock,
		Sleep:   func(time.Duration) {},
		Observe: r.events.observe,
	}, cfg)
	r.rep = Report{Mode: o.Mode, Chars: len(r.text), CPS: o.CPS, PauseMS: o.PauseMS}
	return r
}

// typeAll is the simulated user.
func (r *run) typeAll(ctx context.Context) error {
	pos := 0
	for pos < len(r.text) {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.acceptMatching(pos)
		if err != nil {
			return err
		}
		if pos += n; pos >= len(r.text) {
			break
		}
		c := r.text[pos]
		if c == '\t' && r.ov.visible() {
			// Tab would accept the suggestion: dismiss it first.
			if err := r.press(controller.Key{Code: hotkey.KeyEscape}, true); err != nil {
				return err
			}
			r.rep.EscKeys++
		}
		if err := r.typeRune(c); err != nil {
			return err
		}
		pos++
		if err := r.wait(r.keyInterval); err != nil {
			return err
		}
		if pos < len(r.text) && pausePoint(r.text, pos) {
			if err := r.pause(); err != nil {
				return err
			}
		}
	}
	if got, want := r.field.String(), r.o.Text; got != want {
		return fmt.Errorf("replay: the field ended as %d bytes that differ from the text's %d at byte %d",
			len(got), len(want), firstDiff(got, want))
	}
	return nil
}

// pausePoint reports whether the user pauses before text[pos]: at the start of a word or of
// other non-blank text that follows a blank or punctuation, which is where people stop to
// think and where a suggestion of the next word or two can help.
func pausePoint(text []rune, pos int) bool {
	prev, next := text[pos-1], text[pos]
	return !isWordRune(prev) && !unicode.IsSpace(next)
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// pause waits for a suggestion: the automatic mode's pause, or a hotkey press.
func (r *run) pause() error {
	r.rep.Pauses++
	if r.o.Mode == config.ModeHotkey {
		r.ctl.Hotkey()
		return r.settle()
	}
	return r.wait(time.Duration(r.o.PauseMS) * time.Millisecond)
}

// acceptMatching accepts what the visible suggestion has of the text from pos: all of it with
// Tab when it all matches, else word by word while words match. It returns the code points
// accepted.
func (r *run) acceptMatching(pos int) (int, error) {
	done := 0
	for {
		s, ok := r.ov.current()
		if !ok || s == "" {
			return done, nil
		}
		rest := string(r.text[pos+done:])
		if strings.HasPrefix(rest, s) {
			if err := r.press(controller.Key{Code: hotkey.KeyTab}, true); err != nil {
				return done, err
			}
			r.rep.AcceptKeys++
			return done + utf8.RuneCountInString(s), r.wait(r.keyInterval)
		}
		w := controller.NextWord(s)
		if w == "" || !strings.HasPrefix(rest, w) {
			return done, nil
		}
		if err := r.press(controller.Key{Code: r.acceptWord.Key, Mods: r.acceptWord.Mods}, true); err != nil {
			return done, err
		}
		r.rep.AcceptKeys++
		done += utf8.RuneCountInString(w)
		// The rest reappears at the moved caret a moment later.
		if err := r.wait(r.keyInterval); err != nil {
			return done, err
		}
	}
}

// typeRune presses the key that types c, and the app inserts c.
func (r *run) typeRune(c rune) error {
	k := controller.Key{Text: string(c)}
	switch c {
	case '\n':
		k = controller.Key{Code: hotkey.KeyReturn, Text: "\r"}
	case '\t':
		k.Code = hotkey.KeyTab
	case ' ':
		k.Code = hotkey.KeySpace
	}
	if err := r.press(k, false); err != nil {
		return err
	}
	r.field.insert(string(c))
	return r.settle()
}

// press sends a key and checks the controller swallowed it or not as the user meant.
func (r *run) press(k controller.Key, swallow bool) error {
	if got := r.ctl.KeyDown(k); got != swallow {
		return fmt.Errorf("replay: key %v %q: swallowed %v, the simulated user expected %v", k.Code, k.Text, got, swallow)
	}
	return r.settle()
}

// wait lets d of virtual time pass, firing the controller's timers on the way and letting
// what they start finish.
func (r *run) wait(d time.Duration) error {
	end := r.clock.Now().Add(d)
	for {
		f, ok := r.clock.next(end)
		if !ok {
			break
		}
		f()
		if err := r.settle(); err != nil {
			return err
		}
	}
	r.clock.set(end)
	return nil
}

// settle waits until the controller has handled everything and every request has ended.
func (r *run) settle() error {
	deadline := time.Now().Add(r.o.Settle)
	for {
		r.ctl.Flush()
		if r.events.settled() {
			r.ctl.Flush()
			if r.events.settled() {
				return r.events.err()
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replay: a request did not end within %v", r.o.Settle)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (r *run) report() Report {
	rep := r.rep
	e := r.events
	e.mu.Lock()
	defer e.mu.Unlock()
	rep.Requests = e.requested
	rep.Shown = e.shown
	rep.Accepted = e.acceptedSugs
	rep.Wrong = rep.Shown - rep.Accepted
	rep.CharsAccepted = e.charsAccepted
	if rep.Shown > 0 {
		rep.WrongShare = float64(rep.Wrong) / float64(rep.Shown)
	}
	if rep.Chars > 0 {
		rep.KeystrokesSaved = float64(rep.CharsAccepted-rep.AcceptKeys-rep.EscKeys) / float64(rep.Chars)
	}
	rep.Latency = summarize(e.latency)
	rep.Engine = summarize(r.eng.times())
	return rep
}

// summarize returns nearest-rank percentiles of ds in milliseconds.
func summarize(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	ms := make([]float64, len(ds))
	sum := 0.0
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
		sum += ms[i]
	}
	slices.Sort(ms)
	rank := func(p float64) float64 { return ms[max(0, int(math.Ceil(p*float64(len(ms))))-1)] }
	return Stats{N: len(ms), P50: rank(0.5), P95: rank(0.95), Max: ms[len(ms)-1], Mean: sum / float64(len(ms))}
}

func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}
