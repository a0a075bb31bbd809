package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/weights"
)

// This file builds tiny random models in memory and runs them through a plain float64
// transformer written straight from the Llama/Qwen2 definitions (with what Qwen3, SmolLM3 and
// Gemma 3 add: q/k norms, layers without RoPE, (1+w) norms around both blocks, GELU, scaled
// embeddings, sliding windows with their own RoPE base), independent of the engine's forward
// pass and of any backend.

// refModel is a model's weights as float64 matrices, row-major [out][in], under HF names.
type refModel struct {
	cfg weights.Config
	w   map[string][]float64
}

// randModel makes a model with weights uniform in [-scale, scale) (norm weights around 1) and
// returns it both as F32 tensors and as the reference's float64 copy of the same values.
func randModel(cfg weights.Config, seed uint64) (map[string]*tensor.Tensor, *refModel) {
	var r rng
	r.seed(seed)
	ts := map[string]*tensor.Tensor{}
	ref := &refModel{cfg: cfg, w: map[string][]float64{}}
	add := func(name string, center, scale float64, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		vals := make([]float64, n)
		data := make([]byte, 4*n)
		for i := range vals {
			f := float32(center + scale*(2*r.float64()-1))
			vals[i] = float64(f)
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
		}
		ts[name] = &tensor.Tensor{Name: name, DType: tensor.F32, Shape: shape, Data: data}
		ref.w[name] = vals
	}
	qd, kvd := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	add("model.embed_tokens.weight", 0, 1, cfg.Vocab, cfg.Dim)
	for i := range cfg.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", 1, 0.2, cfg.Dim)
		add(p+"self_attn.q_proj.weight", 0, 0.5, qd, cfg.Dim)
		add(p+"self_attn.k_proj.weight", 0, 0.5, kvd, cfg.Dim)
		add(p+"self_attn.v_proj.weight", 0, 0.5, kvd, cfg.Dim)
		add(p+"self_attn.o_proj.weight", 0, 0.3, cfg.Dim, qd)
		if cfg.QKVBias {
			add(p+"self_attn.q_proj.bias", 0, 0.5, qd)
			add(p+"self_attn.k_proj.bias", 0, 0.5, kvd)
			add(p+"self_attn.v_proj.bias", 0, 0.5, kvd)
		}
		// Zero-centred norms hold w around 0 for a scale around 1.
		normCenter := 1 - float64(cfg.NormOffset)
		if cfg.QKNorm {
			add(p+"self_attn.q_norm.weight", normCenter, 0.2, cfg.HeadDim)
			add(p+"self_attn.k_norm.weight", normCenter, 0.2, cfg.HeadDim)
		}
		if cfg.SandwichNorms {
			add(p+"pre_feedforward_layernorm.weight", normCenter, 0.2, cfg.Dim)
			add(p+"post_feedforward_layernorm.weight", normCenter, 0.2, cfg.Dim)
		}
		add(p+"post_attention_layernorm.weight", 1, 0.2, cfg.Dim)
		add(p+"mlp.gate_proj.weight", 0, 0.4, cfg.FFN, cfg.Dim)
		add(p+"mlp.up_proj.weight", 0, 0.4, cfg.FFN, cfg.Dim)
		add(p+"mlp.down_proj.weight", 0, 0.3, cfg.Dim, cfg.FFN)
	}
	add("model.norm.weight", 1, 0.2, cfg.Dim)
	if !cfg.TiedEmbeddings {
		add("lm_head.weight", 0, 0.5, cfg.Vocab, cfg.Dim)
	}
	return ts, ref
}

// permuteQK reorders the q and k rows of every layer the way llama.cpp's converter does for GGUF
// llama files (per head, row t*half+i moves to i*2+t), so interleaved RoPE on the result equals
// rotate-half RoPE on the original.
func permuteQK(ts map[string]*tensor.Tensor, cfg weights.Config) {
	half := cfg.HeadDim / 2
	for i := range cfg.Layers {
		for _, proj := range []string{"q_proj", "k_proj"} {
			t := ts[fmt.Sprintf("model.layers.%d.self_attn.%s.weight", i, proj)]
			rb := t.RowBytes()
			out := make([]byte, len(t.Data))
			for h := range t.Rows() / cfg.HeadDim {
				for tt := range 2 {
					for j := range half {
						src := h*cfg.HeadDim + tt*half + j
						dst := h*cfg.HeadDim + j*2 + tt
						copy(out[dst*rb:(dst+1)*rb], t.Data[src*rb:(src+1)*rb])
					}
				}
			}
			t.Data = out
		}
	}
}

func (r *refModel) mat(name string, x []float64) []float64 {
	w := r.w[name]
	out := make([]float64, len(w)/len(x))
	for o := range out {
		var s float64
		for i, xv := range x {
			s += w[o*len(x)+i] * xv
		}
		out[o] = s
	}
	if b, ok := r.w[name[:len(name)-len("weight")]+"bias"]; ok {
		for o := range out {
			out[o] += b[o]
		}
	}
	return out
}

func (r *refModel) rmsnorm(x []float64, name string) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+r.cfg.NormEps)
	w := r.w[name]
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * inv * (w[i] + float64(r.cfg.NormOffset))
	}
	return out
}

// headNorm RMS-normalizes each head of x with the weight name (Qwen3's and Gemma 3's q/k norms).
func (r *refModel) headNorm(x []float64, name string) {
	hd := r.cfg.HeadDim
	for h := 0; h < len(x); h += hd {
		copy(x[h:h+hd], r.rmsnorm(x[h:h+hd], name))
	}
}

// invFreq follows transformers' default, linear and llama3 rope init for base theta, written in
// the same element-wise "where" form as the Python; a partial rotary embedding has frequencies
// over its RopeDims dimensions.
func (r *refModel) invFreq() []float64 { return r.invFreqFor(r.cfg.RopeTheta, r.cfg.RopeScale) }

func (r *refModel) invFreqFor(theta float64, s weights.RopeScaling) []float64 {
	c := r.cfg
	dims := c.HeadDim
	if c.RopeDims != 0 {
		dims = c.RopeDims
	}
	inv := make([]float64, dims/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(theta, float64(2*i)/float64(dims))
		if s.Type == "linear" {
			inv[i] /= s.Factor
		}
	}
	if s.Type != "llama3" {
		return inv
	}
	old := float64(s.OriginalMaxPositions)
	lowWavelen, highWavelen := old/s.LowFreqFactor, old/s.HighFreqFactor
	for i, f := range inv {
		wavelen := 2 * math.Pi / f
		llama := f
		if wavelen > lowWavelen {
			llama = f / s.Factor
		}
		smooth := (old/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
		smoothed := (1-smooth)*llama/s.Factor + smooth*llama
		if !(wavelen < highWavelen) && !(wavelen > lowWavelen) {
			llama = smoothed
		}
		inv[i] = llama
	}
	return inv
}

// rope rotates the first 2*len(inv) dimensions of each head of x at position pos, pairing i
// with i+len(inv) (rotate_half) or 2i with 2i+1 (interleaved).
func (r *refModel) rope(x []float64, pos int, inv []float64) {
	hd, half := r.cfg.HeadDim, len(inv)
	for h := 0; h < len(x); h += hd {
		for i := range half {
			a, b := h+i, h+i+half
			if r.cfg.RopeStyle == backend.RopeInterleaved {
				a, b = h+2*i, h+2*i+1
			}
			sin, cos := math.Sincos(float64(pos) * inv[i])
			x[a], x[b] = x[a]*cos-x[b]*sin, x[b]*cos+x[a]*sin
		}
	}
}

// logits runs ids from position 0 and returns the logits at every position.
func (r *refModel) logits(ids []int32) [][]float64 {
	c := r.cfg
	hd, group := c.HeadDim, c.Heads/c.KVHeads
	scale := 1 / math.Sqrt(float64(hd))
	if c.QueryScale != 0 {
		scale = 1 / math.Sqrt(c.QueryScale)
	}
	x := make([][]float64, len(ids))
	for p, id := range ids {
		x[p] = append([]float64(nil), r.w["model.embed_tokens.weight"][int(id)*c.Dim:(int(id)+1)*c.Dim]...)
		if c.EmbedScale != 0 {
			for i := range x[p] {
				x[p][i] *= float64(c.EmbedScale)
			}
		}
	}
	// add adds a block's output y to x, through the post-norm when the model has one.
	add := func(x, y []float64, postNorm string) {
		if c.SandwichNorms {
			y = r.rmsnorm(y, postNorm)
		}
		for i := range y {
			x[i] += y[i]
		}
	}
	for l := range c.Layers {
		pre := fmt.Sprintf("model.layers.%d.", l)
		spec := c.Layer(l)
		inv := r.invFreq()
		if spec.LocalRope {
			inv = r.invFreqFor(c.LocalRopeTheta, weights.RopeScaling{})
		}
		ks, vs := make([][]float64, len(ids)), make([][]float64, len(ids))
		qs := make([][]float64, len(ids))
		for p := range ids {
			h := r.rmsnorm(x[p], pre+"input_layernorm.weight")
			qs[p] = r.mat(pre+"self_attn.q_proj.weight", h)
			ks[p] = r.mat(pre+"self_attn.k_proj.weight", h)
			vs[p] = r.mat(pre+"self_attn.v_proj.weight", h)
			if c.QKNorm {
				r.headNorm(qs[p], pre+"self_attn.q_norm.weight")
				r.headNorm(ks[p], pre+"self_attn.k_norm.weight")
			}
			if !spec.NoRope {
				r.rope(qs[p], p, inv)
				r.rope(ks[p], p, inv)
			}
		}
		for p := range ids {
			first := 0
			if spec.Window > 0 {
				first = max(0, p+1-spec.Window)
			}
			att := make([]float64, c.Heads*hd)
			for h := range c.Heads {
				kv := h / group
				q := qs[p][h*hd : (h+1)*hd]
				scores := make([]float64, p+1-first)
				m := math.Inf(-1)
				for j := range scores {
					var s float64
					for d := range hd {
						s += q[d] * ks[first+j][kv*hd+d]
					}
					scores[j] = s * scale
					m = math.Max(m, scores[j])
				}
				var sum float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - m)
					sum += scores[j]
				}
				for j, a := range scores {
					for d := range hd {
						att[h*hd+d] += a / sum * vs[first+j][kv*hd+d]
					}
				}
			}
			add(x[p], r.mat(pre+"self_attn.o_proj.weight", att), pre+"post_attention_layernorm.weight")
			ffnNorm := pre + "post_attention_layernorm.weight"
			if c.SandwichNorms {
				ffnNorm = pre + "pre_feedforward_layernorm.weight"
			}
			h := r.rmsnorm(x[p], ffnNorm)
			g := r.mat(pre+"mlp.gate_proj.weight", h)
			u := r.mat(pre+"mlp.up_proj.weight", h)
			for i := range g {
				if c.Act == weights.GELUTanh {
					g[i] = 0.5 * g[i] * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(g[i]+0.044715*g[i]*g[i]*g[i]))) * u[i]
				} else {
					g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
				}
			}
			add(x[p], r.mat(pre+"mlp.down_proj.weight", g), pre+"post_feedforward_layernorm.weight")
		}
	}
	head := "lm_head.weight"
	if c.TiedEmbeddings {
		head = "model.embed_tokens.weight"
	}
	out := make([][]float64, len(ids))
	for p := range ids {
		out[p] = r.mat(head, r.rmsnorm(x[p], "model.norm.weight"))
	}
	return out
}

// logSoftmax64 is the float64 log-softmax of one row of logits.
func logSoftmax64(l []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range l {
		m = math.Max(m, v)
	}
	var s float64
	for _, v := range l {
		s += math.Exp(v - m)
	}
	lse := m + math.Log(s)
	out := make([]float64, len(l))
	for i, v := range l {
		out[i] = v - lse
	}
	return out
}

func argmax64(l []float64) int {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return best
}
