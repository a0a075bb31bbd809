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
			c, _ := newFake(v, say("abcd", tc.lps...), Options{MinPathLogprob: -2, MinFirstLogprob: -3})
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
