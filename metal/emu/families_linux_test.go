package emu_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/layaapp/laya/engine"
)

// TestLongPromptFamilies runs prompts longer than one prefill chunk (256 rows) and than Gemma
// 3's 16-position window through the emulated Metal backend and the CPU backend: sliding-window
// prefill blocks that start past the window, per-head norms, layers without RoPE, GGUF's
// interleaved pairs; on the float32 KV cache, so the comparison holds the kernels to fastMathTol
// (the half cache is covered by the fixtures at halfKVTol). (The parity fixtures run Qwen3 too, on shorter prompts; its 256-wide
// fixture would double this test's time.)
func TestLongPromptFamilies(t *testing.T) {
	for _, path := range []string{"gemma3/hf", "smollm3/q8_0.gguf"} {
		t.Run(path, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "models", path)
			rng := rand.New(rand.NewPCG(uint64(len(path)), 3))
			prompt := make([]int32, 300)
			for i := range prompt {
				prompt[i] = int32(3 + rng.IntN(400))
			}
			want := generate300(t, dir, "cpu", prompt)
			got := generate300(t, dir, "metal-emu-f32", prompt)
			compareRuns(t, []run{got}, []run{want}, fastMathTol)
		})
	}
}

func generate300(t *testing.T, path, be string, prompt []int32) run {
	t.Helper()
	m, err := engine.Load(path, engine.Options{Backend: be, Threads: 1, Context: 320})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var r run
	_, err = m.NewSession().Generate(context.Background(), prompt, engine.Sampling{MaxTokens: 4, Logprobs: 5, IgnoreEOS: true}, func(tok engine.Token) error {
		r.ids = append(r.ids, tok.ID)
		r.top = append(r.top, tok.Top)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", be, err)
	}
	return r
}
