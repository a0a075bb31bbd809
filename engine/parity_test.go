package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/weights"
	"github.com/layaapp/laya/internal/fixtures"
)

// Parity with PyTorch/transformers: the fixtures under testdata/models (tiny trained models in
// every format) and the bundled model carry reference.json files computed in float64 on the
// weights each format dequantizes to.

// checkRefCase loads the case's model and requires the reference's greedy ids exactly and each
// reported logprob within 1e-3. The engine reports more candidates than the reference so that
// near-equal entries at the bottom of the reference's top 5 may come in either order.
func checkRefCase(t *testing.T, dir string, c fixtures.Case, dequantize bool) {
	t.Helper()
	w, err := weights.Open(filepath.Join(dir, c.Path))
	if err != nil {
		t.Fatal(err)
	}
	if dequantize {
		toF32(t, w)
	}
	m, err := newModel(w, Options{Backend: "cpu"})
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	defer m.Close()
	if c.Prompt != nil {
		if got := m.Tokenizer().Encode(*c.Prompt, true); !slices.Equal(got, c.PromptIDs) {
			t.Errorf("prompt %q encodes to %v, reference %v", *c.Prompt, got, c.PromptIDs)
		}
	}
	var steps []step
	res, err := m.NewSession().Generate(context.Background(), c.PromptIDs,
		Sampling{MaxTokens: len(c.Greedy), Logprobs: 10, IgnoreEOS: true}, collect(&steps))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.IDs, c.Greedy) {
		t.Errorf("greedy %v, reference %v", res.IDs, c.Greedy)
	}
	for i := range min(len(steps), len(c.Top)) {
		for _, e := range c.Top[i] {
			id, want := int32(e[0]), e[1]
			j := slices.IndexFunc(steps[i].top, func(x TokenLogprob) bool { return x.ID == id })
			if j < 0 {
				t.Errorf("step %d: reference token %d (logprob %.5f) not in the engine's top 10 %v", i, id, want, steps[i].top)
				continue
			}
			if got := float64(steps[i].top[j].Logprob); math.Abs(got-want) > 1e-3 {
				t.Errorf("step %d: token %d logprob %.5f, reference %.5f", i, id, got, want)
			}
		}
	}
}

// TestParityFixtures runs every case of every parity fixture (fixtures.Models).
func TestParityFixtures(t *testing.T) {
	for _, ref := range fixtures.All(t) {
		for i, c := range ref.Cases {
			t.Run(fmt.Sprintf("%s/%s/%d", filepath.Base(ref.Dir), c.Format, i), func(t *testing.T) {
				checkRefCase(t, ref.Dir, c, false)
			})
		}
	}
}

// TestParityFixturesDequantized runs every fixture with its weights dequantized to F32 first
// (by tensor.DequantizeRow), so the model code is checked against the references independently
// of how the backend's quantized kernels round.
func TestParityFixturesDequantized(t *testing.T) {
	for _, ref := range fixtures.All(t) {
		for i, c := range ref.Cases {
			t.Run(fmt.Sprintf("%s/%s/%d", filepath.Base(ref.Dir), c.Format, i), func(t *testing.T) {
				checkRefCase(t, ref.Dir, c, true)
			})
		}
	}
}

// toF32 replaces every non-F32 tensor of w by an F32 copy of its dequantized values.
func toF32(t *testing.T, w *weights.Model) {
	t.Helper()
	for name, x := range w.Tensors {
		if x.DType == tensor.F32 {
			continue
		}
		data := make([]byte, 4*x.Elems())
		row := make([]float32, x.Cols())
		for r := range x.Rows() {
			if err := tensor.DequantizeRow(x, r, row); err != nil {
				t.Fatal(err)
			}
			for i, v := range row {
				binary.LittleEndian.PutUint32(data[4*(r*x.Cols()+i):], math.Float32bits(v))
			}
		}
		w.Tensors[name] = &tensor.Tensor{Name: name, DType: tensor.F32, Shape: x.Shape, Data: data}
	}
}

func TestBundledModelReference(t *testing.T) {
	dir := fixtures.Bundled(t)
	for i, c := range fixtures.Read(t, dir).Cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) { checkRefCase(t, dir, c, false) })
	}
}

// TestBundledModelEval scores the whole heldout.txt (about 13k tokens, tens of seconds on two
// cores), so -short skips it.
func TestBundledModelEval(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the full held-out evaluation takes tens of seconds")
	}
	bundledDir := fixtures.Bundled(t)
	b, err := os.ReadFile(filepath.Join(bundledDir, "eval.json"))
	if err != nil {
		t.Fatalf("bundled model has no eval.json: %v", err)
	}
	var want struct {
		Window, Tokens int
		NLL, PPL, Top1 float64
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(bundledDir, "heldout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(bundledDir, Options{Backend: "cpu", Context: want.Window})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids := m.Tokenizer().Encode(string(text), true)
	got, err := m.Eval(context.Background(), ids, want.Window)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engine %+v, training script %+v", got, want)
	if got.Tokens != want.Tokens {
		t.Errorf("%d tokens, training script %d", got.Tokens, want.Tokens)
	}
	for _, v := range []struct {
		name      string
		got, want float64
	}{{"nll", got.NLL, want.NLL}, {"ppl", got.PPL, want.PPL}, {"top1", got.Top1, want.Top1}} {
		if math.Abs(v.got-v.want) > 0.01*math.Abs(v.want) {
			t.Errorf("%s %.5f, training script %.5f (more than 1%% apart)", v.name, v.got, v.want)
		}
	}
}

// BenchmarkBundledGenerate measures the bundled model completing a code prompt from a cold
// cache: prefill plus 32 greedy tokens, as `make demo` does.
func BenchmarkBundledGenerate(b *testing.B) {
	m, err := Load(fixtures.Bundled(b), Options{Backend: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	prompt := m.Tokenizer().Encode("def fibonacci(n):\n", true)
	s := m.NewSession()
	var prefill, decode float64
	b.ReportAllocs()
	for b.Loop() {
		s.Reset()
		res, err := s.Generate(context.Background(), prompt, Sampling{MaxTokens: 32, IgnoreEOS: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		prefill += res.Prefill.Seconds()
		decode += res.Decode.Seconds()
	}
	b.ReportMetric(float64(len(prompt)*b.N)/prefill, "prefill-tok/s")
	b.ReportMetric(float64(32*b.N)/decode, "decode-tok/s")
}
