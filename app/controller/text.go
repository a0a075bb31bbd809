package controller

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeWindow turns UTF-16 units read from a window of a field into a string. A window edge
// may cut a surrogate pair; the orphaned half is dropped rather than turned into U+FFFD.
func decodeWindow(u []uint16) string {
	if len(u) > 0 && u[0] >= 0xDC00 && u[0] < 0xE000 {
		u = u[1:]
	}
	if n := len(u); n > 0 && u[n-1] >= 0xD800 && u[n-1] < 0xDC00 {
		u = u[:n-1]
	}
	return string(utf16.Decode(u))
}

// firstRunes returns the first n code points of s.
func firstRunes(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// utf16Len is the length of s in UTF-16 code units, the unit of AX offsets.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// NextWord returns the prefix of s that "accept next word" inserts: leading whitespace (line
// breaks and indentation included), then one word. A word is a run of letters, digits and '_'
// (with combining marks, and apostrophes between letters, as in "don't"); in CJK text, which
// has no spaces, one segment: a Katakana run, a Hiragana run, or at most two Han characters
// with the Hiragana that follows them (okurigana and particles: 今日は, 良い). Anything else
// (punctuation, an emoji with its modifiers and joiners) is one user-perceived character.
// `laya replay`'s simulated user accepts word by word through it too.
func NextWord(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.Is(unicode.Han, r):
		for n := 0; n < 2 && i < len(s); n++ {
			r, _ := utf8.DecodeRuneInString(s[i:])
			if !unicode.Is(unicode.Han, r) {
				break
			}
			i = clusterEnd(s, i)
		}
		return s[:runEnd(s, i, isHiragana)]
	case isHiragana(r):
		return s[:runEnd(s, i, isHiragana)]
	case isKatakana(r):
		return s[:runEnd(s, i, isKatakana)]
	case isWordRune(r):
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if isWordRune(r) {
				i = clusterEnd(s, i)
				continue
			}
			// An apostrophe joins letters ("don't", "l’eau"), but not a closing quote.
			if r == '\'' || r == '’' {
				if next, _ := utf8.DecodeRuneInString(s[i+size:]); i+size < len(s) && isWordRune(next) {
					i += size
					continue
				}
			}
			break
		}
		return s[:i]
	}
	return s[:clusterEnd(s, i)]
}

// runEnd extends a run of clusters whose first rune satisfies in, from i.
func runEnd(s string, i int, in func(rune) bool) int {
	for i < len(s) {
		r, _ := utf8.DecodeRuneInString(s[i:])
		if !in(r) {
			break
		}
		i = clusterEnd(s, i)
	}
	return i
}

// clusterEnd returns the end of the user-perceived character starting at i: the rune and what
// extends it (combining marks, variation selectors, emoji modifiers and tags, and a zero-width
// joiner with the rune it joins). A simplification of UAX #29 that covers text and emoji.
func clusterEnd(s string, i int) int {
	first, size := utf8.DecodeRuneInString(s[i:])
	i += size
	if isRegional(first) && i < len(s) {
		// Flags are pairs of regional indicators.
		if r, size := utf8.DecodeRuneInString(s[i:]); isRegional(r) {
			return i + size
		}
	}
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x200D: // zero-width joiner: the next rune belongs here too
			i += size
			if i < len(s) {
				_, size = utf8.DecodeRuneInString(s[i:])
				i += size
			}
		case isExtender(r):
			i += size
		default:
			return i
		}
	}
	return i
}

// lastCluster returns the final user-perceived character of s, what one Backspace deletes.
func lastCluster(s string) string {
	last := 0
	for i := 0; i < len(s); i = clusterEnd(s, i) {
		last = i
	}
	return s[last:]
}

func isExtender(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc) ||
		r >= 0xFE00 && r <= 0xFE0F || // variation selectors
		r >= 0x1F3FB && r <= 0x1F3FF || // emoji skin-tone modifiers
		r >= 0xE0020 && r <= 0xE007F // emoji tag sequences (subdivision flags)
}

func isRegional(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

func isHiragana(r rune) bool { return unicode.Is(unicode.Hiragana, r) || r == 'ー' }
func isKatakana(r rune) bool { return unicode.Is(unicode.Katakana, r) || r == 'ー' }

// isWordRune is a rune of a space-separated word; CJK scripts segment differently.
func isWordRune(r rune) bool {
	if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) {
		return false
	}
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc)
}
