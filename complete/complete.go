// Package complete turns the text around a caret into a short, cleaned suggestion from the warm
// engine. It builds the prompt (fill-in-the-middle when the model knows how and there is text
// after the caret), heals the last partial token, stops at the end of a line or sentence, drops
// text the caret already has after it, refuses to suggest when the model is unsure, and keeps
// one engine session per client so that consecutive requests from the same text field reuse
// the KV cache of their common prefix.
package complete

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/layaapp/laya/engine"
)

// Options configures a Completer. Zero values select the defaults given per field.
type Options struct {
	// CacheBudget is the bytes all sessions' KV caches may hold together; least recently used
	// idle sessions are closed to stay under it. 0 = 512 MiB. At least one session is always
	// kept, whatever its size.
	CacheBudget int64
	// ContextChars is how much text before the caret is considered, in bytes of UTF-8;
	// 0 = three per position of the model's context, at most 6000.
	ContextChars int
	// SuffixChars is how much text after the caret is considered, in bytes; 0 = 512. Its tokens
	// follow the prefix in a fill-in-the-middle prompt, so each keystroke recomputes them:
	// keep it short.
	SuffixChars int
	// MaxTokens is the generation limit of a request that sets none; 0 = 32.
	MaxTokens int
	// MaxTokensLimit caps what a request may ask for; 0 = 256.
	MaxTokensLimit int
	// MinFirstLogprob: a suggestion whose first token is less likely than this is dropped
	// (the model is unsure how to go on); 0 = -3. Use math.Inf(-1) to accept everything.
	MinFirstLogprob float64
	// MinTokenLogprob: a suggestion ends before a later token less likely than this; 0 = -6.
	MinTokenLogprob float64
	// MinMeanLogprob: a suggestion whose mean token logprob is below this is dropped; 0 = -2.
	MinMeanLogprob float64
	// Profiles hold per-application prompt hints and stop rules, keyed by Request.App; the
	// profile under "" applies to every other app.
	Profiles map[string]Profile
}

// Profile adapts prompts and stop rules to one kind of application.
type Profile struct {
	// Hint is text placed before the prefix, e.g. "// language: go\n" for an editor.
	Hint string
	// Lines is the most lines a suggestion may span; 0 = 1. A newline the suggestion starts
	// with (continuing on a new line) does not count.
	Lines int
	// Sentence ends a suggestion after the first sentence (for prose).
	Sentence bool
}

// Request is one completion request: the text around the caret and sampling overrides.
type Request struct {
	Prefix, Suffix string // text before and after the caret
	App            string // selects a Profile
	MaxTokens      int    // 0 = Options.MaxTokens
	Temperature    float32
	TopK           int
	TopP           float32
	Stop           []string // extra strings that end the suggestion (not included)
}

// Suggestion is the cleaned completion for a request.
type Suggestion struct {
	// Text is what to insert at the caret; "" when the model had nothing confident to say.
	Text string
	// Tokens is how many generated tokens Text came from.
	Tokens int
	// Prompt is the number of prompt tokens, Reused how many of them came from the session's cache.
	Prompt, Reused int
	Latency        time.Duration
	// Logprob is the mean log-probability of the tokens of Text (0 when Text is empty).
	Logprob float64
	// Stop says why the suggestion ended: "line", "sentence", "stop" (a Request.Stop string),
	// "suffix" (reached the text after the caret), "max_tokens", "eos", "context", "unsure"
	// (the next token was too unlikely) or "canceled".
	Stop string
}

// healTop is how many of the most likely first tokens are looked at to judge a healed one.
const healTop = 32

// ErrSuperseded is returned for a request canceled because a newer one from the same client came.
var ErrSuperseded = errors.New("complete: superseded by a newer request")

// ErrClosed is returned by Complete after Close: its model may be closed too, so no session may
// start on it.
var ErrClosed = errors.New("complete: completer closed")

// vocab is what prompt building needs from a tokenizer (*tokenizer.Tokenizer has it).
type vocab interface {
	Encode(text string, addSpecial bool) []int32
	Decode(ids []int32, skipSpecial bool) string
	TokenID(s string) (int32, bool)
	VocabSize() int
	BOS() int32
}

// generator is one engine session (*engine.Session has it).
type generator interface {
	Generate(ctx context.Context, prompt []int32, p engine.Sampling, emit func(engine.Token) error) (engine.Result, error)
	CacheBytes() int64
	Close()
}

// lm is the model as the Completer uses it, so tests can stand in for the engine.
type lm struct {
	vocab      vocab
	newSession func() generator
	context    int // positions per session
}

// Completer serves completion requests from many clients on one model. It is safe for
// concurrent use; the model serializes the forward passes.
type Completer struct {
	m      lm
	opt    Options
	fim    *fimTokens // nil when the model has no FIM tokens
	addBOS bool
	heal   healer

	mu       sync.Mutex
	sessions map[string]*session
	lru      *list.List // of *session, most recently used first
	closed   bool
}

// session is one client's engine session; mu is held while it generates.
type session struct {
	key    string
	gen    generator
	elem   *list.Element
	mu     sync.Mutex
	bytes  int64 // CacheBytes after the last request, read only when idle
	users  int   // requests holding or waiting for mu; an idle session has 0
	cancel context.CancelCauseFunc
	seq    uint64
}

// New returns a Completer serving requests on m.
func New(m *engine.Model, opt Options) *Completer {
	return newCompleter(lm{
		vocab:      m.Tokenizer(),
		newSession: func() generator { return m.NewSession() },
		context:    m.Info().Context,
	}, opt)
}

func newCompleter(m lm, opt Options) *Completer {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	// About three bytes of code per token: a window that mostly fits the context, so that
	// the token-level trim (which moves in bigger steps) seldom has to act.
	def(&opt.ContextChars, min(6000, 3*m.context))
	def(&opt.SuffixChars, 512)
	def(&opt.MaxTokens, 32)
	def(&opt.MaxTokensLimit, 256)
	if opt.CacheBudget <= 0 {
		opt.CacheBudget = 512 << 20
	}
	deflp := func(v *float64, d float64) {
		if *v == 0 || math.IsNaN(*v) {
			*v = d
		}
	}
	deflp(&opt.MinFirstLogprob, -3)
	deflp(&opt.MinTokenLogprob, -6)
	deflp(&opt.MinMeanLogprob, -2)
	c := &Completer{
		m:        m,
		opt:      opt,
		fim:      findFIM(m.vocab),
		sessions: map[string]*session{},
		lru:      list.New(),
	}
	if bos := m.vocab.BOS(); bos >= 0 {
		ids := m.vocab.Encode("a", true)
		c.addBOS = len(ids) > 0 && ids[0] == bos
	}
	c.heal.v = m.vocab
	go c.heal.once.Do(c.heal.init) // decoding the whole vocabulary takes a moment; not on the first request
	return c
}

// Complete returns the suggestion for req, calling onText (when not nil) with each piece of
// the suggestion as it is generated. The pieces always form a prefix of the final text, except
// that a suggestion dropped at the end for low confidence has Text "" (clients then clear what
// they showed). A newer request from the same client cancels this one at its next token; it
// then returns ErrSuperseded. Cancellation of ctx returns ctx's error.
func (c *Completer) Complete(ctx context.Context, client string, req Request, onText func(string)) (Suggestion, error) {
	start := time.Now()
	prof := c.profile(req.App)
	maxTok := req.MaxTokens
	if maxTok <= 0 {
		maxTok = c.opt.MaxTokens
	}
	maxTok = min(maxTok, c.opt.MaxTokensLimit)
	if maxTok >= c.m.context-1 {
		maxTok = c.m.context / 2
	}
	if maxTok <= 0 {
		return Suggestion{}, fmt.Errorf("complete: model context of %d positions is too small", c.m.context)
	}
	p := c.buildPrompt(req, prof, c.m.context-maxTok)
	if len(p.ids) == 0 {
		return Suggestion{Latency: time.Since(start), Stop: "eos"}, nil // nothing to go on
	}
	filt := newFilter(req, prof, p, c.opt)

	s, rctx, done, err := c.acquire(ctx, client)
	if err != nil {
		return Suggestion{Latency: time.Since(start), Stop: "canceled"}, err
	}
	defer done()

	if err := context.Cause(rctx); err != nil {
		return Suggestion{Latency: time.Since(start), Stop: "canceled"}, err
	}
	samp := engine.Sampling{
		MaxTokens:   maxTok,
		Temperature: req.Temperature,
		TopK:        req.TopK,
		TopP:        req.TopP,
		StopTokens:  p.stopTokens,
		FirstTokens: p.firstTokens,
	}
	if len(p.firstTokens) > 1 {
		samp.Logprobs = healTop
	}
	res, err := s.gen.Generate(rctx, p.ids, samp, func(t engine.Token) error {
		return filt.add(t, onText)
	})
	if err != nil && !errors.Is(err, errFilterStop) {
		sug := Suggestion{Prompt: res.PromptTokens, Reused: res.ReusedTokens, Latency: time.Since(start), Stop: "canceled"}
		if rctx.Err() != nil {
			return sug, context.Cause(rctx)
		}
		return sug, fmt.Errorf("complete: %w", err)
	}
	sug := filt.finish(res.Stop, onText)
	sug.Prompt, sug.Reused = res.PromptTokens, res.ReusedTokens
	sug.Latency = time.Since(start)
	return sug, nil
}

func (c *Completer) profile(app string) Profile {
	if p, ok := c.opt.Profiles[app]; ok {
		return p
	}
	return c.opt.Profiles[""]
}

// acquire returns client's session locked for this request, with a context that a newer
// request of the same client cancels; done releases both.
func (c *Completer) acquire(ctx context.Context, client string) (*session, context.Context, func(), error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, nil, ErrClosed
	}
	s := c.sessions[client]
	if s == nil {
		c.evict(c.sessionEstimate())
		s = &session{key: client, gen: c.m.newSession()}
		s.bytes = s.gen.CacheBytes()
		s.elem = c.lru.PushFront(s)
		c.sessions[client] = s
	} else {
		c.lru.MoveToFront(s.elem)
	}
	if s.cancel != nil {
		s.cancel(ErrSuperseded)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	s.cancel = cancel
	s.seq++
	seq := s.seq
	s.users++
	c.mu.Unlock()

	s.mu.Lock()
	return s, rctx, func() {
		bytes := s.gen.CacheBytes()
		s.mu.Unlock()
		c.mu.Lock()
		s.bytes = bytes
		s.users--
		if s.seq == seq {
			s.cancel = nil
		}
		cancel(nil)
		c.evict(0)
		c.mu.Unlock()
	}, nil
}

// sessionEstimate is the cache size a new session will grow to, judged from existing ones.
func (c *Completer) sessionEstimate() int64 {
	var most int64
	for _, s := range c.sessions {
		most = max(most, s.bytes)
	}
	return most
}

// evict closes least recently used idle sessions until the caches plus extra fit the budget.
// c.mu must be held.
func (c *Completer) evict(extra int64) {
	var total int64
	for _, s := range c.sessions {
		total += s.bytes
	}
	for e := c.lru.Back(); e != nil && total+extra > c.opt.CacheBudget && len(c.sessions) > 0; {
		s := e.Value.(*session)
		prev := e.Prev()
		if s.users == 0 && (extra > 0 || len(c.sessions) > 1) {
			total -= s.bytes
			c.lru.Remove(e)
			delete(c.sessions, s.key)
			s.gen.Close()
		}
		e = prev
	}
}

// Sessions reports how many client sessions are open and the bytes their caches hold.
func (c *Completer) Sessions() (n int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		bytes += s.bytes
	}
	return len(c.sessions), bytes
}

// Close releases every session; requests still running finish first, and later ones fail
// with ErrClosed.
func (c *Completer) Close() {
	c.mu.Lock()
	c.closed = true
	ss := make([]*session, 0, len(c.sessions))
	for _, s := range c.sessions {
		if s.cancel != nil {
			s.cancel(context.Canceled)
		}
		ss = append(ss, s)
	}
	c.sessions = map[string]*session{}
	c.lru.Init()
	c.mu.Unlock()
	for _, s := range ss {
		s.mu.Lock()
		s.gen.Close()
		s.mu.Unlock()
	}
}
