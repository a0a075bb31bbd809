package weights

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/safetensors"
	"github.com/layaapp/laya/engine/tensor"
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
	c := Config{BOS: -1}
	arch := h.ModelType
	if len(h.Architectures) > 0 {
		switch h.Architectures[0] {
		case "LlamaForCausalLM":
			arch = "llama"
		case "Qwen2ForCausalLM":
			arch = "qwen2"
		default:
			return Config{}, nil, fmt.Errorf("architecture %q is not supported (want LlamaForCausalLM or Qwen2ForCausalLM)", h.Architectures[0])
		}
	}
	switch arch {
	case "llama", "qwen2":
	default:
		return Config{}, nil, fmt.Errorf("model type %q is not supported (want llama or qwen2)", arch)
	}
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
	c.NormEps = 1e-6 // the transformers default for both architectures
	if h.RMSNormEps != nil {
		c.NormEps = *h.RMSNormEps
	}
	c.MaxContext = 2048
	if arch == "qwen2" {
		c.MaxContext = 32768
	}
	if h.MaxPositions != nil {
		c.MaxContext = *h.MaxPositions
	}
	if h.HiddenAct != nil && *h.HiddenAct != "silu" {
		return Config{}, nil, fmt.Errorf("hidden_act %q is not supported (want silu)", *h.HiddenAct)
	}
	if h.MLPBias != nil && *h.MLPBias || arch == "llama" && h.AttentionBias != nil && *h.AttentionBias {
		return Config{}, nil, errors.New("llama attention_bias and mlp_bias are not supported")
	}
	if h.UseSlidingWindow != nil && *h.UseSlidingWindow {
		return Config{}, nil, errors.New("use_sliding_window is not supported")
	}
	c.QKVBias = arch == "qwen2"
	c.RopeStyle = backend.RopeHalf // transformers rotates halves for both architectures
	c.TiedEmbeddings = h.TieWordEmbeddings != nil && *h.TieWordEmbeddings

	c.RopeTheta = 10000
	if h.RopeTheta != nil {
		c.RopeTheta = *h.RopeTheta
	}
	for _, raw := range []json.RawMessage{h.RopeParameters, h.RopeScaling} {
		if isNull(raw) {
			continue
		}
		var r ropeParams
		if err := json.Unmarshal(raw, &r); err != nil {
			return Config{}, nil, fmt.Errorf("rope scaling: %w", err)
		}
		if r.RopeTheta != nil && h.RopeTheta == nil {
			c.RopeTheta = *r.RopeTheta
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
		case "llama3":
			c.RopeScale = RopeScaling{Type: typ, Factor: r.Factor, LowFreqFactor: r.LowFreqFactor,
				HighFreqFactor: r.HighFreqFactor, OriginalMaxPositions: r.OriginalMax}
		default:
			return Config{}, nil, fmt.Errorf("rope scaling %q is not supported (only llama3)", typ)
		}
	}

	if c.BOS, err = firstID(h.BOSTokenID); err != nil {
		return Config{}, nil, fmt.Errorf("bos_token_id: %w", err)
	}
	if c.EOS, err = ids(h.EOSTokenID); err != nil {
		return Config{}, nil, fmt.Errorf("eos_token_id: %w", err)
	}
	var quant *mlxQuant
	for _, block := range []json.RawMessage{h.Quantization, h.QuantizationConfig} {
		if quant == nil && !isNull(block) {
			if quant, err = parseQuant(block); err != nil {
				return Config{}, nil, fmt.Errorf("quantization: %w", err)
			}
		}
	}
	return c, quant, nil
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

func openDir(dir string) (_ *Model, err error) {
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
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
	tok, err := os.ReadFile(tokPath)
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
	}
	if _, ok := set.ByName["lm_head.weight"]; !ok {
		m.Config.TiedEmbeddings = true
	}
	if err := checkConfig(m.Config); err != nil {
		return nil, fmt.Errorf("weights: %s: %w", cfgPath, err)
	}
	err = collect(m, func(name string) (*tensor.Tensor, string, error) {
		return fromSafetensors(set, quant, name)
	})
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	return m, nil
}

// addGenerationEOS adds the end-of-sequence ids of generation_config.json, which chat models use
// to list ids config.json leaves out.
func addGenerationEOS(dir string, c *Config) error {
	p := filepath.Join(dir, "generation_config.json")
	raw, err := os.ReadFile(p)
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
