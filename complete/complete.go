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
	// CacheBudget is the bytes all client sessions may hold together (their KV caches and
	// state snapshots, as CacheBytes reports them); 0 = 512 MiB. A new client takes over the
	// least recently used idle session when a new one would not fit, and waits for one to go
	// idle when all are busy. One session is always allowed, whatever its size.
	CacheBudget int64
	// MaxWait is how long a request of a new client waits for a session when the budget is
	// spent and every session is busy, before it fails with ErrBusy; 0 = 10s.
	MaxWait time.Duration
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
	// MinPathLogprob: a suggestion ends before the token that would make the whole of it less
	// likely than this (the sum of its tokens' log-probabilities), and is dropped when its first
	// token already is; 0 = DefaultMinPathLogprob.
	MinPathLogprob float64
	// MinWordLogprob: a suggestion is dropped when the tokens through its first word (what
	// accept-word takes, and all that decides whether any of it is accepted) are together less
	// likely than this; 0 = DefaultMinWordLogprob.
	MinWordLogprob float64
	// MinChars: a suggestion of fewer code points (blanks around it not counted) is dropped
	// unless all of it is at least MinShortLogprob likely; 0 = DefaultMinChars.
	MinChars int
	// MinShortLogprob is the bar of a suggestion shorter than MinChars; 0 =
	// DefaultMinShortLogprob.
	MinShortLogprob float64
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
	// (the next token or the first word was too unlikely), "short" (under MinChars and not
	// MinShortLogprob likely) or "canceled".
	Stop string
}

// healTop is how many of the most likely first tokens are looked at to judge a healed one.
const healTop = 32

// ErrSuperseded is returned for a request canceled because a newer one from the same client came.
var ErrSuperseded = errors.New("complete: superseded by a newer request")

// ErrBusy is returned for a request of a new client that found the cache budget spent by busy
// sessions for longer than Options.MaxWait.
var ErrBusy = errors.New("complete: every session is busy and the cache budget is spent; try again")

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
	// CacheBytes is all the memory the session holds between requests — its KV cache and any
	// recurrent-state snapshots — and what the cache budget counts. A session's memory that
	// CacheBytes leaves out is not bounded by the budget.
	CacheBytes() int64
	// Reset empties the session for another client, keeping the memory it will reuse.
	Reset()
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
	lru      *list.List    // of *session, most recently used first
	used     int64         // the bytes of every session in the pool
	fresh    int64         // the most bytes a new or emptied session has held
	idle     chan struct{} // closed and replaced when a session goes idle or the pool closes
	closed   bool
}

// session is one client's engine session; mu is held while it generates.
type session struct {
	key    string
	gen    generator
	elem   *list.Element
	mu     sync.Mutex
	bytes  int64 // what the pool counts for it: CacheBytes when placed and after each request
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
	if opt.MaxWait <= 0 {
		opt.MaxWait = 10 * time.Second
	}
	deflp := func(v *float64, d float64) {
		if *v == 0 || math.IsNaN(*v) {
			*v = d
		}
	}
	deflp(&opt.MinFirstLogprob, -3)
	deflp(&opt.MinTokenLogprob, -6)
	deflp(&opt.MinPathLogprob, DefaultMinPathLogprob)
	deflp(&opt.MinWordLogprob, DefaultMinWordLogprob)
	def(&opt.MinChars, DefaultMinChars)
	deflp(&opt.MinShortLogprob, DefaultMinShortLogprob)
	deflp(&opt.MinMeanLogprob, -2)
	c := &Completer{
		m:        m,
		opt:      opt,
		fim:      findFIM(m.vocab),
		sessions: map[string]*session{},
		lru:      list.New(),
		idle:     make(chan struct{}),
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
// request of the same client cancels; done releases both. A client without a session gets a
// new one while the pool has room, else the memory of the least recently used idle session;
// when every session is busy it waits for one to go idle, for at most MaxWait.
func (c *Completer) acquire(ctx context.Context, client string) (*session, context.Context, func(), error) {
	var timeout <-chan time.Time
	c.mu.Lock()
	for {
		if c.closed {
			c.mu.Unlock()
			return nil, nil, nil, ErrClosed
		}
		if s := c.sessions[client]; s != nil {
			c.lru.MoveToFront(s.elem)
			break
		}
		if c.place(client) {
			break
		}
		idle := c.idle
		c.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(c.opt.MaxWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return nil, nil, nil, context.Cause(ctx)
		case <-timeout:
			return nil, nil, nil, ErrBusy
		}
		c.mu.Lock()
	}
	s := c.sessions[client]
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
		c.used += bytes - s.bytes
		s.bytes = bytes
		s.users--
		if s.seq == seq {
			s.cancel = nil
		}
		cancel(nil)
		c.trim()
		c.wake()
		c.mu.Unlock()
	}, nil
}

// place gives client a session from the pool and reports whether it could: a new one when it
// fits the budget next to the others (or no other exists), else the least recently used idle
// session, emptied. Reusing a session's memory rather than freeing it and allocating anew keeps
// the process's memory at what the pool holds. c.mu must be held.
func (c *Completer) place(client string) bool {
	var gen generator
	if len(c.sessions) == 0 || c.used+c.fresh <= c.opt.CacheBudget {
		gen = c.m.newSession()
	} else {
		for e := c.lru.Back(); e != nil; e = e.Prev() {
			if old := e.Value.(*session); old.users == 0 {
				c.drop(old)
				gen = old.gen
				gen.Reset()
				break
			}
		}
		if gen == nil {
			return false
		}
	}
	s := &session{key: client, gen: gen, bytes: gen.CacheBytes()}
	c.fresh = max(c.fresh, s.bytes)
	c.used += s.bytes
	s.elem = c.lru.PushFront(s)
	c.sessions[client] = s
	c.trim()
	return true
}

// drop takes s out of the pool without closing it. c.mu must be held.
func (c *Completer) drop(s *session) {
	c.lru.Remove(s.elem)
	delete(c.sessions, s.key)
	c.used -= s.bytes
}

// trim closes least recently used idle sessions while the pool is over budget (sessions grow
// after they are placed, e.g. by state snapshots), keeping at least one. c.mu must be held.
func (c *Completer) trim() {
	for e := c.lru.Back(); e != nil && c.used > c.opt.CacheBudget && len(c.sessions) > 1; {
		prev := e.Prev()
		if s := e.Value.(*session); s.users == 0 {
			c.drop(s)
			s.gen.Close()
		}
		e = prev
	}
}

// wake tells requests waiting for a session that one may have gone idle or memory was freed.
// c.mu must be held.
func (c *Completer) wake() {
	close(c.idle)
	c.idle = make(chan struct{})
}

// Sessions reports how many client sessions are open and the bytes their caches hold.
func (c *Completer) Sessions() (n int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.used
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
	c.used = 0
	c.wake()
	c.mu.Unlock()
	for _, s := range ss {
		s.mu.Lock()
		s.gen.Close()
		s.mu.Unlock()
	}
}
