package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/cpu"
	"github.com/layaapp/laya/engine/safetensors"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/weights"
)

// testConfig is a tiny Llama with grouped-query attention (4 query heads over 2 kv heads).
func testConfig() weights.Config {
	return weights.Config{Arch: "llama", Vocab: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8,
		FFN: 48, NormEps: 1e-5, RopeTheta: 10000, MaxContext: 512, BOS: 0, EOS: []int{1}}
}

// testTokenizerJSON is a tokenizer.json whose tokens 0 and 1 are <s> and </s> and whose other
// tokens are short distinct strings, decoded by plain concatenation.
func testTokenizerJSON(vocab int) []byte {
	v := map[string]int{"<s>": 0, "</s>": 1}
	for i := 2; i < vocab; i++ {
		v[string(rune('a'+(i-2)%26))+strings.Repeat("-", (i-2)/26)] = i
	}
	b, _ := json.Marshal(map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": v, "merges": []string{}},
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<s>", "special": true},
			{"id": 1, "content": "</s>", "special": true},
		},
		"decoder": map[string]any{"type": "Fuse"},
	})
	return b
}

// newTestModel builds a random model for cfg on the cpu backend. edit, when not nil, may change
// the tensors before loading (the reference keeps the original weights).
func newTestModel(t testing.TB, cfg weights.Config, seed uint64, ctx int, edit func(map[string]*tensor.Tensor)) (*Model, *refModel) {
	t.Helper()
	ts, ref := randModel(cfg, seed)
	if edit != nil {
		edit(ts)
	}
	w := &weights.Model{Path: "test", Format: "safetensors", Config: cfg, Tensors: ts, TokenizerJSON: testTokenizerJSON(cfg.Vocab)}
	m, err := newModel(w, Options{Backend: "cpu", Threads: 1, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, ref
}

func llama3Config() weights.Config {
	c := testConfig()
	c.TiedEmbeddings, c.RopeTheta = true, 500000
	// With head dim 8 the wavelengths are about 6, 167, 4443 and 118000: one each in the high,
	// medium and low bands of an original context of 256.
	c.RopeScale = weights.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 256}
	return c
}

type variant struct {
	name string
	cfg  func() weights.Config
	edit func(map[string]*tensor.Tensor, weights.Config)
	ref  func(*weights.Config) // how the reference's config differs
}

var variants = []variant{
	{name: "llama-gqa", cfg: testConfig},
	{name: "qwen2", cfg: func() weights.Config {
		c := testConfig()
		c.Arch, c.QKVBias, c.TiedEmbeddings, c.RopeTheta = "qwen2", true, true, 1e6
		return c
	}},
	{name: "llama3-rope", cfg: llama3Config},
	{name: "gguf-rope-factors", cfg: func() weights.Config {
		// llama3 scaling as a GGUF file stores it: the divisors of the unscaled frequencies.
		c := llama3Config()
		scaled := (&refModel{cfg: c}).invFreq()
		c.RopeScale = weights.RopeScaling{}
		plain := (&refModel{cfg: c}).invFreq()
		for i := range plain {
			c.RopeFactors = append(c.RopeFactors, float32(plain[i]/scaled[i]))
		}
		return c
	}, ref: func(c *weights.Config) { *c = llama3Config() }},
	{name: "gguf-interleaved", cfg: func() weights.Config {
		c := testConfig()
		c.RopeStyle = backend.RopeInterleaved
		return c
	}, edit: func(ts map[string]*tensor.Tensor, c weights.Config) { permuteQK(ts, c) },
		ref: func(c *weights.Config) { c.RopeStyle = backend.RopeHalf }},
	{name: "qwen3", cfg: func() weights.Config {
		// Heads wider than hidden/heads, normalized before RoPE.
		c := testConfig()
		c.Arch, c.HeadDim, c.QKNorm, c.TiedEmbeddings, c.RopeTheta = "qwen3", 12, true, true, 1e6
		return c
	}},
	{name: "smollm3", cfg: func() weights.Config {
		c := testConfig()
		c.Arch, c.LayerSpecs = "smollm3", []weights.LayerSpec{{}, {NoRope: true}}
		return c
	}},
	{name: "gemma3", cfg: func() weights.Config {
		// A sliding layer (window 5, far shorter than the 300-token prompt and its 256-row
		// prefill chunks) with its own RoPE base, and a global one with linear scaling.
		c := testConfig()
		c.Arch, c.QKNorm, c.NormOffset, c.SandwichNorms, c.Act = "gemma3", true, 1, true, weights.GELUTanh
		c.EmbedScale, c.QueryScale, c.TiedEmbeddings, c.RopeTheta, c.LocalRopeTheta = float32(math.Sqrt(32)), 6, true, 1e6, 1e4
		c.RopeScale = weights.RopeScaling{Type: "linear", Factor: 2}
		c.LayerSpecs = []weights.LayerSpec{{LocalRope: true, Window: 5}, {}}
		return c
	}},
	{name: "partial-rope", cfg: func() weights.Config {
		c := testConfig()
		c.RopeDims = 4
		return c
	}},
}

func (v variant) model(t testing.TB, seed uint64, ctx int) (*Model, *refModel) {
	cfg := v.cfg()
	var edit func(map[string]*tensor.Tensor)
	if v.edit != nil {
		edit = func(ts map[string]*tensor.Tensor) { v.edit(ts, cfg) }
	}
	m, ref := newTestModel(t, cfg, seed, ctx, edit)
	if v.ref != nil {
		v.ref(&ref.cfg)
	}
	return m, ref
}

func testPrompt(n int, vocab int, seed uint64) []int32 {
	var r rng
	r.seed(seed)
	ids := []int32{0}
	for len(ids) < n {
		ids = append(ids, int32(2+r.next()%uint64(vocab-2)))
	}
	return ids
}

type step struct {
	id  int32
	lp  float32
	top []TokenLogprob
}

func collect(steps *[]step) func(Token) error {
	return func(t Token) error {
		*steps = append(*steps, step{t.ID, t.Logprob, slices.Clone(t.Top)})
		return nil
	}
}

// checkAgainstRef teacher-forces prompt+generated through the reference and requires each
// greedy choice to be the reference's most likely token and the top logprobs to match.
func checkAgainstRef(t *testing.T, ref *refModel, prompt []int32, steps []step, tol float64) {
	t.Helper()
	seq := append(slices.Clone(prompt), make([]int32, len(steps))...)
	for i, s := range steps {
		seq[len(prompt)+i] = s.id
	}
	all := ref.logits(seq[:len(seq)-1])
	for i, s := range steps {
		lp := logSoftmax64(all[len(prompt)-1+i])
		best := argmax64(lp)
		if lp[best]-lp[s.id] > 1e-5 {
			t.Fatalf("step %d: chose %d (ref logprob %.6f), reference prefers %d (%.6f)", i, s.id, lp[s.id], best, lp[best])
		}
		if math.Abs(float64(s.lp)-lp[s.id]) > tol {
			t.Fatalf("step %d: logprob %.6f, reference %.6f", i, s.lp, lp[s.id])
		}
		order := make([]int, len(lp))
		for j := range order {
			order[j] = j
		}
		slices.SortStableFunc(order, func(a, b int) int { return -cmpF(lp[a], lp[b]) })
		for j, e := range s.top {
			if math.Abs(float64(e.Logprob)-lp[e.ID]) > tol || math.Abs(lp[e.ID]-lp[order[j]]) > tol {
				t.Fatalf("step %d: top[%d] = %+v, reference has %d at %.6f (logprob of %d there %.6f)", i, j, e, order[j], lp[order[j]], e.ID, lp[e.ID])
			}
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestForwardMatchesReference(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			m, ref := v.model(t, 11, 0)
			// 300 prompt tokens take two prefill chunks; 6 take one.
			for _, n := range []int{6, 300} {
				prompt := testPrompt(n, m.cfg.Vocab, uint64(n))
				var steps []step
				res, err := m.NewSession().Generate(context.Background(), prompt, Sampling{MaxTokens: 8, Logprobs: 5, IgnoreEOS: true}, collect(&steps))
				if err != nil {
					t.Fatal(err)
				}
				if len(res.IDs) != 8 || res.Stop != "max_tokens" || res.PromptTokens != n {
					t.Fatalf("result %+v", res)
				}
				checkAgainstRef(t, ref, prompt, steps, 1e-4)
			}
		})
	}
}

func TestRopeInvFreq(t *testing.T) {
	for _, v := range variants {
		c := v.cfg()
		rc := c
		if v.ref != nil {
			v.ref(&rc)
		}
		want := (&refModel{cfg: rc}).invFreq()
		got := newRope(c, c.RopeTheta, c.RopeScale, c.RopeFactors).InvFreq
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-7*want[i] {
				t.Errorf("%s: inv freq %d = %g, want %g", v.name, i, got[i], want[i])
			}
		}
	}
}

func TestPrefixReuse(t *testing.T) {
	m, _ := variants[1].model(t, 5, 0)
	p := Sampling{MaxTokens: 6, Logprobs: 3, IgnoreEOS: true}
	prompt := testPrompt(20, m.cfg.Vocab, 9)
	s := m.NewSession()
	first, err := s.Generate(context.Background(), prompt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The user typed on: the prompt grows by three generated tokens and one new one.
	next := append(slices.Clone(prompt), first.IDs[:3]...)
	next = append(next, 7)
	for _, c := range []struct {
		prompt []int32
		reused int
	}{{next, len(prompt) + 3}, {next, len(next) - 1}, {prompt[:10], 9}, {[]int32{0, 5}, 1}} {
		var warm, cold []step
		res, err := s.Generate(context.Background(), c.prompt, p, collect(&warm))
		if err != nil {
			t.Fatal(err)
		}
		if res.ReusedTokens != c.reused {
			t.Errorf("reused %d tokens, want %d", res.ReusedTokens, c.reused)
		}
		if _, err := m.NewSession().Generate(context.Background(), c.prompt, p, collect(&cold)); err != nil {
			t.Fatal(err)
		}
		for i := range cold {
			if warm[i].id != cold[i].id || math.Abs(float64(warm[i].lp-cold[i].lp)) > 1e-5 {
				t.Fatalf("prompt of %d: step %d warm %+v, cold %+v", len(c.prompt), i, warm[i], cold[i])
			}
			for j := range cold[i].top {
				if warm[i].top[j].ID != cold[i].top[j].ID || math.Abs(float64(warm[i].top[j].Logprob-cold[i].top[j].Logprob)) > 1e-5 {
					t.Fatalf("prompt of %d: step %d top warm %v, cold %v", len(c.prompt), i, warm[i].top, cold[i].top)
				}
			}
		}
	}
}

func TestCancel(t *testing.T) {
	m, _ := variants[0].model(t, 3, 0)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := m.NewSession().Generate(ctx, testPrompt(5, m.cfg.Vocab, 1), Sampling{MaxTokens: 20, IgnoreEOS: true}, func(Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || res.Stop != "canceled" || len(res.IDs) != 3 {
		t.Errorf("canceled after 3 tokens: %d ids, stop %q, err %v", len(res.IDs), res.Stop, err)
	}
	res, err = m.NewSession().Generate(ctx, testPrompt(5, m.cfg.Vocab, 1), Sampling{MaxTokens: 20}, nil)
	if !errors.Is(err, context.Canceled) || len(res.IDs) != 0 {
		t.Errorf("canceled before start: %d ids, err %v", len(res.IDs), err)
	}
	stopErr := errors.New("enough")
	res, err = m.NewSession().Generate(context.Background(), testPrompt(5, m.cfg.Vocab, 1), Sampling{MaxTokens: 20, IgnoreEOS: true}, func(Token) error { return stopErr })
	if !errors.Is(err, stopErr) || len(res.IDs) != 1 {
		t.Errorf("emit error: %d ids, err %v", len(res.IDs), err)
	}
}

func TestStops(t *testing.T) {
	m, _ := variants[0].model(t, 8, 0)
	prompt := testPrompt(5, m.cfg.Vocab, 4)
	p := Sampling{MaxTokens: 16, IgnoreEOS: true}
	var pieces []string
	base, err := m.NewSession().Generate(context.Background(), prompt, p, func(t Token) error {
		pieces = append(pieces, t.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := m.tok.Decode(base.IDs, true); base.Text != want || strings.Join(pieces, "") != want {
		t.Fatalf("text %q, pieces %q, want %q", base.Text, pieces, want)
	}

	// A stop string spanning the boundary between two tokens that both have text.
	k := 1
	for pieces[k] == "" || pieces[k+1] == "" {
		k++
	}
	stop := pieces[k][len(pieces[k])-1:] + pieces[k+1][:1]
	full := base.Text
	at := strings.Index(full, stop)
	want := 1 // tokens up to the one completing the first occurrence
	for !strings.Contains(strings.Join(pieces[:want], ""), stop) {
		want++
	}
	var emitted []string
	p.StopStrings = []string{"never-there", stop}
	res, err := m.NewSession().Generate(context.Background(), prompt, p, func(t Token) error {
		emitted = append(emitted, t.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != "stop" || res.Text != full[:at] || len(res.IDs) != want || strings.Join(emitted, "") != full[:at] {
		t.Errorf("stop %q: got stop %q, text %q (emitted %q), %d ids; want text %q, %d ids", stop, res.Stop, res.Text, emitted, len(res.IDs), full[:at], want)
	}

	// Held-back text that turns out not to be a stop is emitted, and in full at the end.
	p.StopStrings = []string{pieces[15] + "zz"}
	res, err = m.NewSession().Generate(context.Background(), prompt, p, nil)
	if err != nil || res.Text != full || res.Stop != "max_tokens" {
		t.Errorf("stop string never completed: text %q stop %q err %v, want %q", res.Text, res.Stop, err, full)
	}

	// Stop tokens and EOS end generation on the first occurrence, which is still emitted.
	id := base.IDs[6]
	first := slices.Index(base.IDs, id)
	res, err = m.NewSession().Generate(context.Background(), prompt, Sampling{MaxTokens: 16, IgnoreEOS: true, StopTokens: []int32{id}}, nil)
	if err != nil || res.Stop != "stop" || !slices.Equal(res.IDs, base.IDs[:first+1]) || res.Text != m.tok.Decode(base.IDs[:first], true) {
		t.Errorf("stop token %d: ids %v text %q stop %q err %v, want %v", id, res.IDs, res.Text, res.Stop, err, base.IDs[:first+1])
	}
	m.eos = map[int32]bool{id: true}
	res, err = m.NewSession().Generate(context.Background(), prompt, Sampling{MaxTokens: 16}, nil)
	if err != nil || res.Stop != "eos" || !slices.Equal(res.IDs, base.IDs[:first+1]) {
		t.Errorf("eos %d: ids %v stop %q err %v, want %v", id, res.IDs, res.Stop, err, base.IDs[:first+1])
	}
	res, err = m.NewSession().Generate(context.Background(), prompt, Sampling{MaxTokens: 16, IgnoreEOS: true}, nil)
	if err != nil || !slices.Equal(res.IDs, base.IDs) {
		t.Errorf("ignore eos: ids %v, want %v", res.IDs, base.IDs)
	}
}

func TestContextFull(t *testing.T) {
	m, _ := variants[0].model(t, 2, 12)
	s := m.NewSession()
	res, err := s.Generate(context.Background(), testPrompt(10, m.cfg.Vocab, 3), Sampling{MaxTokens: 10, IgnoreEOS: true}, nil)
	// The cache holds 12 positions: 10 prompt tokens and 2 generated ones, whose successor
	// is the last token sampled.
	if err != nil || res.Stop != "context" || len(res.IDs) != 3 || s.Len() != 12 {
		t.Errorf("ids %v, stop %q, len %d, err %v", res.IDs, res.Stop, s.Len(), err)
	}
	if _, err := s.Generate(context.Background(), testPrompt(13, m.cfg.Vocab, 3), Sampling{MaxTokens: 1}, nil); err == nil {
		t.Error("a prompt longer than the context was accepted")
	}
	if want := int64(2 * 12 * 2 * 8 * 2 * 4); s.CacheBytes() != want {
		t.Errorf("cache bytes %d, want %d", s.CacheBytes(), want)
	}
	res, err = s.Generate(context.Background(), testPrompt(4, m.cfg.Vocab, 3), Sampling{}, nil)
	if err != nil || len(res.IDs) != 0 || s.Len() != 4 {
		t.Errorf("prefill only: ids %v len %d err %v", res.IDs, s.Len(), err)
	}
	s.Reset()
	if s.Len() != 0 {
		t.Errorf("len after reset %d", s.Len())
	}
	s.Close()
	if _, err := s.Generate(context.Background(), testPrompt(4, m.cfg.Vocab, 3), Sampling{}, nil); err == nil {
		t.Error("closed session generated")
	}
}

func TestBadRequests(t *testing.T) {
	m, _ := variants[0].model(t, 2, 0)
	s := m.NewSession()
	for _, prompt := range [][]int32{nil, {0, 64}, {-1}} {
		if _, err := s.Generate(context.Background(), prompt, Sampling{MaxTokens: 1}, nil); err == nil {
			t.Errorf("prompt %v accepted", prompt)
		}
	}
	if _, err := s.Generate(context.Background(), []int32{0}, Sampling{MaxTokens: 1, TopP: 2}, nil); err == nil {
		t.Error("top_p 2 accepted")
	}
	if _, err := m.Eval(context.Background(), []int32{0, 1, 2}, 0); err == nil {
		t.Error("eval window 0 accepted")
	}
	if _, err := m.Eval(context.Background(), []int32{0}, 4); err == nil {
		t.Error("eval of one token accepted")
	}
}

func TestSampledGeneration(t *testing.T) {
	m, _ := variants[0].model(t, 4, 0)
	prompt := testPrompt(5, m.cfg.Vocab, 2)
	gen := func(seed uint64) []int32 {
		res, err := m.NewSession().Generate(context.Background(), prompt, Sampling{MaxTokens: 24, Temperature: 1.5, Seed: seed, IgnoreEOS: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.IDs
	}
	a, b, c := gen(1), gen(1), gen(2)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("seed 1 gave %v and %v, seed 2 %v", a, b, c)
	}
}

func TestEval(t *testing.T) {
	m, ref := variants[1].model(t, 6, 0)
	// Half random tokens, half the model's own greedy continuation, so top-1 is neither 0 nor 1.
	ids := testPrompt(10, m.cfg.Vocab, 8)
	res, err := m.NewSession().Generate(context.Background(), ids, Sampling{MaxTokens: 10, IgnoreEOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, res.IDs...)
	const window = 7
	var nll float64
	n, hits := 0, 0
	for i := 0; i < len(ids)-1; i += window {
		end := min(i+window, len(ids)-1)
		all := ref.logits(ids[i:end])
		for k := range all {
			lp := logSoftmax64(all[k])
			nll -= lp[ids[i+k+1]]
			if argmax64(lp) == int(ids[i+k+1]) {
				hits++
			}
			n++
		}
	}
	r, err := m.Eval(context.Background(), ids, window)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tokens != 19 || n != 19 || math.Abs(r.NLL-nll/19) > 1e-5 || r.Top1 != float64(hits)/19 || math.Abs(r.PPL/math.Exp(nll/19)-1) > 1e-5 {
		t.Errorf("eval %+v, want tokens 19 nll %v top1 %v", r, nll/19, float64(hits)/19)
	}
	if hits == 0 || hits == 19 {
		t.Errorf("top-1 hits %d of 19 do not test the count", hits)
	}
}

func TestLoadErrors(t *testing.T) {
	cfg := testConfig()
	load := func(c weights.Config, edit func(map[string]*tensor.Tensor)) error {
		ts, _ := randModel(testConfig(), 1)
		if edit != nil {
			edit(ts)
		}
		m, err := newModel(&weights.Model{Path: "x", Config: c, Tensors: ts, TokenizerJSON: testTokenizerJSON(64)}, Options{Backend: "cpu", Threads: 1})
		if err == nil {
			m.Close()
		}
		return err
	}
	bad := cfg
	bad.Arch = "mamba"
	for name, c := range map[string]struct {
		cfg  weights.Config
		edit func(map[string]*tensor.Tensor)
		want string
	}{
		"arch":    {bad, nil, "mamba"},
		"missing": {cfg, func(ts map[string]*tensor.Tensor) { delete(ts, "model.layers.1.mlp.up_proj.weight") }, "model.layers.1.mlp.up_proj.weight"},
		"shape": {cfg, func(ts map[string]*tensor.Tensor) {
			t := ts["model.norm.weight"]
			t.Shape, t.Data = []int{16}, t.Data[:64]
		}, "model.norm.weight"},
		"short data": {cfg, func(ts map[string]*tensor.Tensor) {
			t := ts["model.layers.0.self_attn.k_proj.weight"]
			t.Data = t.Data[:len(t.Data)-4]
		}, "k_proj"},
		"heads": {func() weights.Config { c := cfg; c.KVHeads = 3; return c }(), nil, "heads"},
	} {
		err := load(c.cfg, c.edit)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, c.want)
		}
	}
	if _, err := newModel(&weights.Model{Path: "x", Config: cfg}, Options{Backend: "nope"}); err == nil {
		t.Error("model without tokenizer or backend loaded")
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none"), Options{}); err == nil {
		t.Error("missing path loaded")
	}
	// The caller chooses the default model (models.Default); the engine knows none.
	if _, err := Load("", Options{}); err == nil || !strings.Contains(err.Error(), "no model path") {
		t.Errorf("Load(\"\"): %v, want a missing-path error", err)
	}
}

func TestBackendRegistry(t *testing.T) {
	opened := 0
	RegisterBackend("test-counting", func(o Options) (backend.Backend, error) {
		opened++
		return nil, fmt.Errorf("no device")
	})
	ts, _ := randModel(testConfig(), 1)
	_, err := newModel(&weights.Model{Path: "x", Config: testConfig(), Tensors: ts, TokenizerJSON: testTokenizerJSON(64)}, Options{Backend: "test-counting"})
	if opened != 1 || err == nil || !strings.Contains(err.Error(), "no device") {
		t.Errorf("opened %d times, err %v", opened, err)
	}
	if _, err := openBackend(Options{Backend: "no-such"}, nil); err == nil || !strings.Contains(err.Error(), "no-such") {
		t.Errorf("unknown backend: %v", err)
	}
}

func TestDecodeAllocs(t *testing.T) {
	m, _ := variants[1].model(t, 2, 0)
	s := m.NewSession()
	if _, err := s.Generate(context.Background(), testPrompt(8, m.cfg.Vocab, 1), Sampling{}, nil); err != nil {
		t.Fatal(err)
	}
	p := Sampling{Temperature: 0.8, TopK: 20, TopP: 0.9, RepeatPenalty: 1.1}
	allocs := testing.AllocsPerRun(20, func() {
		id := s.smp.pick(s.logits, &p, s.tokens, nil)
		s.one[0] = id
		if err := s.step(s.one[:]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a decode step allocates %v times", allocs)
	}
}

// writeModelDir saves a model as a HuggingFace directory: config.json, model.safetensors and
// tokenizer.json.
func writeModelDir(t *testing.T, cfg weights.Config, ts map[string]*tensor.Tensor) string {
	t.Helper()
	dir := t.TempDir()
	arch := map[string]string{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}[cfg.Arch]
	c := map[string]any{
		"architectures": []string{arch}, "model_type": cfg.Arch, "hidden_size": cfg.Dim,
		"intermediate_size": cfg.FFN, "num_hidden_layers": cfg.Layers, "num_attention_heads": cfg.Heads,
		"num_key_value_heads": cfg.KVHeads, "head_dim": cfg.HeadDim, "vocab_size": cfg.Vocab,
		"rms_norm_eps": cfg.NormEps, "rope_theta": cfg.RopeTheta, "max_position_embeddings": cfg.MaxContext,
		"tie_word_embeddings": cfg.TiedEmbeddings, "bos_token_id": cfg.BOS, "eos_token_id": cfg.EOS[0],
		"hidden_act": "silu",
	}
	if s := cfg.RopeScale; s.Type != "" {
		c["rope_scaling"] = map[string]any{"rope_type": s.Type, "factor": s.Factor, "low_freq_factor": s.LowFreqFactor,
			"high_freq_factor": s.HighFreqFactor, "original_max_position_embeddings": s.OriginalMaxPositions}
	}
	cj, _ := json.Marshal(c)
	var list []safetensors.WriteTensor
	for _, name := range slices.Sorted(maps.Keys(ts)) {
		x := ts[name]
		list = append(list, safetensors.WriteTensor{Name: name, DType: safetensors.F32, Shape: x.Shape, Data: x.Data})
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(f, list, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"config.json": cj, "tokenizer.json": testTokenizerJSON(cfg.Vocab)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadDirectory(t *testing.T) {
	for _, v := range variants[:3] {
		t.Run(v.name, func(t *testing.T) {
			cfg := v.cfg()
			ts, ref := randModel(cfg, 21)
			m, err := Load(writeModelDir(t, cfg, ts), Options{Backend: "cpu", Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if in := m.Info(); in.Format == "" || in.Arch != cfg.Arch || in.Backend != "cpu" || in.Context != cfg.MaxContext || in.WeightBytes <= 0 {
				t.Errorf("info %+v", in)
			}
			prompt := testPrompt(9, cfg.Vocab, 2)
			var steps []step
			if _, err := m.NewSession().Generate(context.Background(), prompt, Sampling{MaxTokens: 6, Logprobs: 5, IgnoreEOS: true}, collect(&steps)); err != nil {
				t.Fatal(err)
			}
			checkAgainstRef(t, ref, prompt, steps, 1e-4)
		})
	}
}

func TestConcurrentSessions(t *testing.T) {
	m, _ := variants[1].model(t, 13, 0)
	p := Sampling{MaxTokens: 12, Logprobs: 2, IgnoreEOS: true}
	prompts := [][]int32{testPrompt(7, m.cfg.Vocab, 1), testPrompt(30, m.cfg.Vocab, 2), testPrompt(3, m.cfg.Vocab, 3)}
	want := make([][]int32, len(prompts))
	for i, pr := range prompts {
		res, err := m.NewSession().Generate(context.Background(), pr, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res.IDs
	}
	got := make([][]int32, len(prompts))
	errs := make(chan error, len(prompts))
	for i, pr := range prompts {
		go func() {
			res, err := m.NewSession().Generate(context.Background(), pr, p, nil)
			got[i] = res.IDs
			errs <- err
		}()
	}
	for range prompts {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("prompt %d: concurrent %v, alone %v", i, got[i], want[i])
		}
	}
}

// benchModel is a random model about the size of a small completion model's layers (vocab kept
// modest so building it stays quick).
func benchModel(b *testing.B) *Model {
	cfg := weights.Config{Arch: "llama", Vocab: 8192, Dim: 512, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 64,
		FFN: 1536, NormEps: 1e-5, RopeTheta: 10000, MaxContext: 1024, BOS: 0, EOS: []int{1}}
	m, _ := newTestModel(b, cfg, 1, 0, nil)
	return m
}

// BenchmarkDecode measures one generated token: a single-row forward pass plus sampling.
func BenchmarkDecode(b *testing.B) {
	m := benchModel(b)
	s := m.NewSession()
	p := Sampling{Temperature: 0.7, TopK: 40, TopP: 0.95}
	if _, err := s.Generate(context.Background(), testPrompt(16, m.cfg.Vocab, 1), Sampling{}, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if len(s.tokens) == m.ctxLen {
			s.cache.Truncate(16)
			s.tokens = s.tokens[:16]
		}
		s.one[0] = s.smp.pick(s.logits, &p, s.tokens, nil)
		if err := s.step(s.one[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrefill measures a 128-token prompt from an empty cache.
func BenchmarkPrefill(b *testing.B) {
	m := benchModel(b)
	s := m.NewSession()
	prompt := testPrompt(128, m.cfg.Vocab, 2)
	b.ReportAllocs()
	for b.Loop() {
		s.Reset()
		if _, err := s.Generate(context.Background(), prompt, Sampling{}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(prompt))*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// TestStreamedText checks that the streamed text is what decoding the whole sequence adds to the
// prompt, with a real SentencePiece-style tokenizer (a leading "▁" is a space, and byte-fallback
// tokens form multi-byte characters).
func TestStreamedText(t *testing.T) {
	tj, err := os.ReadFile(filepath.Join("..", "testdata", "tokenizer", "llama2-tokenizer.json"))
	if err != nil {
		t.Skipf("no llama2 tokenizer: %v", err)
	}
	cfg := testConfig()
	cfg.Vocab = 32000
	ts, _ := randModel(cfg, 3)
	m, err := newModel(&weights.Model{Path: "x", Config: cfg, Tensors: ts, TokenizerJSON: tj}, Options{Backend: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, text := range []string{"héllo wörld", "x = 1 # é", "日本", "llama 🦙"} {
		prompt := m.tok.Encode(text, true)
		// The last prompt tokens spell the bytes of one character, and token healing's
		// FirstTokens makes the first generated token start with a space.
		first, ok := m.tok.TokenID("▁the")
		if !ok {
			t.Fatal("no ▁the token")
		}
		var pieces []string
		res, err := m.NewSession().Generate(context.Background(), prompt, Sampling{MaxTokens: 12, Temperature: 1, Seed: 5, IgnoreEOS: true, FirstTokens: []int32{first}},
			func(t Token) error { pieces = append(pieces, t.Text); return nil })
		if err != nil {
			t.Fatal(err)
		}
		full := m.tok.Decode(append(slices.Clone(prompt), res.IDs...), true)
		before := m.tok.Decode(prompt, true)
		want := strings.TrimPrefix(full, before)
		got := strings.Join(pieces, "")
		// Only an incomplete character at the very end may be held back.
		if !strings.HasPrefix(full, before) || !strings.HasPrefix(want, got) || strings.Trim(want[len(got):], "\uFFFD") != "" {
			t.Errorf("%q: streamed %q, whole-sequence decoding adds %q", text, got, want)
		}
		if !strings.HasPrefix(got, " the") {
			t.Errorf("%q: first token ▁the streamed as %q", text, got)
		}
	}
}

// unpreparable is a backend that cannot take any weights.
type unpreparable struct{ backend.Backend }

func (unpreparable) Prepare([]*tensor.Tensor) error { return errors.New("dtype not supported") }

func TestBestBackendFallsBack(t *testing.T) {
	RegisterBackend("metal", func(o Options) (backend.Backend, error) {
		b, err := backends["cpu"](o)
		return unpreparable{b}, err
	})
	t.Cleanup(func() {
		backendsMu.Lock()
		delete(backends, "metal")
		backendsMu.Unlock()
	})
	ts, _ := randModel(testConfig(), 1)
	w := func() *weights.Model {
		return &weights.Model{Path: "x", Config: testConfig(), Tensors: ts, TokenizerJSON: testTokenizerJSON(64)}
	}
	m, err := newModel(w(), Options{})
	if err != nil || m.Info().Backend != "cpu" {
		t.Fatalf("best available: %v, %v", m, err)
	}
	m.Close()
	if _, err := newModel(w(), Options{Backend: "metal"}); err == nil || !strings.Contains(err.Error(), "dtype not supported") {
		t.Errorf("explicit metal: %v", err)
	}
}

// TestRandomSampling runs generation under many random sampling settings: every result must be a
// valid, complete generation, never a panic.
func TestRandomSampling(t *testing.T) {
	m, _ := variants[1].model(t, 9, 40)
	var r rng
	r.seed(99)
	f := func() float32 { return float32(r.float64()) }
	s := m.NewSession()
	for i := range 60 {
		p := Sampling{
			MaxTokens: int(r.next() % 12), Temperature: 2 * f() * float32(r.next()%2), TopK: int(r.next() % 70),
			TopP: f() * float32(r.next()%2), MinP: f() * float32(r.next()%2), RepeatPenalty: 2 * f(),
			RepeatWindow: int(r.next() % 80), Seed: r.next(), Logprobs: int(r.next() % 6),
			StopStrings: []string{string(rune('a' + r.next()%26))}, StopTokens: []int32{int32(r.next() % 64)},
			IgnoreEOS: r.next()%2 == 0,
		}
		if r.next()%3 == 0 {
			p.FirstTokens = []int32{int32(r.next() % 64), int32(r.next() % 64)}
		}
		prompt := testPrompt(1+int(r.next()%38), m.cfg.Vocab, r.next())
		n := 0
		res, err := s.Generate(context.Background(), prompt, p, func(tk Token) error {
			if len(tk.Top) != p.Logprobs || tk.Logprob > 0 || (n == 0 && len(p.FirstTokens) > 0 && !slices.Contains(p.FirstTokens, tk.ID)) {
				return fmt.Errorf("token %d: %+v", n, tk)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatalf("case %d %+v: %v", i, p, err)
		}
		if len(res.IDs) != n || len(res.IDs) > p.MaxTokens || res.Stop == "" || strings.Contains(res.Text, p.StopStrings[0]) {
			t.Fatalf("case %d %+v: %d ids, %d emitted, stop %q, text %q", i, p, len(res.IDs), n, res.Stop, res.Text)
		}
	}
}

// kvCounting is the cpu backend, counting the caches it is asked for.
type kvCounting struct {
	backend.Backend
	caches *int
}

func (b kvCounting) NewKVCache(s backend.AttnShape) backend.KVCache {
	*b.caches++
	return b.Backend.NewKVCache(s)
}

// A session made after Close must not ask the closed backend for a cache.
func TestSessionAfterClose(t *testing.T) {
	caches := 0
	RegisterBackend("test-kv-counting", func(o Options) (backend.Backend, error) {
		be, err := cpu.New(1)
		return kvCounting{be, &caches}, err
	})
	ts, _ := randModel(testConfig(), 1)
	m, err := newModel(&weights.Model{Path: "x", Config: testConfig(), Tensors: ts, TokenizerJSON: testTokenizerJSON(64)}, Options{Backend: "test-kv-counting"})
	if err != nil {
		t.Fatal(err)
	}
	m.NewSession()
	m.Close()
	s := m.NewSession()
	if caches != 1 {
		t.Errorf("%d caches made, want only the one before Close", caches)
	}
	if _, err := s.Generate(context.Background(), testPrompt(4, m.cfg.Vocab, 3), Sampling{MaxTokens: 1}, nil); !errors.Is(err, errClosed) {
		t.Errorf("Generate on a session of a closed model: %v, want errClosed", err)
	}
}

// WeightData is what a decode step streams: every weight once, as views of the loaded tensors,
// with the embedding table only where it is also the output head.
func TestWeightData(t *testing.T) {
	for _, tied := range []bool{false, true} {
		cfg := testConfig()
		cfg.TiedEmbeddings = tied
		// One MLX 4-bit matrix, whose scales and biases are read with it.
		affine := func(ts map[string]*tensor.Tensor) {
			name, rows, cols := "model.layers.1.mlp.up_proj.weight", cfg.FFN, cfg.Dim
			comp := func(n string) *tensor.Tensor {
				return &tensor.Tensor{Name: n, DType: tensor.F16, Shape: []int{rows, cols / 32}, Data: make([]byte, rows*cols/32*2)}
			}
			ts[name] = &tensor.Tensor{Name: name, DType: tensor.Affine, Shape: []int{rows, cols}, Data: make([]byte, rows*cols/2),
				Bits: 4, GroupSize: 32, Scales: comp("scales"), Biases: comp("biases")}
		}
		m, _ := newTestModel(t, cfg, 3, 64, affine)
		want := map[*byte]int{}
		for name, ts := range m.w.Tensors {
			if name == "model.embed_tokens.weight" && !tied {
				continue
			}
			want[&ts.Data[0]] = len(ts.Data)
			if ts.DType == tensor.Affine {
				want[&ts.Scales.Data[0]], want[&ts.Biases.Data[0]] = len(ts.Scales.Data), len(ts.Biases.Data)
			}
		}
		got := m.WeightData()
		if len(got) != len(want) {
			t.Errorf("tied %v: %d slices, want %d", tied, len(got), len(want))
		}
		for _, d := range got {
			if n, ok := want[&d[0]]; !ok || n != len(d) {
				t.Errorf("tied %v: a %d-byte slice is not one of the model's tensors", tied, len(d))
			}
			delete(want, &d[0])
		}
	}
}
