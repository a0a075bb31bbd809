package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/tokenizer"
	"github.com/layaapp/laya/engine/weights"
)

// maxRows is the most prompt positions one forward pass takes; longer prompts are prefilled in
// chunks so activation buffers stay bounded.
const maxRows = 256

// Model is a loaded model on one backend. Many sessions may share it; it runs one forward pass at
// a time.
type Model struct {
	w      *weights.Model
	cfg    weights.Config
	tok    *tokenizer.Tokenizer
	info   Info
	ctxLen int // positions per session
	eos    map[int32]bool
	be     backend.Backend
	rope   backend.Rope
	embed  *tensor.Tensor
	norm   *tensor.Tensor
	head   *tensor.Tensor
	layers []layer
	// tensors is every weight the forward pass reads, once each, as given to Prepare.
	tensors []*tensor.Tensor

	// mu serializes forward passes: they share act and the backend.
	mu     sync.Mutex
	act    *activations
	closed bool
}

type layer struct {
	attnNorm, ffnNorm *tensor.Tensor
	wq, wk, wv, wo    *tensor.Tensor
	bq, bk, bv        *tensor.Tensor // nil unless Config.QKVBias
	wGate, wUp, wDown *tensor.Tensor
}

// activations are the forward pass's working buffers, sized for maxRows positions.
type activations struct {
	x, xb, q, k, v, att, gate, up backend.Buffer
	logits                        backend.Buffer // one row of vocab
}

func newActivations(be backend.Backend, c weights.Config, rows int) *activations {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	return &activations{
		x: be.NewBuffer(rows * c.Dim), xb: be.NewBuffer(rows * c.Dim),
		q: be.NewBuffer(rows * qd), k: be.NewBuffer(rows * kvd), v: be.NewBuffer(rows * kvd),
		att: be.NewBuffer(rows * qd), gate: be.NewBuffer(rows * c.FFN), up: be.NewBuffer(rows * c.FFN),
		logits: be.NewBuffer(c.Vocab),
	}
}

// bindWeights looks up every tensor the forward pass needs and checks its shape, so a bad file
// fails at load with the tensor's name rather than inside a kernel.
func (m *Model) bindWeights() error {
	c := m.cfg
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	var err error
	get := func(name string, shape ...int) *tensor.Tensor {
		if err != nil {
			return nil
		}
		t := m.w.Tensors[name]
		switch {
		case t == nil:
			err = fmt.Errorf("missing tensor %q", name)
		case !slices.Equal(t.Shape, shape):
			err = fmt.Errorf("tensor %q: shape %v, want %v", name, t.Shape, shape)
		default:
			if e := t.Validate(); e != nil {
				err = e
			} else if !slices.Contains(m.tensors, t) {
				m.tensors = append(m.tensors, t)
			}
		}
		return t
	}
	m.embed = get("model.embed_tokens.weight", c.Vocab, c.Dim)
	for i := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		l := layer{
			attnNorm: get(p+"input_layernorm.weight", c.Dim),
			wq:       get(p+"self_attn.q_proj.weight", qd, c.Dim),
			wk:       get(p+"self_attn.k_proj.weight", kvd, c.Dim),
			wv:       get(p+"self_attn.v_proj.weight", kvd, c.Dim),
			wo:       get(p+"self_attn.o_proj.weight", c.Dim, qd),
			ffnNorm:  get(p+"post_attention_layernorm.weight", c.Dim),
			wGate:    get(p+"mlp.gate_proj.weight", c.FFN, c.Dim),
			wUp:      get(p+"mlp.up_proj.weight", c.FFN, c.Dim),
			wDown:    get(p+"mlp.down_proj.weight", c.Dim, c.FFN),
		}
		if c.QKVBias {
			l.bq = get(p+"self_attn.q_proj.bias", qd)
			l.bk = get(p+"self_attn.k_proj.bias", kvd)
			l.bv = get(p+"self_attn.v_proj.bias", kvd)
		}
		m.layers = append(m.layers, l)
	}
	m.norm = get("model.norm.weight", c.Dim)
	if c.TiedEmbeddings {
		m.head = m.embed
	} else {
		m.head = get("lm_head.weight", c.Vocab, c.Dim)
	}
	return err
}

// newRope computes the rotary inverse frequencies once, applying llama3 scaling exactly as
// HuggingFace transformers' _compute_llama3_parameters does, or a GGUF file's rope factors.
func newRope(c weights.Config) backend.Rope {
	half := c.HeadDim / 2
	inv := make([]float32, half)
	s := c.RopeScale
	lowWavelen := float64(s.OriginalMaxPositions) / s.LowFreqFactor
	highWavelen := float64(s.OriginalMaxPositions) / s.HighFreqFactor
	for i := range half {
		f := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
		if s.Type == "llama3" {
			wavelen := 2 * math.Pi / f
			switch {
			case wavelen > lowWavelen:
				f /= s.Factor
			case wavelen >= highWavelen:
				smooth := (float64(s.OriginalMaxPositions)/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
				f = (1-smooth)*f/s.Factor + smooth*f
			}
		}
		if c.RopeFactors != nil {
			// GGUF's form of llama3 scaling: per-frequency divisors, as llama.cpp applies them.
			f /= float64(c.RopeFactors[i])
		}
		inv[i] = float32(f)
	}
	return backend.Rope{HeadDim: c.HeadDim, Style: c.RopeStyle, InvFreq: inv}
}

// errClosed is returned by sessions whose model or self was closed.
var errClosed = errors.New("engine: model or session closed")

// forward runs ids (at most maxRows) at positions pos.. of cache through the model. The logits of
// the last row go to logits (len Vocab) or, when all is non-nil, every row's logits are computed
// into all (rows*Vocab on the backend) and nothing is read back. The caller holds m.mu.
func (m *Model) forward(cache backend.KVCache, ids []int32, pos int, logits []float32, all backend.Buffer) error {
	if m.closed {
		return errClosed
	}
	be, a, c := m.be, m.act, m.cfg
	n, dim, eps := len(ids), c.Dim, float32(c.NormEps)

	be.Embed(a.x, m.embed, ids)
	for i, l := range m.layers {
		// Attention block.
		be.RMSNorm(a.xb, a.x, l.attnNorm, n, eps)
		be.MatMul(a.q, a.xb, l.wq, l.bq, n)
		be.MatMul(a.k, a.xb, l.wk, l.bk, n)
		be.MatMul(a.v, a.xb, l.wv, l.bv, n)
		be.Rope(a.q, n, c.Heads, pos, &m.rope)
		be.Rope(a.k, n, c.KVHeads, pos, &m.rope)
		be.Attention(a.att, a.q, a.k, a.v, cache, i, pos, n)
		be.MatMul(a.xb, a.att, l.wo, nil, n)
		be.Add(a.x, a.xb, n*dim)

		// Feed-forward block (SwiGLU).
		be.RMSNorm(a.xb, a.x, l.ffnNorm, n, eps)
		be.MatMul(a.gate, a.xb, l.wGate, nil, n)
		be.MatMul(a.up, a.xb, l.wUp, nil, n)
		be.SiLUMul(a.gate, a.gate, a.up, n*c.FFN)
		be.MatMul(a.xb, a.gate, l.wDown, nil, n)
		be.Add(a.x, a.xb, n*dim)
	}

	if all != nil {
		be.RMSNorm(a.xb, a.x, m.norm, n, eps)
		be.MatMul(all, a.xb, m.head, nil, n)
		return be.Sync()
	}
	last := a.x
	if n > 1 {
		last = be.View(a.x, (n-1)*dim, dim)
	}
	be.RMSNorm(a.xb, last, m.norm, 1, eps)
	be.MatMul(a.logits, a.xb, m.head, nil, 1)
	return be.Read(logits, a.logits)
}
