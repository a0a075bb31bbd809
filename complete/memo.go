package complete

import (
	"context"
	"encoding/gob"
	"fmt"
	"io"
	"sync"

	"github.com/layaapp/laya/engine"
)

// Memo remembers what a model generated for each prompt, so that completers differing only in
// their gating (a sweep of `laya replay` settings) compute each prompt once. Gating only ends a
// suggestion early, so the tokens of an ungated generation are those a gated one would have
// had; and sampling is a function of the prompt, the sampling settings and the seed, which
// every request sets alike. A prompt the memo has not seen is generated to its end (MaxTokens
// or a stop token) whatever the filter says, so that stricter and looser gating can reuse it.
type Memo struct {
	m lm

	mu   sync.Mutex
	runs map[string]memoRun
}

type memoRun struct {
	Tokens []engine.Token
	Res    engine.Result
}

// NewMemo returns an empty Memo on m.
func NewMemo(m *engine.Model) *Memo {
	return newMemo(lm{
		vocab:      m.Tokenizer(),
		newSession: func() generator { return m.NewSession() },
		context:    m.Info().Context,
	})
}

func newMemo(m lm) *Memo { return &Memo{m: m, runs: map[string]memoRun{}} }

// Completer returns a Completer on the memo's model with opt whose generations go through
// the memo.
func (mm *Memo) Completer(opt Options) *Completer {
	m := mm.m
	m.newSession = func() generator { return &memoSession{memo: mm, gen: mm.m.newSession()} }
	return newCompleter(m, opt)
}

// Prompts is how many distinct prompts the memo holds.
func (mm *Memo) Prompts() int {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	return len(mm.runs)
}

// Save writes what the memo holds, for Load on the same model.
func (mm *Memo) Save(w io.Writer) error {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	return gob.NewEncoder(w).Encode(mm.runs)
}

// Load adds what Save wrote, which must come from the same model: the memo cannot tell.
func (mm *Memo) Load(r io.Reader) error {
	runs := map[string]memoRun{}
	if err := gob.NewDecoder(r).Decode(&runs); err != nil {
		return fmt.Errorf("complete: reading a memo: %w", err)
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	for k, v := range runs {
		mm.runs[k] = v
	}
	return nil
}

type memoSession struct {
	memo *Memo
	gen  generator
}

func (s *memoSession) Generate(ctx context.Context, prompt []int32, p engine.Sampling, emit func(engine.Token) error) (engine.Result, error) {
	key := fmt.Sprint(prompt, p)
	s.memo.mu.Lock()
	run, ok := s.memo.runs[key]
	s.memo.mu.Unlock()
	if ok {
		for _, t := range run.Tokens {
			if err := ctx.Err(); err != nil {
				return engine.Result{PromptTokens: len(prompt), Stop: "canceled"}, err
			}
			if err := emit(t); err != nil {
				return engine.Result{PromptTokens: len(prompt), Stop: "canceled"}, err
			}
		}
		return run.Res, nil
	}
	var (
		tokens  []engine.Token
		emitErr error
	)
	res, err := s.gen.Generate(ctx, prompt, p, func(t engine.Token) error {
		tokens = append(tokens, t)
		if emitErr == nil {
			emitErr = emit(t)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	s.memo.mu.Lock()
	s.memo.runs[key] = memoRun{Tokens: tokens, Res: res}
	s.memo.mu.Unlock()
	if emitErr != nil {
		res.Stop = "canceled"
		return res, emitErr
	}
	return res, nil
}

func (s *memoSession) CacheBytes() int64 { return s.gen.CacheBytes() }
func (s *memoSession) Reset()            { s.gen.Reset() }
func (s *memoSession) Close()            { s.gen.Close() }
