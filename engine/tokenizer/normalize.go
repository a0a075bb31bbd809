package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a span of text before pre-tokenization.
//
// lead is how many leading bytes of s stem from the original text's first character; the
// result says the same of the output. HF tracks alignments of every character; all that
// tokenization needs of them is whether the text still starts with a character aligned to
// offset 0 (Metaspace's prepend_scheme "first"), which is lead > 0. Stripping "¨" (NFKC: space +
// U+0308) of its space keeps the start; stripping a real leading space does not.
type normalizer interface {
	normalize(s string, lead int) (out string, outLead int)
}

type normSequence []normalizer

func (n normSequence) normalize(s string, lead int) (string, int) {
	for _, x := range n {
		s, lead = x.normalize(s, lead)
	}
	return s, lead
}

// mapLead is the lead of a per-character mapping f.
func mapLead(f func(string) string, s string, lead int) int {
	return len(f(s[:lead]))
}

// normUnicode applies a Unicode normalization form (NFC, NFD, NFKC, NFKD).
type normUnicode struct{ form norm.Form }

func (n normUnicode) normalize(s string, lead int) (string, int) {
	out := n.form.String(s)
	if lead == 0 {
		return out, 0
	}
	// The first character's own normalization, unless composition with what follows merged it.
	if l := n.form.String(s[:lead]); strings.HasPrefix(out, l) {
		return out, len(l)
	}
	_, size := utf8.DecodeRuneInString(out)
	return out, size
}

// normLowercase lowercases per character like Rust's char::to_lowercase: no context (so no
// final-sigma rule), and U+0130 expands to "i̇" as in Unicode's SpecialCasing.
type normLowercase struct{}

func (normLowercase) normalize(s string, lead int) (string, int) {
	return lower(s), mapLead(lower, s, lead)
}

func lower(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.Map(unicode.ToLower, s)
	}
	var b strings.Builder
	for _, r := range s {
		if r == 'İ' {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// normStrip trims white space at either end.
type normStrip struct{ left, right bool }

func (n normStrip) normalize(s string, lead int) (string, int) {
	if n.left {
		t := strings.TrimLeftFunc(s, unicode.IsSpace)
		lead = max(lead-(len(s)-len(t)), 0)
		s = t
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
		lead = min(lead, len(s))
	}
	return s, lead
}

// normStripAccents drops combining marks (all of General_Category M, as HF's is_combining_mark),
// usually after NFD.
type normStripAccents struct{}

func (normStripAccents) normalize(s string, lead int) (string, int) {
	return stripMarks(s), mapLead(stripMarks, s, lead)
}

func stripMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s)
}

// normPrepend prefixes non-empty text.
type normPrepend struct{ prefix string }

func (n normPrepend) normalize(s string, lead int) (string, int) {
	if s == "" {
		return s, lead
	}
	// HF aligns the prepended text with the first character.
	return n.prefix + s, len(n.prefix) + lead
}

// normReplace replaces every match of a literal or regex pattern.
type normReplace struct {
	pat     pattern
	content string
}

func (n normReplace) normalize(s string, lead int) (string, int) {
	out := n.pat.replaceAll(s, n.content)
	if lead > 0 {
		// Only a match at the very start changes what the output starts with: its replacement
		// aligns with the first character, an empty one leaves the start to what follows.
		n.pat.each(s[:lead], func(start, end int) {
			if start == 0 {
				lead = len(n.content) + lead - end
			}
		})
	}
	return out, lead
}

// normByteLevel maps each byte to its byte-level character, like the ByteLevel pre-tokenizer.
type normByteLevel struct{}

func (normByteLevel) normalize(s string, lead int) (string, int) {
	return string(appendByteLevel(nil, s)), byteLevelLen(s[:lead])
}
