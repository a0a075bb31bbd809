package tokenizer

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe is HF's BPE model: a word starts as one symbol per character (or byte-fallback bytes, or
// unk) and the adjacent pair with the lowest merge rank is merged, leftmost first, until no
// pair has a merge.
type bpe struct {
	vocab        map[string]int32
	merges       map[uint64]mergeRule
	unk          int32 // -1 = none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	byteIDs      [256]int32

	chunks  bool // words may be cut before each "▁" that follows another character (see metaChunks)
	cache   wordCache
	scratch sync.Pool // *bpeScratch
}

type mergeRule struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// Words shorter than cacheMaxLen are cached, up to cacheCap of them, like HF's BPE cache.
const (
	cacheMaxLen = 256
	cacheCap    = 10000
)

// wordCache remembers the ids of frequent words: most words of a text repeat, and a lookup is
// far cheaper than merging.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	if len(w) >= cacheMaxLen {
		return
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string][]int32)
	}
	if len(c.m) < cacheCap {
		// Clone: w is usually a slice of a whole input's text, which must not stay alive.
		c.m[strings.Clone(w)] = append([]int32(nil), ids...)
	}
	c.mu.Unlock()
}

type symbol struct {
	id         int32
	prev, next int32
	gone       bool
}

type mergeItem struct{ rank, pos, id int32 }

type bpeScratch struct {
	syms []symbol
	heap []mergeItem
	key  []byte
}

func (m *bpe) tokenize(w string, out []int32) []int32 {
	if w == "" {
		return out
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[w]; ok {
			return append(out, id)
		}
	}
	if m.chunks {
		for len(w) > 0 {
			var c string
			c, w = nextMetaChunk(w)
			out = m.tokenizeWord(c, out)
		}
		return out
	}
	return m.tokenizeWord(w, out)
}

func (m *bpe) tokenizeWord(w string, out []int32) []int32 {
	if ids, ok := m.cache.get(w); ok {
		return append(out, ids...)
	}
	sc, _ := m.scratch.Get().(*bpeScratch)
	if sc == nil {
		sc = &bpeScratch{}
	}
	n := len(out)
	out = m.mergeWord(w, sc, out)
	m.cache.put(w, out[n:])
	m.scratch.Put(sc)
	return out
}

// metaChunks reports whether text can be cut before every "▁" that follows another character
// without changing the result: true when no vocabulary token contains such a "x▁" (so no merge
// can join across the cut) and "▁" itself is a token (so unk fusing cannot cross it either).
// SentencePiece vocabularies, which have no pre-tokenizer and see whole texts as one word, are
// like this; cutting turns quadratic-ish merging of a whole text into cached word lookups.
func metaChunks(vocab map[string]int32) bool {
	if _, ok := vocab["▁"]; !ok {
		return false
	}
	for s := range vocab {
		for i := 1; i < len(s); i++ {
			if strings.HasPrefix(s[i:], "▁") && !strings.HasSuffix(s[:i], "▁") {
				return false
			}
		}
	}
	return true
}

// nextMetaChunk splits w before its first "▁" that follows another character.
func nextMetaChunk(w string) (chunk, rest string) {
	for i := 1; i < len(w); i++ {
		if strings.HasPrefix(w[i:], "▁") && !strings.HasSuffix(w[:i], "▁") {
			return w[:i], w[i:]
		}
	}
	return w, ""
}

func (m *bpe) lookupChar(w string, i, j int, sc *bpeScratch) (int32, bool) {
	if m.prefix == "" && m.suffix == "" {
		id, ok := m.vocab[w[i:j]]
		return id, ok
	}
	k := sc.key[:0]
	if i > 0 {
		k = append(k, m.prefix...)
	}
	k = append(k, w[i:j]...)
	if j == len(w) {
		k = append(k, m.suffix...)
	}
	sc.key = k
	id, ok := m.vocab[string(k)]
	return id, ok
}

// mergeWord follows HF's BPE::merge_word and Word::merge_all.
func (m *bpe) mergeWord(w string, sc *bpeScratch, out []int32) []int32 {
	syms := sc.syms[:0]
	add := func(id int32) {
		syms = append(syms, symbol{id: id, prev: int32(len(syms)) - 1, next: int32(len(syms)) + 1})
	}
	unk, unkPending := int32(-1), false
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		j := i + size
		if id, ok := m.lookupChar(w, i, j, sc); ok {
			if unkPending {
				add(unk)
				unkPending = false
			}
			add(id)
			i = j
			continue
		}
		if m.byteFallback && m.hasBytes(w, i, j, sc) {
			// HF adds fallback bytes without flushing a pending unk first; so do we.
			m.addBytes(w, i, j, sc, add)
			i = j
			continue
		}
		if m.unk >= 0 {
			if unkPending && !m.fuseUnk {
				add(unk)
			}
			unk, unkPending = m.unk, true
		}
		i = j
	}
	if unkPending {
		add(unk)
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}

	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if r, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = heapPush(h, mergeItem{r.rank, int32(i), r.id})
		}
	}
	for len(h) > 0 {
		var top mergeItem
		top, h = heapPop(h)
		cur := &syms[top.pos]
		if cur.gone || cur.next < 0 {
			continue
		}
		right := &syms[cur.next]
		r, ok := m.merges[pairKey(cur.id, right.id)]
		if !ok || r.id != top.id {
			continue // stale entry
		}
		cur.id = top.id
		right.gone = true
		cur.next = right.next
		if cur.next >= 0 {
			syms[cur.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if r, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h = heapPush(h, mergeItem{r.rank, cur.prev, r.id})
			}
		}
		if cur.next >= 0 {
			if r, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h = heapPush(h, mergeItem{r.rank, top.pos, r.id})
			}
		}
	}
	for i := range syms {
		if !syms[i].gone {
			out = append(out, syms[i].id)
		}
	}
	sc.syms, sc.heap = syms[:0], h[:0]
	return out
}

// hasBytes reports whether every byte of the (prefixed/suffixed) character has a <0xXX> token.
func (m *bpe) hasBytes(w string, i, j int, sc *bpeScratch) bool {
	ok := true
	m.eachByte(w, i, j, sc, func(b byte) {
		if m.byteIDs[b] < 0 {
			ok = false
		}
	})
	return ok
}

func (m *bpe) addBytes(w string, i, j int, sc *bpeScratch, add func(int32)) {
	m.eachByte(w, i, j, sc, func(b byte) { add(m.byteIDs[b]) })
}

func (m *bpe) eachByte(w string, i, j int, sc *bpeScratch, fn func(byte)) {
	if i > 0 {
		for k := 0; k < len(m.prefix); k++ {
			fn(m.prefix[k])
		}
	}
	for k := i; k < j; k++ {
		fn(w[k])
	}
	if j == len(w) {
		for k := 0; k < len(m.suffix); k++ {
			fn(m.suffix[k])
		}
	}
}

// before orders the merge queue as a min-heap on (rank, pos), the order HF's BinaryHeap pops in.
func (a mergeItem) before(b mergeItem) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}
