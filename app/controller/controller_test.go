package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/hotkey"
)

var (
	tab      = Key{Code: hotkey.KeyTab}
	esc      = Key{Code: hotkey.KeyEscape}
	cmdRight = Key{Code: hotkey.KeyRight, Mods: hotkey.ModCmd}
)

func letter(s string) Key { return Key{Code: 0x00, Text: s} }

func TestHotkeyShowAccept(t *testing.T) {
	el := newElem("com.example.editor", 1, "def add(a, b):\n    ", "\n\nprint(1)")
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	call := r.call()
	want := Request{Prefix: "def add(a, b):\n    ", Suffix: "\n\nprint(1)", App: "com.example.editor",
		MaxTokens: 32, Temperature: 0.2, TopK: 40, TopP: 0.95}
	if call.req != want {
		t.Fatalf("request %+v\nwant    %+v", call.req, want)
	}
	r.advance(40 * time.Millisecond)
	call.reply <- engineReply{text: "return a + b"}
	ev := r.until(Shown)
	if ev.Latency != 40*time.Millisecond {
		t.Errorf("latency %v, want the 40ms between hotkey and result", ev.Latency)
	}
	vis, shows := r.ov.state()
	if !vis || len(shows) != 1 || shows[0].text != "return a + b" || shows[0].at.X != 140 || shows[0].at.Y != 480 {
		t.Fatalf("overlay visible=%v shows=%+v; want the text at the caret (140, 480)", vis, shows)
	}
	if !r.key(tab) {
		t.Fatal("Tab not swallowed while a suggestion shows")
	}
	if e := r.until(Accepted); e.Chars != len("return a + b") {
		t.Errorf("accepted %d characters", e.Chars)
	}
	if got := el.String(); got != "def add(a, b):\n    return a + b\n\nprint(1)" {
		t.Errorf("text after accept = %q", got)
	}
	if vis, _ := r.ov.state(); vis {
		t.Error("overlay still visible after accept")
	}
	if r.key(tab) {
		t.Error("Tab swallowed with nothing showing")
	}
}

func show(t *testing.T, r *rig, text string) {
	t.Helper()
	r.c.Hotkey()
	r.call().reply <- engineReply{text: text}
	r.until(Shown)
}

func TestEscDismisses(t *testing.T) {
	el := newElem("a.b", 1, "x = ", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "42")
	if !r.key(esc) {
		t.Fatal("Esc not swallowed")
	}
	r.until(Dismissed)
	if vis, _ := r.ov.state(); vis || el.String() != "x = " || len(r.keys.typed) != 0 {
		t.Errorf("after Esc: visible=%v text=%q typed=%v", vis, el.String(), r.keys.typed)
	}
}

func TestOtherKeyDismissesAndPassesThrough(t *testing.T) {
	el := newElem("a.b", 1, "x = ", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "42")
	if r.key(letter("y")) {
		t.Fatal("an ordinary key was swallowed")
	}
	if vis, _ := r.ov.state(); vis {
		t.Error("suggestion survived a keystroke")
	}
	if r.key(Key{Code: hotkey.KeyTab, Mods: hotkey.ModShift}) {
		t.Error("Shift+Tab swallowed with nothing showing")
	}
}

func TestAcceptNextWord(t *testing.T) {
	el := newElem("a.b", 1, "I like 🍣 ", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "寿司 and ramen")
	caret := 7 + 2 + 1 // "I like " + surrogate pair + " "
	if !r.key(cmdRight) {
		t.Fatal("accept-word key not swallowed")
	}
	if el.String() != "I like 🍣 寿司" {
		t.Fatalf("after one word: %q", el.String())
	}
	if vis, _ := r.ov.state(); vis {
		t.Error("old ghost text left over the inserted word")
	}
	r.advance(repositionDelay)
	vis, shows := r.ov.state()
	last := shows[len(shows)-1]
	if !vis {
		t.Fatal("remainder not shown again")
	}
	if last.text != " and ramen" || last.at.X != 100+10*float64(caret+2) {
		t.Errorf("remainder shown %+v, want \" and ramen\" at x=%d", last, 100+10*(caret+2))
	}
	r.key(cmdRight)
	r.advance(repositionDelay)
	if !r.key(cmdRight) {
		t.Fatal("third word not accepted")
	}
	r.advance(repositionDelay)
	if vis, _ := r.ov.state(); el.String() != "I like 🍣 寿司 and ramen" || vis {
		t.Errorf("after three words: %q visible=%v", el.String(), vis)
	}
	if r.key(cmdRight) {
		t.Error("accept-word key swallowed with nothing left to accept")
	}
}

func TestTypingDuringRepositionDismisses(t *testing.T) {
	el := newElem("a.b", 1, "x ", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "foo bar")
	r.key(cmdRight)
	r.key(letter("z"))
	r.advance(repositionDelay)
	if vis, _ := r.ov.state(); vis {
		t.Error("remainder reappeared after the user typed")
	}
}

func TestUTF16Capture(t *testing.T) {
	// Before: 1 ASCII, 1 CJK (1 unit), 1 emoji (2 units), 1 ASCII = 5 units, caret at 5.
	el := newElem("a.b", 1, "a中😀b", "😀x中")
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	c := r.call()
	if c.req.Prefix != "a中😀b" || c.req.Suffix != "😀x中" {
		t.Fatalf("prefix %q suffix %q", c.req.Prefix, c.req.Suffix)
	}
	c.reply <- engineReply{text: "z"}
	r.until(Shown)
	if _, shows := r.ov.state(); shows[0].at.X != 100+10*5 {
		t.Errorf("caret x = %v, want the UTF-16 offset 5 → %d", shows[0].at.X, 150)
	}
}

func TestCaptureBounds(t *testing.T) {
	// Limits of 3 code points: the read windows (6 units) cut surrogate pairs at both edges.
	before := "0123😀😀😀"
	after := "😀😀😀tail"
	el := newElem("a.b", 1, before, after)
	r := newRig(t, config.Default(), el)
	r.c.d.Before, r.c.d.After = 3, 3
	r.c.Hotkey()
	c := r.call()
	// The prefix window is the last 3 units, which start inside the second emoji: only the third
	// is whole.
	if c.req.Prefix != "😀" || c.req.Suffix != "😀😀😀" {
		t.Errorf("bounded prefix %q suffix %q, want one emoji and three", c.req.Prefix, c.req.Suffix)
	}
	if strings.ContainsRune(c.req.Prefix+c.req.Suffix, '\uFFFD') {
		t.Error("a cut surrogate became U+FFFD")
	}
	// Orphaned halves at either edge of a window are dropped.
	if got := decodeWindow([]uint16{0xDE00, 'c'}); got != "c" {
		t.Errorf("decodeWindow with leading low surrogate = %q", got)
	}
	if got := decodeWindow([]uint16{'c', 0xD83D}); got != "c" {
		t.Errorf("decodeWindow with trailing high surrogate = %q", got)
	}
}

// TestCaptureWindowStable types into a field longer than the window: the prefix must keep its
// start while the caret moves (the engine reuses its cache only for a prompt with the same
// start), moving on only once every Before/8 units, and never exceed Before code points.
func TestCaptureWindowStable(t *testing.T) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog\n", 400) // 17600 units
	const before = 3000
	starts := map[int]bool{}
	for caret := 10000; caret < 11000; caret++ {
		el := newElem("a.b", 1, text[:caret], text[caret:])
		r := newRig(t, config.Default(), el)
		r.c.d.Before = before
		prefix, _, _, _, err := r.c.read(el)
		if err != nil {
			t.Fatal(err)
		}
		if n := utf8.RuneCountInString(prefix); n > before || n < before-before/8 {
			t.Fatalf("caret %d: prefix of %d code points, want %d..%d", caret, n, before-before/8, before)
		}
		if !strings.HasSuffix(text[:caret], prefix) {
			t.Fatalf("caret %d: prefix is not the text before the caret", caret)
		}
		starts[caret-len(prefix)] = true
	}
	if want := (1000+before/8-1)/(before/8) + 1; len(starts) > want {
		t.Errorf("1000 keystrokes moved the window's start %d times, want at most %d", len(starts), want)
	}
}

func TestCaretFallback(t *testing.T) {
	el := newElem("a.b", 1, "abc", "")
	el.emptyCaret = true
	r := newRig(t, config.Default(), el)
	show(t, r, "d")
	if _, shows := r.ov.state(); shows[0].at.X != 100+10*3 || shows[0].at.H != 16 {
		t.Errorf("fallback caret %+v, want the right edge of 'c' (x=130)", shows[0].at)
	}
	el2 := newElem("a.b", 2, "", "")
	el2.emptyCaret = true
	r.focus(el2)
	r.c.Hotkey()
	if e := r.until(Refused); !strings.Contains(e.Reason, "caret") {
		t.Errorf("empty field without caret bounds: %q", e.Reason)
	}
	r.noCall()
}

func TestSecureFieldsRefused(t *testing.T) {
	infos := []FieldInfo{
		{Role: "AXSecureTextField"},
		{Role: "AXTextField", Subrole: "AXSecureTextField"},
		{Role: "AXTextField", Identifier: "login-password"},
		{Role: "AXTextField", Identifier: "newPassword2"},
		{Role: "AXTextField", Placeholder: "Enter your passcode"},
		{Role: "AXTextField", Placeholder: "One-time code"},
		{Role: "AXTextField", Title: "CVV"},
		{Role: "AXTextField", Identifier: "userOTPInput"},
		{Role: "AXTextField", Description: "Card number"},
		{Role: "AXTextField", Identifier: "cc-csc"},
		{Role: "AXTextField", Placeholder: "PIN"},
		{Role: "AXTextField", Identifier: "2FA"},
	}
	for _, info := range infos {
		el := newElem("com.example.bank", 1, "secret", "")
		info.App, info.ID = "com.example.bank", 1
		el.info = info
		r := newRig(t, config.Default(), el)
		r.c.Hotkey()
		r.until(Refused)
		r.noCall()
	}
	// Words that merely contain a short credential word are fine.
	for _, s := range []string{"Compass heading", "spinner", "Passage notes", "Shipping address", "opinion"} {
		if w := credentialMatch(s); w != "" {
			t.Errorf("%q looks like a credential (%q)", s, w)
		}
	}
}

func TestSecureInputRefused(t *testing.T) {
	r := newRig(t, config.Default(), newElem("a.b", 1, "x", ""))
	r.fields.secure = true
	r.c.Hotkey()
	if e := r.until(Refused); !strings.Contains(e.Reason, "secure input") {
		t.Errorf("reason %q", e.Reason)
	}
	r.noCall()
}

func TestPerAppRules(t *testing.T) {
	cfg := config.Default()
	cfg.Apps = map[string]bool{"com.apple.Terminal": false}
	r := newRig(t, cfg, newElem("com.apple.Terminal", 1, "ls ", ""))
	r.c.Hotkey()
	if e := r.until(Refused); e.App != "com.apple.Terminal" {
		t.Errorf("refusal %+v", e)
	}
	r.noCall()
	r.focus(newElem("com.apple.TextEdit", 2, "Dear ", ""))
	r.c.Hotkey()
	r.call().reply <- engineReply{text: "Sir"}
	r.until(Shown)

	cfg.Enabled = false
	r.c.SetConfig(cfg)
	if vis, _ := r.ov.state(); vis {
		t.Error("disabling left the suggestion on screen")
	}
	r.c.Hotkey()
	r.until(Refused)
	r.noCall()
}

func TestKeystrokeCancelsInFlight(t *testing.T) {
	el := newElem("a.b", 1, "x", "")
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	c := r.call()
	r.key(letter("y"))
	r.until(Canceled)
	select {
	case <-c.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("request context not canceled by a keystroke")
	}
	c.reply <- engineReply{text: "late"} // an engine that ignores cancellation
	r.until(Stale)
	if _, shows := r.ov.state(); len(shows) != 0 {
		t.Errorf("stale result shown: %+v", shows)
	}
}

func TestNewerRequestWins(t *testing.T) {
	el := newElem("a.b", 1, "x", "")
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	first := r.call()
	r.c.Hotkey()
	second := r.call()
	first.reply <- engineReply{text: "old"}
	r.until(Stale)
	second.reply <- engineReply{text: "new"}
	r.until(Shown)
	if _, shows := r.ov.state(); len(shows) != 1 || shows[0].text != "new" {
		t.Errorf("shows %+v, want only the newer result", shows)
	}
}

func TestResultStaleAfterFocusOrCaretMove(t *testing.T) {
	for name, move := range map[string]func(r *rig, el *fakeElem){
		"focus":  func(r *rig, el *fakeElem) { r.focus(newElem("a.b", 2, "x", "")) },
		"app":    func(r *rig, el *fakeElem) { r.focus(newElem("c.d", 1, "x", "")) },
		"caret":  func(r *rig, el *fakeElem) { el.mu.Lock(); el.sel.Loc = 0; el.mu.Unlock() },
		"edited": func(r *rig, el *fakeElem) { el.typeText("!"); el.mu.Lock(); el.sel.Loc--; el.mu.Unlock() },
		"none":   func(r *rig, el *fakeElem) { r.focus(nil) },
	} {
		el := newElem("a.b", 1, "x", "")
		r := newRig(t, config.Default(), el)
		r.c.Hotkey()
		c := r.call()
		move(r, el)
		c.reply <- engineReply{text: "y"}
		r.until(Stale)
		if _, shows := r.ov.state(); len(shows) != 0 {
			t.Errorf("%s: stale result shown", name)
		}
	}
}

func TestEngineErrorAndEmpty(t *testing.T) {
	r := newRig(t, config.Default(), newElem("a.b", 1, "x", ""))
	r.c.Hotkey()
	r.call().reply <- engineReply{err: errors.New("boom")}
	if e := r.until(Failed); e.Err == nil || e.Err.Error() != "boom" {
		t.Errorf("failure event %+v", e)
	}
	r.c.Hotkey()
	r.call().reply <- engineReply{text: "  \n"}
	r.until(Empty)
	if _, shows := r.ov.state(); len(shows) != 0 {
		t.Error("blank suggestion shown")
	}
}

func TestInsertFailure(t *testing.T) {
	el := newElem("a.b", 1, "x", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "yz")
	r.keys.fail = errors.New("field is read-only")
	if !r.key(tab) {
		t.Fatal("Tab not swallowed")
	}
	r.until(Failed)
	if vis, _ := r.ov.state(); vis {
		t.Error("still showing after a failed insert")
	}
}

func TestSelectionRefused(t *testing.T) {
	el := newElem("a.b", 1, "abc", "def")
	el.sel = Range{1, 2}
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	if e := r.until(Refused); !strings.Contains(e.Reason, "selected") {
		t.Errorf("reason %q", e.Reason)
	}
	r.noCall()
}

func TestAutomaticMode(t *testing.T) {
	cfg := config.Default()
	cfg.Mode = config.ModeAutomatic
	cfg.PauseMS = 300
	el := newElem("a.b", 1, "hel", "")
	r := newRig(t, cfg, el)

	r.key(letter("l"))
	r.advance(200 * time.Millisecond)
	r.key(letter("o")) // restarts the pause
	r.advance(200 * time.Millisecond)
	r.noCall()
	r.key(Key{Code: 0x08, Mods: hotkey.ModCmd, Text: "c"}) // Cmd+C is not typing
	r.advance(time.Second)
	r.noCall()

	r.key(letter(" "))
	r.advance(300 * time.Millisecond)
	c := r.call()
	if c.req.Prefix != "hel" {
		t.Errorf("prefix %q", c.req.Prefix) // the fake host does not apply tapped keys
	}
	r.key(letter("w")) // a new keystroke cancels the request in flight
	select {
	case <-c.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("keystroke did not cancel the automatic request")
	}
	r.advance(300 * time.Millisecond)
	c2 := r.call()
	c2.reply <- engineReply{text: "orld"}
	r.until(Shown)
	c.reply <- engineReply{text: "stale"}
	r.until(Stale)
	if _, shows := r.ov.state(); len(shows) != 1 || shows[0].text != "orld" {
		t.Errorf("shows %+v", shows)
	}

	// Dismiss (focus change) stops the pending pause timer.
	r.key(letter("x"))
	r.c.Dismiss()
	r.c.Flush()
	r.advance(time.Second)
	r.noCall()

	// Hotkey mode never starts requests from typing.
	cfg.Mode = config.ModeHotkey
	r.c.SetConfig(cfg)
	r.key(letter("x"))
	r.advance(time.Second)
	r.noCall()
}

func TestHotkeyKeystrokeIgnored(t *testing.T) {
	r := newRig(t, config.Default(), newElem("a.b", 1, "x", ""))
	r.c.Hotkey()
	c := r.call()
	sp := config.Default().HotkeySpec()
	r.c.KeyDown(Key{Code: sp.Key, Mods: sp.Mods, Text: " "})
	if c.ctx.Err() != nil {
		t.Error("the hotkey's own keystroke canceled the request it started")
	}
	c.reply <- engineReply{text: "y"}
	r.until(Shown)
}

func TestCanceledEngineIsNotFailure(t *testing.T) {
	r := newRig(t, config.Default(), newElem("a.b", 1, "x", ""))
	r.c.Hotkey()
	r.call().reply <- engineReply{err: context.Canceled}
	r.until(Canceled)
}

func TestKeystrokeDuringCapture(t *testing.T) {
	el := newElem("a.b", 1, "x", "")
	r := newRig(t, config.Default(), el)
	once := true
	el.onRead = func() {
		if once {
			once = false
			// The field is read without the lock, so the event tap is never kept waiting, and
			// a key typed meanwhile voids the capture.
			if r.c.KeyDown(letter("q")) {
				t.Error("key swallowed")
			}
			r.c.drainInputs()
		}
	}
	r.c.Hotkey()
	r.until(Canceled)
	r.noCall()
	r.c.Hotkey() // the next capture, undisturbed, goes through
	r.call()
}

func TestStreaming(t *testing.T) {
	el := newElem("a.b", 1, "for i in", "")
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	c := r.call()
	r.piece(c, " ") // whitespace alone is not worth showing
	if _, shows := r.ov.state(); len(shows) != 0 {
		t.Fatalf("blank piece shown: %+v", shows)
	}
	r.piece(c, "range")
	r.piece(c, "(10)")
	vis, shows := r.ov.state()
	if !vis || len(shows) != 2 || shows[0].text != " range" || shows[1].text != " range(10)" {
		t.Fatalf("streamed shows %+v", shows)
	}
	c.reply <- engineReply{text: " range(10):"}
	r.until(Shown)
	if _, shows := r.ov.state(); shows[len(shows)-1].text != " range(10):" {
		t.Errorf("final text not shown: %+v", shows)
	}
}

func TestTabAcceptsWhatStreamed(t *testing.T) {
	el := newElem("a.b", 1, "x = ", "")
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	c := r.call()
	r.piece(c, "compute(")
	if !r.key(tab) {
		t.Fatal("Tab not swallowed while streamed text shows")
	}
	if el.String() != "x = compute(" {
		t.Errorf("accepted %q", el.String())
	}
	if c.ctx.Err() == nil {
		t.Error("the rest of the generation was not canceled")
	}
	c.reply <- engineReply{text: "compute(a, b)"}
	r.until(Stale)
	if _, shows := r.ov.state(); shows[len(shows)-1].text != "compute(" {
		t.Errorf("late final result shown: %+v", shows)
	}
}

func TestStreamedThenDropped(t *testing.T) {
	r := newRig(t, config.Default(), newElem("a.b", 1, "x", ""))
	r.c.Hotkey()
	c := r.call()
	r.piece(c, "maybe")
	c.reply <- engineReply{text: ""} // the engine dropped it as unsure
	r.until(Empty)
	if vis, _ := r.ov.state(); vis {
		t.Error("dropped suggestion left on screen")
	}
}

func TestStreamingStopsOnKeystroke(t *testing.T) {
	r := newRig(t, config.Default(), newElem("a.b", 1, "x", ""))
	r.c.Hotkey()
	c := r.call()
	r.piece(c, "abc")
	if r.key(letter("q")) {
		t.Error("ordinary key swallowed")
	}
	r.piece(c, "def")
	if vis, shows := r.ov.state(); vis || len(shows) != 1 {
		t.Errorf("visible=%v shows=%+v after a keystroke", vis, shows)
	}
}

func TestStreamingRefusedAfterFocusMoved(t *testing.T) {
	el := newElem("a.b", 1, "x", "")
	r := newRig(t, config.Default(), el)
	r.c.Hotkey()
	c := r.call()
	r.focus(newElem("a.b", 2, "other", ""))
	r.piece(c, "abc")
	if _, shows := r.ov.state(); len(shows) != 0 {
		t.Errorf("streamed into a field that lost focus: %+v", shows)
	}
	if c.ctx.Err() == nil {
		t.Error("request for a lost field not canceled")
	}
}
