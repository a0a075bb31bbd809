package complete

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/layaapp/laya/engine"
)

// fakeVocab is a small greedy longest-match tokenizer: every printable ASCII byte, newline and
// tab is a token, plus the given multi-byte tokens and special tokens. Like HuggingFace
// tokenizers it recognizes special tokens written in the text.
type fakeVocab struct {
	toks    []string
	ids     map[string]int32
	special map[int32]bool
	bos     int32
}

func newFakeVocab(words, specials []string, withBOS bool) *fakeVocab {
	v := &fakeVocab{ids: map[string]int32{}, special: map[int32]bool{}, bos: -1}
	add := func(s string) int32 {
		if id, ok := v.ids[s]; ok {
			return id
		}
		id := int32(len(v.toks))
		v.toks = append(v.toks, s)
		v.ids[s] = id
		return id
	}
	for b := byte(' '); b <= '~'; b++ {
		add(string(b))
	}
	add("\n")
	add("\t")
	for _, w := range words {
		add(w)
	}
	for _, s := range append([]string{"<eos>"}, specials...) {
		v.special[add(s)] = true
	}
	if withBOS {
		v.bos = add("<s>")
		v.special[v.bos] = true
	}
	return v
}

func (v *fakeVocab) Encode(text string, addSpecial bool) []int32 {
	var ids []int32
	if addSpecial && v.bos >= 0 {
		ids = append(ids, v.bos)
	}
	for text != "" {
		best := ""
		for _, t := range v.toks {
			if len(t) > len(best) && strings.HasPrefix(text, t) && (t != "<s>" && t != "<eos>") {
				best = t
			}
		}
		if best == "" { // a byte outside the vocabulary; the fakes only use ASCII
			text = text[1:]
			continue
		}
		ids = append(ids, v.ids[best])
		text = text[len(best):]
	}
	return ids
}

func (v *fakeVocab) Decode(ids []int32, skipSpecial bool) string {
	var b strings.Builder
	for _, id := range ids {
		if skipSpecial && v.special[id] {
			continue
		}
		b.WriteString(v.toks[id])
	}
	return b.String()
}

func (v *fakeVocab) TokenID(s string) (int32, bool) { id, ok := v.ids[s]; return id, ok }
func (v *fakeVocab) VocabSize() int                 { return len(v.toks) }
func (v *fakeVocab) BOS() int32                     { return v.bos }
func (v *fakeVocab) eos() int32                     { return v.ids["<eos>"] }

// script decides what the fake model says after a prompt: the text, tokenized greedily, with
// one logprob per token (missing ones are -0.1), then EOS unless the limit comes first.
type script func(prompt []int32) (text string, logprobs []float32)

// fakeModel stands in for the engine: sessions reuse the common prefix like engine.Session.
type fakeModel struct {
	v        *fakeVocab
	say      script
	delay    time.Duration // per generated token
	bytes    int64         // CacheBytes of a session that has run
	reserve  bool          // sessions hold bytes from the start, as the engine's preallocated caches
	mu       sync.Mutex
	sessions []*fakeSession
}

func (m *fakeModel) lm(context int) lm {
	return lm{vocab: m.v, context: context, newSession: func() generator {
		m.mu.Lock()
		defer m.mu.Unlock()
		s := &fakeSession{m: m}
		m.sessions = append(m.sessions, s)
		return s
	}}
}

type fakeSession struct {
	m       *fakeModel
	cache   []int32
	closed  bool
	resets  int
	prompts [][]int32
	samp    []engine.Sampling
}

func (s *fakeSession) Generate(ctx context.Context, prompt []int32, p engine.Sampling, emit func(engine.Token) error) (engine.Result, error) {
	if s.closed {
		return engine.Result{}, fmt.Errorf("fake: session closed")
	}
	s.prompts = append(s.prompts, slices.Clone(prompt))
	s.samp = append(s.samp, p)
	reused := 0
	for reused < len(prompt) && reused < len(s.cache) && s.cache[reused] == prompt[reused] {
		reused++
	}
	s.cache = append(s.cache[:reused], prompt[reused:]...)
	res := engine.Result{PromptTokens: len(prompt), ReusedTokens: reused}
	text, lps := s.m.say(prompt)
	ids := append(s.m.v.Encode(text, false), s.m.v.eos())
	for i, id := range ids {
		if i == p.MaxTokens {
			res.Stop = "max_tokens"
			return res, nil
		}
		if ctx.Err() != nil {
			res.Stop = "canceled"
			return res, ctx.Err()
		}
		if i == 0 && len(p.FirstTokens) > 0 && !slices.Contains(p.FirstTokens, id) {
			return res, fmt.Errorf("fake: first token %q not allowed", s.m.v.toks[id])
		}
		time.Sleep(s.m.delay)
		lp := float32(-0.1)
		if i < len(lps) {
			lp = lps[i]
		}
		t := engine.Token{ID: id, Text: s.m.v.toks[id], Logprob: lp}
		stop := id == s.m.v.eos() || slices.Contains(p.StopTokens, id)
		if stop {
			t.Text = ""
		}
		s.cache = append(s.cache, id)
		res.IDs = append(res.IDs, id)
		res.Text += t.Text
		if err := emit(t); err != nil {
			res.Stop = "canceled"
			return res, err
		}
		if stop {
			res.Stop = "eos"
			return res, nil
		}
	}
	return res, nil
}

func (s *fakeSession) CacheBytes() int64 {
	if len(s.cache) == 0 && !s.m.reserve {
		return 0
	}
	return s.m.bytes
}

func (s *fakeSession) Reset() {
	s.cache = nil
	s.resets++
}

func (s *fakeSession) Close() { s.closed = true }
