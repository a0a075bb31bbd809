package emu_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/internal/fixtures"
)

// fixtureSteps is how many greedy steps of each reference case run through the emulator: the
// prefill and several decode steps, which is what the kernels can get wrong, at a CI-sized cost.
const fixtureSteps = 6

// TestFixtures checks the emulated Metal backend against the PyTorch (float64) references of the
// parity fixtures, every format against its own case: identical greedy ids, logprobs within
// halfKVTol with the default half KV cache; the llama fixture's formats also with a float32
// cache, within fastMathTol (fastMathTol4Bit for 4-bit formats).
// It runs the first case of each model and format (the emulated prefill mat-mat is slow; the
// other prompts exercise the same kernels at other lengths).
func TestFixtures(t *testing.T) {
	for _, ref := range fixtures.All(t) {
		seen := map[string]bool{}
		for _, c := range ref.Cases {
			if seen[c.Format] {
				continue
			}
			seen[c.Format] = true
			path := filepath.Join(ref.Dir, c.Path)
			t.Run(ref.Model+"/"+c.Format, func(t *testing.T) { checkCase(t, path, c, "metal-emu", halfKVTol) })
			if ref.Model != "llama" {
				continue
			}
			tol := fastMathTol
			if strings.HasPrefix(c.Format, "q4") || c.Format == "mlx4" {
				tol = fastMathTol4Bit
			}
			t.Run(ref.Model+"/"+c.Format+"/f32-kv", func(t *testing.T) { checkCase(t, path, c, "metal-emu-f32", tol) })
		}
	}
}

func checkCase(t *testing.T, path string, c fixtures.Case, be string, tol float64) {
	n := min(fixtureSteps, len(c.Greedy), len(c.Top))
	if n == 0 || len(c.PromptIDs) == 0 {
		t.Fatalf("case has %d prompt ids, %d greedy ids, %d top lists", len(c.PromptIDs), len(c.Greedy), len(c.Top))
	}
	m, err := engine.Load(path, engine.Options{Backend: be, Threads: 1, Context: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	defer s.Close()
	step := 0
	_, err = s.Generate(context.Background(), c.PromptIDs, engine.Sampling{MaxTokens: n, Logprobs: 5, IgnoreEOS: true}, func(tok engine.Token) error {
		if tok.ID != c.Greedy[step] {
			t.Errorf("step %d: token %d, reference %d (top %v, reference %v)", step, tok.ID, c.Greedy[step], tok.Top, c.Top[step])
		}
		for k, e := range c.Top[step] {
			if k >= len(tok.Top) {
				t.Errorf("step %d: %d top entries, reference %d", step, len(tok.Top), len(c.Top[step]))
				break
			}
			// Logprobs compare rank by rank; ids only where the reference's neighbours are apart by
			// more than the tolerance, since near-ties may order either way.
			g := tok.Top[k]
			apart := (k == 0 || c.Top[step][k-1][1]-e[1] > 2*tol) && (k+1 >= len(c.Top[step]) || e[1]-c.Top[step][k+1][1] > 2*tol)
			if math.Abs(float64(g.Logprob)-e[1]) > tol || (apart && g.ID != int32(e[0])) {
				t.Errorf("step %d: top[%d] = %+v, reference {%d %.6f}", step, k, g, int32(e[0]), e[1])
			}
		}
		step++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if step != n {
		t.Fatalf("%d steps, want %d", step, n)
	}
}
