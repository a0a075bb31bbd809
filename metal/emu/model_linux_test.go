package emu_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/safetensors"
	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/emu"
)

func init() {
	engine.RegisterBackend("metal-emu", func(engine.Options) (backend.Backend, error) {
		return metal.New(emu.New())
	})
	engine.RegisterBackend("metal-emu-f32", func(engine.Options) (backend.Backend, error) {
		return metal.New(emu.New(), metal.Float32KV())
	})
}

// tinyModel writes a random HuggingFace model directory: sizes chosen so that no matrix is a
// multiple of the kernels' tiles (FFN 72, vocab 100, 3 query heads over 1 KV head).
func tinyModel(t *testing.T, arch string, dt safetensors.DType, seed uint64) string {
	t.Helper()
	const dim, ffn, layers, heads, kvHeads, headDim, vocab = 64, 72, 2, 3, 1, 16, 100
	rng := rand.New(rand.NewPCG(seed, 1))
	var ts []safetensors.WriteTensor
	add := func(name string, center, scale float64, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		var data []byte
		for i := 0; i < n; i++ {
			f := float32(center + scale*(2*rng.Float64()-1))
			switch dt {
			case safetensors.F32:
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
			case safetensors.BF16:
				data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(f)>>16))
			}
		}
		ts = append(ts, safetensors.WriteTensor{Name: name, DType: dt, Shape: shape, Data: data})
	}
	add("model.embed_tokens.weight", 0, 1, vocab, dim)
	for i := 0; i < layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", 1, 0.2, dim)
		add(p+"self_attn.q_proj.weight", 0, 0.5, heads*headDim, dim)
		add(p+"self_attn.k_proj.weight", 0, 0.5, kvHeads*headDim, dim)
		add(p+"self_attn.v_proj.weight", 0, 0.5, kvHeads*headDim, dim)
		if arch == "qwen2" {
			add(p+"self_attn.q_proj.bias", 0, 0.5, heads*headDim)
			add(p+"self_attn.k_proj.bias", 0, 0.5, kvHeads*headDim)
			add(p+"self_attn.v_proj.bias", 0, 0.5, kvHeads*headDim)
		}
		add(p+"self_attn.o_proj.weight", 0, 0.3, dim, heads*headDim)
		add(p+"post_attention_layernorm.weight", 1, 0.2, dim)
		add(p+"mlp.gate_proj.weight", 0, 0.4, ffn, dim)
		add(p+"mlp.up_proj.weight", 0, 0.4, ffn, dim)
		add(p+"mlp.down_proj.weight", 0, 0.3, dim, ffn)
	}
	add("model.norm.weight", 1, 0.2, dim)
	tied := arch == "qwen2"
	if !tied {
		add("lm_head.weight", 0, 0.5, vocab, dim)
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(f, ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"architectures": []string{map[string]string{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}[arch]},
		"model_type":    arch, "hidden_size": dim, "intermediate_size": ffn, "num_hidden_layers": layers,
		"num_attention_heads": heads, "num_key_value_heads": kvHeads, "head_dim": headDim,
		"vocab_size": vocab, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 256,
		"tie_word_embeddings": tied, "bos_token_id": 0, "eos_token_id": 1, "hidden_act": "silu",
	}
	writeJSON(t, filepath.Join(dir, "config.json"), cfg)
	// A tokenizer of distinct short strings; the test feeds ids directly.
	v := map[string]int{"<s>": 0, "</s>": 1}
	for i := 2; i < vocab; i++ {
		v[string(rune('a'+(i-2)%26))+strings.Repeat("-", (i-2)/26)] = i
	}
	writeJSON(t, filepath.Join(dir, "tokenizer.json"), map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": v, "merges": []string{}},
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<s>", "special": true},
			{"id": 1, "content": "</s>", "special": true},
		},
		"decoder": map[string]any{"type": "Fuse"},
	})
	return dir
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type run struct {
	ids []int32
	top [][]engine.TokenLogprob
}

// generate loads path on a backend and greedily continues two prompts in one session, the second
// extending the first so that it reuses the cached prefix and decodes at an offset.
func generate(t *testing.T, path, be string, prompts [][]int32, n int) []run {
	t.Helper()
	m, err := engine.Load(path, engine.Options{Backend: be, Threads: 1, Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.Info().Backend; got != map[string]string{"cpu": "cpu", "metal-emu": "metal", "metal-emu-f32": "metal"}[be] {
		t.Fatalf("backend %q ran as %q", be, got)
	}
	s := m.NewSession()
	defer s.Close()
	var runs []run
	for _, p := range prompts {
		var r run
		_, err := s.Generate(context.Background(), p, engine.Sampling{MaxTokens: n, Logprobs: 5, IgnoreEOS: true}, func(tok engine.Token) error {
			r.ids = append(r.ids, tok.ID)
			r.top = append(r.top, tok.Top)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", be, err)
		}
		runs = append(runs, r)
	}
	return runs
}

// How far logprobs may move on the emulated backend: its fast:: functions carry the errors
// Metal's specification allows (msl.h). RoPE takes its angles from precise::sin and cos, so what
// remains (exp in softmax and SiLU, rsqrt in RMSNorm) moves the tiny random models' logprobs by
// about 3e-5; the parity fixtures' 4-bit formats sit closer to their references' ties. The
// half KV cache (the default) rounds every key and value to 11 significant bits, which moves
// the parity fixtures' logprobs by up to about 3.2e-3 (llama mlx4; 2.5e-3 for llama3 and qwen2
// hf) and the tiny random models' (weights up to ±0.5, large activations) by up to about 1.4e-2.
const (
	fastMathTol        = 1e-3
	fastMathTol4Bit    = 3e-3
	halfKVTol          = 5e-3
	tinyModelTol       = 1e-3
	tinyModelHalfKVTol = 3e-2
)

// compareRuns requires identical greedy ids and top-5 logprobs within tol; ids of the other top
// entries only where the reference's neighbours are apart by more than twice tol, since near-ties
// may order either way.
func compareRuns(t *testing.T, got, want []run, tol float64) {
	t.Helper()
	for i := range want {
		if len(want[i].ids) == 0 || len(want[i].top[0]) != 5 {
			t.Fatalf("prompt %d: reference produced %d tokens (top %v): nothing to compare", i, len(want[i].ids), want[i].top)
		}
		if len(got[i].ids) != len(want[i].ids) {
			t.Fatalf("prompt %d: %d tokens, want %d", i, len(got[i].ids), len(want[i].ids))
		}
		for j, id := range want[i].ids {
			if got[i].ids[j] != id {
				t.Fatalf("prompt %d step %d: token %d, want %d (top %v vs %v)", i, j, got[i].ids[j], id, got[i].top[j], want[i].top[j])
			}
			top := want[i].top[j]
			for k, e := range top {
				g := got[i].top[j][k]
				apart := (k == 0 || float64(top[k-1].Logprob-e.Logprob) > 2*tol) && (k+1 >= len(top) || float64(e.Logprob-top[k+1].Logprob) > 2*tol)
				if (apart && g.ID != e.ID) || math.Abs(float64(g.Logprob-e.Logprob)) > tol {
					t.Fatalf("prompt %d step %d: top[%d] = %+v, want %+v", i, j, k, g, e)
				}
			}
		}
	}
}

// TestModelMatchesCPU runs whole prefill and decode steps of tiny models through the emulated
// Metal backend, with float32 and with half KV caches, and the CPU backend.
func TestModelMatchesCPU(t *testing.T) {
	prompts := [][]int32{{0, 17, 42, 5, 99, 63, 2, 30, 71}, {0, 17, 42, 5, 99, 63, 2, 30, 71, 8, 8, 50}}
	for _, c := range []struct {
		arch string
		dt   safetensors.DType
	}{{"llama", safetensors.F32}, {"qwen2", safetensors.BF16}} {
		t.Run(c.arch+"-"+string(c.dt), func(t *testing.T) {
			dir := tinyModel(t, c.arch, c.dt, uint64(len(c.arch)))
			want := generate(t, dir, "cpu", prompts, 5)
			compareRuns(t, generate(t, dir, "metal-emu-f32", prompts, 5), want, tinyModelTol)
			compareRuns(t, generate(t, dir, "metal-emu", prompts, 5), want, tinyModelHalfKVTol)
		})
	}
}
