package tokenizer

import (
	"sync"
	"unicode/utf8"
)

// spm is llama.cpp's SentencePiece-BPE tokenizer for GGUF "llama" vocabularies: start from one
// symbol per character, repeatedly merge the adjacent pair whose concatenation is the
// vocabulary piece with the highest score (leftmost on ties), then emit each symbol's id. Every
// merged symbol is a piece by construction, so only single characters outside the vocabulary
// are left, and they fall back to <0xXX> byte tokens.
type spm struct {
	vocab   map[string]int32
	scores  []float32
	byteIDs [256]int32
	unk     int32
	chunks  bool // text may be cut before "▁" (see metaChunks)
	cache   wordCache
	scratch sync.Pool // *spmScratch
}

type spmSym struct {
	start, n   int // byte span in the text; n == 0 once merged away
	prev, next int
}

type spmBigram struct {
	left, right int
	score       float32
	size        int
}

type spmScratch struct {
	syms []spmSym
	heap []spmBigram
}

// before orders the queue: higher score first, then the leftmost pair.
func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

func (m *spm) tokenize(text string, out []int32) []int32 {
	if !m.chunks {
		return m.tokenizeWord(text, out)
	}
	for len(text) > 0 {
		var c string
		c, text = nextMetaChunk(text)
		out = m.tokenizeWord(c, out)
	}
	return out
}

func (m *spm) tokenizeWord(text string, out []int32) []int32 {
	if text == "" {
		return out
	}
	if ids, ok := m.cache.get(text); ok {
		return append(out, ids...)
	}
	n := len(out)
	out = m.merge(text, out)
	m.cache.put(text, out[n:])
	return out
}

func (m *spm) merge(text string, out []int32) []int32 {
	sc, _ := m.scratch.Get().(*spmScratch)
	if sc == nil {
		sc = &spmScratch{}
	}
	syms := sc.syms[:0]
	for i := 0; i < len(text); {
		_, n := utf8.DecodeRuneInString(text[i:])
		syms = append(syms, spmSym{start: i, n: n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	syms[len(syms)-1].next = -1
	h := sc.heap[:0]
	try := func(left, right int) {
		if left < 0 || right < 0 {
			return
		}
		s := text[syms[left].start : syms[right].start+syms[right].n]
		id, ok := m.vocab[s]
		if !ok || int(id) >= len(m.scores) {
			return
		}
		h = heapPush(h, spmBigram{left: left, right: right, score: m.scores[id], size: len(s)})
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for len(h) > 0 {
		var b spmBigram
		b, h = heapPop(h)
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // outdated
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		out = m.emit(text[syms[i].start:syms[i].start+syms[i].n], out)
	}
	sc.syms, sc.heap = syms[:0], h[:0]
	m.scratch.Put(sc)
	return out
}

// emit appends the id of piece s, or its byte tokens when it is not in the vocabulary.
func (m *spm) emit(s string, out []int32) []int32 {
	if id, ok := m.vocab[s]; ok {
		return append(out, id)
	}
	for i := 0; i < len(s); i++ {
		if id := m.byteIDs[s[i]]; id >= 0 {
			out = append(out, id)
		} else if m.unk >= 0 {
			out = append(out, m.unk)
		}
	}
	return out
}
