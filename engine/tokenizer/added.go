package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	id         int32
	content    string
	decoded    string // content, normalized when the token is normalized (HF decodes that form)
	singleWord bool
	lstrip     bool
	rstrip     bool
	normalized bool
	special    bool
}

// addedVocab finds added tokens in text: raw holds tokens matched in the original text, norm
// those matched in normalized text.
type addedVocab struct {
	byContent map[string]*addedToken
	byID      map[int32]*addedToken
	raw, norm tokenMatcher
}

// tokenMatcher finds added tokens leftmost-longest, as HF's Aho-Corasick automaton
// (MatchKind::LeftmostLongest) does.
type tokenMatcher struct {
	byFirst [256][]matchPattern // candidates per first byte, longest first
	empty   bool
}

type matchPattern struct {
	text string
	tok  *addedToken
}

func newTokenMatcher(pats []matchPattern) tokenMatcher {
	m := tokenMatcher{empty: true}
	for _, p := range pats {
		if p.text == "" {
			continue
		}
		m.byFirst[p.text[0]] = append(m.byFirst[p.text[0]], p)
		m.empty = false
	}
	for _, l := range m.byFirst {
		sort.SliceStable(l, func(i, j int) bool { return len(l[i].text) > len(l[j].text) })
	}
	return m
}

// find returns the leftmost-longest match at or after from.
func (m *tokenMatcher) find(s string, from int) (start, end int, tok *addedToken) {
	for i := from; i < len(s); i++ {
		cands := m.byFirst[s[i]]
		for _, c := range cands {
			if strings.HasPrefix(s[i:], c.text) {
				return i, i + len(c.text), c.tok
			}
		}
	}
	return -1, -1, nil
}

// split cuts s into spans between added tokens and calls fn for each in order, with id -1 for
// plain text. first says whether s starts at offset 0 of the original input. It follows HF's
// AddedVocabulary::find_matches, including its single_word, lstrip and rstrip rules.
func (m *tokenMatcher) split(s string, first bool, fn func(s string, first bool, id int32)) {
	if m.empty || s == "" {
		fn(s, first, -1)
		return
	}
	startOffset := 0
	for from := 0; from < len(s); {
		start, end, tok := m.find(s, from)
		if tok == nil {
			break
		}
		from = end
		stop := end
		if tok.singleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.lstrip {
			newStart := len(strings.TrimRightFunc(s[:start], unicode.IsSpace))
			start = max(newStart, startOffset)
		}
		if tok.rstrip {
			stop += len(s[stop:]) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		if startOffset < start {
			fn(s[startOffset:start], first && startOffset == 0, -1)
		}
		// A start before startOffset can only follow an rstrip that swallowed it; HF emits the
		// overlapping span as is.
		fn(s[start:stop], false, tok.id)
		startOffset = stop
	}
	if startOffset < len(s) {
		fn(s[startOffset:], first && startOffset == 0, -1)
	}
}

func isWordRune(r rune) bool { return unicode.IsOneOf(wordTables, r) }

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordRune(r)
}
