package weights

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	"ffn_norm":    "post_attention_layernorm",
	"ffn_gate":    "mlp.gate_proj",
	"ffn_up":      "mlp.up_proj",
	"ffn_down":    "mlp.down_proj",
}

// hfName is the HuggingFace name of a GGUF tensor name, and false for names the model does not use.
func hfName(name string) (string, bool) {
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
	hf, ok := ggufLayerNames[base]
	if !ok {
		return "", false
	}
	return "model.layers." + num + "." + hf + "." + suffix, true
}

// ggufName is the GGUF name of a HuggingFace tensor name hfName maps.
func ggufName(hf string) string {
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
	for g, h := range ggufLayerNames {
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
	if m.Config, err = ggufConfig(f, m.GGUFVocab); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkConfig(m.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	byHF := map[string]*tensor.Tensor{}
	for _, t := range f.Tensors {
		if hf, ok := hfName(t.Name); ok {
			renamed := *t // the struct, not the mapped data
			renamed.Name = hf
			byHF[hf] = &renamed
		}
	}
	err = collect(m, func(name string) (*tensor.Tensor, string, error) {
		t, ok := byHF[name]
		if !ok {
			return nil, "", fmt.Errorf("%s: missing tensor %q (%s)", path, ggufName(name), name)
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
	case "llama":
		// llama.cpp's converter permutes q/k rows so that interleaved pairs rotate together.
		c.RopeStyle = backend.RopeInterleaved
	case "qwen2":
		c.RopeStyle = backend.RopeHalf
		c.QKVBias = true
	default:
		return Config{}, fmt.Errorf("general.architecture %q is not supported (want llama or qwen2)", arch)
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
	if err != nil {
		return Config{}, err
	}
	if ropeDims != c.HeadDim {
		return Config{}, fmt.Errorf("rope over %d of %d head dimensions is not supported", ropeDims, c.HeadDim)
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
		return Config{}, fmt.Errorf("rope scaling %q is not supported", typ)
	}
	if s, ok := f.Float(p + "rope.scale_linear"); ok && s != 1 {
		return Config{}, fmt.Errorf("linear rope scaling %g is not supported", s)
	}
	if rf, ok := f.Tensor("rope_freqs.weight"); ok {
		if c.RopeFactors, err = ropeFactors(rf, c.HeadDim); err != nil {
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
