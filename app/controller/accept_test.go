package controller

import (
	"reflect"
	"testing"
	"time"

	"github.com/layaapp/laya/config"
)

// acceptCases: the text before and after the caret, the engine's suggestion (fitted to the
// caret, as package complete fits it), the pieces that accept-word inserts one press at a
// time, and the field's text at the end.
var acceptCases = []struct {
	name          string
	before, after string
	suggestion    string
	words         []string
	final         string
}{
	{"mid-word", "we", "", "ather is fine", []string{"ather", " is", " fine"}, "weather is fine"},
	{"after a space", "the ", "", "weather is", []string{"weather", " is"}, "the weather is"},
	{"after a tab", "x :=\t", "", "1", []string{"1"}, "x :=\t1"},
	{"before punctuation", "Hello", "", ", world.", []string{",", " world", "."}, "Hello, world."},
	{"contraction", "I", "", " don't know", []string{" don't", " know"}, "I don't know"},
	{"closing quote", "say ", "", "'hi' now", []string{"'", "hi", "'", " now"}, "say 'hi' now"},
	{"line end", "if x {", "", "\n\treturn y\n}", []string{"\n\treturn", " y", "\n}"}, "if x {\n\treturn y\n}"},
	{"suffix already there", "f(a", ")\nnext", ", b", []string{",", " b"}, "f(a, b"},
	{"suffix word", "hello ", "world!", "big ", []string{"big", " "}, "hello big "},
	{"Japanese", "私は", "", "今日は良い天気です", []string{"今日は", "良い", "天気です"}, "私は今日は良い天気です"},
	{"Chinese", "我", "", "今天很高兴。", []string{"今天", "很高", "兴", "。"}, "我今天很高兴。"},
	{"Katakana", "", "", "コンピューターを", []string{"コンピューター", "を"}, "コンピューターを"},
	{"emoji", "nice ", "", "👍🏽 👨‍👩‍👧 ok", []string{"👍🏽", " 👨‍👩‍👧", " ok"}, "nice 👍🏽 👨‍👩‍👧 ok"},
	{"flags", "go ", "", "🇯🇵🇫🇷", []string{"🇯🇵", "🇫🇷"}, "go 🇯🇵🇫🇷"},
	{"combining marks", "", "", "cafe\u0301 noe\u0308l", []string{"cafe\u0301", " noe\u0308l"}, "cafe\u0301 noe\u0308l"},
	{"snake case", "x = ", "", "snake_case()", []string{"snake_case", "(", ")"}, "x = snake_case()"},
}

func TestAcceptWordByWord(t *testing.T) {
	for _, tc := range acceptCases {
		t.Run(tc.name, func(t *testing.T) {
			el := newElem("a.b", 1, tc.before, tc.after)
			r := newRig(t, config.Default(), el)
			show(t, r, tc.suggestion)
			var got []string
			for i := 0; i < 20; i++ {
				before := el.String()
				if !r.key(cmdRight) {
					break
				}
				got = append(got, inserted(before, el.String()))
				r.advance(repositionDelay)
			}
			if !reflect.DeepEqual(got, tc.words) {
				t.Errorf("words %q, want %q", got, tc.words)
			}
			if want := tc.final + tc.after; el.String() != want {
				t.Errorf("field %q, want %q", el.String(), want)
			}
		})
	}
}

func TestAcceptAllExact(t *testing.T) {
	for _, tc := range acceptCases {
		t.Run(tc.name, func(t *testing.T) {
			el := newElem("a.b", 1, tc.before, tc.after)
			r := newRig(t, config.Default(), el)
			show(t, r, tc.suggestion)
			if !r.key(tab) {
				t.Fatal("Tab not swallowed")
			}
			if want := tc.final + tc.after; el.String() != want {
				t.Errorf("field %q, want %q", el.String(), want)
			}
		})
	}
}

func TestLastCluster(t *testing.T) {
	for in, want := range map[string]string{
		"abc": "c", "cafe\u0301": "e\u0301", "ok👍🏽": "👍🏽", "a👨‍👩‍👧": "👨‍👩‍👧", "": "",
	} {
		if got := lastCluster(in); got != want {
			t.Errorf("lastCluster(%q) = %q, want %q", in, got, want)
		}
	}
}

// typeKey is what the user's app does with a key the tap passed: the fake host applies it.
func typeKey(r *rig, el *fakeElem, s string) bool {
	swallowed := r.key(letter(s))
	if !swallowed {
		el.typeText(s)
	}
	return swallowed
}

func backspace(r *rig, el *fakeElem) {
	if r.key(Key{Code: 0x33, Text: "\b"}) {
		r.t.Fatal("Backspace swallowed")
	}
	el.mu.Lock()
	el.text = append(el.text[:el.sel.Loc-1], el.text[el.sel.Loc:]...)
	el.sel.Loc--
	el.mu.Unlock()
}

func TestTypeThrough(t *testing.T) {
	cfg := config.Default()
	cfg.Mode = config.ModeAutomatic
	el := newElem("a.b", 1, "the w", "")
	r := newRig(t, cfg, el)
	show(t, r, "eather is")
	for _, ch := range []string{"e", "a"} {
		if typeKey(r, el, ch) {
			t.Fatalf("typed %q swallowed", ch)
		}
	}
	r.advance(repositionDelay)
	vis, shows := r.ov.state()
	last := shows[len(shows)-1]
	if !vis || last.text != "ther is" || last.at.X != 100+10*7 {
		t.Fatalf("after typing \"ea\": visible=%v last=%+v, want \"ther is\" at x=170", vis, last)
	}
	r.advance(time.Second) // no pause request while the suggestion stays
	r.noCall()

	// Backspace within what was typed brings the letter back into the suggestion.
	backspace(r, el)
	r.advance(repositionDelay)
	if _, shows := r.ov.state(); shows[len(shows)-1].text != "ather is" {
		t.Errorf("after Backspace: %+v", shows[len(shows)-1])
	}
	// Tab accepts exactly the rest.
	if !r.key(tab) {
		t.Fatal("Tab not swallowed")
	}
	if el.String() != "the weather is" {
		t.Errorf("field %q", el.String())
	}

	// A key that differs from the suggestion dismisses it, and a pause asks again.
	show(t, r, " now")
	typeKey(r, el, " ")
	typeKey(r, el, "x")
	if vis, _ := r.ov.state(); vis {
		t.Error("a mismatching key left the suggestion up")
	}
	r.until(Dismissed)
	r.advance(time.Duration(cfg.PauseMS) * time.Millisecond)
	r.call()
}

func TestTypeThroughToTheEnd(t *testing.T) {
	el := newElem("a.b", 1, "o", "")
	r := newRig(t, config.Default(), el)
	show(t, r, "k")
	typeKey(r, el, "k")
	if vis, _ := r.ov.state(); vis {
		t.Error("nothing left, yet the suggestion shows")
	}
	if r.key(tab) {
		t.Error("Tab swallowed after the whole suggestion was typed")
	}
	// Backspace before anything was typed through dismisses.
	show(t, r, "yz")
	backspace(r, el)
	if vis, _ := r.ov.state(); vis {
		t.Error("Backspace outside the typed part kept the suggestion")
	}
}

// inserted is what was inserted into before to make after.
func inserted(before, after string) string {
	i := 0
	for i < len(before) && before[i] == after[i] {
		i++
	}
	j := 0
	for j < len(before)-i && before[len(before)-1-j] == after[len(after)-1-j] {
		j++
	}
	return after[i : len(after)-j]
}
