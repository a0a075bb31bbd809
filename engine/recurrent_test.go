package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine/backend"
)

// hybridFixtures are the committed tiny models with recurrent layers, in transformers' layout.
var hybridFixtures = []string{"lfm2", "qwen3_5"}

func loadFixture(t *testing.T, family string) *Model {
	t.Helper()
	m, err := Load(filepath.Join("..", "testdata", "models", family, "hf"), Options{Backend: "cpu", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if m.rec == nil {
		t.Fatalf("%s: no recurrent layers", family)
	}
	return m
}

func randomIDs(r *rand.Rand, n, vocab int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(r.IntN(vocab))
	}
	return ids
}

// generate runs a greedy request on s and returns its result and steps.
func generate(t *testing.T, s *Session, prompt []int32, maxTokens int) (Result, []step) {
	t.Helper()
	var steps []step
	res, err := s.Generate(context.Background(), prompt, Sampling{MaxTokens: maxTokens, Logprobs: 5, IgnoreEOS: true}, collect(&steps))
	if err != nil {
		t.Fatal(err)
	}
	return res, steps
}

// sameRun requires a run that reused a session's state to be the cold run: the same greedy ids,
// and every reported logprob within 1e-5.
func sameRun(t *testing.T, what string, got, want []step) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d steps, cold run %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i].id != want[i].id {
			t.Fatalf("%s: step %d token %d, cold run %d", what, i, got[i].id, want[i].id)
		}
		for j := range want[i].top {
			g, w := got[i].top[j], want[i].top[j]
			if g.ID != w.ID || math.Abs(float64(g.Logprob-w.Logprob)) > 1e-5 {
				t.Fatalf("%s: step %d top %d: %v, cold run %v", what, i, j, g, w)
			}
		}
	}
}

// TestRecurrentPrefixReuse edits prompts the ways typing does and requires each run resuming
// from a kept state to equal a cold run of the same prompt in a fresh session, and the reuse to
// start where the snapshots allow.
func TestRecurrentPrefixReuse(t *testing.T) {
	for _, family := range hybridFixtures {
		t.Run(family, func(t *testing.T) {
			m := loadFixture(t, family)
			vocab := m.Tokenizer().VocabSize()
			r := rand.New(rand.NewPCG(7, uint64(len(family))))
			base := randomIDs(r, 300, vocab)
			s := m.NewSession()
			before := s.CacheBytes()
			first, _ := generate(t, s, base, 4)
			if s.CacheBytes() <= before {
				t.Errorf("CacheBytes %d after keeping snapshots, %d before", s.CacheBytes(), before)
			}
			held := slices.Concat(base, first.IDs[:len(first.IDs)-1]) // what the session's state covers

			extended := slices.Concat(held, randomIDs(r, 9, vocab))
			for _, tc := range []struct {
				name   string
				prompt []int32
				reused int // the position of the snapshot the run must resume from
			}{
				// The user kept typing: the state after the last request is current.
				{"extended", extended, len(held)},
				// The last token was re-tokenized: the snapshot before the last prompt's last token.
				{"last token changed", slices.Concat(extended[:len(extended)-1], randomIDs(r, 5, vocab)), len(extended) - 1},
				// An edit in the middle: the snapshot at 256.
				{"edited at 290", slices.Concat(base[:290], randomIDs(r, 30, vocab)), 256},
				// An edit before the first snapshot: nothing to resume from.
				{"edited at 10", slices.Concat(base[:10], randomIDs(r, 40, vocab)), 0},
			} {
				res, steps := generate(t, s, tc.prompt, 6)
				if res.ReusedTokens != tc.reused {
					t.Errorf("%s: reused %d tokens, want %d", tc.name, res.ReusedTokens, tc.reused)
				}
				_, cold := generate(t, m.NewSession(), tc.prompt, 6)
				sameRun(t, tc.name, steps, cold)
			}
			if got, max := s.CacheBytes(), before+maxSnapshots*m.recStateBytes(); got > max {
				t.Errorf("CacheBytes %d, more than the cache and %d snapshots (%d)", got, maxSnapshots, max)
			}
		})
	}
}

// TestRecurrentDecodeMatchesPrefill runs a prompt at once (the chunked delta rule, every row
// through each convolution in one call) and token by token (the step form), and requires the
// same logits: the two forms of every recurrent layer agree inside the model too.
func TestRecurrentDecodeMatchesPrefill(t *testing.T) {
	for _, family := range hybridFixtures {
		t.Run(family, func(t *testing.T) {
			m := loadFixture(t, family)
			prompt := randomIDs(rand.New(rand.NewPCG(3, 3)), 150, m.Tokenizer().VocabSize())
			vocab := m.cfg.Vocab
			whole := make([]float32, vocab)
			step := make([]float32, vocab)
			m.mu.Lock()
			defer m.mu.Unlock()
			c1, c2 := m.newCache(len(prompt)), m.newCache(len(prompt))
			if err := m.forward(c1, prompt, 0, whole, nil); err != nil {
				t.Fatal(err)
			}
			for i, id := range prompt {
				if err := m.forward(c2, []int32{id}, i, step, nil); err != nil {
					t.Fatal(err)
				}
			}
			var d float64
			for i := range whole {
				d = max(d, math.Abs(float64(whole[i]-step[i])))
			}
			if d > 1e-4 {
				t.Errorf("prefill and step-by-step logits differ by %g", d)
			}
		})
	}
}

// noRecurrent is a backend without the recurrent operations.
type noRecurrent struct{ backend.Backend }

func (noRecurrent) Name() string { return "norec" }

func TestRecurrentNeedsBackendSupport(t *testing.T) {
	RegisterBackend("norec", func(o Options) (backend.Backend, error) {
		be, err := backends["cpu"](o)
		return noRecurrent{be}, err
	})
	_, err := Load(filepath.Join("..", "testdata", "models", "lfm2", "hf"), Options{Backend: "norec"})
	if err == nil {
		t.Fatal("a backend without recurrent operations took an LFM2 model")
	}
	t.Log(err)
}

// TestRecurrentDecodeAllocs requires a decode step of a model with recurrent layers to allocate
// nothing, as a Llama's does.
func TestRecurrentDecodeAllocs(t *testing.T) {
	for _, family := range hybridFixtures {
		t.Run(family, func(t *testing.T) {
			m := loadFixture(t, family)
			s := m.NewSession()
			if _, err := s.Generate(context.Background(), randomIDs(rand.New(rand.NewPCG(1, 1)), 20, m.cfg.Vocab), Sampling{}, nil); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(20, func() {
				s.one[0] = int32(len(s.tokens) % m.cfg.Vocab)
				if err := s.step(s.one[:]); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("a decode step allocates %v times", allocs)
			}
		})
	}
}
