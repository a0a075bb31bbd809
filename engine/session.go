package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tokenizer"
)

// decoderContext is how many prompt tokens prime the streaming decoder.
const decoderContext = 8

// Session is one conversation with a model: it owns a KV cache and remembers which tokens fill
// it, so the next Generate prefills only what differs. A Session's methods may be called from
// several goroutines; they run one at a time.
type Session struct {
	mu    sync.Mutex
	m     *Model
	cache backend.KVCache
	// snaps keeps recurrent states to resume from; nil for models without recurrent layers.
	snaps  *snapshots
	tokens []int32   // the tokens at cache positions [0, len)
	logits []float32 // the logits after the last forward pass
	smp    *sampler
	one    [1]int32 // the single-token input of a decode step, kept here so it is not allocated
	// dev and the candidates of its picks are a Generate's device path (devicepick.go), kept
	// here so they are not allocated.
	dev        devicePicks
	pickIDs    [maxDeviceTop]int32
	pickLogits [maxDeviceTop]float32
	closed     bool
}

// NewSession returns a session with an empty cache of Info().Context positions. Many sessions
// share one model; the model runs their forward passes one at a time. A session of a closed
// model fails every Generate.
func (m *Model) NewSession() *Session {
	c := m.cfg
	m.mu.Lock()
	if m.closed {
		// The backend is gone; a session of a closed model only reports that.
		m.mu.Unlock()
		return &Session{m: m, closed: true}
	}
	cache := m.newCache(m.ctxLen)
	m.mu.Unlock()
	s := &Session{
		m:      m,
		cache:  cache,
		tokens: make([]int32, 0, m.ctxLen),
		logits: make([]float32, c.Vocab),
		smp:    newSampler(c.Vocab),
	}
	if m.rec != nil {
		s.snaps = newSnapshots(m)
	}
	return s
}

// Len is the number of positions the cache holds.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// CacheBytes is the memory the session's cache holds: float32 keys and values for every
// position of every attention layer and, for a model with recurrent layers, its recurrent state
// and the snapshots of it the session keeps (which grow to maxSnapshots states).
func (s *Session) CacheBytes() int64 {
	c := s.m.cfg
	n := int64(s.m.attnLayers) * int64(s.m.ctxLen) * int64(c.KVHeads*c.HeadDim) * 2 * 4
	if s.snaps != nil {
		n += s.m.recStateBytes() + s.snaps.bytes.Load()
	}
	return n
}

// Reset empties the cache.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *Session) reset() {
	if s.cache != nil {
		s.cache.Truncate(0)
	}
	if s.snaps != nil {
		s.snaps.reset()
	}
	s.tokens = s.tokens[:0]
}

// Close releases the cache; later calls to Generate fail.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cache = nil
	s.tokens = nil
}

// Generate runs prompt through the model, reusing the longest common token prefix with what the
// session's cache already holds, then samples up to MaxTokens tokens, calling emit (which may be
// nil) per token; emit returning an error stops generation with that error. ctx is checked
// between tokens and between prefill chunks: cancellation returns the partial Result with Stop
// "canceled" and ctx.Err(). Its allocations do not grow with the number of tokens generated,
// except where text is held back for a stop string or a token's text depends on its neighbours
// (a run of byte tokens).
//
// On a backend that picks tokens on the device (backend.Sampler), when p allows it (see
// deviceSpec), decode steps pick their token there and each next step is committed before the
// host waits for the one before (devicepick.go); the tokens are the same. Such a Generate holds
// the model for its whole decode, emit included, so other sessions of the model wait for it.
func (s *Session) Generate(ctx context.Context, prompt []int32, p Sampling, emit func(Token) error) (res Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.m
	res.PromptTokens = len(prompt)
	if s.closed {
		return res, errClosed
	}
	if err := p.check(m.cfg.Vocab); err != nil {
		return res, err
	}
	switch {
	case len(prompt) == 0:
		return res, fmt.Errorf("engine: empty prompt")
	case len(prompt) > m.ctxLen:
		return res, fmt.Errorf("engine: prompt of %d tokens exceeds the context of %d", len(prompt), m.ctxLen)
	}
	for _, id := range prompt {
		if id < 0 || int(id) >= m.cfg.Vocab {
			return res, fmt.Errorf("engine: prompt token %d outside the vocabulary of %d", id, m.cfg.Vocab)
		}
	}

	// Reuse the common prefix; when the whole prompt is cached its last token still has to run,
	// because the logits it produced were not kept.
	n := 0
	for n < len(prompt) && n < len(s.tokens) && prompt[n] == s.tokens[n] {
		n++
	}
	n = min(n, len(prompt)-1)
	if s.snaps != nil && n < len(s.tokens) {
		// A recurrent state only moves forward: resume from the latest snapshot at or before n.
		_, st := splitCache(s.cache)
		at, err := s.snaps.restore(st, n)
		if err != nil {
			s.reset()
			return res, fmt.Errorf("engine: restoring a recurrent state: %w", err)
		}
		n = at
	}
	s.cache.Truncate(n)
	s.tokens = s.tokens[:n]
	res.ReusedTokens = n

	start := time.Now()
	for rest := prompt[n:]; len(rest) > 0; {
		if err := ctx.Err(); err != nil {
			res.Prefill = time.Since(start)
			res.Stop = "canceled"
			return res, err
		}
		chunk := rest[:min(len(rest), maxRows)]
		if s.snaps != nil {
			chunk = rest[:s.snapshotChunk(len(rest), len(prompt))]
		}
		if err := s.step(chunk); err != nil {
			return res, err
		}
		if s.snaps != nil && s.snapshotPoint(len(s.tokens), len(prompt)) {
			if err := s.save(); err != nil {
				return res, err
			}
		}
		rest = rest[len(chunk):]
	}
	res.Prefill = time.Since(start)
	if s.snaps != nil {
		defer func() {
			if err == nil {
				err = s.save()
			}
		}()
	}
	start = time.Now()
	defer func() { res.Decode = time.Since(start) }()
	if p.MaxTokens == 0 {
		res.Stop = "max_tokens"
		return res, nil
	}

	// The cache has room to run all but the last sampled token.
	steps := min(p.MaxTokens, m.ctxLen-len(prompt)+1)
	tops := make([]TokenLogprob, steps*p.Logprobs)
	res.IDs = make([]int32, 0, steps)
	// Texts are joined once at the end: a growing buffer would allocate again and again as the
	// output gets longer.
	texts := make([]string, 0, steps)
	defer func() { res.Text = strings.Join(texts, "") }()
	text := newTextStream(m.tok, prompt)
	s.smp.rng.seed(p.Seed)
	window := p.RepeatWindow
	if window == 0 {
		window = defaultRepeatWindow
	}
	held := "" // text that may be the start of a stop string
	dev := s.newDevicePicks(&p)
	if dev != nil {
		defer dev.close()
	}
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			res.Stop = "canceled"
			return res, err
		}
		top := tops[i*p.Logprobs : (i+1)*p.Logprobs : (i+1)*p.Logprobs]
		var tok Token
		switch {
		case dev != nil && i > 0:
			if tok, err = dev.next(i, i+1 < steps, top); err != nil {
				return res, err
			}
		case dev != nil:
			tok = s.hostToken(&p, s.smp.pickWith(s.logits, &p, nil, p.FirstTokens, dev.uniform(0)), top)
		default:
			var only []int32
			if i == 0 {
				only = p.FirstTokens
			}
			recent := s.tokens[max(0, len(s.tokens)-window):]
			tok = s.hostToken(&p, s.smp.pick(s.logits, &p, recent, only), top)
		}
		id := tok.ID

		eos := !p.IgnoreEOS && m.eos[id]
		stopToken := slices.Contains(p.StopTokens, id)
		stop := ""
		switch {
		case eos:
			stop = "eos"
		case stopToken:
			stop = "stop"
		case i == steps-1 && steps == p.MaxTokens:
			stop = "max_tokens"
		case i == steps-1:
			stop = "context"
		}
		buf := held
		if !eos && !stopToken {
			// A stop token's own text is not output, like a stop string.
			t := time.Now()
			buf += text.next(id)
			res.Detokenize += time.Since(t)
		}
		if at := stopIndex(buf, p.StopStrings); at >= 0 {
			tok.Text, held, stop = buf[:at], "", "stop"
		} else if stop != "" {
			tok.Text, held = buf, ""
		} else {
			k := len(buf) - holdBack(buf, p.StopStrings)
			tok.Text, held = buf[:k], buf[k:]
		}

		res.IDs = append(res.IDs, id)
		texts = append(texts, tok.Text)
		if emit != nil {
			if err := emit(tok); err != nil {
				res.Stop = "canceled"
				return res, err
			}
		}
		if stop != "" {
			res.Stop = stop
			return res, nil
		}
		if dev != nil {
			err = dev.advance(id, i+1)
		} else {
			s.one[0] = id
			err = s.step(s.one[:])
		}
		if err != nil {
			return res, err
		}
	}
}

// hostToken is the token id picked on the host from s.logits, with its log-probability and the
// len(top) most likely tokens in top.
func (s *Session) hostToken(p *Sampling, id int32, top []TokenLogprob) Token {
	lse := logSumExp(s.logits)
	tok := Token{ID: id, Logprob: float32(float64(s.logits[id]) - lse)}
	if p.Logprobs > 0 {
		tok.Top = top
		topLogprobs(tok.Top, s.logits, lse)
	}
	return tok
}

// textStream turns generated ids into the text they add to the prompt's.
type textStream struct {
	dec *tokenizer.StreamDecoder
	// pending is prompt text the decoder still holds back (a run of byte tokens waits for the
	// token after it); it comes out with the first generated text and is not part of it.
	pending string
}

// newTextStream primes a decoder with the end of the prompt, so the first generated token
// renders as it does inside the whole text (a leading "▁" is a space, not stripped as at the
// start of a stream). Several tokens, because the last ones may be special (skipped) or the
// bytes of one character.
func newTextStream(tok *tokenizer.Tokenizer, prompt []int32) *textStream {
	ctx := prompt[max(0, len(prompt)-decoderContext):]
	t := &textStream{dec: tok.NewDecoder(true)}
	var primed strings.Builder
	for _, id := range ctx {
		primed.WriteString(t.dec.Next(id))
	}
	t.pending = strings.TrimPrefix(tok.Decode(ctx, true), primed.String())
	return t
}

func (t *textStream) next(id int32) string {
	s := t.dec.Next(id)
	switch {
	case t.pending == "":
	case strings.HasPrefix(s, t.pending):
		s, t.pending = s[len(t.pending):], ""
	case strings.HasPrefix(t.pending, s):
		s, t.pending = "", t.pending[len(s):]
	default:
		// Generated byte tokens joined the prompt's run and the run decodes differently as a
		// whole (invalid UTF-8 renders as U+FFFD per byte); emit what the decoder gives.
		t.pending = ""
	}
	return s
}

// step runs ids at the end of the cache and keeps the last row's logits. A failed pass leaves
// the cache in an unknown state, so the session starts over.
func (s *Session) step(ids []int32) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.stepLocked(ids)
}

// stepLocked is step for a caller holding the model's lock.
func (s *Session) stepLocked(ids []int32) error {
	err := s.m.forward(s.cache, ids, len(s.tokens), s.logits, nil)
	if err != nil {
		s.reset()
		return fmt.Errorf("engine: forward pass: %w", err)
	}
	s.tokens = append(s.tokens, ids...)
	return nil
}

// stopIndex is the earliest position in text where any stop string begins, or -1.
func stopIndex(text string, stops []string) int {
	at := -1
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return at
}

// holdBack is the length of the longest suffix of text that is a proper prefix of a stop string:
// text that must wait for the next token to tell whether it starts a stop.
func holdBack(text string, stops []string) int {
	n := 0
	for _, s := range stops {
		for k := min(len(s)-1, len(text)); k > n; k-- {
			if strings.HasSuffix(text, s[:k]) {
				n = k
				break
			}
		}
	}
	return n
}
