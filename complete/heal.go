package complete

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// healer finds, for token healing, the vocabulary tokens whose text extends a given token's.
// A prompt ending in the middle of a word ends in a token the model rarely saw there ("pri"
// where training text had "print"); backing it off and letting the model choose any token
// that starts with its text gives the natural continuation.
type healer struct {
	v    vocab
	once sync.Once
	// text[id] is the token's text as it reads after other text, "" for special tokens and
	// tokens that are not whole UTF-8 on their own (and the few that spell U+FFFD, which looks
	// the same); byText holds the ids with text, sorted by it.
	text   []string
	byText []int32
}

func (h *healer) init() {
	n := h.v.VocabSize()
	h.text = make([]string, n)
	// Decoding a token after an anchor token gives its text in running text; decoding it
	// alone could lose a leading space to the decoder's start-of-text rules (SentencePiece).
	anchor, hasAnchor := h.v.TokenID("a")
	var anchorText string
	if hasAnchor {
		anchorText = h.v.Decode([]int32{anchor}, true)
	}
	pair := make([]int32, 2)
	for id := range n {
		var t string
		if hasAnchor {
			pair[0], pair[1] = anchor, int32(id)
			if full := h.v.Decode(pair, true); strings.HasPrefix(full, anchorText) {
				t = full[len(anchorText):]
			}
		} else {
			pair[1] = int32(id)
			t = h.v.Decode(pair[1:], true)
		}
		if !utf8.ValidString(t) || strings.ContainsRune(t, utf8.RuneError) {
			t = ""
		}
		h.text[id] = t
		if t != "" {
			h.byText = append(h.byText, int32(id))
		}
	}
	sort.Slice(h.byText, func(i, j int) bool { return h.text[h.byText[i]] < h.text[h.byText[j]] })
}

// candidates returns id's text and every token whose text starts with it (id included), or
// nothing when id has no healable text.
func (h *healer) candidates(id int32) (string, []int32) {
	h.once.Do(h.init)
	if id < 0 || int(id) >= len(h.text) || h.text[id] == "" {
		return "", nil
	}
	t := h.text[id]
	lo := sort.Search(len(h.byText), func(i int) bool { return h.text[h.byText[i]] >= t })
	hi := lo
	for hi < len(h.byText) && strings.HasPrefix(h.text[h.byText[hi]], t) {
		hi++
	}
	return t, append([]int32(nil), h.byText[lo:hi]...)
}
