// Package weights opens a model as users have it on disk (a HuggingFace or MLX directory, or a
// GGUF file), maps it into memory and describes it: its hyperparameters, its tensors under
// canonical HuggingFace names, and where its tokenizer comes from.
package weights

import (
	"errors"

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

// Config holds a model's hyperparameters, read from the model's own files.
type Config struct {
	Arch       string // "llama" or "qwen2"
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
	BOS     int   // -1 when the model has none
	EOS     []int // every id that ends generation

	// RopeFactors, when set, divides each of the HeadDim/2 inverse frequencies: GGUF files store
	// llama3 rope scaling this way (the rope_freqs.weight tensor) instead of as parameters, and
	// RopeScale is then empty.
	RopeFactors []float32
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
