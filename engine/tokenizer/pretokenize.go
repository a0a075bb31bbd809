package tokenizer

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// preTokenizer cuts pieces into smaller pieces; the model tokenizes each on its own. Pieces that
// already carry an id (added tokens) pass through untouched.
type preTokenizer interface {
	preTokenize(in, out []piece) []piece
}

// pattern is what Split, Replace and friends search for: a literal, a regex, or a character
// predicate (each matching character is its own match).
type pattern struct {
	lit  string
	re   *regex
	pred func(rune) bool
}

// each calls fn for successive non-overlapping matches.
func (p *pattern) each(s string, fn func(start, end int)) {
	switch {
	case p.re != nil:
		p.re.findAll(s, fn)
	case p.pred != nil:
		for i, r := range s {
			if p.pred(r) {
				fn(i, i+utf8.RuneLen(r))
			}
		}
	case p.lit != "":
		for i := 0; ; {
			j := strings.Index(s[i:], p.lit)
			if j < 0 {
				return
			}
			fn(i+j, i+j+len(p.lit))
			i += j + len(p.lit)
		}
	}
}

func (p *pattern) replaceAll(s, repl string) string {
	if p.re == nil && p.pred == nil {
		if p.lit == "" {
			return s
		}
		return strings.ReplaceAll(s, p.lit, repl)
	}
	var b strings.Builder
	last, matched := 0, false
	p.each(s, func(start, end int) {
		b.WriteString(s[last:start])
		b.WriteString(repl)
		last, matched = end, true
	})
	if !matched {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// splitBehavior is HF's SplitDelimiterBehavior.
type splitBehavior uint8

const (
	splitRemoved splitBehavior = iota
	splitIsolated
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

type span struct {
	start, end int
	match      bool
}

// splitPiece cuts p at the matches of pat the way HF's NormalizedString::split does, and appends
// the non-empty results to out.
func splitPiece(p piece, pat *pattern, invert bool, b splitBehavior, out []piece) []piece {
	s := p.s
	emit := func(start, end int) {
		if start < end {
			out = append(out, piece{s: s[start:end], first: p.first && start == 0, id: -1})
		}
	}
	if b == splitIsolated { // the hot path: every span is its own piece
		last := 0
		pat.each(s, func(start, end int) {
			emit(last, start)
			emit(start, end)
			last = end
		})
		emit(last, len(s))
		return out
	}
	var spans []span
	last := 0
	pat.each(s, func(start, end int) {
		if last != start {
			spans = append(spans, span{last, start, invert})
		}
		spans = append(spans, span{start, end, !invert})
		last = end
	})
	if last != len(s) || len(spans) == 0 {
		spans = append(spans, span{last, len(s), invert})
	}
	var res []span
	switch b {
	case splitRemoved:
		res = spans
	case splitMergedWithPrevious:
		prev := false
		for _, sp := range spans {
			if sp.match && !prev && len(res) > 0 {
				res[len(res)-1].end = sp.end
			} else {
				res = append(res, span{sp.start, sp.end, false})
			}
			prev = sp.match
		}
	case splitMergedWithNext:
		prev := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !prev && len(res) > 0 {
				res[len(res)-1].start = sp.start
			} else {
				res = append(res, span{sp.start, sp.end, false})
			}
			prev = sp.match
		}
		for i, j := 0, len(res)-1; i < j; i, j = i+1, j-1 {
			res[i], res[j] = res[j], res[i]
		}
	case splitContiguous:
		prev := false
		for i, sp := range spans {
			if i > 0 && sp.match == prev {
				res[len(res)-1].end = sp.end
			} else {
				res = append(res, span{sp.start, sp.end, false})
			}
			prev = sp.match
		}
	}
	for _, sp := range res {
		if b == splitRemoved && sp.match {
			continue
		}
		emit(sp.start, sp.end)
	}
	return out
}

// preSequence runs pre-tokenizers in order.
type preSequence struct {
	steps []preTokenizer
	tmp   sync.Pool // *[]piece for intermediate results
}

func newPreSequence(steps ...preTokenizer) *preSequence { return &preSequence{steps: steps} }

func (q *preSequence) preTokenize(in, out []piece) []piece {
	if len(q.steps) == 0 {
		return append(out, in...)
	}
	bufs, _ := q.tmp.Get().(*[2][]piece)
	if bufs == nil {
		bufs = new([2][]piece)
	}
	cur := in
	for i, p := range q.steps {
		if i == len(q.steps)-1 {
			out = p.preTokenize(cur, out)
			break
		}
		cur = p.preTokenize(cur, bufs[i%2][:0])
		bufs[i%2] = cur
	}
	for i := range bufs {
		clear(bufs[i])
		bufs[i] = bufs[i][:0]
	}
	q.tmp.Put(bufs)
	return out
}

// preSplit is HF's Split pre-tokenizer (and the building block of several others).
type preSplit struct {
	pat      pattern
	invert   bool
	behavior splitBehavior
}

func (q *preSplit) preTokenize(in, out []piece) []piece {
	for _, p := range in {
		if p.id >= 0 {
			out = append(out, p)
			continue
		}
		out = splitPiece(p, &q.pat, q.invert, q.behavior, out)
	}
	return out
}

// gpt2Pattern is the regex HF's ByteLevel pre-tokenizer uses with use_regex.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

var gpt2Regex = mustCompile(gpt2Pattern)

func mustCompile(src string) *regex {
	re, err := compileRegex(src)
	if err != nil {
		panic(err)
	}
	return re
}

// preByteLevel is HF's ByteLevel pre-tokenizer: optional prefix space, optional GPT-2 split,
// then every byte becomes its printable byte-level character.
type preByteLevel struct {
	addPrefixSpace bool
	useRegex       bool
}

func (q *preByteLevel) preTokenize(in, out []piece) []piece {
	start := len(out)
	for _, p := range in {
		if p.id >= 0 {
			out = append(out, p)
			continue
		}
		if q.addPrefixSpace && !strings.HasPrefix(p.s, " ") {
			p.s = " " + p.s
		}
		if q.useRegex {
			out = splitPiece(p, &pattern{re: gpt2Regex}, false, splitIsolated, out)
		} else {
			out = append(out, p)
		}
	}
	// Map all pieces into one string: one allocation instead of one per piece.
	total := 0
	for _, p := range out[start:] {
		if p.id < 0 {
			total += byteLevelLen(p.s)
		}
	}
	var b strings.Builder
	b.Grow(total)
	for _, p := range out[start:] {
		if p.id < 0 {
			for i := 0; i < len(p.s); i++ {
				b.WriteString(byteLevelStr[p.s[i]])
			}
		}
	}
	all := b.String()
	off := 0
	for i := start; i < len(out); i++ {
		if out[i].id < 0 {
			n := byteLevelLen(out[i].s)
			out[i].s = all[off : off+n]
			off += n
		}
	}
	return out
}

// preMetaspace is HF's Metaspace pre-tokenizer.
type preMetaspace struct {
	replacement string
	prepend     string // "always", "first" or "never"
	split       bool
}

func (q *preMetaspace) preTokenize(in, out []piece) []piece {
	for _, p := range in {
		if p.id >= 0 {
			out = append(out, p)
			continue
		}
		s := strings.ReplaceAll(p.s, " ", q.replacement)
		if !strings.HasPrefix(s, q.replacement) &&
			(q.prepend == "always" || (q.prepend == "first" && p.first)) {
			s = q.replacement + s
		}
		p.s = s
		if q.split {
			out = splitPiece(p, &pattern{lit: q.replacement}, false, splitMergedWithNext, out)
		} else if s != "" {
			out = append(out, p)
		}
	}
	return out
}

func isNumeric(r rune) bool { return unicode.IsNumber(r) }

// isPunctuation is HF's is_punc: ASCII punctuation (which includes symbols like $ and +) or
// Unicode punctuation.
func isPunctuation(r rune) bool {
	if r < utf8.RuneSelf {
		return r > ' ' && r < 0x7f && !('0' <= r && r <= '9') && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z')
	}
	return unicode.IsPunct(r)
}

var whitespaceRegex = mustCompile(`\w+|[^\w\s]+`)

func newDigits(individual bool) *preSplit {
	b := splitContiguous
	if individual {
		b = splitIsolated
	}
	return &preSplit{pat: pattern{pred: isNumeric}, behavior: b}
}
