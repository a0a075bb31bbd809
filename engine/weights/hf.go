package weights

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/safetensors"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/tokenizer"
	"github.com/layaapp/laya/internal/fsutil"
)

// hfConfig is the part of a HuggingFace config.json this package reads. Pointers tell absent
// keys from zero values.
type hfConfig struct {
	Architectures      []string        `json:"architectures"`
	ModelType          string          `json:"model_type"`
	HiddenSize         *int            `json:"hidden_size"`
	IntermediateSize   *int            `json:"intermediate_size"`
	NumHiddenLayers    *int            `json:"num_hidden_layers"`
	NumAttentionHeads  *int            `json:"num_attention_heads"`
	NumKeyValueHeads   *int            `json:"num_key_value_heads"`
	HeadDim            *int            `json:"head_dim"`
	VocabSize          *int            `json:"vocab_size"`
	RMSNormEps         *float64        `json:"rms_norm_eps"`
	RopeTheta          *float64        `json:"rope_theta"`
	RopeScaling        json.RawMessage `json:"rope_scaling"`
	RopeParameters     json.RawMessage `json:"rope_parameters"`
	MaxPositions       *int            `json:"max_position_embeddings"`
	TieWordEmbeddings  *bool           `json:"tie_word_embeddings"`
	BOSTokenID         json.RawMessage `json:"bos_token_id"`
	EOSTokenID         json.RawMessage `json:"eos_token_id"`
	HiddenAct          *string         `json:"hidden_act"`
	AttentionBias      *bool           `json:"attention_bias"`
	MLPBias            *bool           `json:"mlp_bias"`
	UseSlidingWindow   *bool           `json:"use_sliding_window"`
	Quantization       json.RawMessage `json:"quantization"`
	QuantizationConfig json.RawMessage `json:"quantization_config"`
	// TextConfig holds the language model's keys in a multimodal config.json.
	TextConfig json.RawMessage `json:"text_config"`

	// SmolLM3: per layer 1 (RoPE) or 0 (none); or every interval-th layer without RoPE.
	NoRopeLayers        []int `json:"no_rope_layers"`
	NoRopeLayerInterval *int  `json:"no_rope_layer_interval"`

	// Gemma 3.
	HiddenActivation     *string         `json:"hidden_activation"`
	QueryPreAttnScalar   *float64        `json:"query_pre_attn_scalar"`
	SlidingWindow        *int            `json:"sliding_window"`
	LayerTypes           []string        `json:"layer_types"`
	SlidingWindowPattern *int            `json:"sliding_window_pattern"`
	SlidingPatternBC     *int            `json:"_sliding_window_pattern"`
	RopeLocalBaseFreq    *float64        `json:"rope_local_base_freq"`
	FinalLogitSoftcap    json.RawMessage `json:"final_logit_softcapping"`
	AttnLogitSoftcap     json.RawMessage `json:"attn_logit_softcapping"`
	Bidirectional        *bool           `json:"use_bidirectional_attention"`
}

// hfArchs maps the architectures entries this package runs to Config.Arch; hfModelTypes does
// the same for model_type, which a config without architectures is read by.
var (
	hfArchs = map[string]string{
		"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
		"SmolLM3ForCausalLM": "smollm3", "Gemma3ForCausalLM": "gemma3", "Gemma3ForConditionalGeneration": "gemma3",
	}
	hfModelTypes = map[string]string{
		"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "smollm3": "smollm3", "gemma3_text": "gemma3", "gemma3": "gemma3",
	}
)

// archDefaults are transformers' defaults, per architecture, for keys a config.json may omit.
type archDefaults struct {
	maxContext int
	ropeTheta  float64
	act        string
}

var hfDefaults = map[string]archDefaults{
	"llama":   {2048, 10000, "silu"},
	"qwen2":   {32768, 10000, "silu"},
	"qwen3":   {32768, 10000, "silu"},
	"smollm3": {32768, 2000000, "silu"},
	"gemma3":  {131072, 1000000, "gelu_pytorch_tanh"},
}

// ropeParams is a rope_scaling block, or transformers' newer rope_parameters block that also
// carries rope_theta.
type ropeParams struct {
	RopeType       *string  `json:"rope_type"`
	Type           *string  `json:"type"`
	RopeTheta      *float64 `json:"rope_theta"`
	Factor         float64  `json:"factor"`
	LowFreqFactor  float64  `json:"low_freq_factor"`
	HighFreqFactor float64  `json:"high_freq_factor"`
	OriginalMax    int      `json:"original_max_position_embeddings"`
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// parseConfig reads config.json's hyperparameters, and its MLX quantization block when there is
// one. Whether the embeddings are tied may still change once the tensors are known (a missing
// lm_head.weight ties them).
func parseConfig(data []byte) (Config, *mlxQuant, error) {
	var h hfConfig
	if err := json.Unmarshal(data, &h); err != nil {
		return Config{}, nil, err
	}
	if family := hybridFamily(&h); family != "" {
		return parseHybridConfig(data, family)
	}
	// A multimodal checkpoint nests the language model's keys; MLX keeps its quantization block
	// at the top.
	quantBlocks := []json.RawMessage{h.Quantization, h.QuantizationConfig}
	if !isNull(h.TextConfig) {
		gemma3 := len(h.Architectures) == 0 && h.ModelType == "gemma3" ||
			len(h.Architectures) > 0 && h.Architectures[0] == "Gemma3ForConditionalGeneration"
		if !gemma3 {
			return Config{}, nil, fmt.Errorf("text_config of architecture %v, model type %q is not supported (want Gemma3ForConditionalGeneration)", h.Architectures, h.ModelType)
		}
		var t hfConfig
		if err := json.Unmarshal(h.TextConfig, &t); err != nil {
			return Config{}, nil, fmt.Errorf("text_config: %w", err)
		}
		t.Architectures = h.Architectures
		quantBlocks = append(quantBlocks, t.Quantization, t.QuantizationConfig)
		h = t
	}
	c := Config{BOS: -1}
	arch, ok := hfModelTypes[h.ModelType]
	if len(h.Architectures) > 0 {
		if arch, ok = hfArchs[h.Architectures[0]]; !ok {
			return Config{}, nil, fmt.Errorf("architecture %q is not supported (want one of %v)", h.Architectures[0], slices.Sorted(maps.Keys(hfArchs)))
		}
	} else if !ok {
		return Config{}, nil, fmt.Errorf("model type %q is not supported (want one of %v)", h.ModelType, slices.Sorted(maps.Keys(hfModelTypes)))
	}
	def := hfDefaults[arch]
	c.Arch = arch
	need := func(p *int, key string) (int, error) {
		if p == nil {
			return 0, fmt.Errorf("%s is missing", key)
		}
		return *p, nil
	}
	var err error
	for _, f := range []struct {
		dst *int
		p   *int
		key string
	}{
		{&c.Dim, h.HiddenSize, "hidden_size"},
		{&c.FFN, h.IntermediateSize, "intermediate_size"},
		{&c.Layers, h.NumHiddenLayers, "num_hidden_layers"},
		{&c.Heads, h.NumAttentionHeads, "num_attention_heads"},
		{&c.Vocab, h.VocabSize, "vocab_size"},
	} {
		if *f.dst, err = need(f.p, f.key); err != nil {
			return Config{}, nil, err
		}
	}
	// Bounded before anything is sized by it (a config may claim two billion layers).
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
	c.NormEps = 1e-6 // the transformers default of every architecture here
	if h.RMSNormEps != nil {
		c.NormEps = *h.RMSNormEps
	}
	c.MaxContext = def.maxContext
	if h.MaxPositions != nil {
		c.MaxContext = *h.MaxPositions
	}
	act := def.act
	for _, a := range []*string{h.HiddenAct, h.HiddenActivation} {
		if a != nil {
			act = *a
		}
	}
	switch act {
	case "silu":
		c.Act = SiLU
	case "gelu_pytorch_tanh":
		c.Act = GELUTanh
	default:
		return Config{}, nil, fmt.Errorf("activation %q is not supported (want silu or gelu_pytorch_tanh)", act)
	}
	if h.MLPBias != nil && *h.MLPBias || arch != "qwen2" && h.AttentionBias != nil && *h.AttentionBias {
		return Config{}, nil, fmt.Errorf("%s attention_bias and mlp_bias are not supported", arch)
	}
	if h.UseSlidingWindow != nil && *h.UseSlidingWindow {
		return Config{}, nil, errors.New("use_sliding_window is not supported")
	}
	c.QKVBias = arch == "qwen2"
	c.QKNorm = arch == "qwen3" || arch == "gemma3"
	c.RopeStyle = backend.RopeHalf // transformers rotates halves in every architecture here
	c.TiedEmbeddings = h.TieWordEmbeddings != nil && *h.TieWordEmbeddings

	c.RopeTheta = def.ropeTheta
	if h.RopeTheta != nil {
		c.RopeTheta = *h.RopeTheta
	}
	if err := parseRopeBlocks(&c, &h); err != nil {
		return Config{}, nil, err
	}
	switch arch {
	case "smollm3":
		if err := smolLM3Layers(&c, &h); err != nil {
			return Config{}, nil, err
		}
	case "gemma3":
		if err := gemma3Config(&c, &h); err != nil {
			return Config{}, nil, err
		}
	}

	if c.BOS, err = firstID(h.BOSTokenID); err != nil {
		return Config{}, nil, fmt.Errorf("bos_token_id: %w", err)
	}
	if c.EOS, err = ids(h.EOSTokenID); err != nil {
		return Config{}, nil, fmt.Errorf("eos_token_id: %w", err)
	}
	var quant *mlxQuant
	for _, block := range quantBlocks {
		if quant == nil && !isNull(block) {
			if quant, err = parseQuant(block); err != nil {
				return Config{}, nil, fmt.Errorf("quantization: %w", err)
			}
		}
	}
	return c, quant, nil
}

// parseRopeBlocks reads rope_parameters (transformers 5) and rope_scaling: one block for the
// model, or, in a Gemma 3 config, one per layer type. rope_theta at the top wins over a
// block's.
func parseRopeBlocks(c *Config, h *hfConfig) error {
	for _, raw := range []json.RawMessage{h.RopeParameters, h.RopeScaling} {
		if isNull(raw) {
			continue
		}
		var byType map[string]json.RawMessage
		if err := json.Unmarshal(raw, &byType); err != nil {
			return fmt.Errorf("rope scaling: %w", err)
		}
		full, perType := byType["full_attention"]
		if !perType {
			if err := parseRope(raw, &c.RopeTheta, &c.RopeScale, h.RopeTheta != nil); err != nil {
				return err
			}
			continue
		}
		if err := parseRope(full, &c.RopeTheta, &c.RopeScale, h.RopeTheta != nil); err != nil {
			return fmt.Errorf("full_attention: %w", err)
		}
		if sliding, ok := byType["sliding_attention"]; ok {
			var scale RopeScaling
			if err := parseRope(sliding, &c.LocalRopeTheta, &scale, h.RopeLocalBaseFreq != nil); err != nil {
				return fmt.Errorf("sliding_attention: %w", err)
			}
			if scale.Type != "" {
				return fmt.Errorf("sliding_attention: rope scaling %q is not supported", scale.Type)
			}
		}
	}
	return nil
}

// parseRope reads one rope block into theta (unless keepTheta) and scale.
func parseRope(raw json.RawMessage, theta *float64, scale *RopeScaling, keepTheta bool) error {
	var r ropeParams
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("rope scaling: %w", err)
	}
	if r.RopeTheta != nil && !keepTheta {
		*theta = *r.RopeTheta
	}
	typ := ""
	switch {
	case r.RopeType != nil:
		typ = *r.RopeType
	case r.Type != nil:
		typ = *r.Type
	}
	switch typ {
	case "", "default":
	case "llama3", "linear":
		*scale = RopeScaling{Type: typ, Factor: r.Factor, LowFreqFactor: r.LowFreqFactor,
			HighFreqFactor: r.HighFreqFactor, OriginalMaxPositions: r.OriginalMax}
	default:
		return fmt.Errorf("rope scaling %q is not supported (only llama3 and linear)", typ)
	}
	return nil
}

// smolLM3Layers reads which layers skip RoPE: no_rope_layers (1 keeps RoPE), else every
// no_rope_layer_interval-th layer (transformers' default, 4).
func smolLM3Layers(c *Config, h *hfConfig) error {
	interval := 4
	if h.NoRopeLayerInterval != nil {
		interval = *h.NoRopeLayerInterval
	}
	if h.NoRopeLayers == nil && interval <= 0 {
		return fmt.Errorf("no_rope_layer_interval %d", interval)
	}
	if h.NoRopeLayers != nil && len(h.NoRopeLayers) != c.Layers {
		return fmt.Errorf("no_rope_layers has %d entries for %d layers", len(h.NoRopeLayers), c.Layers)
	}
	c.LayerSpecs = make([]LayerSpec, c.Layers)
	for i := range c.LayerSpecs {
		if h.NoRopeLayers != nil {
			c.LayerSpecs[i].NoRope = h.NoRopeLayers[i] == 0
		} else {
			c.LayerSpecs[i].NoRope = (i+1)%interval == 0
		}
	}
	return nil
}

// gemma3Config reads what Gemma 3 adds: (1+w) norms around both blocks, q/k norms, GELU,
// scaled embeddings, query_pre_attn_scalar, and sliding-window layers with their own RoPE base.
func gemma3Config(c *Config, h *hfConfig) error {
	for key, raw := range map[string]json.RawMessage{"final_logit_softcapping": h.FinalLogitSoftcap, "attn_logit_softcapping": h.AttnLogitSoftcap} {
		if !isNull(raw) {
			return fmt.Errorf("%s %s is not supported", key, raw)
		}
	}
	if h.Bidirectional != nil && *h.Bidirectional {
		return errors.New("use_bidirectional_attention is not supported")
	}
	c.NormOffset = 1
	c.SandwichNorms = true
	// transformers multiplies by sqrt(hidden_size) as a float32 tensor cast to the weights'
	// dtype; the engine computes in float32 (embedScale rounds it for 16-bit tables).
	c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
	if h.TieWordEmbeddings == nil {
		c.TiedEmbeddings = true // Gemma3TextConfig's default
	}
	c.QueryScale = 256
	if h.QueryPreAttnScalar != nil {
		c.QueryScale = *h.QueryPreAttnScalar
	}
	if h.RopeLocalBaseFreq != nil {
		c.LocalRopeTheta = *h.RopeLocalBaseFreq
	} else if c.LocalRopeTheta == 0 {
		c.LocalRopeTheta = 10000
	}
	window := 4096
	if h.SlidingWindow != nil {
		window = *h.SlidingWindow
	}
	types := h.LayerTypes
	if types == nil {
		pattern := 6
		for _, p := range []*int{h.SlidingWindowPattern, h.SlidingPatternBC} {
			if p != nil {
				pattern = *p
			}
		}
		if pattern <= 0 {
			return fmt.Errorf("sliding_window_pattern %d", pattern)
		}
		for i := range c.Layers {
			if (i+1)%pattern != 0 {
				types = append(types, "sliding_attention")
			} else {
				types = append(types, "full_attention")
			}
		}
	}
	if len(types) != c.Layers {
		return fmt.Errorf("layer_types has %d entries for %d layers", len(types), c.Layers)
	}
	c.LayerSpecs = make([]LayerSpec, c.Layers)
	for i, t := range types {
		switch t {
		case "full_attention":
		case "sliding_attention":
			if window <= 0 {
				return fmt.Errorf("sliding_window %d", window)
			}
			c.LayerSpecs[i] = LayerSpec{LocalRope: true, Window: window}
		default:
			return fmt.Errorf("layer type %q is not supported", t)
		}
	}
	return nil
}

// ids reads a token id field that may be absent, null, an int or a list of ints.
func ids(raw json.RawMessage) ([]int, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("want an int or a list of ints, have %s", raw)
	}
	return many, nil
}

func firstID(raw json.RawMessage) (int, error) {
	l, err := ids(raw)
	if err != nil || len(l) == 0 {
		return -1, err
	}
	if l[0] < 0 {
		return -1, fmt.Errorf("negative id %d", l[0])
	}
	return l[0], nil
}

// quantSpec is how MLX quantized one layer.
type quantSpec struct {
	GroupSize int `json:"group_size"`
	Bits      int `json:"bits"`
}

// mlxQuant is config.json's quantization block: defaults plus per-layer overrides keyed by module
// path ("lm_head", "model.embed_tokens", "model.layers.0.mlp.down_proj").
type mlxQuant struct {
	def       quantSpec
	overrides map[string]quantSpec
}

func parseQuant(raw json.RawMessage) (*mlxQuant, error) {
	var block map[string]json.RawMessage
	if err := json.Unmarshal(raw, &block); err != nil {
		return nil, err
	}
	q := &mlxQuant{overrides: map[string]quantSpec{}}
	for key, v := range block {
		var err error
		switch key {
		case "group_size":
			err = json.Unmarshal(v, &q.def.GroupSize)
		case "bits":
			err = json.Unmarshal(v, &q.def.Bits)
		case "quant_method":
			// MLX never writes one; GPTQ, AWQ and the like do, with tensors of their own.
			err = fmt.Errorf("quantization method %s is not supported (only MLX affine)", v)
		case "mode":
			var mode string
			if err = json.Unmarshal(v, &mode); err == nil && mode != "affine" {
				err = fmt.Errorf("mode %q is not supported (want affine)", mode)
			}
		default:
			// Per-layer entries are objects; a bool just says whether the layer was quantized,
			// which the presence of its scales already tells.
			if len(bytes.TrimSpace(v)) > 0 && bytes.TrimSpace(v)[0] == '{' {
				var s quantSpec
				if err = json.Unmarshal(v, &s); err == nil {
					q.overrides[key] = s
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
	}
	return q, nil
}

func (q *mlxQuant) spec(module string) quantSpec {
	s, ok := q.overrides[module]
	if !ok {
		return q.def
	}
	if s.GroupSize == 0 {
		s.GroupSize = q.def.GroupSize
	}
	if s.Bits == 0 {
		s.Bits = q.def.Bits
	}
	return s
}

// maxConfigBytes bounds config.json and generation_config.json, a few KB in practice.
const maxConfigBytes = 16 << 20

func openDir(dir string) (_ *Model, err error) {
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := fsutil.ReadFileLimit(cfgPath, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	cfg, quant, err := parseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", cfgPath, err)
	}
	if err := addGenerationEOS(dir, &cfg); err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}

	tokPath := filepath.Join(dir, "tokenizer.json")
	tok, err := fsutil.ReadFileLimit(tokPath, tokenizer.MaxJSONBytes)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}

	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	m := &Model{Path: dir, Format: "safetensors", Config: cfg, TokenizerJSON: tok,
		FileBytes: set.Bytes(), closers: []func() error{set.Close}}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if quant != nil {
		m.Format = "mlx"
	}
	if m.Config.Hybrid != nil {
		if err := prepareHybrid(set, quant, &m.Config); err != nil {
			return nil, fmt.Errorf("weights: %s: %w", dir, err)
		}
	} else if err := aliasLanguageModel(set, quant); err != nil {
		return nil, fmt.Errorf("weights: %s: %w", dir, err)
	}
	if _, ok := set.ByName["lm_head.weight"]; !ok {
		m.Config.TiedEmbeddings = true
	}
	if err := CheckConfig(m.Config); err != nil {
		return nil, fmt.Errorf("weights: %s: %w", cfgPath, err)
	}
	err = collect(m, func(name string) (*tensor.Tensor, string, error) {
		return fromSafetensors(set, quant, name)
	})
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	roundEmbedScale(m)
	return m, nil
}

// aliasLanguageModel gives the tensors of a multimodal checkpoint's language model (Gemma 3's
// language_model.model.*) their canonical names; the vision tower stays unused.
func aliasLanguageModel(set *safetensors.Set, quant *mlxQuant) error {
	aliases := map[string]*safetensors.Tensor{}
	for name, t := range set.ByName {
		if canon := canonicalName(name, false); canon != "" {
			if _, taken := set.ByName[canon]; taken {
				return fmt.Errorf("tensors %q and %q are the same weight", name, canon)
			}
			aliases[canon] = t
		}
	}
	maps.Copy(set.ByName, aliases)
	if quant != nil {
		for module, spec := range quant.overrides {
			if canon := canonicalName(module+".", false); canon != "" {
				quant.overrides[strings.TrimSuffix(canon, ".")] = spec
			}
		}
	}
	return nil
}

// roundEmbedScale rounds Config.EmbedScale as the reference implementation of the file's
// format does: transformers casts it to the embedding's dtype (F16, BF16), mlx-lm to bfloat16.
func roundEmbedScale(m *Model) {
	c := &m.Config
	if c.EmbedScale == 0 {
		return
	}
	switch m.Tensors["model.embed_tokens.weight"].DType {
	case tensor.BF16, tensor.Affine:
		c.EmbedScale = roundMantissa(c.EmbedScale, 16)
	case tensor.F16:
		c.EmbedScale = roundMantissa(c.EmbedScale, 13)
	}
}

// roundMantissa rounds x to nearest even, keeping 23-drop mantissa bits: bfloat16 (drop 16)
// or, for values in float16's normal range as sqrt(hidden size) is, float16 (drop 13).
func roundMantissa(x float32, drop uint) float32 {
	b := math.Float32bits(x)
	b += 1<<(drop-1) - 1 + (b>>drop)&1
	return math.Float32frombits(b &^ (1<<drop - 1))
}

// addGenerationEOS adds the end-of-sequence ids of generation_config.json, which chat models use
// to list ids config.json leaves out.
func addGenerationEOS(dir string, c *Config) error {
	p := filepath.Join(dir, "generation_config.json")
	raw, err := fsutil.ReadFileLimit(p, maxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	extra, err := ids(g.EOS)
	if err != nil {
		return fmt.Errorf("%s: eos_token_id: %w", p, err)
	}
	for _, id := range extra {
		if !containsInt(c.EOS, id) {
			c.EOS = append(c.EOS, id)
		}
	}
	return nil
}

func containsInt(l []int, v int) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// fromSafetensors makes the tensor.Tensor for a required name: plain F32/F16/BF16, or, when
// "<module>.scales" exists, one Affine tensor over the packed uint32 codes.
func fromSafetensors(set *safetensors.Set, quant *mlxQuant, name string) (*tensor.Tensor, string, error) {
	st, ok := set.ByName[name]
	if !ok {
		return nil, "", nil
	}
	file := fileOf(set, st)
	module, isWeight := strings.CutSuffix(name, ".weight")
	scales, quantized := set.ByName[module+".scales"]
	if !isWeight || !quantized {
		t, err := plain(st)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", file, err)
		}
		return t, file, nil
	}
	if quant == nil {
		return nil, "", fmt.Errorf("%s: tensor %q has scales but config.json has no quantization block", file, name)
	}
	biases, ok := set.ByName[module+".biases"]
	if !ok {
		return nil, "", fmt.Errorf("%s: tensor %q has scales but no %q", file, name, module+".biases")
	}
	spec := quant.spec(module)
	if st.DType != safetensors.U32 || len(st.Shape) != 2 {
		return nil, "", fmt.Errorf("%s: tensor %q: quantized weight is %s %v, want 2-D U32", file, name, st.DType, st.Shape)
	}
	if spec.Bits != 4 && spec.Bits != 8 {
		return nil, "", fmt.Errorf("%s: tensor %q: %d-bit quantization is not supported (want 4 or 8)", file, name, spec.Bits)
	}
	if spec.GroupSize <= 0 {
		return nil, "", fmt.Errorf("%s: tensor %q: bad group size %d", file, name, spec.GroupSize)
	}
	s, err := plain(scales)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	b, err := plain(biases)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	t := &tensor.Tensor{Name: name, DType: tensor.Affine,
		Shape: []int{st.Shape[0], st.Shape[1] * 32 / spec.Bits}, Data: st.Data,
		Bits: spec.Bits, GroupSize: spec.GroupSize, Scales: s, Biases: b}
	return t, file, nil
}

func plain(st *safetensors.Tensor) (*tensor.Tensor, error) {
	var dt tensor.DType
	switch st.DType {
	case safetensors.F32:
		dt = tensor.F32
	case safetensors.F16:
		dt = tensor.F16
	case safetensors.BF16:
		dt = tensor.BF16
	default:
		return nil, fmt.Errorf("tensor %q: dtype %s, want F32, F16 or BF16", st.Name, st.DType)
	}
	return &tensor.Tensor{Name: st.Name, DType: dt, Shape: st.Shape, Data: st.Data}, nil
}

func fileOf(set *safetensors.Set, t *safetensors.Tensor) string {
	for _, f := range set.Files {
		if ft, ok := f.Tensor(t.Name); ok && ft == t {
			return f.Path
		}
	}
	return "safetensors"
}
