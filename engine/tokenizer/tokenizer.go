// Package tokenizer is a pure-Go implementation of HuggingFace tokenization: it loads a
// tokenizer.json (or the tokenizer.ggml.* metadata of a GGUF file) and encodes and decodes
// exactly as the HuggingFace tokenizers library does for the supported components. A component
// it does not support is a load error, never silently different output.
package tokenizer

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer encodes text to token ids and decodes ids to text. It is immutable after loading and
// safe for concurrent use.
type Tokenizer struct {
	model      model
	vocab      map[string]int32 // model vocabulary
	tokens     []string         // id -> token text: model vocabulary, then added tokens
	added      addedVocab
	normalizer normalizer     // nil = none
	pre        preTokenizer   // nil = none
	post       postProcessor  // nil = none
	decoder    decoder        // nil = join with spaces, as HF does
	special    map[int32]bool // ids of special added tokens (skipped by skipSpecial)
	bos, eos   int32

	scratch sync.Pool // *encodeScratch
	alone   sync.Map  // id -> Decode([id]), for StreamDecoder
	pieces  []string  // id -> text a plain token adds to a settled stream, "" if not plain
}

// model turns one pre-tokenized piece into ids, appending to out.
type model interface {
	tokenize(piece string, out []int32) []int32
}

// piece is a span of text on its way through the pipeline. first marks the span that starts at
// offset 0 of the original input (Metaspace's prepend_scheme "first" depends on it); id >= 0 marks
// an added token that is already final.
type piece struct {
	s     string
	first bool
	id    int32
}

type encodeScratch struct {
	a, b []piece
}

// Encode tokenizes text. addSpecial is HF's add_special_tokens: it lets the post-processor add
// tokens such as BOS. Invalid UTF-8 in text is replaced with U+FFFD first, as Rust's lossy
// conversion does, since HF only ever sees valid strings.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	if !utf8.ValidString(text) {
		text = lossyUTF8(text)
	}
	sc, _ := t.scratch.Get().(*encodeScratch)
	if sc == nil {
		sc = &encodeScratch{}
	}
	ps := t.split(text, sc.a[:0])
	if t.pre != nil {
		ps, sc.b = t.pre.preTokenize(ps, sc.b[:0]), ps
	}
	ids := make([]int32, 0, len(text)/3+4)
	for _, p := range ps {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		ids = t.model.tokenize(p.s, ids)
	}
	if addSpecial && t.post != nil {
		ids = t.post.process(ids)
	}
	clear(ps)
	clear(sc.b)
	sc.a, sc.b = ps[:0], sc.b[:0]
	t.scratch.Put(sc)
	return ids
}

// split extracts added tokens and normalizes the text between them, as HF's
// AddedVocabulary.extract_and_normalize does: tokens with normalized=false are found in the raw
// text, each remaining span is normalized, and tokens with normalized=true are found in that.
func (t *Tokenizer) split(text string, out []piece) []piece {
	t.added.raw.split(text, true, func(s string, first bool, id int32) {
		if id >= 0 {
			out = append(out, piece{s: s, id: id})
			return
		}
		if t.normalizer != nil {
			lead := 0
			if first {
				_, lead = utf8.DecodeRuneInString(s)
			}
			s, lead = t.normalizer.normalize(s, lead)
			first = lead > 0
		}
		t.added.norm.split(s, first, func(s string, first bool, id int32) {
			if s != "" {
				out = append(out, piece{s: s, first: first, id: id})
			}
		})
	})
	return out
}

// Decode turns ids back into text through the tokenizer's decoder. Unknown ids are skipped;
// skipSpecial drops special added tokens.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	toks := make([]string, 0, len(ids))
	toks = t.appendTokens(toks, ids, skipSpecial)
	return t.decodeTokens(toks)
}

func (t *Tokenizer) appendTokens(toks []string, ids []int32, skipSpecial bool) []string {
	for _, id := range ids {
		if s, ok := t.decodeText(id, skipSpecial); ok {
			toks = append(toks, s)
		}
	}
	return toks
}

// decodeText is the string id contributes to decoding, or false when decoding skips it
// (unknown ids, and special tokens when skipSpecial).
func (t *Tokenizer) decodeText(id int32, skipSpecial bool) (string, bool) {
	if id < 0 || int(id) >= len(t.tokens) {
		return "", false
	}
	s := t.tokens[id]
	if a, ok := t.added.byID[id]; ok {
		s = a.decoded
	} else if v, ok := t.vocab[s]; !ok || v != id {
		return "", false // a gap in the id space
	}
	if skipSpecial && t.special[id] {
		return "", false
	}
	return s, true
}

func (t *Tokenizer) decodeTokens(toks []string) string {
	if t.decoder == nil {
		return strings.Join(toks, " ")
	}
	return strings.Join(t.decoder.decodeChain(toks), "")
}

// TokenID returns the id of a vocabulary entry or added token.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	if a, ok := t.added.byContent[s]; ok {
		return a.id, true
	}
	id, ok := t.vocab[s]
	return id, ok
}

// Token returns the raw text of token id (in the vocabulary's own form, e.g. "▁the" or "Ġthe"),
// or "" for an unknown id.
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// VocabSize is the number of token ids, added tokens included (one past the largest id).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS is the beginning-of-sequence token id, or -1 when the tokenizer has none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence token id, or -1 when the tokenizer has none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// IsSpecial reports whether id is a special added token (control tokens for GGUF vocabularies).
func (t *Tokenizer) IsSpecial(id int32) bool { return t.special[id] }

// lossyUTF8 replaces each maximal invalid subsequence with U+FFFD, exactly like Rust's
// String::from_utf8_lossy (Go's strings.ToValidUTF8 collapses whole runs instead).
func lossyUTF8(s string) string {
	return string(appendLossy(make([]byte, 0, len(s)+8), []byte(s)))
}

func appendLossy(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			dst = append(dst, b[i:i+n]...)
			i += n
			continue
		}
		dst = append(dst, "\uFFFD"...)
		i += invalidPrefixLen(b[i:])
	}
	return dst
}

// invalidPrefixLen is the length of the maximal prefix of b that could begin a valid UTF-8
// sequence (at least 1), which is what one U+FFFD replaces under the Unicode "maximal subpart"
// practice that Rust follows.
func invalidPrefixLen(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}
