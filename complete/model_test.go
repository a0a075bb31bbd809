package complete

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layaapp/laya/engine"
)

// tinyModel is a trained fixture model when the tree has one, else a random one.
func tinyModel(tb testing.TB) *engine.Model {
	for _, p := range tinyModels {
		if _, err := os.Stat(p); err == nil {
			return loadModel(tb, p)
		}
	}
	return synthModel(tb)
}

// loadModel opens a model of the repository, skipping the test when it is not there.
func loadModel(tb testing.TB, paths ...string) *engine.Model {
	tb.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		m, err := engine.Load(p, engine.Options{})
		if err != nil {
			tb.Fatalf("loading %s: %v", p, err)
		}
		tb.Cleanup(func() { m.Close() })
		return m
	}
	tb.Skipf("no model at %v", paths)
	return nil
}

// countingGen counts the tokens a real session emits and can cancel after a number of them.
type countingGen struct {
	generator
	emitted  atomic.Int64
	cancelAt int64
	cancel   func()
}

func (g *countingGen) Generate(ctx context.Context, prompt []int32, p engine.Sampling, emit func(engine.Token) error) (engine.Result, error) {
	return g.generator.Generate(ctx, prompt, p, func(t engine.Token) error {
		if n := g.emitted.Add(1); n == g.cancelAt && g.cancel != nil {
			g.cancel()
		}
		return emit(t)
	})
}

func realLM(m *engine.Model, wrap func(generator) generator) lm {
	return lm{vocab: m.Tokenizer(), context: m.Info().Context, newSession: func() generator {
		return wrap(m.NewSession())
	}}
}

var everything = Options{
	MinFirstLogprob: math.Inf(-1), MinTokenLogprob: math.Inf(-1), MinMeanLogprob: math.Inf(-1),
	MinPathLogprob: math.Inf(-1), MinWordLogprob: math.Inf(-1), MinChars: 1,
	Profiles: map[string]Profile{"": {Lines: 1000}},
}

var tinyModels = []string{"../testdata/models/qwen2/hf", "../testdata/models/llama/hf", "../testdata/models/llama3/hf"}

func TestRealModelReuse(t *testing.T) {
	m := tinyModel(t)
	c := New(m, everything)
	defer c.Close()
	ctx := context.Background()
	const text = "the quick brown fox jumps over the lazy dog and then"
	first, err := c.Complete(ctx, "a", Request{Prefix: text, MaxTokens: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Complete(ctx, "a", Request{Prefix: text + " runs", MaxTokens: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// All but the healed last token of the first prompt and what follows it come from the cache.
	if second.Reused < first.Prompt-2 || second.Prompt-second.Reused > 4 {
		t.Errorf("first prompt %d tokens; second %d of which %d reused", first.Prompt, second.Prompt, second.Reused)
	}
	other, err := c.Complete(ctx, "b", Request{Prefix: text + " runs", MaxTokens: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.Reused != 0 {
		t.Errorf("a new client reused %d tokens of another's session", other.Reused)
	}
}

func TestRealModelCancelWithinOneToken(t *testing.T) {
	m := tinyModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &countingGen{cancelAt: 2, cancel: cancel}
	c := newCompleter(realLM(m, func(s generator) generator { g.generator = s; return g }), everything)
	defer c.Close()
	_, err := c.Complete(ctx, "t", Request{Prefix: "once upon a time", MaxTokens: 200}, nil)
	if g.emitted.Load() < 2 {
		t.Skipf("the model ended after %d tokens", g.emitted.Load())
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if extra := g.emitted.Load() - 2; extra > 1 {
		t.Errorf("%d tokens generated after the cancel, want at most 1", extra)
	}
}

func TestRealModelSupersede(t *testing.T) {
	m := tinyModel(t)
	g := &countingGen{}
	c := newCompleter(realLM(m, func(s generator) generator { g.generator = s; return g }), everything)
	defer c.Close()
	started := make(chan struct{})
	errc := make(chan error, 1)
	var afterNewer atomic.Int64
	// seq is the session's request count: the newer request bumps it where it cancels the older
	// one, so pieces are counted from there (not from when the test starts the newer request,
	// which a loaded machine can leave many tokens behind).
	seq := func() uint64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.sessions["x"].seq
	}
	go func() {
		var once bool
		var mine uint64
		_, err := c.Complete(context.Background(), "x", Request{Prefix: "once upon a time", MaxTokens: 200}, func(string) {
			if !once {
				once = true
				mine = seq()
				close(started)
			}
			if seq() != mine {
				afterNewer.Add(1)
			}
		})
		errc <- err
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Skipf("the first request ended before streaming: %v", err)
	}
	if _, err := c.Complete(context.Background(), "x", Request{Prefix: "once upon a time there", MaxTokens: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil && !errors.Is(err, ErrSuperseded) {
		t.Fatalf("older request: %v", err)
	}
	if n := afterNewer.Load(); n > 1 {
		t.Errorf("older request streamed %d pieces after the newer one came", n)
	}
}

func TestRealModelEviction(t *testing.T) {
	m := tinyModel(t)
	s := m.NewSession()
	if _, err := s.Generate(context.Background(), []int32{1, 2, 3}, engine.Sampling{}, nil); err != nil {
		t.Fatal(err)
	}
	one := s.CacheBytes()
	s.Close()
	if one <= 0 {
		t.Fatalf("a session reports %d cache bytes", one)
	}
	opt := everything
	opt.CacheBudget = one * 3 / 2
	c := New(m, opt)
	defer c.Close()
	for _, client := range []string{"a", "b", "c"} {
		if _, err := c.Complete(context.Background(), client, Request{Prefix: "hello", MaxTokens: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n, bytes := c.Sessions(); n != 1 || bytes > opt.CacheBudget {
		t.Errorf("%d sessions holding %d bytes under a budget of %d", n, bytes, opt.CacheBudget)
	}
}

// BenchmarkIncremental compares a warm request (the session holds a 200-token prefix, the
// request appends one word) with the same request cold (a fresh session).
func BenchmarkIncremental(b *testing.B) {
	m := loadModel(b, "../assets/models/laya-code")
	tok := m.Tokenizer()
	// About 200 tokens of ordinary code.
	var src strings.Builder
	for i := 0; len(tok.Encode(src.String(), false)) < 200; i++ {
		fmt.Fprintf(&src, "def f%d(x):\n    return x * %d + %d\n\n", i, i, i+1)
	}
	prefix := src.String() + "def total(values):\n    result = 0\n    for v in"
	opt := everything
	opt.Profiles = nil // the default one-line rule, as an editor gets it
	c := New(m, opt)
	defer c.Close()
	ctx := context.Background()
	req := Request{Prefix: prefix + " values", MaxTokens: 8}
	var cold, warm time.Duration
	iters := 0
	for i := 0; b.Loop(); i++ {
		iters++
		client := fmt.Sprint("cold", i)
		t0 := time.Now()
		if _, err := c.Complete(ctx, client, req, nil); err != nil {
			b.Fatal(err)
		}
		cold += time.Since(t0)

		client = fmt.Sprint("warm", i)
		if _, err := c.Complete(ctx, client, Request{Prefix: prefix, MaxTokens: 8}, nil); err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		s, err := c.Complete(ctx, client, req, nil)
		if err != nil {
			b.Fatal(err)
		}
		warm += time.Since(t0)
		if i == 0 {
			b.Logf("prompt %d tokens, warm reused %d; suggestion %q", s.Prompt, s.Reused, s.Text)
		}
	}
	n := float64(iters)
	b.ReportMetric(float64(cold.Microseconds())/1000/n, "cold-ms")
	b.ReportMetric(float64(warm.Microseconds())/1000/n, "warm-ms")
	b.ReportMetric(float64(warm)/float64(cold), "warm/cold")
}

// The bundled model knows common Python and Go idioms; these are what any code model should
// say, so they check prompt building, healing and the stop rules end to end.
func TestBundledModelSuggests(t *testing.T) {
	m := loadModel(t, "../assets/models/laya-code")
	c := New(m, Options{})
	defer c.Close()
	for _, tc := range []struct{ prefix, want string }{
		// Ends inside a word: only healing lets the model see "fibonacci".
		{"def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonac", "ci("},
		{"import numpy as ", "np"},
		{"if err != nil {\n\treturn nil, ", "err"},
	} {
		var streamed strings.Builder
		s, err := c.Complete(context.Background(), "t", Request{Prefix: tc.prefix}, func(p string) { streamed.WriteString(p) })
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s.Text, tc.want) || strings.Contains(s.Text, "\n") || streamed.String() != s.Text {
			t.Errorf("%q: suggestion %q (streamed %q, stop %s), want it to start with %q on one line",
				tc.prefix, s.Text, streamed.String(), s.Stop, tc.want)
		}
	}
}

// BenchmarkTyping types held-out code into one field a character at a time, asking for a
// suggestion after each, as an editor does: it reports the mean latency and how much of each
// prompt came from the cache.
func BenchmarkTyping(b *testing.B) {
	m := loadModel(b, "../assets/models/laya-code")
	text, err := os.ReadFile("../assets/models/laya-code/heldout.txt")
	if err != nil {
		b.Skip(err)
	}
	text = text[:min(len(text), 1500)]
	c := New(m, Options{})
	defer c.Close()
	var total time.Duration
	var prompt, reused, n int
	for i := 0; b.Loop(); i++ {
		s, err := c.Complete(context.Background(), "field", Request{Prefix: string(text[:1+i%len(text)]), MaxTokens: 8}, nil)
		if err != nil {
			b.Fatal(err)
		}
		total += s.Latency
		prompt += s.Prompt
		reused += s.Reused
		n++
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "ms/request")
	b.ReportMetric(float64(reused)/float64(max(prompt, 1)), "reused/prompt")
}
