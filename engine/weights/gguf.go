package weights

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/gguf"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/tokenizer"
)

// ggufLayerNames maps llama.cpp's per-block tensor names to HuggingFace's.
var ggufLayerNames = map[string]string{
	"attn_norm":   "input_layernorm",
	"attn_q":      "self_attn.q_proj",
	"attn_k":      "self_attn.k_proj",
	"attn_v":      "self_attn.v_proj",
	"attn_output": "self_attn.o_proj",
	"attn_q_norm": "self_attn.q_norm",
	"attn_k_norm": "self_attn.k_norm",
	"ffn_norm":    "post_attention_layernorm",
	"ffn_gate":    "mlp.gate_proj",
	"ffn_up":      "mlp.up_proj",
	"ffn_down":    "mlp.down_proj",
}

// ggufSandwichNames are Gemma 3's: its ffn_norm is the MLP's input norm, and the norms after
// attention and the MLP have names of their own.
var ggufSandwichNames = func() map[string]string {
	m := maps.Clone(ggufLayerNames)
	m["ffn_norm"] = "pre_feedforward_layernorm"
	m["post_attention_norm"] = "post_attention_layernorm"
	m["post_ffw_norm"] = "post_feedforward_layernorm"
	return m
}()

// layerNames is the GGUF-to-HuggingFace block name map of a model of config c.
func layerNames(c *Config) map[string]string {
	if c.SandwichNorms {
		return ggufSandwichNames
	}
	return ggufLayerNames
}

// hfName is the HuggingFace name of a GGUF tensor name under the block names of names, and
// false for names the model does not use.
func hfName(name string, names map[string]string) (string, bool) {
	switch name {
	case "token_embd.weight":
		return "model.embed_tokens.weight", true
	case "output_norm.weight":
		return "model.norm.weight", true
	case "output.weight":
		return "lm_head.weight", true
	}
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return "", false
	}
	num, rest, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	if n, err := strconv.Atoi(num); err != nil || n < 0 || strconv.Itoa(n) != num {
		return "", false
	}
	base, suffix, ok := strings.Cut(rest, ".")
	if !ok || (suffix != "weight" && suffix != "bias") {
		return "", false
	}
	hf, ok := names[base]
	if !ok {
		return "", false
	}
	return "model.layers." + num + "." + hf + "." + suffix, true
}

// ggufName is the GGUF name of a HuggingFace tensor name hfName maps.
func ggufName(hf string, names map[string]string) string {
	switch hf {
	case "model.embed_tokens.weight":
		return "token_embd.weight"
	case "model.norm.weight":
		return "output_norm.weight"
	case "lm_head.weight":
		return "output.weight"
	}
	rest, _ := strings.CutPrefix(hf, "model.layers.")
	num, rest, _ := strings.Cut(rest, ".")
	for g, h := range names {
		if suffix, ok := strings.CutPrefix(rest, h+"."); ok {
			return "blk." + num + "." + g + "." + suffix
		}
	}
	return hf
}

func openGGUF(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	m, err := fromGGUF(f, path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("weights: %w", err)
	}
	m.FileBytes = f.Size()
	m.closers = []func() error{f.Close}
	return m, nil
}

// fromGGUF describes a parsed GGUF file; path is for errors.
func fromGGUF(f *gguf.File, path string) (*Model, error) {
	m := &Model{Path: path, Format: "gguf"}
	var err error
	if m.GGUFVocab, err = ggufVocab(f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if arch, _ := f.String("general.architecture"); hybridGGUFArchs[arch] != "" {
		return hybridFromGGUF(f, path, arch, m)
	}
	if m.Config, err = ggufConfig(f, m.GGUFVocab); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := CheckConfig(m.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	names := layerNames(&m.Config)
	byHF := map[string]*tensor.Tensor{}
	for _, t := range f.Tensors {
		if hf, ok := hfName(t.Name, names); ok {
			renamed := *t // the struct, not the mapped data
			renamed.Name = hf
			byHF[hf] = &renamed
		}
	}
	err = collect(m, func(name string) (*tensor.Tensor, string, error) {
		t, ok := byHF[name]
		if !ok {
			return nil, "", fmt.Errorf("%s: missing tensor %q (%s)", path, ggufName(name, names), name)
		}
		return t, path, nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func ggufConfig(f *gguf.File, v *tokenizer.GGUFVocab) (Config, error) {
	arch, _ := f.String("general.architecture")
	c := Config{Arch: arch, BOS: v.BOS}
	switch arch {
	case "llama", "smollm3":
		// llama.cpp's converter permutes q/k rows so that interleaved pairs rotate together.
		c.RopeStyle = backend.RopeInterleaved
	case "qwen2":
		c.RopeStyle = backend.RopeHalf
		c.QKVBias = true
	case "qwen3":
		c.RopeStyle = backend.RopeHalf
		c.QKNorm = true
	case "gemma3":
		c.RopeStyle = backend.RopeHalf
		c.QKNorm, c.SandwichNorms, c.Act = true, true, GELUTanh
		// The converter stores Gemma's norm weights with the 1 of (1+w) added, so the norms are
		// plain (NormOffset 0).
	default:
		return Config{}, fmt.Errorf("general.architecture %q is not supported (want llama, qwen2, qwen3, smollm3 or gemma3)", arch)
	}
	p := arch + "."
	var err error
	num := func(key string, def int) int {
		if err != nil {
			return 0
		}
		v, present := f.Metadata[p+key]
		switch {
		case !present && def >= 0:
			return def
		case !present:
			err = fmt.Errorf("metadata %s%s is missing", p, key)
			return 0
		}
		u, ok := f.Uint(p + key)
		if !ok || u > math.MaxInt32 {
			err = fmt.Errorf("metadata %s%s: want a non-negative integer, have %v", p, key, v)
		}
		return int(u)
	}
	c.Dim = num("embedding_length", -1)
	c.Layers = num("block_count", -1)
	c.FFN = num("feed_forward_length", -1)
	c.Heads = num("attention.head_count", -1)
	c.KVHeads = num("attention.head_count_kv", c.Heads)
	c.MaxContext = num("context_length", -1)
	if c.Heads > 0 {
		c.HeadDim = c.Dim / c.Heads
	}
	c.HeadDim = num("attention.key_length", c.HeadDim)
	ropeDims := num("rope.dimension_count", c.HeadDim)
	window := num("attention.sliding_window", 0)
	if err != nil {
		return Config{}, err
	}
	if c.Layers > maxLayers {
		return Config{}, fmt.Errorf("metadata %sblock_count %d: at most %d layers", p, c.Layers, maxLayers)
	}
	if ropeDims <= 0 || ropeDims > c.HeadDim || ropeDims%2 != 0 {
		return Config{}, fmt.Errorf("rope over %d of %d head dimensions", ropeDims, c.HeadDim)
	}
	if ropeDims < c.HeadDim {
		c.RopeDims = ropeDims
	}
	if vl, ok := f.Uint(p + "attention.value_length"); ok && int(vl) != c.HeadDim {
		return Config{}, fmt.Errorf("value length %d differs from key length %d", vl, c.HeadDim)
	}
	eps, ok := f.Float(p + "attention.layer_norm_rms_epsilon")
	if !ok {
		return Config{}, fmt.Errorf("metadata %sattention.layer_norm_rms_epsilon is missing", p)
	}
	c.NormEps = eps
	c.RopeTheta = 10000
	if _, present := f.Metadata[p+"rope.freq_base"]; present {
		if c.RopeTheta, ok = f.Float(p + "rope.freq_base"); !ok {
			return Config{}, fmt.Errorf("metadata %srope.freq_base is not a float", p)
		}
	}
	if typ, ok := f.String(p + "rope.scaling.type"); ok && typ != "none" {
		factor, _ := f.Float(p + "rope.scaling.factor")
		if typ != "linear" {
			return Config{}, fmt.Errorf("rope scaling %q is not supported", typ)
		}
		c.RopeScale = RopeScaling{Type: typ, Factor: factor}
	}
	if s, ok := f.Float(p + "rope.scale_linear"); ok && s != 1 {
		return Config{}, fmt.Errorf("linear rope scaling %g is not supported", s)
	}
	if rf, ok := f.Tensor("rope_freqs.weight"); ok {
		if c.RopeFactors, err = ropeFactors(rf, c.HeadDim); err != nil {
			return Config{}, err
		}
	}

	switch arch {
	case "smollm3":
		// llama.cpp leaves RoPE out of every fourth layer (n_no_rope_layer_step, no metadata key).
		c.LayerSpecs = make([]LayerSpec, c.Layers)
		for i := range c.LayerSpecs {
			c.LayerSpecs[i].NoRope = (i+1)%4 == 0
		}
	case "gemma3":
		if err := gemma3GGUF(f, &c, window); err != nil {
			return Config{}, err
		}
	}

	c.Vocab = len(v.Tokens)
	if emb, ok := f.Tensor("token_embd.weight"); ok && len(emb.Shape) == 2 && emb.Shape[0] != c.Vocab {
		return Config{}, fmt.Errorf("token_embd.weight has %d rows for %d tokens", emb.Shape[0], c.Vocab)
	}
	if _, ok := f.Tensor("output.weight"); !ok {
		c.TiedEmbeddings = true
	}
	if v.EOS >= 0 {
		c.EOS = append(c.EOS, v.EOS)
	}
	if eot, ok := f.Uint("tokenizer.ggml.eot_token_id"); ok && int(eot) != v.EOS && eot < uint64(c.Vocab) {
		c.EOS = append(c.EOS, int(eot))
	}
	return c, nil
}

// gemma3GGUF sets what llama.cpp's Gemma 3 hard-codes or reads: every sixth layer global, the
// others sliding over window positions with RoPE base 10000 unscaled, embeddings scaled by
// sqrt(hidden) in float32, attention scaled by the key length (hidden/heads for the 27B model;
// an attention.scale key wins). The file has no query_pre_attn_scalar.
func gemma3GGUF(f *gguf.File, c *Config, window int) error {
	if window <= 0 {
		return fmt.Errorf("metadata gemma3.attention.sliding_window %d", window)
	}
	for _, key := range []string{"gemma3.final_logit_softcapping", "gemma3.attn_logit_softcapping"} {
		if v, ok := f.Float(key); ok && v != 0 {
			return fmt.Errorf("metadata %s %g is not supported", key, v)
		}
	}
	if c.Layers == 62 {
		// llama.cpp takes a 62-layer file for the 27B model, whose query_pre_attn_scalar is
		// hidden/heads rather than the head size.
		c.QueryScale = float64(c.Dim / c.Heads)
	}
	if s, ok := f.Float("gemma3.attention.scale"); ok {
		if !(s > 0) {
			return fmt.Errorf("metadata gemma3.attention.scale %g", s)
		}
		c.QueryScale = 1 / (s * s)
	}
	c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
	c.LocalRopeTheta = 10000
	c.LayerSpecs = make([]LayerSpec, c.Layers)
	for i := range c.LayerSpecs {
		if (i+1)%6 != 0 {
			c.LayerSpecs[i] = LayerSpec{LocalRope: true, Window: window}
		}
	}
	return nil
}

// ropeFactors reads the F32 rope_freqs.weight tensor of head/2 divisors.
func ropeFactors(t *tensor.Tensor, headDim int) ([]float32, error) {
	if t.DType != tensor.F32 || len(t.Shape) != 1 || t.Shape[0] != headDim/2 {
		return nil, fmt.Errorf("tensor %q: %v %v, want F32 [%d]", t.Name, t.DType, t.Shape, headDim/2)
	}
	out := make([]float32, headDim/2)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

// ggufVocab reads the tokenizer.ggml.* metadata.
func ggufVocab(f *gguf.File) (*tokenizer.GGUFVocab, error) {
	v := &tokenizer.GGUFVocab{}
	var ok bool
	if v.Model, ok = f.String("tokenizer.ggml.model"); !ok {
		return nil, errors.New("metadata tokenizer.ggml.model is missing")
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	if v.Tokens, ok = f.Metadata["tokenizer.ggml.tokens"].([]string); !ok || len(v.Tokens) == 0 {
		return nil, errors.New("metadata tokenizer.ggml.tokens is missing or not a string array")
	}
	n := len(v.Tokens)
	if raw, present := f.Metadata["tokenizer.ggml.scores"]; present {
		if v.Scores, ok = raw.([]float32); !ok || len(v.Scores) != n {
			return nil, fmt.Errorf("metadata tokenizer.ggml.scores: want %d float32s", n)
		}
	}
	if raw, present := f.Metadata["tokenizer.ggml.token_type"]; present {
		if v.Types, ok = raw.([]int32); !ok || len(v.Types) != n {
			return nil, fmt.Errorf("metadata tokenizer.ggml.token_type: want %d int32s", n)
		}
	}
	if raw, present := f.Metadata["tokenizer.ggml.merges"]; present {
		if v.Merges, ok = raw.([]string); !ok {
			return nil, errors.New("metadata tokenizer.ggml.merges: want a string array")
		}
	}
	for _, id := range []struct {
		dst *int
		key string
	}{
		{&v.BOS, "bos_token_id"}, {&v.EOS, "eos_token_id"}, {&v.UNK, "unknown_token_id"}, {&v.PAD, "padding_token_id"},
	} {
		*id.dst = -1
		key := "tokenizer.ggml." + id.key
		if _, present := f.Metadata[key]; !present {
			continue
		}
		u, ok := f.Uint(key)
		if !ok || u >= uint64(n) {
			return nil, fmt.Errorf("metadata %s: %v is not a token id below %d", key, f.Metadata[key], n)
		}
		*id.dst = int(u)
	}
	// Without the keys, llama.cpp adds BOS for SentencePiece vocabularies only.
	v.AddBOS = v.Model == "llama"
	for _, b := range []struct {
		dst *bool
		key string
	}{{&v.AddBOS, "tokenizer.ggml.add_bos_token"}, {&v.AddEOS, "tokenizer.ggml.add_eos_token"}} {
		if _, present := f.Metadata[b.key]; !present {
			continue
		}
		if *b.dst, ok = f.Bool(b.key); !ok {
			return nil, fmt.Errorf("metadata %s: want a bool", b.key)
		}
	}
	if _, present := f.Metadata["tokenizer.ggml.add_space_prefix"]; present {
		prefix, ok := f.Bool("tokenizer.ggml.add_space_prefix")
		if !ok {
			return nil, fmt.Errorf("metadata tokenizer.ggml.add_space_prefix: want a bool")
		}
		v.NoSpacePrefix = !prefix
	}
	return v, nil
}
