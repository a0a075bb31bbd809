package complete

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/safetensors"
)

// synthModel writes a small random Llama with the Llama-2 tokenizer as a HuggingFace
// directory and loads it: enough for the engine's mechanics (cache reuse, cancellation, cache
// sizes) when no trained fixture model is in the tree.
func synthModel(tb testing.TB) *engine.Model {
	tb.Helper()
	tj, err := os.ReadFile("../testdata/tokenizer/llama2-tokenizer.json")
	if err != nil {
		tb.Skip(err)
	}
	const vocab, dim, ffn, layers, heads, kvHeads = 32000, 64, 128, 2, 4, 2
	headDim := dim / heads
	rng := rand.New(rand.NewPCG(1, 2))
	var list []safetensors.WriteTensor
	add := func(name string, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]byte, 4*n)
		for i := range n {
			v := float32(rng.NormFloat64() * 0.05)
			if len(shape) == 1 {
				v = 1 // norm weights
			}
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		list = append(list, safetensors.WriteTensor{Name: name, DType: safetensors.F32, Shape: shape, Data: data})
	}
	add("model.embed_tokens.weight", vocab, dim)
	add("model.norm.weight", dim)
	for l := range layers {
		p := "model.layers." + string(rune('0'+l)) + "."
		add(p+"input_layernorm.weight", dim)
		add(p+"post_attention_layernorm.weight", dim)
		add(p+"self_attn.q_proj.weight", heads*headDim, dim)
		add(p+"self_attn.k_proj.weight", kvHeads*headDim, dim)
		add(p+"self_attn.v_proj.weight", kvHeads*headDim, dim)
		add(p+"self_attn.o_proj.weight", dim, heads*headDim)
		add(p+"mlp.gate_proj.weight", ffn, dim)
		add(p+"mlp.up_proj.weight", ffn, dim)
		add(p+"mlp.down_proj.weight", dim, ffn)
	}
	dir := tb.TempDir()
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := safetensors.Write(f, list, map[string]string{"format": "pt"}); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": dim,
		"intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
		"num_key_value_heads": kvHeads, "vocab_size": vocab, "rms_norm_eps": 1e-5, "rope_theta": 10000,
		"max_position_embeddings": 512, "tie_word_embeddings": true, "bos_token_id": 1, "eos_token_id": 2,
		"hidden_act": "silu",
	})
	for name, data := range map[string][]byte{"config.json": cfg, "tokenizer.json": tj} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	m, err := engine.Load(dir, engine.Options{Threads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}
