package complete

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/layaapp/laya/engine"
)

// errFilterStop ends generation once the filter has the whole suggestion.
var errFilterStop = errors.New("complete: suggestion complete")

// DefaultMinPathLogprob is Options.MinPathLogprob's default: a suggestion is cut where the
// model's probability that all of it is right falls below e^-1 (37%). Chosen from `laya replay`
// sweeps (docs/performance.md): it keeps over 90% of the ungated keystrokes saved, where -0.75
// keeps 79% on held-out Python.
const DefaultMinPathLogprob = -1.0

// DefaultMinWordLogprob is Options.MinWordLogprob's default: off. Judging the first word apart
// from the path cost more keystrokes than it saved wrong suggestions in `laya replay` sweeps
// (docs/performance.md); the knob stays for sweeps.
var DefaultMinWordLogprob = math.Inf(-1)

// DefaultMinChars is Options.MinChars's default. Accepting a suggestion of n characters saves
// at most n-1 keystrokes, so short ones are worth little and, being what the model says when it
// is unsure how to go on, are often wrong: dropping those under 4 characters brought wrong
// suggestions from 39% to 28% of those shown and kept 95% of the keystrokes saved (`laya
// replay --sweep` on app/controller/text.go, docs/performance.md).
const DefaultMinChars = 4

// DefaultMinShortLogprob is Options.MinShortLogprob's default: a short suggestion is shown when
// the model is nearly sure of it ("np" after "import numpy as ").
const DefaultMinShortLogprob = -0.4

// maxSuggestionRunes is the longest suggestion shown, in code points: longer text is more than
// anyone checks at a glance before accepting it.
const maxSuggestionRunes = 400

// filter turns generated tokens into the suggestion: it strips the healed text, applies the
// stop rules and the confidence thresholds, and streams the text that is certain to stay.
type filter struct {
	opt      Options
	healed   string  // text the first tokens must reproduce and that is not suggested
	cands    []int32 // the tokens the first one was chosen from, by id
	healBuf  string
	lines    int // Profile.Lines
	sentence bool
	stops    [][]byte // Request.Stop, then the suffix line (last)
	hasSuf   bool

	text    []byte
	emitted int
	scanned int  // bytes of text checked by the line and sentence rules
	content bool // a non-space byte came before text[scanned]
	newline int  // line ends after content so far
	n       int  // tokens seen
	kept    int  // tokens that contributed to text
	lpSum   float64
	// word is set once the text holds its whole first word and the word rule passed it.
	word   bool
	stop   string
	reject bool
	// trimLead drops blanks the suggestion starts with while the prefix already ends with one.
	trimLead bool
}

func newFilter(req Request, prof Profile, p prompt, opt Options) *filter {
	f := &filter{opt: opt, healed: p.healed, lines: max(prof.Lines, 1), sentence: prof.Sentence,
		trimLead: strings.HasSuffix(req.Prefix, " ") || strings.HasSuffix(req.Prefix, "\t")}
	if len(p.firstTokens) > 0 {
		f.cands = slices.Sorted(slices.Values(p.firstTokens))
	}
	for _, s := range req.Stop {
		if s != "" {
			f.stops = append(f.stops, []byte(s))
		}
	}
	if strings.TrimSpace(p.suffixLine) != "" {
		f.stops = append(f.stops, []byte(p.suffixLine))
		f.hasSuf = true
	}
	return f
}

// add takes the next generated token; it returns errFilterStop when the suggestion is complete.
func (f *filter) add(t engine.Token, onText func(string)) error {
	if f.stop != "" {
		return errFilterStop
	}
	lp := float64(t.Logprob)
	if f.n == 0 && f.cands != nil {
		lp = f.healedLogprob(t)
	}
	if (f.n == 0 && lp < f.opt.MinFirstLogprob) || (f.n > 0 && lp < f.opt.MinTokenLogprob) ||
		f.lpSum+lp < f.opt.MinPathLogprob {
		f.stop, f.reject = "unsure", f.n == 0
		return errFilterStop
	}
	f.n++
	piece := t.Text
	if f.healed != "" {
		f.healBuf += piece
		if len(f.healBuf) < len(f.healed) {
			if !strings.HasPrefix(f.healed, f.healBuf) {
				f.stop, f.reject = "unsure", true
				return errFilterStop
			}
			f.lpSum += lp
			f.kept++
			return nil
		}
		if !strings.HasPrefix(f.healBuf, f.healed) {
			f.stop, f.reject = "unsure", true
			return errFilterStop
		}
		piece, f.healed, f.healBuf = f.healBuf[len(f.healed):], "", ""
	}
	if f.trimLead && len(f.text) == 0 {
		piece = strings.TrimLeft(piece, " \t")
	}
	from := len(f.text)
	f.text = append(f.text, piece...)
	f.lpSum += lp
	f.kept++
	cut, why := f.cutPoint(from)
	if why != "" {
		f.text, f.stop = f.text[:cut], why
	}
	if !f.word {
		// The path's probability only falls: once below the bar, the first word is too.
		if f.lpSum < f.opt.MinWordLogprob {
			f.stop, f.reject = "unsure", true
			return errFilterStop
		}
		f.word = firstWordDone(f.text)
	}
	if why != "" {
		return errFilterStop
	}
	f.emit(onText, f.safeLen())
	return nil
}

// firstWordDone reports whether text holds all of its first word: after any blanks, a run of
// letters, digits and underscores, or else one character. This is the word accept-word takes
// (app/controller's NextWord) in the scripts code is written in.
func firstWordDone(text []byte) bool {
	i := 0
	for i < len(text) {
		r, n := utf8.DecodeRune(text[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += n
	}
	if i == len(text) {
		return false
	}
	r, n := utf8.DecodeRune(text[i:])
	if !isWordRune(r) {
		return true
	}
	for i += n; i < len(text); i += n {
		r, n = utf8.DecodeRune(text[i:])
		if !isWordRune(r) {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// healedLogprob is the log-probability of a healed first token among the tokens it was
// allowed to be: the model's confidence in the continuation given the text the user typed.
// Only the Top entries of t are known, so the candidates' mass is a lower bound.
func (f *filter) healedLogprob(t engine.Token) float64 {
	mass := math.Exp(float64(t.Logprob))
	for _, e := range t.Top {
		if _, ok := slices.BinarySearch(f.cands, e.ID); ok && e.ID != t.ID {
			mass += math.Exp(float64(e.Logprob))
		}
	}
	return float64(t.Logprob) - math.Log(mass)
}

// cutPoint finds the earliest place the rules end the suggestion, looking at text added from
// byte from on.
func (f *filter) cutPoint(from int) (int, string) {
	cut := len(f.text) + 1
	for ; f.scanned < len(f.text); f.scanned++ {
		b := f.text[f.scanned]
		switch {
		case b == '\n':
			if f.content {
				f.newline++
				if f.newline >= f.lines {
					return f.earliestStop(from, f.scanned, "line")
				}
			}
		case b == ' ' || b == '\t' || b == '\r':
		default:
			f.content = true
			if f.sentence && (b == '.' || b == '!' || b == '?') && f.scanned+1 < len(f.text) {
				if next := f.text[f.scanned+1]; next == ' ' || next == '\n' || next == '\t' {
					return f.earliestStop(from, f.scanned+1, "sentence")
				}
			}
		}
		// The byte after sentence punctuation decides; leave the punctuation for next time.
		if f.sentence && f.scanned+1 == len(f.text) && (b == '.' || b == '!' || b == '?') {
			break
		}
	}
	if c, w := f.earliestStop(from, cut, ""); w != "" {
		return c, w
	}
	return 0, ""
}

// earliestStop returns the first stop-string match that begins before cut, else cut and why.
func (f *filter) earliestStop(from, cut int, why string) (int, string) {
	for i, s := range f.stops {
		start := max(0, from-len(s)+1)
		if j := bytes.Index(f.text[start:], s); j >= 0 && start+j < cut {
			cut, why = start+j, "stop"
			if f.hasSuf && i == len(f.stops)-1 {
				why = "suffix"
			}
		}
	}
	return cut, why
}

// safeLen is how much of text no later token can take back: it withholds a tail that could
// begin a stop string and the whitespace before it (a line end trims trailing whitespace, and
// a suggestion that is only whitespace is dropped).
//
// Until the gating rules that judge a suggestion as a whole have passed it (its first word,
// its length), nothing is safe: a suggestion is either shown or not, never shown and taken back.
func (f *filter) safeLen() int {
	n := len(f.text)
	for _, s := range f.stops {
		n = min(n, len(f.text)-partialTail(f.text, s))
	}
	safe := bytes.TrimRightFunc(f.text[:n], unicode.IsSpace)
	if (!f.word && f.opt.MinWordLogprob > f.opt.MinPathLogprob) ||
		utf8.RuneCount(bytes.TrimLeftFunc(safe, unicode.IsSpace)) < f.opt.MinChars {
		return 0
	}
	return len(safe)
}

// partialTail is the length of the longest end of text that is a proper prefix of s.
func partialTail(text, s []byte) int {
	for k := min(len(s)-1, len(text)); k > 0; k-- {
		if bytes.Equal(text[len(text)-k:], s[:k]) {
			return k
		}
	}
	return 0
}

func (f *filter) emit(onText func(string), upto int) {
	if upto > f.emitted {
		if onText != nil {
			onText(string(f.text[f.emitted:upto]))
		}
		f.emitted = upto
	}
}

// finish completes the suggestion after generation ended for engineStop, emitting what was
// withheld and is kept.
func (f *filter) finish(engineStop string, onText func(string)) Suggestion {
	stop := f.stop
	if stop == "" {
		switch engineStop {
		case "stop":
			stop = "eos" // one of the FIM exit tokens
		case "":
			stop = "canceled"
		default:
			stop = engineStop
		}
	}
	if f.reject || f.healed != "" {
		return Suggestion{Stop: stop}
	}
	// A suggestion ends without blanks (a cut before an unsure token can leave spaces or a
	// dangling line end), except before the text after the caret, which they separate it from.
	text := f.text
	switch stop {
	case "suffix":
	case "stop", "sentence", "line":
		text = bytes.TrimRightFunc(text, unicode.IsSpace)
	default:
		// Generation ended on its own: drop an end that the text after the caret starts with;
		// blanks before that text stay, as before a suffix stop.
		if k := overlap(text, f.suffixLine()); k > 0 {
			text = text[:len(text)-k]
		} else {
			text = bytes.TrimRightFunc(text, unicode.IsSpace)
		}
	}
	if junk(text, f.suffixLine()) != "" {
		return Suggestion{Stop: stop}
	}
	if utf8.RuneCount(bytes.TrimLeftFunc(text, unicode.IsSpace)) < f.opt.MinChars && f.lpSum < f.opt.MinShortLogprob {
		return Suggestion{Stop: "short"}
	}
	mean := f.lpSum / float64(max(f.kept, 1))
	if mean < f.opt.MinMeanLogprob {
		return Suggestion{Stop: "unsure"}
	}
	f.text = text
	f.emit(onText, len(text))
	return Suggestion{Text: string(text), Tokens: f.kept, Logprob: mean, Stop: stop}
}

// suffixLine is the rest of the caret's line after it, or nil.
func (f *filter) suffixLine() []byte {
	if !f.hasSuf {
		return nil
	}
	return f.stops[len(f.stops)-1]
}

// junk says why text is not worth showing, or "": it is empty or blank, only punctuation
// (nothing a keystroke-saving suggestion would be: ".", "...", "),"), longer than anyone
// reads before accepting, or what the caret's line already says after the caret.
func junk(text, suffixLine []byte) string {
	t := bytes.TrimSpace(text)
	switch {
	case len(t) == 0:
		return "empty"
	case !bytes.ContainsFunc(t, func(r rune) bool { return !unicode.IsPunct(r) && !unicode.IsSpace(r) }):
		return "punctuation"
	case utf8.RuneCount(text) > maxSuggestionRunes:
		return "too_long"
	case len(suffixLine) > 0 && bytes.HasPrefix(bytes.TrimLeft(suffixLine, " \t"), t):
		return "repeats_suffix"
	}
	return ""
}

// overlap is the length of the longest end of text that s starts with.
func overlap(text, s []byte) int {
	for k := min(len(s), len(text)); k > 0; k-- {
		if bytes.Equal(text[len(text)-k:], s[:k]) {
			return k
		}
	}
	return 0
}
