package weights

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/safetensors"
)

// Hybrid holds what the recurrent-hybrid families (Arch "lfm2" and "qwen3_5") add to Config; the
// kind of each layer is in Config.LayerSpecs.
type Hybrid struct {
	// ConvKernel is the length of the causal convolutions (LFM2 conv_L_cache, Qwen3.5
	// linear_conv_kernel_dim); a layer carries the last ConvKernel-1 inputs between calls.
	ConvKernel int
	// Gated DeltaNet geometry (Qwen3.5): LinKHeads query/key heads of LinKDim, LinVHeads value
	// heads of LinVDim; value head h reads query/key head h/(LinVHeads/LinKHeads).
	LinKHeads, LinVHeads, LinKDim, LinVDim int
	// AttnGate: q_proj yields, per head, the query and then an output gate of HeadDim each; the
	// attention output is multiplied by sigmoid(gate) before o_proj (Qwen3.5).
	AttnGate bool
	// TiledVHeads: DeltaNet value head h reads query/key head h%LinKHeads, llama.cpp's order of
	// the value heads, rather than transformers' h/(LinVHeads/LinKHeads).
	TiledVHeads bool
	// NegExpA: the tensor under linear_attn.A_log holds -exp(A_log), as llama.cpp stores it.
	NegExpA bool
}

// maxLayers bounds a layer count read from a config before it sizes anything.
const maxLayers = 4096

// hybridFamily names the recurrent-hybrid family a config.json describes, or "".
func hybridFamily(h *hfConfig) string {
	arch := ""
	if len(h.Architectures) > 0 {
		arch = h.Architectures[0]
	}
	switch {
	case arch == "Lfm2ForCausalLM", arch == "" && h.ModelType == "lfm2":
		return "lfm2"
	case arch == "Qwen3_5ForCausalLM", arch == "Qwen3_5ForConditionalGeneration",
		arch == "" && (h.ModelType == "qwen3_5" || h.ModelType == "qwen3_5_text"):
		return "qwen3_5"
	}
	return ""
}

// hybridConfig is the part of an LFM2 or Qwen3.5 config.json (or its text_config) read here.
type hybridConfig struct {
	// hfConfig holds the keys every family shares; the rest are LFM2's and Qwen3.5's own.
	hfConfig

	NormEps          *float64 `json:"norm_eps"`
	Theta            *float64 `json:"theta"`
	PartialRotary    *float64 `json:"partial_rotary_factor"`
	TieEmbedding     *bool    `json:"tie_embedding"`
	FullAttnIdxs     []int    `json:"full_attn_idxs"`
	FullAttnInterval *int     `json:"full_attention_interval"`
	NumExperts       *int     `json:"num_experts"`

	// LFM2
	ConvBias          *bool    `json:"conv_bias"`
	ConvLCache        *int     `json:"conv_L_cache"`
	BlockFFDim        *int     `json:"block_ff_dim"`
	BlockMultipleOf   *int     `json:"block_multiple_of"`
	BlockFFNDimMult   *float64 `json:"block_ffn_dim_multiplier"`
	BlockAutoAdjustFF *bool    `json:"block_auto_adjust_ff_dim"`

	// Qwen3.5 Gated DeltaNet
	LinConvKernel *int `json:"linear_conv_kernel_dim"`
	LinKeyHeadDim *int `json:"linear_key_head_dim"`
	LinValHeadDim *int `json:"linear_value_head_dim"`
	LinKeyHeads   *int `json:"linear_num_key_heads"`
	LinValHeads   *int `json:"linear_num_value_heads"`
}

// parseHybridConfig reads the config.json of an LFM2 or Qwen3.5 model. Qwen3.5's published
// checkpoints are multimodal: the language model's hyperparameters sit in text_config, and the
// top level keeps the architecture, the quantization block and, sometimes, tie_word_embeddings.
func parseHybridConfig(data []byte, family string) (Config, *mlxQuant, error) {
	var top hybridConfig
	if err := json.Unmarshal(data, &top); err != nil {
		return Config{}, nil, err
	}
	h := top
	if !isNull(top.TextConfig) {
		if err := json.Unmarshal(top.TextConfig, &h); err != nil {
			return Config{}, nil, fmt.Errorf("text_config: %w", err)
		}
		if h.TieWordEmbeddings == nil {
			h.TieWordEmbeddings = top.TieWordEmbeddings
		}
		if isNull(h.BOSTokenID) {
			h.BOSTokenID = top.BOSTokenID
		}
		if isNull(h.EOSTokenID) {
			h.EOSTokenID = top.EOSTokenID
		}
	}
	c := Config{Arch: family, BOS: -1, RopeStyle: backend.RopeHalf}
	need := func(dst *int, p *int, key string) error {
		if p == nil {
			return fmt.Errorf("%s is missing", key)
		}
		*dst = *p
		return nil
	}
	for _, f := range []struct {
		dst *int
		p   *int
		key string
	}{
		{&c.Dim, h.HiddenSize, "hidden_size"},
		{&c.Layers, h.NumHiddenLayers, "num_hidden_layers"},
		{&c.Heads, h.NumAttentionHeads, "num_attention_heads"},
		{&c.Vocab, h.VocabSize, "vocab_size"},
	} {
		if err := need(f.dst, f.p, f.key); err != nil {
			return Config{}, nil, err
		}
	}
	if c.Layers <= 0 || c.Layers > maxLayers {
		return Config{}, nil, fmt.Errorf("bad config: %d layers (at most %d)", c.Layers, maxLayers)
	}
	c.KVHeads = c.Heads
	if h.NumKeyValueHeads != nil {
		c.KVHeads = *h.NumKeyValueHeads
	}
	if c.Heads > 0 {
		c.HeadDim = c.Dim / c.Heads
	}
	if h.HeadDim != nil {
		c.HeadDim = *h.HeadDim
	}
	if h.HiddenAct != nil && *h.HiddenAct != "silu" {
		return Config{}, nil, fmt.Errorf("hidden_act %q is not supported (want silu)", *h.HiddenAct)
	}
	if h.AttentionBias != nil && *h.AttentionBias {
		return Config{}, nil, errors.New("attention_bias is not supported")
	}
	if h.NumExperts != nil && *h.NumExperts > 0 {
		return Config{}, nil, errors.New("mixture-of-experts models are not supported")
	}
	c.TiedEmbeddings = h.TieWordEmbeddings == nil || *h.TieWordEmbeddings
	if h.TieEmbedding != nil && h.TieWordEmbeddings == nil {
		c.TiedEmbeddings = *h.TieEmbedding
	}
	c.MaxContext = 32768
	if h.MaxPositions != nil {
		c.MaxContext = *h.MaxPositions
	}
	hy := &Hybrid{}
	c.Hybrid = hy
	var err error
	switch family {
	case "lfm2":
		err = lfm2Config(&h, &c)
	case "qwen3_5":
		err = qwen35Config(&h, &c)
	}
	if err != nil {
		return Config{}, nil, err
	}
	if c.BOS, err = firstID(h.BOSTokenID); err != nil {
		return Config{}, nil, fmt.Errorf("bos_token_id: %w", err)
	}
	if c.EOS, err = ids(h.EOSTokenID); err != nil {
		return Config{}, nil, fmt.Errorf("eos_token_id: %w", err)
	}
	var quant *mlxQuant
	for _, block := range []json.RawMessage{top.Quantization, top.QuantizationConfig} {
		if quant == nil && !isNull(block) {
			if quant, err = parseQuant(block); err != nil {
				return Config{}, nil, fmt.Errorf("quantization: %w", err)
			}
		}
	}
	return c, quant, nil
}

// layerKinds reads layer_types: attention under attn, the family's recurrent kind under rec.
func layerKinds(types []string, layers int, attn, rec string, recKind LayerKind) ([]LayerSpec, error) {
	if len(types) != layers {
		return nil, fmt.Errorf("bad config: %d layer_types for %d layers", len(types), layers)
	}
	kinds := make([]LayerSpec, layers)
	for i, t := range types {
		switch t {
		case attn:
			kinds[i].Kind = LayerAttention
		case rec:
			kinds[i].Kind = recKind
		default:
			return nil, fmt.Errorf("bad config: layer %d has type %q (want %q or %q)", i, t, attn, rec)
		}
	}
	return kinds, nil
}

func lfm2Config(h *hybridConfig, c *Config) error {
	hy := c.Hybrid
	c.NormEps = 1e-5
	if h.NormEps != nil {
		c.NormEps = *h.NormEps
	}
	c.RopeTheta = 1e6
	for _, p := range []*float64{h.Theta, h.RopeTheta} {
		if p != nil {
			c.RopeTheta = *p
		}
	}
	if err := ropeTheta(h.RopeParameters, &c.RopeTheta, nil); err != nil {
		return err
	}
	if h.ConvBias != nil && *h.ConvBias {
		return errors.New("conv_bias is not supported (no published LFM2 model uses it)")
	}
	hy.ConvKernel = 3
	if h.ConvLCache != nil {
		hy.ConvKernel = *h.ConvLCache
	}
	var err error
	switch {
	case h.LayerTypes != nil:
		c.LayerSpecs, err = layerKinds(h.LayerTypes, c.Layers, "full_attention", "conv", LayerShortConv)
	case h.FullAttnIdxs != nil:
		c.LayerSpecs = make([]LayerSpec, c.Layers)
		for i := range c.LayerSpecs {
			c.LayerSpecs[i].Kind = LayerShortConv
		}
		for _, i := range h.FullAttnIdxs {
			if i < 0 || i >= c.Layers {
				return fmt.Errorf("bad config: full_attn_idxs has layer %d of %d", i, c.Layers)
			}
			c.LayerSpecs[i].Kind = LayerAttention
		}
	default:
		return errors.New("layer_types and full_attn_idxs are both missing")
	}
	if err != nil {
		return err
	}
	// transformers' Lfm2MLP: block_ff_dim (or intermediate_size), scaled by 2/3 and the
	// multiplier and rounded up to block_multiple_of when block_auto_adjust_ff_dim is set.
	ff := h.IntermediateSize
	if h.BlockFFDim != nil {
		ff = h.BlockFFDim
	}
	if ff == nil {
		return errors.New("intermediate_size is missing")
	}
	c.FFN = *ff
	if h.BlockAutoAdjustFF == nil || *h.BlockAutoAdjustFF {
		multiple := 256
		if h.BlockMultipleOf != nil {
			multiple = *h.BlockMultipleOf
		}
		if multiple <= 0 || c.FFN <= 0 || c.FFN > 1<<24 {
			return fmt.Errorf("bad config: block_ff_dim %d, block_multiple_of %d", c.FFN, multiple)
		}
		ffn := int(2 * float64(c.FFN) / 3)
		if m := h.BlockFFNDimMult; m != nil {
			if !(*m > 0) || *m > 64 {
				return fmt.Errorf("bad config: block_ffn_dim_multiplier %g", *m)
			}
			ffn = int(*m * float64(ffn))
		}
		c.FFN = multiple * ((ffn + multiple - 1) / multiple)
	}
	c.QKNorm = true
	return nil
}

func qwen35Config(h *hybridConfig, c *Config) error {
	hy := c.Hybrid
	c.NormEps = 1e-6
	if h.RMSNormEps != nil {
		c.NormEps = *h.RMSNormEps
	}
	if h.IntermediateSize == nil {
		return errors.New("intermediate_size is missing")
	}
	c.FFN = *h.IntermediateSize
	c.RopeTheta = 1e7
	if h.RopeTheta != nil {
		c.RopeTheta = *h.RopeTheta
	}
	partial := 0.25
	if h.PartialRotary != nil {
		partial = *h.PartialRotary
	}
	for _, raw := range []json.RawMessage{h.RopeParameters, h.RopeScaling} {
		if err := ropeTheta(raw, &c.RopeTheta, &partial); err != nil {
			return err
		}
	}
	if !(partial > 0 && partial <= 1) {
		return fmt.Errorf("bad config: partial_rotary_factor %g", partial)
	}
	c.RopeDims = int(float64(c.HeadDim) * partial)
	c.QKNorm = true
	hy.AttnGate = true
	c.NormOffset = 1 // until the files show mlx-lm's conversion (prepareHybrid)
	hy.ConvKernel = 4
	for _, f := range []struct {
		dst *int
		p   *int
		key string
	}{
		{&hy.LinKHeads, h.LinKeyHeads, "linear_num_key_heads"},
		{&hy.LinVHeads, h.LinValHeads, "linear_num_value_heads"},
		{&hy.LinKDim, h.LinKeyHeadDim, "linear_key_head_dim"},
		{&hy.LinVDim, h.LinValHeadDim, "linear_value_head_dim"},
	} {
		if f.p == nil {
			return fmt.Errorf("%s is missing", f.key)
		}
		*f.dst = *f.p
	}
	if h.LinConvKernel != nil {
		hy.ConvKernel = *h.LinConvKernel
	}
	if h.LayerTypes != nil {
		var err error
		c.LayerSpecs, err = layerKinds(h.LayerTypes, c.Layers, "full_attention", "linear_attention", LayerLinearAttention)
		return err
	}
	// Configs without layer_types put full attention on every full_attention_interval-th layer.
	every := 4
	if h.FullAttnInterval != nil {
		every = *h.FullAttnInterval
	}
	if every <= 0 {
		return fmt.Errorf("bad config: full_attention_interval %d", every)
	}
	c.LayerSpecs = make([]LayerSpec, c.Layers)
	for i := range c.LayerSpecs {
		c.LayerSpecs[i].Kind = LayerLinearAttention
		if (i+1)%every == 0 {
			c.LayerSpecs[i].Kind = LayerAttention
		}
	}
	return nil
}

// ropeTheta reads rope_theta (and partial_rotary_factor when partial is not nil) from a
// rope_parameters or rope_scaling block. Only unscaled RoPE is supported; Qwen3.5's multimodal
// sections (mrope_section) rotate text positions exactly as plain RoPE does, since a text token's
// temporal, height and width positions are the same number.
func ropeTheta(raw json.RawMessage, theta, partial *float64) error {
	if isNull(raw) {
		return nil
	}
	var r struct {
		RopeType      *string  `json:"rope_type"`
		Type          *string  `json:"type"`
		RopeTheta     *float64 `json:"rope_theta"`
		PartialRotary *float64 `json:"partial_rotary_factor"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("rope_parameters: %w", err)
	}
	typ := ""
	switch {
	case r.RopeType != nil:
		typ = *r.RopeType
	case r.Type != nil:
		typ = *r.Type
	}
	if typ != "" && typ != "default" && typ != "mrope" {
		return fmt.Errorf("rope scaling %q is not supported for this architecture", typ)
	}
	if r.RopeTheta != nil {
		*theta = *r.RopeTheta
	}
	if partial != nil && r.PartialRotary != nil {
		*partial = *r.PartialRotary
	}
	return nil
}

// checkHybrid rejects hybrid hyperparameters no forward pass can use, before they size anything.
func checkHybrid(c Config) error {
	hy := c.Hybrid
	if len(c.LayerSpecs) != c.Layers {
		return fmt.Errorf("bad config: %d layer kinds for %d layers", len(c.LayerSpecs), c.Layers)
	}
	if hy.ConvKernel < 1 || hy.ConvKernel > 64 {
		return fmt.Errorf("bad config: convolution kernel %d (want 1 to 64)", hy.ConvKernel)
	}
	if c.RopeDims < 0 || c.RopeDims%2 != 0 || c.RopeDims > c.HeadDim || c.RopeDims == 0 && c.Arch == "qwen3_5" {
		return fmt.Errorf("bad config: %d rotary dimensions for head dim %d", c.RopeDims, c.HeadDim)
	}
	for _, s := range c.LayerSpecs {
		if s.Kind != LayerLinearAttention {
			continue
		}
		if hy.LinKHeads <= 0 || hy.LinVHeads <= 0 || hy.LinVHeads%hy.LinKHeads != 0 ||
			hy.LinKDim <= 0 || hy.LinVDim <= 0 || hy.LinKDim > 1024 || hy.LinVDim > 1024 || hy.LinVHeads > 1024 {
			return fmt.Errorf("bad config: linear attention with %d key heads of %d, %d value heads of %d",
				hy.LinKHeads, hy.LinKDim, hy.LinVHeads, hy.LinVDim)
		}
		break
	}
	if math.IsInf(c.RopeTheta, 0) {
		return fmt.Errorf("bad config: rope theta %g", c.RopeTheta)
	}
	return nil
}

// hybridRequired lists the tensors a forward pass of a hybrid config reads, under the
// HuggingFace names of Llama's layout for what the families share with it (prepareHybrid adds
// those names for LFM2's own, see lfm2Names) and the families' names for the rest. Convolution
// weights are listed as [channels, kernel]: prepareHybrid gives them that shape from
// transformers' [channels, 1, kernel] and mlx-lm's [channels, kernel, 1], which hold the same
// numbers in the same order.
func hybridRequired(c Config) []want {
	hy := c.Hybrid
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	ws := []want{{"model.embed_tokens.weight", []int{c.Vocab, c.Dim}}, {"model.norm.weight", []int{c.Dim}}}
	if !c.TiedEmbeddings {
		ws = append(ws, want{"lm_head.weight", []int{c.Vocab, c.Dim}})
	}
	for i, spec := range c.LayerSpecs {
		p := fmt.Sprintf("model.layers.%d.", i)
		add := func(name string, shape ...int) { ws = append(ws, want{p + name, shape}) }
		add("input_layernorm.weight", c.Dim)
		add("post_attention_layernorm.weight", c.Dim)
		add("mlp.gate_proj.weight", c.FFN, c.Dim)
		add("mlp.up_proj.weight", c.FFN, c.Dim)
		add("mlp.down_proj.weight", c.Dim, c.FFN)
		switch spec.Kind {
		case LayerAttention:
			q := qd
			if hy.AttnGate {
				q *= 2
			}
			add("self_attn.q_proj.weight", q, c.Dim)
			add("self_attn.k_proj.weight", kvd, c.Dim)
			add("self_attn.v_proj.weight", kvd, c.Dim)
			add("self_attn.o_proj.weight", c.Dim, qd)
			add("self_attn.q_norm.weight", c.HeadDim)
			add("self_attn.k_norm.weight", c.HeadDim)
		case LayerShortConv:
			add("conv.in_proj.weight", 3*c.Dim, c.Dim)
			add("conv.conv.weight", c.Dim, hy.ConvKernel)
			add("conv.out_proj.weight", c.Dim, c.Dim)
		case LayerLinearAttention:
			kd, vd := hy.LinKHeads*hy.LinKDim, hy.LinVHeads*hy.LinVDim
			add("linear_attn.in_proj_qkv.weight", 2*kd+vd, c.Dim)
			add("linear_attn.in_proj_z.weight", vd, c.Dim)
			add("linear_attn.in_proj_a.weight", hy.LinVHeads, c.Dim)
			add("linear_attn.in_proj_b.weight", hy.LinVHeads, c.Dim)
			add("linear_attn.conv1d.weight", 2*kd+vd, hy.ConvKernel)
			add("linear_attn.A_log", hy.LinVHeads)
			add("linear_attn.dt_bias", hy.LinVHeads)
			add("linear_attn.norm.weight", hy.LinVDim)
			add("linear_attn.out_proj.weight", c.Dim, vd)
		}
	}
	return ws
}

// lfm2Names maps the parts of LFM2's tensor names that differ from Llama's for the same role.
var lfm2Names = []struct{ lfm2, llama string }{
	{".operator_norm.", ".input_layernorm."},
	{".ffn_norm.", ".post_attention_layernorm."},
	{".feed_forward.w1.", ".mlp.gate_proj."},
	{".feed_forward.w3.", ".mlp.up_proj."},
	{".feed_forward.w2.", ".mlp.down_proj."},
	{".self_attn.out_proj.", ".self_attn.o_proj."},
	{".self_attn.q_layernorm.", ".self_attn.q_norm."},
	{".self_attn.k_layernorm.", ".self_attn.k_norm."},
	{"model.embedding_norm.", "model.norm."},
}

// canonicalName is the name hybridRequired lists for a tensor (or MLX module, with a trailing
// ".") of a hybrid model's files, or "" when the file's name is already it.
func canonicalName(name string, lfm2 bool) string {
	canon := name
	for _, p := range languagePrefixes {
		if rest, ok := strings.CutPrefix(canon, p.file); ok {
			canon = p.canonical + rest
			break
		}
	}
	if lfm2 {
		for _, r := range lfm2Names {
			if strings.Contains(canon, r.lfm2) {
				canon = strings.Replace(canon, r.lfm2, r.llama, 1)
				break
			}
		}
	}
	if canon == name {
		return ""
	}
	return canon
}

// languagePrefixes are where multimodal checkpoints keep the language model: transformers'
// Qwen3_5ForConditionalGeneration under model.language_model (its lm_head at the top), mlx-lm's
// conversion of it under language_model.
var languagePrefixes = []struct{ file, canonical string }{
	{"model.language_model.", "model."},
	{"language_model.model.", "model."},
	{"language_model.lm_head.", "lm_head."},
}

// prepareHybrid adapts a hybrid model's safetensors to the names and shapes hybridRequired
// lists, without copying data: it adds canonical names for tensors under a multimodal
// language-model prefix (the vision tower and multi-token-prediction head are left unused) and
// for LFM2's names of Llama's roles, gives
// convolution weights their [channels, kernel] shape, and tells from the convolution layout
// whether mlx-lm converted the files (it moves the kernel axis and adds 1 to Qwen3.5's norms).
func prepareHybrid(set *safetensors.Set, quant *mlxQuant, c *Config) error {
	lfm2 := c.Arch == "lfm2"
	aliases := map[string]*safetensors.Tensor{}
	for name, t := range set.ByName {
		if canon := canonicalName(name, lfm2); canon != "" {
			if _, taken := set.ByName[canon]; taken {
				return fmt.Errorf("tensors %q and %q are the same weight", name, canon)
			}
			aliases[canon] = t
		}
	}
	for name, t := range aliases {
		set.ByName[name] = t
	}
	if quant != nil {
		for module, spec := range quant.overrides {
			if canon := canonicalName(module+".", lfm2); canon != "" {
				quant.overrides[strings.TrimSuffix(canon, ".")] = spec
			}
		}
	}
	hy := c.Hybrid
	sanitized := -1 // unknown until a convolution is seen
	for i, spec := range c.LayerSpecs {
		var name string
		switch spec.Kind {
		case LayerShortConv:
			name = fmt.Sprintf("model.layers.%d.conv.conv.weight", i)
		case LayerLinearAttention:
			name = fmt.Sprintf("model.layers.%d.linear_attn.conv1d.weight", i)
		default:
			continue
		}
		t, ok := set.ByName[name]
		if !ok {
			continue // collect reports it
		}
		s := t.Shape
		var mlx bool
		switch {
		case len(s) == 3 && s[1] == 1 && s[2] == hy.ConvKernel:
			mlx = false
		case len(s) == 3 && s[2] == 1 && s[1] == hy.ConvKernel:
			mlx = true
		case len(s) == 2 && s[1] == hy.ConvKernel:
			continue
		default:
			return fmt.Errorf("tensor %q: shape %v, want [channels, 1, %d] or [channels, %d, 1]", name, s, hy.ConvKernel, hy.ConvKernel)
		}
		if hy.ConvKernel > 1 {
			if sanitized >= 0 && (sanitized == 1) != mlx {
				return fmt.Errorf("tensor %q: convolution layout differs from the other layers'", name)
			}
			sanitized = 0
			if mlx {
				sanitized = 1
			}
		}
		flat := *t
		flat.Shape = []int{s[0], hy.ConvKernel}
		set.ByName[name] = &flat
	}
	if c.Arch == "qwen3_5" {
		c.NormOffset = 1
		if sanitized == 1 {
			c.NormOffset = 0
		}
	}
	return nil
}
