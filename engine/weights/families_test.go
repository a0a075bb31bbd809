package weights

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/gguf"
)

// TestParseGemma3Config reads Gemma 3 configs as transformers 4.x and 5.x save them: per-layer
// rope_parameters or rope_theta and rope_local_base_freq; layer_types or the older
// sliding_window_pattern; a multimodal config's text_config with MLX's quantization at the top.
func TestParseGemma3Config(t *testing.T) {
	const dims = `"hidden_size":1152,"intermediate_size":6912,"num_hidden_layers":7,"num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,"vocab_size":262144,"query_pre_attn_scalar":256,"sliding_window":512`
	for _, c := range []struct {
		name, json    string
		theta, local  float64
		scale         RopeScaling
		quantized     bool
		tied          bool
		slidingLayer0 bool
		slidingLayer6 bool
	}{
		{name: "transformers 5", json: `{"architectures":["Gemma3ForCausalLM"],"model_type":"gemma3_text",` + dims +
			`,"layer_types":["sliding_attention","sliding_attention","sliding_attention","sliding_attention","sliding_attention","full_attention","sliding_attention"],` +
			`"rope_parameters":{"full_attention":{"rope_type":"linear","factor":8.0,"rope_theta":1000000.0},"sliding_attention":{"rope_type":"default","rope_theta":10000.0}}}`,
			theta: 1e6, local: 1e4, scale: RopeScaling{Type: "linear", Factor: 8}, tied: true, slidingLayer6: true, slidingLayer0: true},
		{name: "transformers 4 pattern", json: `{"model_type":"gemma3_text",` + dims + `,"sliding_window_pattern":6,"rope_theta":1000000.0,"rope_local_base_freq":10000.0,"tie_word_embeddings":false}`,
			theta: 1e6, local: 1e4, slidingLayer6: true, slidingLayer0: true},
		{name: "multimodal without architectures", json: `{"model_type":"gemma3","text_config":{"model_type":"gemma3_text",` + dims + `}}`,
			theta: 1e6, local: 1e4, tied: true, slidingLayer6: true, slidingLayer0: true},
		{name: "multimodal mlx", json: `{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","quantization":{"group_size":64,"bits":4},"text_config":{"model_type":"gemma3_text",` + dims + `}}`,
			theta: 1e6, local: 1e4, quantized: true, tied: true, slidingLayer6: true, slidingLayer0: true},
	} {
		cfg, q, err := parseConfig([]byte(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.Arch != "gemma3" || cfg.Layers != 7 || cfg.HeadDim != 256 || cfg.QueryScale != 256 || cfg.NormOffset != 1 ||
			!cfg.SandwichNorms || !cfg.QKNorm || cfg.Act != GELUTanh || cfg.EmbedScale != float32(33.941125) || cfg.TiedEmbeddings != c.tied {
			t.Errorf("%s: config %+v", c.name, cfg)
		}
		if cfg.RopeTheta != c.theta || cfg.LocalRopeTheta != c.local || cfg.RopeScale != c.scale || (q != nil) != c.quantized {
			t.Errorf("%s: rope %g/%g %+v, quantization %v", c.name, cfg.RopeTheta, cfg.LocalRopeTheta, cfg.RopeScale, q)
		}
		for i, want := range []bool{c.slidingLayer0, true, true, true, true, false, c.slidingLayer6} {
			l := cfg.Layer(i)
			if sliding := l.Window == 512 && l.LocalRope; sliding != want || !sliding && (l.Window != 0 || l.LocalRope) {
				t.Errorf("%s: layer %d: %+v, sliding %v", c.name, i, l, want)
			}
		}
	}
	for _, bad := range []struct{ json, msg string }{
		{`{"model_type":"gemma3_text",` + dims + `,"final_logit_softcapping":30.0}`, "final_logit_softcapping"},
		{`{"model_type":"gemma3_text",` + dims + `,"use_bidirectional_attention":true}`, "bidirectional"},
		{`{"model_type":"gemma3_text",` + dims + `,"layer_types":["sliding_attention"]}`, "1 entries for 7 layers"},
		{`{"model_type":"gemma3_text",` + dims + `,"layer_types":["a","b","c","d","e","f","g"]}`, `layer type "a"`},
		{`{"model_type":"gemma3_text",` + dims + `,"rope_parameters":{"full_attention":{"rope_type":"yarn"}}}`, "yarn"},
		{`{"architectures":["Qwen2VLForConditionalGeneration"],"text_config":{}}`, "text_config"},
	} {
		if _, _, err := parseConfig([]byte(bad.json)); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: error %v, want one mentioning %q", bad.json, err, bad.msg)
		}
	}
}

// TestParseSmolLM3AndQwen3Config reads which SmolLM3 layers go without RoPE (the list, or the
// interval when the list is absent) and Qwen3's explicit head size and q/k norms.
func TestParseSmolLM3AndQwen3Config(t *testing.T) {
	const dims = `"hidden_size":128,"intermediate_size":192,"num_hidden_layers":8,"num_attention_heads":4,"vocab_size":448`
	for _, c := range []struct {
		json   string
		noRope []int
	}{
		{`{"architectures":["SmolLM3ForCausalLM"],` + dims + `,"no_rope_layers":[1,1,0,1,1,1,1,0]}`, []int{2, 7}},
		{`{"model_type":"smollm3",` + dims + `}`, []int{3, 7}},
		{`{"model_type":"smollm3",` + dims + `,"no_rope_layer_interval":3}`, []int{2, 5}},
	} {
		cfg, _, err := parseConfig([]byte(c.json))
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for i := range cfg.Layers {
			if cfg.Layer(i).NoRope {
				got = append(got, i)
			}
		}
		if cfg.Arch != "smollm3" || cfg.RopeTheta != 2e6 || cfg.QKNorm || len(got) != len(c.noRope) || got[0] != c.noRope[0] || got[1] != c.noRope[1] {
			t.Errorf("%s: arch %s theta %g, no-RoPE layers %v, want %v", c.json, cfg.Arch, cfg.RopeTheta, got, c.noRope)
		}
	}
	if _, _, err := parseConfig([]byte(`{"model_type":"smollm3",` + dims + `,"no_rope_layers":[1,0]}`)); err == nil {
		t.Error("no_rope_layers of the wrong length: no error")
	}
	cfg, _, err := parseConfig([]byte(`{"architectures":["Qwen3ForCausalLM"],"hidden_size":1024,"intermediate_size":3072,"num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"vocab_size":151936,"tie_word_embeddings":true,"rope_theta":1000000}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Arch != "qwen3" || cfg.HeadDim != 128 || !cfg.QKNorm || cfg.QKVBias || cfg.LayerSpecs != nil || cfg.AttnScale() != float32(1/11.313708498984761) {
		t.Errorf("qwen3 config %+v", cfg)
	}
	if _, _, err := parseConfig([]byte(`{"model_type":"qwen3","attention_bias":true,` + dims + `}`)); err == nil {
		t.Error("qwen3 attention_bias: no error")
	}
}

// TestOpenGGUFGemma3 opens a Gemma 3 GGUF as llama.cpp's converter writes one: its norm names
// (ffn_norm is the MLP's input norm; post_attention_norm and post_ffw_norm follow the blocks),
// norms already holding 1+w, and what llama.cpp hard-codes: every sixth layer global, RoPE base
// 10000 on the others, sqrt(hidden) embeddings, and hidden/heads as the query scale of a
// 62-layer (27B) file.
func TestOpenGGUFGemma3(t *testing.T) {
	for _, layers := range []int{7, 62} {
		shapes := map[string][]int{"token_embd.weight": {tVocab, tDim}, "output_norm.weight": {tDim}}
		for i := range layers {
			p := fmt.Sprintf("blk.%d.", i)
			for _, n := range []string{"attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"} {
				shapes[p+n+".weight"] = []int{tDim}
			}
			shapes[p+"attn_q_norm.weight"] = []int{2 * tHeadDim}
			shapes[p+"attn_k_norm.weight"] = []int{2 * tHeadDim}
			shapes[p+"attn_q.weight"] = []int{tHeads * 2 * tHeadDim, tDim}
			shapes[p+"attn_k.weight"] = []int{tKV * 2 * tHeadDim, tDim}
			shapes[p+"attn_v.weight"] = []int{tKV * 2 * tHeadDim, tDim}
			shapes[p+"attn_output.weight"] = []int{tDim, tHeads * 2 * tHeadDim}
			shapes[p+"ffn_gate.weight"] = []int{tFFN, tDim}
			shapes[p+"ffn_up.weight"] = []int{tFFN, tDim}
			shapes[p+"ffn_down.weight"] = []int{tDim, tFFN}
		}
		meta := archMeta("gemma3")
		for i, kv := range meta {
			if kv.Key == "gemma3.block_count" {
				meta[i].Value = uint32(layers)
			}
			if kv.Key == "gemma3.rope.dimension_count" {
				meta[i].Value = uint32(2 * tHeadDim)
			}
		}
		meta = append(meta, gguf.KV{Key: "gemma3.attention.key_length", Value: uint32(2 * tHeadDim)},
			gguf.KV{Key: "gemma3.attention.value_length", Value: uint32(2 * tHeadDim)},
			gguf.KV{Key: "gemma3.attention.sliding_window", Value: uint32(512)})
		path := filepath.Join(t.TempDir(), "g.gguf")
		writeGGUF(t, path, append(meta, vocabMeta("llama")...), ggufTensors(shapes))
		m, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		c := m.Config
		wantScale := 0.0 // 1/sqrt(head dim)
		if layers == 62 {
			wantScale = tDim / tHeads
		}
		if c.Arch != "gemma3" || c.HeadDim != 2*tHeadDim || c.NormOffset != 0 || !c.SandwichNorms || !c.QKNorm || c.Act != GELUTanh ||
			c.EmbedScale != 8 || c.LocalRopeTheta != 10000 || c.QueryScale != wantScale || c.RopeStyle != backend.RopeHalf || !c.TiedEmbeddings {
			t.Errorf("%d layers: config %+v", layers, c)
		}
		for i := range layers {
			l := c.Layer(i)
			if sliding := (i+1)%6 != 0; sliding != (l.Window == 512 && l.LocalRope) || !sliding && l != (LayerSpec{}) {
				t.Errorf("%d layers: layer %d %+v", layers, i, l)
			}
		}
		for hf, gg := range map[string]string{
			"model.layers.0.pre_feedforward_layernorm.weight":  "blk.0.ffn_norm.weight",
			"model.layers.0.post_attention_layernorm.weight":   "blk.0.post_attention_norm.weight",
			"model.layers.0.post_feedforward_layernorm.weight": "blk.0.post_ffw_norm.weight",
			"model.layers.0.self_attn.q_norm.weight":           "blk.0.attn_q_norm.weight",
		} {
			if got := m.Tensors[hf]; got == nil || got.Name != hf || ggufName(hf, ggufSandwichNames) != gg {
				t.Errorf("%s: %v (from %s)", hf, got, ggufName(hf, ggufSandwichNames))
			}
		}
		m.Close()
	}
}
