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

// lastRunes returns the final n code points of s.
func lastRunes(s string, n int) string {
	i := len(s)
	for k := 0; k < n && i > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
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

// nextWord returns the prefix of s that "accept next word" inserts: leading whitespace, then
// one run of word characters (letters, digits, '_'), or else a single other character.
func nextWord(s string) string {
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
	r, size := utf8.DecodeRuneInString(s[i:])
	if !isWordRune(r) {
		return s[:i+size]
	}
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			break
		}
		i += size
	}
	return s[:i]
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
