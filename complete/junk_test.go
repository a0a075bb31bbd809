package complete

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestJunkNeverShown: suggestions that save nothing or would insert wrong text are dropped,
// and a suggestion never starts with a blank the prefix already ends with.
func TestJunkNeverShown(t *testing.T) {
	ten := strings.Repeat("a", 10)
	v := newFakeVocab([]string{ten}, starcoderFIM, false)
	inf := math.Inf(-1)
	noPath := Options{MinPathLogprob: inf}
	cases := []struct {
		name, prefix, suffix, out string
		maxTokens                 int
		opt                       Options
		want                      string
	}{
		{name: "empty", out: "", want: ""},
		{name: "blank", out: "  \t ", want: ""},
		{name: "ellipsis", out: "...", want: ""},
		{name: "punctuation", out: "),", want: ""},
		{name: "blank and punctuation", out: " ;", want: ""},
		{name: "punctuation after a word", out: "x),", want: "x),"},
		{name: "operator", out: ":= 0", want: ":= 0"},
		{name: "symbol", out: "+=", want: "+="},
		{name: "400 characters", out: strings.Repeat(ten, 40), maxTokens: 64, opt: noPath, want: strings.Repeat(ten, 40)},
		{name: "over 400 characters", out: strings.Repeat(ten, 40) + "b", maxTokens: 64, opt: noPath, want: ""},
		// The line ends the suggestion, so the end-of-generation overlap rule does not look.
		{name: "repeats the suffix", out: "foo\nbar", suffix: "foo(x)\n", want: ""},
		{name: "repeats the suffix after blanks", out: "foo(\n", suffix: "  foo(x)", want: ""},
		{name: "starts like the suffix, differs", out: "fox\n", suffix: "foo", want: "fox"},
		{name: "space after a space", prefix: "x = ", out: " 1", want: "1"},
		{name: "spaces after a tab", prefix: "x =\t", out: "  1", want: "1"},
		{name: "space after no space", prefix: "x =", out: " 1", want: " 1"},
		{name: "newline after a space", prefix: "x = ", out: "\n1", want: "\n1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.MinChars = 1 // junk is never shown, whatever the gating
			c, _ := newFake(v, say(tc.out), tc.opt)
			prefix := tc.prefix
			if prefix == "" {
				prefix = ">"
			}
			var streamed strings.Builder
			sug, err := c.Complete(context.Background(), "t",
				Request{Prefix: prefix, Suffix: tc.suffix, MaxTokens: tc.maxTokens}, func(s string) { streamed.WriteString(s) })
			if err != nil {
				t.Fatal(err)
			}
			if sug.Text != tc.want {
				t.Errorf("got %q (%s), want %q", sug.Text, sug.Stop, tc.want)
			}
			if tc.want != "" && streamed.String() != sug.Text {
				t.Errorf("streamed %q, final %q", streamed.String(), sug.Text)
			}
		})
	}
}

// TestPathLogprob: a suggestion ends before the token that would make all of it less likely
// than MinPathLogprob, and is dropped when the first token alone is.
func TestPathLogprob(t *testing.T) {
	v := newFakeVocab(nil, starcoderFIM, false)
	cases := []struct {
		name string
		lps  []float32
		want string
	}{
		{"all sure", []float32{-0.5, -0.5, -0.5, -0.4}, "abcd"},             // -1.9
		{"cut before the fourth", []float32{-0.5, -0.5, -0.5, -0.6}, "abc"}, // -2.1 with d
		{"first too unlikely", []float32{-2.1}, ""},
		{"every token likely, too many", []float32{-0.7, -0.7, -0.7, -0.1}, "ab"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newFake(v, say("abcd", tc.lps...), Options{MinPathLogprob: -2, MinFirstLogprob: -3, MinChars: 1})
			sug, err := c.Complete(context.Background(), "t", Request{Prefix: ">"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sug.Text != tc.want {
				t.Errorf("got %q (%s), want %q", sug.Text, sug.Stop, tc.want)
			}
		})
	}
}

// TestFitsCaret: a suggestion is inserted as it is, so it fits the caret: no blank the prefix
// already ends with, nothing of the caret's line after it repeated, and no trailing blanks
// except before that line's text.
func TestFitsCaret(t *testing.T) {
	v := newFakeVocab(nil, starcoderFIM, false)
	cases := []struct {
		name, prefix, suffix, out string
		lines                     int
		lps                       []float32
		want                      string
	}{
		{name: "blanks after a blank", prefix: "a ", out: "  b", want: "b"},
		{name: "blank after no blank", prefix: "a", out: " b", want: " b"},
		{name: "closing bracket after the caret", prefix: "f(", suffix: ")", out: "x)", want: "x"},
		{name: "closing quote after the caret", prefix: "say \"", suffix: "\"\n", out: "hi\"", want: "hi"},
		{name: "the start of the caret's line", prefix: "x", suffix: "é!", out: "café", want: "caf"},
		{name: "blank before the caret's line", prefix: "f(a", suffix: ") + 1", out: ", b )", want: ", b "},
		{name: "trailing blanks at the end", prefix: "x", out: "foo \t", want: "foo"},
		{name: "trailing blanks before a blank suffix", prefix: "x", suffix: "  \n", out: "foo ", want: "foo"},
		{name: "dangling line end", prefix: "x", out: "foo\n", lines: 2, want: "foo"},
		{name: "blanks before a line end", prefix: "x", out: "foo  \nbar", want: "foo"},
		// The path rule cuts before the unsure "b": the blank before it goes too.
		{name: "blank before an unsure token", prefix: "x", out: "foo b", lps: []float32{-0.1, -0.1, -0.1, -0.1, -3}, want: "foo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newFake(v, say(tc.out, tc.lps...), Options{MinChars: 1, Profiles: map[string]Profile{"": {Lines: tc.lines}}})
			var streamed strings.Builder
			sug, err := c.Complete(context.Background(), "t", Request{Prefix: tc.prefix, Suffix: tc.suffix},
				func(s string) { streamed.WriteString(s) })
			if err != nil {
				t.Fatal(err)
			}
			if sug.Text != tc.want {
				t.Errorf("got %q (%s), want %q", sug.Text, sug.Stop, tc.want)
			}
			if streamed.String() != sug.Text {
				t.Errorf("streamed %q, final %q", streamed.String(), sug.Text)
			}
		})
	}
}

// TestWordLogprob: a suggestion is dropped when the tokens through its first word are less
// likely than MinWordLogprob, before any of it shows; the rest only answers to the path rule.
func TestWordLogprob(t *testing.T) {
	v := newFakeVocab(nil, starcoderFIM, false)
	cases := []struct {
		name, out string
		lps       []float32
		want      string
	}{
		{"sure word, sure rest", "foo bar", []float32{-0.1, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1}, "foo bar"},
		{"unsure word", "foo bar", []float32{-0.2, -0.2, -0.2, -0.1, -0.1, -0.1, -0.1}, ""},
		// The word is judged with the token that ends it ("x" makes it "foox").
		{"unsure at the word's last token", "foox bar", []float32{-0.1, -0.1, -0.1, -0.4, -0.1, -0.1, -0.1, -0.1}, ""},
		{"sure word, rest cut by the path", "foo bar", []float32{-0.1, -0.1, -0.1, -0.1, -1, -1, -1}, "foo ba"},
		{"punctuation is a word", "(x", []float32{-0.6, -0.1}, ""},
		{"sure punctuation", "(x", []float32{-0.3, -0.1}, "(x"},
		{"the whole suggestion is the word", "foo", []float32{-0.1, -0.1, -0.1}, "foo"},
		{"blanks before the word count", " foo", []float32{-0.3, -0.1, -0.1, -0.1}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newFake(v, say(tc.out, tc.lps...), Options{MinPathLogprob: -3, MinWordLogprob: -0.5, MinChars: 1})
			var streamed strings.Builder
			sug, err := c.Complete(context.Background(), "t", Request{Prefix: ">"}, func(s string) { streamed.WriteString(s) })
			if err != nil {
				t.Fatal(err)
			}
			if sug.Text != tc.want {
				t.Errorf("got %q (%s), want %q", sug.Text, sug.Stop, tc.want)
			}
			if streamed.String() != sug.Text {
				t.Errorf("streamed %q, final %q: a suggestion shows only once it is kept", streamed.String(), sug.Text)
			}
		})
	}
}

// TestMinChars: a suggestion of fewer than MinChars code points, blanks around it not
// counted, is dropped before any of it shows, unless all of it is MinShortLogprob likely.
func TestMinChars(t *testing.T) {
	v := newFakeVocab([]string{"é€"}, starcoderFIM, false)
	for _, tc := range []struct {
		out  string
		lps  []float32
		want string
	}{
		{"ab", []float32{-0.3, -0.3}, ""},
		{"ab", []float32{-0.1, -0.1}, "ab"}, // short but sure, with the end of generation (-0.1)
		{"ab", []float32{-0.1, -0.2}, ""},   // the end of generation makes it -0.4
		{"abc", []float32{-0.3, -0.3, -0.3}, "abc"},
		{"  ab", []float32{-0.1, -0.1, -0.2, -0.2}, ""},
		{" ab\n", []float32{-0.1, -0.1, -0.2, -0.1}, ""}, // the token cut at the line end counts
		{"é€x", []float32{-0.5, -0.5}, "é€x"},
		{"é€", []float32{-0.5}, ""}, // 5 bytes, 2 characters
		{"x.y", []float32{-0.3, -0.3, -0.3}, "x.y"},
	} {
		c, _ := newFake(v, say(tc.out, tc.lps...), Options{MinChars: 3, MinShortLogprob: -0.35})
		var streamed strings.Builder
		sug, err := c.Complete(context.Background(), "t", Request{Prefix: ">"}, func(s string) { streamed.WriteString(s) })
		if err != nil {
			t.Fatal(err)
		}
		if sug.Text != tc.want || streamed.String() != sug.Text {
			t.Errorf("%q %v: got %q (%s), streamed %q, want %q", tc.out, tc.lps, sug.Text, sug.Stop, streamed.String(), tc.want)
		}
	}
}
