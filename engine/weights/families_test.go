package weights

import (
	"strings"
	"testing"
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
