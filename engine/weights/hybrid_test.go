package weights

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/safetensors"
)

// lfm2Shapes lists an LFM2 model's tensors under LFM2's own names (transformers' layout), with
// layer 1 attention and layers 0 and 2 short convolutions of kernel 3.
func lfm2Shapes(convShape func(ch, k int) []int) map[string][]int {
	const dim, ffn, vocab, heads, kv, k = 32, 64, 40, 4, 2, 3
	hd := dim / heads
	m := map[string][]int{
		"model.embed_tokens.weight":   {vocab, dim},
		"model.embedding_norm.weight": {dim},
	}
	for i := range 3 {
		p := fmt.Sprintf("model.layers.%d.", i)
		m[p+"operator_norm.weight"] = []int{dim}
		m[p+"ffn_norm.weight"] = []int{dim}
		m[p+"feed_forward.w1.weight"] = []int{ffn, dim}
		m[p+"feed_forward.w3.weight"] = []int{ffn, dim}
		m[p+"feed_forward.w2.weight"] = []int{dim, ffn}
		if i == 1 {
			m[p+"self_attn.q_proj.weight"] = []int{heads * hd, dim}
			m[p+"self_attn.k_proj.weight"] = []int{kv * hd, dim}
			m[p+"self_attn.v_proj.weight"] = []int{kv * hd, dim}
			m[p+"self_attn.out_proj.weight"] = []int{dim, heads * hd}
			m[p+"self_attn.q_layernorm.weight"] = []int{hd}
			m[p+"self_attn.k_layernorm.weight"] = []int{hd}
			continue
		}
		m[p+"conv.in_proj.weight"] = []int{3 * dim, dim}
		m[p+"conv.conv.weight"] = convShape(dim, k)
		m[p+"conv.out_proj.weight"] = []int{dim, dim}
	}
	return m
}

// lfm2 config.json: block_ff_dim 96 with auto adjustment gives int(2*96/3) = 64, rounded up to a
// multiple of 32.
const lfm2JSON = `{"architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "vocab_size": 40,
	"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
	"block_ff_dim": 96, "block_auto_adjust_ff_dim": true, "block_multiple_of": 32,
	"block_ffn_dim_multiplier": 1.0, "conv_L_cache": 3, "conv_bias": false, "norm_eps": 1e-5,
	"rope_theta": 1000000.0, "max_position_embeddings": 128000, "tie_embedding": true,
	"layer_types": ["conv", "full_attention", "conv"], "bos_token_id": 1, "eos_token_id": 7}`

func TestOpenLFM2(t *testing.T) {
	for _, layout := range []struct {
		name string
		conv func(ch, k int) []int
	}{
		{"transformers", func(ch, k int) []int { return []int{ch, 1, k} }},
		{"mlx", func(ch, k int) []int { return []int{ch, k, 1} }},
	} {
		t.Run(layout.name, func(t *testing.T) {
			dir, written := hfDir(t, lfm2JSON, lfm2Shapes(layout.conv), safetensors.F16)
			m, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			c := m.Config
			if c.Arch != "lfm2" || c.FFN != 64 || c.HeadDim != 8 || !c.TiedEmbeddings || !c.QKNorm || c.NormOffset != 0 ||
				c.Hybrid == nil || c.Hybrid.ConvKernel != 3 || c.NormEps != 1e-5 || c.RopeTheta != 1e6 {
				t.Fatalf("config %+v hybrid %+v", c, c.Hybrid)
			}
			var kinds []LayerKind
			for i := range c.Layers {
				kinds = append(kinds, c.Layer(i).Kind)
			}
			if want := []LayerKind{LayerShortConv, LayerAttention, LayerShortConv}; !slices.Equal(kinds, want) {
				t.Fatalf("layer kinds %v, want %v", kinds, want)
			}
			// LFM2's roles under Llama's names, the same bytes as the file's tensors.
			for canon, file := range map[string]string{
				"model.norm.weight":                      "model.embedding_norm.weight",
				"model.layers.0.input_layernorm.weight":  "model.layers.0.operator_norm.weight",
				"model.layers.2.mlp.up_proj.weight":      "model.layers.2.feed_forward.w3.weight",
				"model.layers.1.self_attn.o_proj.weight": "model.layers.1.self_attn.out_proj.weight",
				"model.layers.1.self_attn.k_norm.weight": "model.layers.1.self_attn.k_layernorm.weight",
				"model.layers.0.conv.conv.weight":        "model.layers.0.conv.conv.weight",
			} {
				got := m.Tensors[canon]
				if got == nil || !slices.Equal(got.Data, written[file].Data) {
					t.Errorf("%s: not the data of %s", canon, file)
				}
			}
			if s := m.Tensors["model.layers.2.conv.conv.weight"].Shape; !slices.Equal(s, []int{32, 3}) {
				t.Errorf("conv weight shape %v, want [32 3]", s)
			}
		})
	}
}

// qwen35Shapes lists a Qwen3.5 model's tensors, three linear-attention layers then one full
// attention layer, under prefix ("model." text-only, "model.language_model." multimodal,
// "language_model.model." as mlx-lm writes the multimodal model).
func qwen35Shapes(prefix string, convShape func(ch, k int) []int) map[string][]int {
	const dim, ffn, vocab, heads, kv, hd = 32, 48, 40, 2, 1, 16
	const kh, vh, kd, vd, k = 2, 4, 8, 6, 4
	conv := 2*kh*kd + vh*vd
	m := map[string][]int{
		prefix + "embed_tokens.weight": {vocab, dim},
		prefix + "norm.weight":         {dim},
	}
	for i := range 4 {
		p := fmt.Sprintf("%slayers.%d.", prefix, i)
		m[p+"input_layernorm.weight"] = []int{dim}
		m[p+"post_attention_layernorm.weight"] = []int{dim}
		m[p+"mlp.gate_proj.weight"] = []int{ffn, dim}
		m[p+"mlp.up_proj.weight"] = []int{ffn, dim}
		m[p+"mlp.down_proj.weight"] = []int{dim, ffn}
		if i == 3 {
			m[p+"self_attn.q_proj.weight"] = []int{2 * heads * hd, dim}
			m[p+"self_attn.k_proj.weight"] = []int{kv * hd, dim}
			m[p+"self_attn.v_proj.weight"] = []int{kv * hd, dim}
			m[p+"self_attn.o_proj.weight"] = []int{dim, heads * hd}
			m[p+"self_attn.q_norm.weight"] = []int{hd}
			m[p+"self_attn.k_norm.weight"] = []int{hd}
			continue
		}
		m[p+"linear_attn.in_proj_qkv.weight"] = []int{conv, dim}
		m[p+"linear_attn.in_proj_z.weight"] = []int{vh * vd, dim}
		m[p+"linear_attn.in_proj_a.weight"] = []int{vh, dim}
		m[p+"linear_attn.in_proj_b.weight"] = []int{vh, dim}
		m[p+"linear_attn.conv1d.weight"] = convShape(conv, k)
		m[p+"linear_attn.A_log"] = []int{vh}
		m[p+"linear_attn.dt_bias"] = []int{vh}
		m[p+"linear_attn.norm.weight"] = []int{vd}
		m[p+"linear_attn.out_proj.weight"] = []int{dim, vh * vd}
	}
	return m
}

const qwen35Text = `"model_type": "qwen3_5_text", "vocab_size": 40, "hidden_size": 32,
	"intermediate_size": 48, "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
	"head_dim": 16, "rms_norm_eps": 1e-6, "max_position_embeddings": 4096,
	"layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
	"linear_conv_kernel_dim": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 6,
	"linear_num_key_heads": 2, "linear_num_value_heads": 4, "hidden_act": "silu",
	"rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
		"mrope_section": [1, 1, 0], "mrope_interleaved": true}, "eos_token_id": 5`

func TestOpenQwen35(t *testing.T) {
	hf := func(ch, k int) []int { return []int{ch, 1, k} }
	mlx := func(ch, k int) []int { return []int{ch, k, 1} }
	extra := map[string][]int{"model.visual.blocks.0.attn.qkv.weight": {24, 8}, "mtp.fc.weight": {32, 64}}
	for _, tc := range []struct {
		name, config string
		shapes       map[string][]int
		offset       float32
	}{
		{"text", `{"architectures": ["Qwen3_5ForCausalLM"], "tie_word_embeddings": true, ` + qwen35Text + `}`,
			qwen35Shapes("model.", hf), 1},
		{"multimodal", `{"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
			"tie_word_embeddings": true, "vision_config": {"depth": 1}, "text_config": {` + qwen35Text + `}}`,
			qwen35Shapes("model.language_model.", hf), 1},
		{"mlx", `{"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
			"tie_word_embeddings": true, "text_config": {` + qwen35Text + `}}`,
			qwen35Shapes("language_model.model.", mlx), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shapes := tc.shapes
			if tc.name != "text" {
				for k, v := range extra {
					shapes[k] = v
				}
			}
			dir, _ := hfDir(t, tc.config, shapes, safetensors.BF16)
			m, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			c := m.Config
			hy := c.Hybrid
			if c.Arch != "qwen3_5" || c.RopeDims != 4 || c.RopeTheta != 1e7 || c.NormOffset != tc.offset || !c.TiedEmbeddings ||
				hy == nil || !hy.AttnGate || hy.ConvKernel != 4 || hy.LinKHeads != 2 || hy.LinVHeads != 4 || hy.LinKDim != 8 || hy.LinVDim != 6 {
				t.Fatalf("config %+v hybrid %+v", c, hy)
			}
			if k := c.Layer(3).Kind; k != LayerAttention || c.Layer(0).Kind != LayerLinearAttention {
				t.Fatalf("layer kinds %v, %v", c.Layer(0).Kind, k)
			}
			for _, name := range []string{"model.layers.0.linear_attn.A_log", "model.layers.3.self_attn.q_proj.weight", "model.norm.weight"} {
				if m.Tensors[name] == nil {
					t.Errorf("%s missing", name)
				}
			}
			for name := range m.Tensors {
				if strings.Contains(name, "visual") || strings.HasPrefix(name, "mtp.") {
					t.Errorf("%s: the vision tower and MTP head are not the language model's", name)
				}
			}
			if s := m.Tensors["model.layers.1.linear_attn.conv1d.weight"].Shape; !slices.Equal(s, []int{56, 4}) {
				t.Errorf("conv weight shape %v, want [56 4]", s)
			}
		})
	}
}

func TestHybridConfigErrors(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{strings.Replace(lfm2JSON, `["conv", "full_attention", "conv"]`, `["conv", "full_attention"]`, 1), "layer_types"},
		{strings.Replace(lfm2JSON, `"full_attention", "conv"]`, `"full_attention", "mamba"]`, 1), "mamba"},
		{strings.Replace(lfm2JSON, `"num_hidden_layers": 3`, `"num_hidden_layers": 2000000000`, 1), "layers"},
		{strings.Replace(lfm2JSON, `"conv_bias": false`, `"conv_bias": true`, 1), "conv_bias"},
		{`{"architectures": ["Qwen3_5ForCausalLM"], ` + strings.Replace(qwen35Text, `"linear_num_value_heads": 4`, `"linear_num_value_heads": 3`, 1) + `}`, "linear attention"},
		{`{"architectures": ["Qwen3_5ForCausalLM"], ` + strings.Replace(qwen35Text, `"partial_rotary_factor": 0.25`, `"partial_rotary_factor": 0`, 1) + `}`, "partial_rotary_factor"},
	} {
		dir, _ := hfDir(t, tc.config, map[string][]int{}, safetensors.F16)
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
}
