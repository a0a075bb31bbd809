package models

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/gguf"
)

// TestDiscoverAbsurdLayerCounts scans an LM Studio folder holding a GGUF file that claims
// 2147483647 blocks and a model directory whose config.json claims two billion layers: `laya
// models` must list both as not runnable, saying why, without the gigabytes that listing such
// a model's tensors took.
func TestDiscoverAbsurdLayerCounts(t *testing.T) {
	root := t.TempDir()
	ggufDir := filepath.Join(root, "pub", "huge-gguf")
	hfDir := filepath.Join(root, "pub", "huge-hf")
	for _, d := range []string{ggufDir, hfDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tokens := []string{"<unk>", "<s>", "</s>", "a"}
	meta := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "llama.context_length", Value: uint32(2048)},
		{Key: "llama.embedding_length", Value: uint32(64)},
		{Key: "llama.block_count", Value: uint32(math.MaxInt32)},
		{Key: "llama.feed_forward_length", Value: uint32(128)},
		{Key: "llama.attention.head_count", Value: uint32(4)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.scores", Value: make([]float32, len(tokens))},
	}
	f, err := os.Create(filepath.Join(ggufDir, "huge.Q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(f, meta, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfg := `{"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2000000000,"num_attention_heads":4,"vocab_size":4}`
	for name, text := range map[string]string{"config.json": cfg, "tokenizer.json": `{}`, "model.safetensors": "\x02\x00\x00\x00\x00\x00\x00\x00{}"} {
		if err := os.WriteFile(filepath.Join(hfDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	found := Discover(Locations{LMStudio: []string{root}}, OpenProbe)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("discovery allocated %d bytes", n)
	}
	if len(found) != 2 {
		t.Fatalf("found %+v, want the two models", found)
	}
	for _, m := range found {
		if m.Runnable || !strings.Contains(m.Reason, "2147483647") && !strings.Contains(m.Reason, "2000000000 layers") {
			t.Errorf("%s: runnable %v, reason %q; want not runnable, naming the layer count", m.Name, m.Runnable, m.Reason)
		}
	}
}
