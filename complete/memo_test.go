package complete

import (
	"bytes"
	"context"
	"testing"
)

// TestMemo: completers on one memo give what completers on the model give, whatever their
// gating, and compute each prompt once; a saved memo serves a new one.
func TestMemo(t *testing.T) {
	v := newFakeVocab(nil, starcoderFIM, false)
	out := say("foo bar baz", -0.1, -0.1, -0.1, -0.1, -0.5, -0.5, -0.5, -0.1, -0.9, -0.9, -0.9)
	strict, loose := Options{MinPathLogprob: -1}, Options{MinPathLogprob: -5}
	reqs := []Request{{Prefix: "x = "}, {Prefix: "y"}, {Prefix: "x = "}}
	want := map[bool][]string{}
	for _, isStrict := range []bool{true, false} {
		opt := loose
		if isStrict {
			opt = strict
		}
		c, _ := newFake(v, out, opt)
		for _, r := range reqs {
			sug, err := c.Complete(context.Background(), "t", r, nil)
			if err != nil {
				t.Fatal(err)
			}
			want[isStrict] = append(want[isStrict], sug.Text)
		}
	}
	if want[true][0] == want[false][0] {
		t.Fatalf("the gating makes no difference (%q): the test shows nothing", want[true][0])
	}

	m := &fakeModel{v: v, say: out, bytes: 1000}
	memo := newMemo(m.lm(512))
	generated := func() int {
		n := 0
		for _, s := range m.sessions {
			n += len(s.prompts)
		}
		return n
	}
	check := func(memo *Memo, isStrict bool) {
		t.Helper()
		opt := loose
		if isStrict {
			opt = strict
		}
		c := memo.Completer(opt)
		defer c.Close()
		for i, r := range reqs {
			var streamed string
			sug, err := c.Complete(context.Background(), "t", r, func(s string) { streamed += s })
			if err != nil {
				t.Fatal(err)
			}
			if sug.Text != want[isStrict][i] || streamed != sug.Text {
				t.Errorf("strict %v, request %d: got %q, streamed %q, want %q", isStrict, i, sug.Text, streamed, want[isStrict][i])
			}
		}
	}
	check(memo, true)
	check(memo, false)
	if n := generated(); n != 2 || memo.Prompts() != 2 {
		t.Errorf("the model computed %d prompts, the memo holds %d; want 2 (the distinct prompts)", n, memo.Prompts())
	}

	var buf bytes.Buffer
	if err := memo.Save(&buf); err != nil {
		t.Fatal(err)
	}
	m2 := &fakeModel{v: v, say: say("wrong"), bytes: 1000}
	memo2 := newMemo(m2.lm(512))
	if err := memo2.Load(&buf); err != nil {
		t.Fatal(err)
	}
	check(memo2, false)
	for _, s := range m2.sessions {
		if len(s.prompts) > 0 {
			t.Errorf("a loaded memo computed %d prompts again", len(s.prompts))
		}
	}
	if err := memo2.Load(bytes.NewReader([]byte("not a memo"))); err == nil {
		t.Error("Load accepted garbage")
	}
}
