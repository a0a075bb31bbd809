package controller

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/hotkey"
)

// hangDeadline only detects a hang; it is no speed requirement.
const hangDeadline = 5 * time.Second

// returns runs f and fails if it has not returned within hangDeadline.
func returns[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(hangDeadline):
		t.Fatalf("%s did not return while every Accessibility call was blocked", what)
		panic("unreachable")
	}
}

// waitStuck waits until n calls into the fake app are blocked at the gate.
func waitStuck(t *testing.T, g *gate, n int) {
	t.Helper()
	deadline := time.Now().Add(hangDeadline)
	for g.stuck() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls blocked, want %d", g.stuck(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTapNeverWaitsForAccessibility(t *testing.T) {
	el := newElem("a.b", 1, "x ", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "foo bar baz")

	// The app hangs: every AX call from now on blocks until released.
	r.gate.close()
	if !returns(t, "KeyDown(accept word)", func() bool { return r.c.KeyDown(cmdRight) }) {
		t.Fatal("accept-word key passed through while a suggestion showed")
	}
	waitStuck(t, r.gate, 1) // the worker is inside the insertion now
	if !returns(t, "KeyDown(Tab)", func() bool { return r.c.KeyDown(tab) }) {
		t.Fatal("Tab passed through while the rest of the suggestion was pending")
	}
	// The input goroutine has seen Tab: nothing is showing any more, even though the
	// insertions have not happened yet.
	r.c.drainInputs()
	if returns(t, "KeyDown(Tab)", func() bool { return r.c.KeyDown(tab) }) {
		t.Error("second Tab swallowed with nothing left to accept")
	}
	if returns(t, "KeyDown(Esc)", func() bool { return r.c.KeyDown(esc) }) {
		t.Error("Esc swallowed with nothing showing")
	}
	if returns(t, "KeyDown(letter)", func() bool { return r.c.KeyDown(letter("q")) }) {
		t.Error("letter swallowed")
	}
	returns(t, "Hotkey", func() bool { r.c.Hotkey(); return true })
	returns(t, "Dismiss", func() bool { r.c.Dismiss(); return true })
	if el.String() != "x " {
		t.Fatalf("text changed while the app hung: %q", el.String())
	}

	r.gate.open()
	r.c.Flush()
	if got := el.String(); got != "x foo bar baz" {
		t.Errorf("after the app woke up: %q, want the word and then the rest, once", got)
	}
}

func TestTapDecisionWhileCaptureBlocked(t *testing.T) {
	el := newElem("a.b", 1, "x", "")
	r := newRig(t, config.Default(), el)
	r.gate.close()
	r.c.Hotkey()
	waitStuck(t, r.gate, 1) // capture is inside an AX call
	for _, k := range []Key{tab, esc, cmdRight} {
		if returns(t, "KeyDown", func() bool { return r.c.KeyDown(k) }) {
			t.Errorf("%+v swallowed with nothing showing", k)
		}
	}
	r.c.drainInputs()
	r.gate.open()
	r.until(Canceled) // the keys voided the capture
	r.noCall()
}

func TestTapDecisionWhileFocusCheckBlocked(t *testing.T) {
	el := newElem("a.b", 1, "x", "")
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	c := r.call()
	r.gate.close()
	c.onText("abc") // the check before the first piece shows blocks in Focus
	waitStuck(t, r.gate, 1)
	if returns(t, "KeyDown(Tab)", func() bool { return r.c.KeyDown(tab) }) {
		t.Error("Tab swallowed before anything was on screen")
	}
	r.c.drainInputs()
	r.gate.open()
	r.c.Flush()
	if _, shows := r.ov.state(); len(shows) != 0 {
		t.Errorf("streamed text shown after the user typed: %+v", shows)
	}
}

func TestSetAppliedLateIsNotTyped(t *testing.T) {
	el := newElem("com.google.Chrome", 1, "Hi ", "")
	el.settable, el.lag = true, 5 // the renderer applies the set five reads later
	r := newRig(t, config.Default(), el)
	show(t, r, "there")
	r.key(tab)
	if e := r.until(Accepted); e.Reason != "set" {
		t.Errorf("accepted via %q", e.Reason)
	}
	if got := el.String(); got != "Hi there" {
		t.Errorf("text %q, want the suggestion once", got)
	}
	if typed, pasted, _ := r.keys.got(); len(typed)+len(pasted) != 0 {
		t.Errorf("a successful set was followed by typing %q / pasting %q", typed, pasted)
	}
}

func TestSetNeverConfirmedIsNotTyped(t *testing.T) {
	el := newElem("a.b", 1, "Hi ", "")
	el.settable, el.lag = true, -1
	r := newRig(t, config.Default(), el)
	show(t, r, "there")
	r.key(tab)
	if e := r.until(Accepted); !strings.Contains(e.Reason, "unconfirmed") {
		t.Errorf("accepted via %q", e.Reason)
	}
	if typed, pasted, _ := r.keys.got(); len(typed)+len(pasted) != 0 {
		t.Errorf("typed %q / pasted %q after a set the app accepted", typed, pasted)
	}
	polls := 0
	for _, d := range r.sleeps {
		if d == pollGap {
			polls++
		}
	}
	if time.Duration(polls)*pollGap > 250*time.Millisecond || polls < 10 {
		t.Errorf("waited %d polls of %v for the set", polls, pollGap)
	}
}

func TestLineBreaksAreNeverTyped(t *testing.T) {
	el := newElem("com.tinyspeck.slackmacgap", 1, "ok", "")
	r := newRig(t, config.Default(), el)
	r.keys.pasteLag = 3
	show(t, r, "\nsee you")
	r.key(tab)
	if e := r.until(Accepted); e.Reason != "pasted" {
		t.Errorf("accepted via %q", e.Reason)
	}
	typed, pasted, restored := r.keys.got()
	if len(typed) != 0 || len(pasted) != 1 || pasted[0] != "\nsee you" {
		t.Errorf("typed %q pasted %q; a line break must go through the pasteboard", typed, pasted)
	}
	if restored != 1 || r.keys.restoredEarly != 0 {
		t.Errorf("clipboard restored %d times, %d before the paste landed", restored, r.keys.restoredEarly)
	}
	if el.String() != "ok\nsee you" {
		t.Errorf("text %q", el.String())
	}
}

func TestTypedChunksArePacedAndWhole(t *testing.T) {
	el := newElem("a.b", 1, "", "")
	r := newRig(t, config.Default(), el)
	text := strings.Repeat("a", 19) + "😀" + strings.Repeat("b", 30)
	show(t, r, text)
	r.key(tab)
	r.until(Accepted)
	typed, _, _ := r.keys.got()
	if strings.Join(typed, "") != text || el.String() != text {
		t.Fatalf("typed %q", typed)
	}
	for _, ch := range typed {
		u := utf16.Encode([]rune(ch))
		if len(u) > TypeChunk || strings.ContainsRune(ch, '\uFFFD') {
			t.Errorf("chunk %q: %d units", ch, len(u))
		}
	}
	gaps := 0
	for _, d := range r.sleeps {
		if d >= time.Millisecond && d <= 2*time.Millisecond {
			gaps++
		}
	}
	if len(typed) < 3 || gaps != len(typed)-1 {
		t.Errorf("%d chunks with %d pauses of 1–2 ms between them", len(typed), gaps)
	}
}

func TestCaretAtLineStart(t *testing.T) {
	// After Enter and a pause the caret sits at the start of a line, before "tail".
	el := newElem("a.b", 1, "head\n", "tail")
	el.emptyCaret = true
	r := newRig(t, config.Default(), el)
	show(t, r, "x")
	if _, shows := r.ov.state(); shows[0].at.X != 100 || shows[0].at.Y != 480 {
		t.Errorf("caret %+v, want the left edge of 't' on the second line (100, 480)", shows[0].at)
	}
}

func TestSwallowedKeyForVanishedSuggestion(t *testing.T) {
	el := newElem("a.b", 1, "x", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "yz")
	// The event tap decided on the snapshot; a dismissal that was already queued wins.
	r.c.Dismiss()
	swallowed := r.c.KeyDown(tab)
	r.c.Flush()
	if el.String() != "x" {
		t.Errorf("text %q: a Tab for a dismissed suggestion inserted it", el.String())
	}
	_ = swallowed // either decision is right, depending on whether Dismiss was handled first
	if r.key(Key{Code: hotkey.KeyTab}) {
		t.Error("Tab swallowed with nothing showing")
	}
}

func TestInsertWithoutReadableCaret(t *testing.T) {
	el := newElem("a.b", 1, "ok", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "\nbye")
	el.mu.Lock()
	el.selErr = errors.New("AX read timed out")
	el.mu.Unlock()
	r.key(tab)
	if e := r.until(Accepted); e.Reason != "pasted, unconfirmed" {
		t.Errorf("accepted via %q", e.Reason)
	}
	if _, pasted, restored := r.keys.got(); len(pasted) != 1 || restored != 1 {
		t.Errorf("pasted %q, clipboard restored %d times", pasted, restored)
	}
	waited := time.Duration(0)
	for _, d := range r.sleeps {
		waited += d
	}
	if waited < 400*time.Millisecond {
		t.Errorf("clipboard restored after %v; the paste needs time to land", waited)
	}
}
