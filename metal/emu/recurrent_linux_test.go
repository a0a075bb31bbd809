package emu_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine"
)

// TestRecurrentPrefixReuse runs the recurrent fixtures on the emulated Metal backend the way
// typing does: a request, then one whose prompt shares a prefix, which resumes from a state the
// session kept (copied on the device). The resumed run must be a cold run of the same prompt:
// the same greedy ids, logprobs within 1e-5 (both runs round the same way on one backend).
func TestRecurrentPrefixReuse(t *testing.T) {
	for _, family := range []string{"lfm2", "qwen3_5"} {
		t.Run(family, func(t *testing.T) {
			m, err := engine.Load(filepath.Join("..", "..", "testdata", "models", family, "hf"),
				engine.Options{Backend: "metal-emu", Threads: 1, Context: 128})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			vocab := m.Tokenizer().VocabSize()
			base := make([]int32, 40)
			for i := range base {
				base[i] = int32((i*37 + 11) % vocab)
			}
			run := func(s *engine.Session, prompt []int32) (engine.Result, [][]engine.TokenLogprob) {
				var tops [][]engine.TokenLogprob
				res, err := s.Generate(context.Background(), prompt, engine.Sampling{MaxTokens: 4, Logprobs: 3, IgnoreEOS: true},
					func(tok engine.Token) error { tops = append(tops, slices.Clone(tok.Top)); return nil })
				if err != nil {
					t.Fatal(err)
				}
				return res, tops
			}
			s := m.NewSession()
			run(s, base)
			// The last prompt token re-tokenized: resume from the state before it.
			edited := append(slices.Clone(base[:len(base)-1]), 5, 6, 7)
			res, got := run(s, edited)
			if res.ReusedTokens != len(base)-1 {
				t.Errorf("reused %d tokens, want %d", res.ReusedTokens, len(base)-1)
			}
			cold, want := run(m.NewSession(), edited)
			if !slices.Equal(res.IDs, cold.IDs) {
				t.Fatalf("resumed run %v, cold run %v", res.IDs, cold.IDs)
			}
			for i := range want {
				for j := range want[i] {
					if got[i][j].ID != want[i][j].ID || math.Abs(float64(got[i][j].Logprob-want[i][j].Logprob)) > 1e-5 {
						t.Fatalf("step %d top %d: %v, cold run %v", i, j, got[i][j], want[i][j])
					}
				}
			}
		})
	}
}
