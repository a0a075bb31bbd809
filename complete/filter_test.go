package complete

import (
	"bytes"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine"
)

// FuzzFilter feeds arbitrary token texts through the stop rules and checks what must hold for
// any model output: what was streamed is the suggestion, the suggestion is a prefix of what
// the model said, it spans at most the allowed lines, and it never contains the text after the
// caret or a stop string.
func FuzzFilter(f *testing.F) {
	f.Add("foo|bar\nbaz", ")", "END", uint8(1), false)
	f.Add("Hello| there.| How", "", "", uint8(1), true)
	f.Add("\n|    return| x\n|y", "", "", uint8(2), false)
	f.Add("a, |b)|\n", ")\n", "", uint8(1), false)
	f.Add("x = |ba", "bar)", "", uint8(1), false)
	f.Add("ab|cEN|Ddef", "", "END", uint8(3), false)
	f.Fuzz(func(t *testing.T, out, suffix, stop string, lines uint8, sentence bool) {
		prof := Profile{Lines: int(lines % 4), Sentence: sentence}
		req := Request{Suffix: suffix}
		if stop != "" {
			req.Stop = []string{stop}
		}
		line, _, _ := strings.Cut(suffix, "\n")
		p := prompt{suffixLine: strings.TrimRight(line, " \t\r")}
		filt := newFilter(req, prof, p, newCompleter(lm{vocab: newFakeVocab(nil, nil, false)}, Options{}).opt)
		var streamed strings.Builder
		onText := func(s string) { streamed.WriteString(s) }
		said := ""
		stopped := "eos"
		for _, piece := range strings.Split(out, "|") {
			said += piece
			if filt.add(engine.Token{Text: piece, Logprob: -0.1}, onText) != nil {
				stopped = "stop"
				break
			}
		}
		sug := filt.finish(stopped, onText)
		if streamed.String() != sug.Text {
			t.Fatalf("streamed %q, suggestion %q", streamed.String(), sug.Text)
		}
		if !strings.HasPrefix(said, sug.Text) {
			t.Fatalf("suggestion %q is not a prefix of the output %q", sug.Text, said)
		}
		if sug.Text == "" {
			return
		}
		if p.suffixLine != "" && strings.TrimSpace(p.suffixLine) != "" && strings.Contains(sug.Text, p.suffixLine) {
			t.Fatalf("suggestion %q repeats the suffix line %q", sug.Text, p.suffixLine)
		}
		if stop != "" && strings.Contains(sug.Text, stop) {
			t.Fatalf("suggestion %q contains the stop string %q", sug.Text, stop)
		}
		// Newlines after the first non-space byte end lines.
		body := bytes.TrimLeft([]byte(sug.Text), " \t\r\n")
		if n := bytes.Count(body, []byte("\n")); n >= max(prof.Lines, 1) {
			t.Fatalf("suggestion %q spans %d line ends, allowed %d", sug.Text, n, max(prof.Lines, 1)-1)
		}
	})
}
