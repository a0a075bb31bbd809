// Package weights opens a model as users have it on disk (a HuggingFace or MLX directory, or a
// GGUF file), maps it into memory and describes it: its hyperparameters, its tensors under
// canonical HuggingFace names, and where its tokenizer comes from.
package weights

import (
	"errors"
	"math"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/tokenizer"
)

// RopeScaling is the optional "rope_scaling" block of config.json (only "llama3" is supported;
// an empty Type means none).
type RopeScaling struct {
	Type                 string
	Factor               float64
	LowFreqFactor        float64
	HighFreqFactor       float64
	OriginalMaxPositions int
}

// LayerKind is what mixes positions in one layer of a model.
type LayerKind int

const (
	// LayerAttention is causal self-attention over a KV cache (full or sliding-window).
	LayerAttention LayerKind = iota
	// LayerShortConv is LFM2's gated short convolution block.
	LayerShortConv
	// LayerLinearAttention is Qwen3.5's Gated DeltaNet block.
	LayerLinearAttention
)

// LayerSpec describes one layer where layers differ. The zero value is a full-attention layer
// with the model's rotary embedding, as every layer of a Llama.
type LayerSpec struct {
	Kind LayerKind
	// NoRope: the attention layer adds no positional information (SmolLM3's no_rope_layers).
	NoRope bool
	// LocalRope: the attention layer uses Config.LocalRopeTheta without scaling (Gemma 3's
	// sliding layers) instead of the model's RopeTheta and RopeScale.
	LocalRope bool
	// Window > 0 limits the attention of position p to keys at positions (p-Window, p].
	Window int
}

// Activation is the gate activation of the feed-forward block.
type Activation int

const (
	// SiLU gates a SwiGLU MLP (Llama, Qwen, SmolLM3).
	SiLU Activation = iota
	// GELUTanh is the tanh approximation of GELU (Gemma's gelu_pytorch_tanh).
	GELUTanh
)

// Config holds a model's hyperparameters, read from the model's own files.
type Config struct {
	Arch       string // "llama", "qwen2", "qwen3", "smollm3" or "gemma3"
	Vocab      int
	Dim        int // hidden size
	Layers     int
	Heads      int
	KVHeads    int
	HeadDim    int
	FFN        int // intermediate size
	NormEps    float64
	RopeTheta  float64
	RopeStyle  backend.RopeStyle // GGUF llama files: RopeInterleaved (their q/k are permuted)
	RopeScale  RopeScaling
	MaxContext int
	// TiedEmbeddings: the output projection is model.embed_tokens.weight.
	TiedEmbeddings bool
	// QKVBias: q/k/v projections carry biases (Qwen2).
	QKVBias bool
	// QKNorm: each head of q and k is RMS-normalized before RoPE (Qwen3, Gemma 3), with
	// weights self_attn.q_norm / self_attn.k_norm of HeadDim values.
	QKNorm bool
	// NormOffset is added to every RMSNorm weight: 1 for Gemma's zero-centred (1+w) norms.
	NormOffset float32
	// SandwichNorms: attention and MLP outputs are normalized before the residual add, and the
	// MLP input has its own norm (Gemma 3: post_attention_layernorm, pre_feedforward_layernorm,
	// post_feedforward_layernorm).
	SandwichNorms bool
	// Act is the feed-forward gate activation.
	Act Activation
	// EmbedScale, when not 0, multiplies the embeddings (Gemma: sqrt(hidden size)).
	EmbedScale float32
	// QueryScale, when not 0, replaces HeadDim in the attention scale 1/sqrt(HeadDim)
	// (Gemma 3's query_pre_attn_scalar).
	QueryScale float64
	// RopeDims is how many leading dimensions of each head rotate (partial rotary embedding);
	// 0 means all HeadDim.
	RopeDims int
	// LocalRopeTheta is the RoPE base of layers with LayerSpec.LocalRope.
	LocalRopeTheta float64
	// LayerSpecs, when not nil, has one entry per layer; nil means every layer is LayerSpec{}.
	LayerSpecs []LayerSpec
	// Hybrid is set for the recurrent-hybrid families (hybrid.go).
	Hybrid *Hybrid
	BOS    int   // -1 when the model has none
	EOS    []int // every id that ends generation

	// RopeFactors, when set, divides each of the HeadDim/2 inverse frequencies: GGUF files store
	// llama3 rope scaling this way (the rope_freqs.weight tensor) instead of as parameters, and
	// RopeScale is then empty.
	RopeFactors []float32
}

// Layer is the spec of layer i.
func (c *Config) Layer(i int) LayerSpec {
	if c.LayerSpecs == nil {
		return LayerSpec{}
	}
	return c.LayerSpecs[i]
}

// AttnScale is the factor of attention scores.
func (c *Config) AttnScale() float32 {
	d := float64(c.HeadDim)
	if c.QueryScale != 0 {
		d = c.QueryScale
	}
	return float32(1 / math.Sqrt(d))
}

// Model is an opened model. Tensors are keyed by HuggingFace names, e.g.
// "model.layers.0.self_attn.q_proj.weight", "model.embed_tokens.weight", "lm_head.weight",
// "model.norm.weight"; an MLX-quantized tensor is one Affine entry under its ".weight" name.
type Model struct {
	Path    string
	Format  string // "safetensors", "mlx", "gguf"
	Config  Config
	Tensors map[string]*tensor.Tensor
	// Exactly one tokenizer source is set: a tokenizer.json's bytes, or a GGUF vocabulary.
	TokenizerJSON []byte
	GGUFVocab     *tokenizer.GGUFVocab
	// FileBytes is the total size of the mapped weight files.
	FileBytes int64

	closers []func() error
}

// Close unmaps the model's files; its tensors must not be used afterwards.
func (m *Model) Close() error {
	var errs []error
	for _, c := range m.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	m.closers = nil
	return errors.Join(errs...)
}

// WeightBytes is the size of the tensors the model uses (an Affine tensor with its scales and
// biases), each counted once.
func (m *Model) WeightBytes() int64 {
	var n int64
	for _, t := range m.Tensors {
		n += int64(len(t.Data))
		if t.DType == tensor.Affine {
			n += int64(len(t.Scales.Data) + len(t.Biases.Data))
		}
	}
	return n
}
