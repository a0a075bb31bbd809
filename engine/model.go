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
	// rope is the model's rotary embedding, localRope that of Gemma 3's sliding layers.
	rope, localRope backend.Rope
	embed           *tensor.Tensor
	norm            *tensor.Tensor
	head            *tensor.Tensor
	// heads is head as the weights of a MatMuls.
	heads  [1]*tensor.Tensor
	layers []layer
	// glu is the MLP's activation.
	glu backend.Activation
	// attnLayers is how many layers keep keys and values in the KV cache.
	attnLayers int
	// rec is set for models with recurrent layers (recurrent.go).
	rec *recurrent
	// tensors is every weight the forward pass reads, once each, as given to Prepare.
	tensors []*tensor.Tensor

	// mu serializes forward passes: they share act and the backend.
	mu     sync.Mutex
	act    *activations
	closed bool
}

// layer is one decoder layer: a block that mixes positions (its kind), then the MLP.
type layer struct {
	kind weights.LayerKind
	// attnNorm normalizes the mixer's input, ffnNorm the MLP's; postAttnNorm and postFFNNorm,
	// when not nil, normalize each block's output before its residual add (Gemma 3).
	attnNorm, ffnNorm         *tensor.Tensor
	postAttnNorm, postFFNNorm *tensor.Tensor

	// Attention layers.
	cacheLayer int           // the layer's index in the KV cache
	rope       *backend.Rope // nil: no rotary embedding
	window     int           // > 0: sliding-window attention
	// qkv are the q, k and v projections, qkvBias their biases (nil unless Config.QKVBias).
	qkv          [3]*tensor.Tensor
	qkvBias      []*tensor.Tensor
	wo           *tensor.Tensor
	qNorm, kNorm *tensor.Tensor // nil unless Config.QKNorm
	// attnGate: the q projection also yields each head's output gate (Qwen3.5).
	attnGate bool

	// rec holds a recurrent layer's weights.
	rec *recLayer

	wGate, wUp, wDown *tensor.Tensor
}

// activations are the forward pass's working buffers, sized for maxRows positions: x is the
// residual stream, xb a block's output before its post-norm (Gemma 3), mlp the gated unit's.
type activations struct {
	x, xb, q, k, v, att, mlp backend.Buffer
	logits                   backend.Buffer // one row of vocab
	rec                      *recBuffers    // nil without recurrent layers
	// qkv are the outputs of the q, k and v projections (the gated query for Qwen3.5); out
	// that of the output head.
	qkv [3]backend.Buffer
	out [1]backend.Buffer
}

func newActivations(be backend.Backend, c weights.Config, rows int) *activations {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	a := &activations{
		x: be.NewBuffer(rows * c.Dim), xb: be.NewBuffer(rows * c.Dim),
		q: be.NewBuffer(rows * qd), k: be.NewBuffer(rows * kvd), v: be.NewBuffer(rows * kvd),
		att: be.NewBuffer(rows * qd), mlp: be.NewBuffer(rows * c.FFN),
		logits: be.NewBuffer(c.Vocab), rec: newRecBuffers(be, c, rows),
	}
	a.qkv = [3]backend.Buffer{a.q, a.k, a.v}
	if a.rec != nil && a.rec.qg != nil {
		a.qkv[0] = a.rec.qg
	}
	return a
}

// bindWeights looks up every tensor the forward pass needs and checks its shape, so a bad file
// fails at load with the tensor's name rather than inside a kernel.
func (m *Model) bindWeights() error {
	c := m.cfg
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
		spec := c.Layer(i)
		p := fmt.Sprintf("model.layers.%d.", i)
		l := layer{kind: spec.Kind, attnNorm: get(p+"input_layernorm.weight", c.Dim)}
		switch spec.Kind {
		case weights.LayerAttention:
			m.bindAttention(&l, spec, p, get)
		case weights.LayerShortConv, weights.LayerLinearAttention:
			m.bindRecurrent(&l, i, p, get)
		default:
			return fmt.Errorf("layer %d: kind %d is not supported", i, spec.Kind)
		}
		if c.SandwichNorms {
			l.postAttnNorm = get(p+"post_attention_layernorm.weight", c.Dim)
			l.ffnNorm = get(p+"pre_feedforward_layernorm.weight", c.Dim)
			l.postFFNNorm = get(p+"post_feedforward_layernorm.weight", c.Dim)
		} else {
			l.ffnNorm = get(p+"post_attention_layernorm.weight", c.Dim)
		}
		l.wGate = get(p+"mlp.gate_proj.weight", c.FFN, c.Dim)
		l.wUp = get(p+"mlp.up_proj.weight", c.FFN, c.Dim)
		l.wDown = get(p+"mlp.down_proj.weight", c.Dim, c.FFN)
		m.layers = append(m.layers, l)
	}
	m.norm = get("model.norm.weight", c.Dim)
	if c.TiedEmbeddings {
		m.head = m.embed
	} else {
		m.head = get("lm_head.weight", c.Vocab, c.Dim)
	}
	m.heads[0] = m.head
	m.glu = backend.SiLU
	if c.Act == weights.GELUTanh {
		m.glu = backend.GELUTanh
	}
	return err
}

func (m *Model) bindAttention(l *layer, spec weights.LayerSpec, p string, get func(string, ...int) *tensor.Tensor) {
	c := m.cfg
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	l.cacheLayer = m.attnLayers
	m.attnLayers++
	l.window = spec.Window
	switch {
	case spec.NoRope:
	case spec.LocalRope:
		l.rope = &m.localRope
	default:
		l.rope = &m.rope
	}
	l.attnGate = c.Hybrid != nil && c.Hybrid.AttnGate
	qOut := qd
	if l.attnGate {
		qOut = 2 * qd
	}
	l.qkv = [3]*tensor.Tensor{
		get(p+"self_attn.q_proj.weight", qOut, c.Dim),
		get(p+"self_attn.k_proj.weight", kvd, c.Dim),
		get(p+"self_attn.v_proj.weight", kvd, c.Dim),
	}
	l.wo = get(p+"self_attn.o_proj.weight", c.Dim, qd)
	if c.QKVBias {
		l.qkvBias = []*tensor.Tensor{
			get(p+"self_attn.q_proj.bias", qd),
			get(p+"self_attn.k_proj.bias", kvd),
			get(p+"self_attn.v_proj.bias", kvd),
		}
	}
	if c.QKNorm {
		l.qNorm = get(p+"self_attn.q_norm.weight", c.HeadDim)
		l.kNorm = get(p+"self_attn.k_norm.weight", c.HeadDim)
	}
}

// newRope computes the rotary inverse frequencies once for base theta: HuggingFace's default
// frequencies over the rotated dimensions (all of a head unless Config.RopeDims says fewer),
// with scaling when given: llama3 scaling exactly as transformers' _compute_llama3_parameters
// does, linear scaling, or a GGUF file's rope factors.
func newRope(c weights.Config, theta float64, s weights.RopeScaling, factors []float32) backend.Rope {
	dims := c.HeadDim
	if c.RopeDims != 0 {
		dims = c.RopeDims
	}
	inv := make([]float32, dims/2)
	lowWavelen := float64(s.OriginalMaxPositions) / s.LowFreqFactor
	highWavelen := float64(s.OriginalMaxPositions) / s.HighFreqFactor
	for i := range inv {
		f := 1 / math.Pow(theta, float64(2*i)/float64(dims))
		switch s.Type {
		case "llama3":
			wavelen := 2 * math.Pi / f
			switch {
			case wavelen > lowWavelen:
				f /= s.Factor
			case wavelen >= highWavelen:
				smooth := (float64(s.OriginalMaxPositions)/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
				f = (1-smooth)*f/s.Factor + smooth*f
			}
		case "linear":
			f /= s.Factor
		}
		if factors != nil {
			// GGUF's form of llama3 scaling: per-frequency divisors, as llama.cpp applies them.
			f /= float64(factors[i])
		}
		inv[i] = float32(f)
	}
	return backend.Rope{HeadDim: c.HeadDim, Style: c.RopeStyle, InvFreq: inv}
}

// errClosed is returned by sessions whose model or self was closed.
var errClosed = errors.New("engine: model or session closed")

// kvShape is the shape of a KV cache of ctx positions for the model's attention layers.
func (m *Model) kvShape(ctx int) backend.AttnShape {
	c := m.cfg
	return backend.AttnShape{Layers: m.attnLayers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		Context: ctx, Scale: c.AttnScale()}
}

// forward runs ids (at most maxRows) at positions pos.. of cache through the model. The logits of
// the last row go to logits (len Vocab) or, when all is non-nil, every row's logits are computed
// into all (rows*Vocab on the backend) and nothing is read back. With neither, the last row's
// logits are left recorded in m.act.logits for a device pick (backend.Sampler), and nil ids
// stand for the one token the device picked at the end of the step before. The caller holds
// m.mu.
func (m *Model) forward(cache backend.KVCache, ids []int32, pos int, logits []float32, all backend.Buffer) error {
	if m.closed {
		return errClosed
	}
	be, a, c := m.be, m.act, m.cfg
	n, dim := len(ids), c.Dim
	cache, st := splitCache(cache)
	if m.rec != nil && st == nil {
		return errors.New("engine: a model with recurrent layers needs a cache from Model.newCache")
	}
	if err := m.canRun(be); err != nil {
		return err
	}

	if ids == nil {
		ds, ok := be.(backend.Sampler)
		if !ok {
			return fmt.Errorf("engine: backend %s cannot embed a token it picked", be.Name())
		}
		n = 1
		ds.EmbedPicked(a.x, m.embed)
	} else {
		be.Embed(a.x, m.embed, ids)
	}
	if c.EmbedScale != 0 {
		be.Scale(a.x, n*dim, c.EmbedScale)
	}
	for i := range m.layers {
		l := &m.layers[i]
		norm := m.normOf(l.attnNorm)
		switch l.kind {
		case weights.LayerAttention:
			m.attention(l, norm, cache, pos, n)
		case weights.LayerShortConv:
			m.shortConv(l, norm, st, pos, n)
		case weights.LayerLinearAttention:
			m.deltaNet(l, norm, st, pos, n)
		}
		be.GLU(a.mlp, a.x, m.normOf(l.ffnNorm), l.wGate, l.wUp, m.glu, n)
		m.residual(a.mlp, l.wDown, l.postFFNNorm, n)
	}

	if all != nil {
		a.out[0] = all
		be.MatMuls(a.out[:], a.x, m.normOf(m.norm), m.heads[:], nil, n)
		return be.Sync()
	}
	last := a.x
	if n > 1 {
		last = be.View(a.x, (n-1)*dim, dim)
	}
	a.out[0] = a.logits
	be.MatMuls(a.out[:], last, m.normOf(m.norm), m.heads[:], nil, 1)
	if logits == nil {
		return nil
	}
	return be.Read(logits, a.logits)
}

// normOf is the model's RMSNorm with weight w.
func (m *Model) normOf(w *tensor.Tensor) backend.Norm {
	return backend.Norm{W: w, Eps: float32(m.cfg.NormEps), Offset: m.cfg.NormOffset}
}

func (m *Model) rmsNorm(dst, x backend.Buffer, w *tensor.Tensor, rows int) {
	m.be.RMSNorm(dst, x, w, rows, float32(m.cfg.NormEps), m.cfg.NormOffset)
}

// attention is the attention block: the residual stream a.x, normalized by norm, attends over
// the cache, and the projected result is added back to a.x.
func (m *Model) attention(l *layer, norm backend.Norm, cache backend.KVCache, pos, n int) {
	be, a, c := m.be, m.act, m.cfg
	be.MatMuls(a.qkv[:], a.x, norm, l.qkv[:], l.qkvBias, n)
	if l.attnGate {
		// Each head's query, then its output gate.
		be.(backend.Recurrent).SplitHeads(a.q, a.rec.gate, a.rec.qg, n*c.Heads, c.HeadDim)
	}
	if l.qNorm != nil {
		m.rmsNorm(a.q, a.q, l.qNorm, n*c.Heads)
		m.rmsNorm(a.k, a.k, l.kNorm, n*c.KVHeads)
	}
	be.StoreKV(cache, l.cacheLayer, pos, n, a.k, a.v, l.rope)
	be.Attention(a.att, a.q, cache, l.cacheLayer, pos, n, l.window, l.rope)
	if l.attnGate {
		be.(backend.Recurrent).SigmoidMul(a.att, a.rec.gate, n*c.Heads*c.HeadDim)
	}
	m.residual(a.att, l.wo, l.postAttnNorm, n)
}

// residual adds a block's output x projected by w to the residual stream a.x, normalized by
// postNorm first when it is not nil (Gemma 3's sandwich norms).
func (m *Model) residual(x backend.Buffer, w, postNorm *tensor.Tensor, n int) {
	be, a := m.be, m.act
	if postNorm == nil {
		be.MatMulAdd(a.x, x, w, n)
		return
	}
	be.MatMul(a.xb, x, w, nil, n)
	m.rmsNorm(a.xb, a.xb, postNorm, n)
	be.Add(a.x, a.xb, n*m.cfg.Dim)
}
