package replay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/config"
)

// scripted suggests a fixed text for each prefix it knows, streamed a character at a time,
// and nothing for any other.
type scripted map[string]string

func (s scripted) Complete(ctx context.Context, r controller.Request, onText func(string)) (string, error) {
	text := s[r.Prefix]
	for _, c := range text {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		onText(string(c))
	}
	return text, nil
}

// The counts below are worked out by hand from the typist's rules: a pause before each
// non-blank character that follows a blank or punctuation, Tab when the whole suggestion
// matches, the accept-word key while its next word matches, and otherwise typing on.
//
//	"the cat sat on the mat. it purred." is 34 characters; pauses fall before the
//	characters at 4 (c), 12 (o), 15 (t), 19 (m) and 24 (i).
//	 4: "cat sat" matches the text: Tab, 7 characters; typing resumes at 11 (" on").
//	12: "on a rug": "on" matches, "a" does not: one accept-word press, 2 characters. The
//	    typed " " then types through the rest (" a rug"), so at 15 it still shows and the
//	    automatic mode asks for nothing; "t" dismisses it.
//	19: "floor." is wrong: shown, nothing accepted.
//	24: "it purred." matches: Tab, 10 characters, and the text is done.
//
// Saved: 7+2+10 = 19 characters for 3 presses: (19-3)/34.
func TestReplayCounts(t *testing.T) {
	text := "the cat sat on the mat. it purred."
	eng := scripted{
		"the ":                     "cat sat",
		"the cat sat ":             "on a rug",
		"the cat sat on the ":      "floor.",
		"the cat sat on the mat. ": "it purred.",
	}
	for _, tc := range []struct {
		mode     string
		requests int // the hotkey is pressed at 15 too, where nothing is suggested
	}{{config.ModeAutomatic, 4}, {config.ModeHotkey, 5}} {
		t.Run(tc.mode, func(t *testing.T) {
			rep, err := Run(context.Background(), Options{Text: text, Engine: eng, Mode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			want := Report{Mode: tc.mode, Chars: 34, CPS: 8, PauseMS: 300, Pauses: 5, Requests: tc.requests,
				Shown: 4, Wrong: 1, WrongShare: 0.25, Accepted: 3, CharsAccepted: 19, AcceptKeys: 3,
				KeystrokesSaved: 16.0 / 34}
			rep.Latency, rep.Engine = Stats{}, Stats{}
			if rep != want {
				t.Errorf("report\n got %+v\nwant %+v", rep, want)
			}
		})
	}
}

// A Tab in the text while a suggestion shows costs an Esc first; the Tab itself must reach
// the field, not accept the suggestion.
//
//	"set x\tok" is 8 characters; pauses fall before "x" (4) and "o" (6).
//	4: "x\tno": "x" matches, so one accept-word press takes it (1 character); the rest
//	   "\tno" shows, and its next word "\tno" does not match: Esc, then the Tab is typed.
//	6: "ok" matches: Tab, 2 characters.
//
// Saved: 3 characters for 2 accepting presses and an Esc: 0.
func TestReplayTabNeedsEsc(t *testing.T) {
	eng := scripted{"set ": "x\tno", "set x\t": "ok"}
	rep, err := Run(context.Background(), Options{Text: "set x\tok", Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	want := Report{Mode: config.ModeAutomatic, Chars: 8, CPS: 8, PauseMS: 300, Pauses: 2, Requests: 2,
		Shown: 2, Accepted: 2, CharsAccepted: 3, AcceptKeys: 2, EscKeys: 1}
	rep.Latency, rep.Engine = Stats{}, Stats{}
	if rep != want {
		t.Errorf("report\n got %+v\nwant %+v", rep, want)
	}
}

func TestReplayTiming(t *testing.T) {
	// The engine's real time moves the virtual clock: a suggestion 20 ms in the making shows
	// after about 20 ms, whatever the pause.
	eng := slow{d: 20 * time.Millisecond, text: "world"}
	rep, err := Run(context.Background(), Options{Text: "hello world", Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Shown != 1 || rep.CharsAccepted != 5 {
		t.Fatalf("shown %d, accepted %d characters; want 1 and 5", rep.Shown, rep.CharsAccepted)
	}
	if rep.Latency.P50 < 20 || rep.Latency.P50 > 20+200 {
		t.Errorf("latency p50 %.1f ms, want about 20 (the engine's time, not the pause)", rep.Latency.P50)
	}
	if rep.Engine.N != 1 || rep.Engine.Max < 20 {
		t.Errorf("engine time %+v, want one request of at least 20 ms", rep.Engine)
	}
}

// slow waits d and then returns text in one piece.
type slow struct {
	d    time.Duration
	text string
}

func (s slow) Complete(ctx context.Context, r controller.Request, onText func(string)) (string, error) {
	time.Sleep(s.d)
	if !strings.HasSuffix(r.Prefix, " ") {
		return "", nil
	}
	onText(s.text)
	return s.text, nil
}

func TestReplayBadInput(t *testing.T) {
	for _, o := range []Options{
		{Text: "a", Engine: nil},
		{Text: "\xff", Engine: scripted{}},
		{Text: "a", Engine: scripted{}, Mode: "sometimes"},
		{Text: "a", Engine: scripted{}, CPS: -1},
		{Text: "a", Engine: scripted{}, PauseMS: 1},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%s: no error", fmt.Sprintf("%+v", o))
		}
	}
}
