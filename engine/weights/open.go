package weights

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/layaapp/laya/engine/gguf"
	"github.com/layaapp/laya/engine/tensor"
)

// Open opens the model at path: a .gguf file, or a directory holding config.json, *.safetensors
// (HuggingFace F32/F16/BF16, or MLX affine-quantized) and tokenizer.json. The weights stay in the
// mapped files. Every tensor the architecture needs must be present with the shape the config
// implies; other tensors in the files are left out of Model.Tensors.
func Open(path string) (*Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	if st.IsDir() {
		return openDir(path)
	}
	if !strings.HasSuffix(strings.ToLower(path), ".gguf") && !hasGGUFMagic(path) {
		return nil, fmt.Errorf("weights: %s: not a model directory or a .gguf file", path)
	}
	return openGGUF(path)
}

func hasGGUFMagic(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = f.Read(b[:])
	return err == nil && string(b[:]) == gguf.Magic
}

// want is a tensor the architecture needs and its shape.
type want struct {
	name  string
	shape []int
}

// required lists the tensors a forward pass of c reads, under HuggingFace names.
func required(c Config) []want {
	if c.Hybrid != nil {
		return hybridRequired(c)
	}
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	ws := []want{{"model.embed_tokens.weight", []int{c.Vocab, c.Dim}}, {"model.norm.weight", []int{c.Dim}}}
	if !c.TiedEmbeddings {
		ws = append(ws, want{"lm_head.weight", []int{c.Vocab, c.Dim}})
	}
	for i := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		ws = append(ws,
			want{p + "input_layernorm.weight", []int{c.Dim}},
			want{p + "self_attn.q_proj.weight", []int{qd, c.Dim}},
			want{p + "self_attn.k_proj.weight", []int{kvd, c.Dim}},
			want{p + "self_attn.v_proj.weight", []int{kvd, c.Dim}},
			want{p + "self_attn.o_proj.weight", []int{c.Dim, qd}},
			want{p + "post_attention_layernorm.weight", []int{c.Dim}},
			want{p + "mlp.gate_proj.weight", []int{c.FFN, c.Dim}},
			want{p + "mlp.up_proj.weight", []int{c.FFN, c.Dim}},
			want{p + "mlp.down_proj.weight", []int{c.Dim, c.FFN}},
		)
		if c.QKVBias {
			ws = append(ws,
				want{p + "self_attn.q_proj.bias", []int{qd}},
				want{p + "self_attn.k_proj.bias", []int{kvd}},
				want{p + "self_attn.v_proj.bias", []int{kvd}},
			)
		}
		if c.QKNorm {
			ws = append(ws,
				want{p + "self_attn.q_norm.weight", []int{c.HeadDim}},
				want{p + "self_attn.k_norm.weight", []int{c.HeadDim}},
			)
		}
		if c.SandwichNorms {
			ws = append(ws,
				want{p + "pre_feedforward_layernorm.weight", []int{c.Dim}},
				want{p + "post_feedforward_layernorm.weight", []int{c.Dim}},
			)
		}
	}
	return ws
}

// Bounds on sizes read from a file, checked before any of them sizes an allocation: far above
// any model this engine runs, low enough that products of them cannot overflow.
const (
	maxWidth = 1 << 20 // hidden size, intermediate size, heads, head dim
	maxVocab = 1 << 22
)

// CheckConfig rejects hyperparameters no forward pass can use, before they size anything.
func CheckConfig(c Config) error {
	switch {
	case c.Vocab <= 0 || c.Dim <= 0 || c.Layers <= 0 || c.FFN <= 0:
		return fmt.Errorf("bad config: vocab %d, hidden %d, layers %d, intermediate %d", c.Vocab, c.Dim, c.Layers, c.FFN)
	case c.Layers > maxLayers || c.Vocab > maxVocab || c.Dim > maxWidth || c.FFN > maxWidth:
		return fmt.Errorf("bad config: vocab %d, hidden %d, layers %d, intermediate %d (at most %d, %d, %d, %d)",
			c.Vocab, c.Dim, c.Layers, c.FFN, maxVocab, maxWidth, maxLayers, maxWidth)
	case c.Heads <= 0 || c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 || c.Heads > maxWidth:
		return fmt.Errorf("bad config: %d attention heads for %d kv heads", c.Heads, c.KVHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.HeadDim > maxWidth || c.Heads*c.HeadDim > maxWidth:
		return fmt.Errorf("bad config: head dim %d for %d heads (must be even and positive, at most %d in all)", c.HeadDim, c.Heads, maxWidth)
	case c.LayerSpecs != nil && len(c.LayerSpecs) != c.Layers:
		return fmt.Errorf("bad config: %d layer specs for %d layers", len(c.LayerSpecs), c.Layers)
	case c.RopeDims < 0 || c.RopeDims%2 != 0 || c.RopeDims > c.HeadDim:
		return fmt.Errorf("bad config: %d rotary dimensions of head dim %d", c.RopeDims, c.HeadDim)
	case !(c.QueryScale >= 0) || math.IsInf(c.QueryScale, 0) || !(c.EmbedScale >= 0) || math.IsInf(float64(c.EmbedScale), 0):
		return fmt.Errorf("bad config: query scale %g, embedding scale %g", c.QueryScale, c.EmbedScale)
	case !(c.NormEps > 0) || !(c.RopeTheta > 0):
		return fmt.Errorf("bad config: rms norm eps %g, rope theta %g", c.NormEps, c.RopeTheta)
	case c.MaxContext <= 0:
		return fmt.Errorf("bad config: max context %d", c.MaxContext)
	case c.BOS >= c.Vocab:
		return fmt.Errorf("bad config: bos token %d outside the vocabulary of %d", c.BOS, c.Vocab)
	case c.RopeFactors != nil && len(c.RopeFactors) != c.HeadDim/2:
		return fmt.Errorf("bad config: %d rope factors for head dim %d", len(c.RopeFactors), c.HeadDim)
	}
	if c.Hybrid != nil {
		if err := checkHybrid(c); err != nil {
			return err
		}
	}
	for _, id := range c.EOS {
		if id < 0 || id >= c.Vocab {
			return fmt.Errorf("bad config: eos token %d outside the vocabulary of %d", id, c.Vocab)
		}
	}
	for _, f := range c.RopeFactors {
		if !(f > 0) {
			return fmt.Errorf("bad config: rope factor %g", f)
		}
	}
	for i, l := range c.LayerSpecs {
		if l.Window < 0 || l.LocalRope && !(c.LocalRopeTheta > 0) {
			return fmt.Errorf("bad config: layer %d: window %d, local rope theta %g", i, l.Window, c.LocalRopeTheta)
		}
	}
	switch s := c.RopeScale; s.Type {
	case "":
	case "llama3":
		if !(s.Factor > 0) || !(s.LowFreqFactor > 0) || !(s.HighFreqFactor > s.LowFreqFactor) || s.OriginalMaxPositions <= 0 {
			return fmt.Errorf("bad llama3 rope scaling %+v", s)
		}
	case "linear":
		if !(s.Factor > 0) || math.IsInf(s.Factor, 0) {
			return fmt.Errorf("bad linear rope scaling factor %g", s.Factor)
		}
	default:
		return fmt.Errorf("rope scaling %q is not supported (only llama3 and linear)", s.Type)
	}
	return nil
}

// collect builds Model.Tensors from the tensors the files hold: for each required name, lookup
// returns the tensor and the file it came from (for errors), or nil when absent.
func collect(m *Model, lookup func(name string) (*tensor.Tensor, string, error)) error {
	m.Tensors = map[string]*tensor.Tensor{}
	for _, w := range required(m.Config) {
		t, file, err := lookup(w.name)
		if err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("%s: missing tensor %q", m.Path, w.name)
		}
		if !slices.Equal(t.Shape, w.shape) {
			return fmt.Errorf("%s: tensor %q: shape %v, want %v", file, w.name, t.Shape, w.shape)
		}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		m.Tensors[w.name] = t
	}
	return nil
}
