package weights

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/gguf"
	"github.com/layaapp/laya/engine/tensor"
)

// GGUF files of the recurrent-hybrid families, as llama.cpp's converter writes them: arch "lfm2"
// (LFM2 and LFM2.5) and "qwen35" (Qwen3.5). The converter stores Qwen3.5's norms with the 1
// added, A_log as -exp(A_log), and the value heads of the DeltaNet layers in its tiled order;
// Hybrid.NegExpA and Hybrid.TiledVHeads tell the engine.

// hybridGGUFArchs maps llama.cpp's architecture names to Config.Arch.
var hybridGGUFArchs = map[string]string{"lfm2": "lfm2", "qwen35": "qwen3_5"}

// hybridGGUFNames maps llama.cpp's per-block names of the hybrid families to the canonical names
// hybridRequired lists (after "model.layers.N.").
var hybridGGUFNames = map[string]string{
	"attn_norm":           "input_layernorm",
	"ffn_norm":            "post_attention_layernorm", // LFM2
	"post_attention_norm": "post_attention_layernorm", // Qwen3.5
	"ffn_gate":            "mlp.gate_proj",
	"ffn_up":              "mlp.up_proj",
	"ffn_down":            "mlp.down_proj",
	"attn_q":              "self_attn.q_proj",
	"attn_k":              "self_attn.k_proj",
	"attn_v":              "self_attn.v_proj",
	"attn_output":         "self_attn.o_proj",
	"attn_q_norm":         "self_attn.q_norm",
	"attn_k_norm":         "self_attn.k_norm",
	"shortconv.conv":      "conv.conv",
	"shortconv.in_proj":   "conv.in_proj",
	"shortconv.out_proj":  "conv.out_proj",
	"attn_qkv":            "linear_attn.in_proj_qkv",
	"attn_gate":           "linear_attn.in_proj_z",
	"ssm_alpha":           "linear_attn.in_proj_a",
	"ssm_beta":            "linear_attn.in_proj_b",
	"ssm_conv1d":          "linear_attn.conv1d",
	"ssm_norm":            "linear_attn.norm",
	"ssm_out":             "linear_attn.out_proj",
}

// hybridHFName is the canonical name of a hybrid family's GGUF tensor name, false for names the
// model does not use.
func hybridHFName(name string) (string, bool) {
	switch name {
	case "token_embd.weight":
		return "model.embed_tokens.weight", true
	case "output_norm.weight", "token_embd_norm.weight": // LFM2's final norm is its embedding_norm
		return "model.norm.weight", true
	case "output.weight":
		return "lm_head.weight", true
	}
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return "", false
	}
	num, rest, ok := strings.Cut(rest, ".")
	if n, err := strconv.Atoi(num); !ok || err != nil || n < 0 || strconv.Itoa(n) != num {
		return "", false
	}
	p := "model.layers." + num + "."
	switch rest {
	case "ssm_a":
		return p + "linear_attn.A_log", true
	case "ssm_dt.bias":
		return p + "linear_attn.dt_bias", true
	}
	base, suffix, ok := strings.Cut(rest, ".weight")
	if !ok || suffix != "" {
		return "", false
	}
	hf, ok := hybridGGUFNames[base]
	if !ok {
		return "", false
	}
	return p + hf + ".weight", true
}

// hybridGGUFConfig reads the hyperparameters of an lfm2 or qwen35 GGUF file.
func hybridGGUFConfig(f *gguf.File, arch string, c *Config) error {
	p := arch + "."
	var err error
	num := func(key string, def int) int {
		if err != nil {
			return 0
		}
		if _, present := f.Metadata[p+key]; !present {
			if def < 0 {
				err = fmt.Errorf("metadata %s%s is missing", p, key)
			}
			return def
		}
		u, ok := f.Uint(p + key)
		if !ok || u > math.MaxInt32 {
			err = fmt.Errorf("metadata %s%s: want a non-negative integer, have %v", p, key, f.Metadata[p+key])
		}
		return int(u)
	}
	c.Arch = hybridGGUFArchs[arch]
	c.RopeStyle = backend.RopeHalf
	c.QKNorm = true
	c.Dim = num("embedding_length", -1)
	c.Layers = num("block_count", -1)
	c.FFN = num("feed_forward_length", -1)
	c.Heads = num("attention.head_count", -1)
	c.MaxContext = num("context_length", -1)
	if err != nil {
		return err
	}
	// llama.cpp's converter appends Qwen3.5's multi-token-prediction block to the blocks and
	// counts it in block_count; a forward pass stops before it.
	mtp := num("nextn_predict_layers", 0)
	if c.Layers <= 0 || c.Layers > maxLayers || mtp >= c.Layers {
		return fmt.Errorf("bad config: %d layers (at most %d), %d of them for multi-token prediction", c.Layers, maxLayers, mtp)
	}
	c.Layers -= mtp
	if c.Heads > 0 {
		c.HeadDim = c.Dim / c.Heads
	}
	eps, ok := f.Float(p + "attention.layer_norm_rms_epsilon")
	if !ok {
		return fmt.Errorf("metadata %sattention.layer_norm_rms_epsilon is missing", p)
	}
	c.NormEps = eps
	c.RopeTheta = 10000
	if _, present := f.Metadata[p+"rope.freq_base"]; present {
		if c.RopeTheta, ok = f.Float(p + "rope.freq_base"); !ok {
			return fmt.Errorf("metadata %srope.freq_base is not a float", p)
		}
	}
	hy := &Hybrid{}
	c.Hybrid = hy
	c.LayerSpecs = make([]LayerSpec, c.Layers)
	switch arch {
	case "lfm2":
		// head_count_kv is per layer: 0 marks a short-convolution layer.
		kv, err := uintList(f, p+"attention.head_count_kv", c.Layers)
		if err != nil {
			return err
		}
		for i, n := range kv {
			if n == 0 {
				c.LayerSpecs[i].Kind = LayerShortConv
				continue
			}
			if c.KVHeads != 0 && c.KVHeads != n {
				return fmt.Errorf("attention layers with %d and %d kv heads", c.KVHeads, n)
			}
			c.KVHeads = n
		}
		if c.KVHeads == 0 {
			return fmt.Errorf("metadata %sattention.head_count_kv: no attention layer", p)
		}
		hy.ConvKernel = num("shortconv.l_cache", -1)
	case "qwen35":
		c.KVHeads = num("attention.head_count_kv", c.Heads)
		c.HeadDim = num("attention.key_length", c.HeadDim)
		c.RopeDims = num("rope.dimension_count", c.HeadDim)
		hy.ConvKernel = num("ssm.conv_kernel", -1)
		hy.LinKDim = num("ssm.state_size", -1)
		hy.LinKHeads = num("ssm.group_count", -1)
		hy.LinVHeads = num("ssm.time_step_rank", -1)
		inner := num("ssm.inner_size", -1)
		every := num("full_attention_interval", 4)
		if err != nil {
			return err
		}
		if hy.LinVHeads <= 0 || inner%hy.LinVHeads != 0 || every <= 0 {
			return fmt.Errorf("bad config: ssm inner size %d for %d heads, full attention every %d layers", inner, hy.LinVHeads, every)
		}
		hy.LinVDim = inner / hy.LinVHeads
		if vl, ok := f.Uint(p + "attention.value_length"); ok && int(vl) != c.HeadDim {
			return fmt.Errorf("value length %d differs from key length %d", vl, c.HeadDim)
		}
		for i := range c.LayerSpecs {
			if (i+1)%every != 0 {
				c.LayerSpecs[i].Kind = LayerLinearAttention
			}
		}
		hy.AttnGate = true
		hy.TiledVHeads = true
		hy.NegExpA = true
	}
	return err
}

// uintList reads an array of n non-negative integers, or one integer meaning n copies of it.
func uintList(f *gguf.File, key string, n int) ([]int, error) {
	if u, ok := f.Uint(key); ok && u <= math.MaxInt32 {
		out := make([]int, n)
		for i := range out {
			out[i] = int(u)
		}
		return out, nil
	}
	var out []int
	add := func(v int64) { out = append(out, int(v)) }
	switch a := f.Metadata[key].(type) {
	case []uint32:
		for _, v := range a {
			add(int64(v))
		}
	case []int32:
		for _, v := range a {
			add(int64(v))
		}
	case []uint16:
		for _, v := range a {
			add(int64(v))
		}
	case []uint8:
		for _, v := range a {
			add(int64(v))
		}
	default:
		return nil, fmt.Errorf("metadata %s: want %d integers, have %T", key, n, f.Metadata[key])
	}
	if len(out) != n {
		return nil, fmt.Errorf("metadata %s: %d values for %d layers", key, len(out), n)
	}
	for _, v := range out {
		if v < 0 || v > 1<<16 {
			return nil, fmt.Errorf("metadata %s: value %d", key, v)
		}
	}
	return out, nil
}

// hybridFromGGUF fills m (its vocabulary read) from an lfm2 or qwen35 file.
func hybridFromGGUF(f *gguf.File, path, arch string, m *Model) (*Model, error) {
	m.Config.BOS = m.GGUFVocab.BOS
	if err := hybridGGUFConfig(f, arch, &m.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	byHF := map[string]*tensor.Tensor{}
	for _, t := range f.Tensors {
		if hf, ok := hybridHFName(t.Name); ok {
			if _, dup := byHF[hf]; dup {
				return nil, fmt.Errorf("%s: two tensors for %s", path, hf)
			}
			renamed := *t // the struct, not the mapped data
			renamed.Name = hf
			byHF[hf] = &renamed
		}
	}
	c := &m.Config
	c.TiedEmbeddings = byHF["lm_head.weight"] == nil
	c.Vocab = len(m.GGUFVocab.Tokens)
	if v := m.GGUFVocab.EOS; v >= 0 {
		c.EOS = append(c.EOS, v)
	}
	if eot, ok := f.Uint("tokenizer.ggml.eot_token_id"); ok && int(eot) != m.GGUFVocab.EOS && eot < uint64(c.Vocab) {
		c.EOS = append(c.EOS, int(eot))
	}
	if err := CheckConfig(m.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	err := collect(m, func(name string) (*tensor.Tensor, string, error) {
		return byHF[name], path, nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
