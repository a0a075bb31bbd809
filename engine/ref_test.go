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
// transformer written straight from the Llama/Qwen2 definitions, independent of the engine's
// forward pass and of any backend.

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
		out[i] = v * inv * w[i]
	}
	return out
}

// invFreq follows transformers' default and llama3 rope init, written in the same
// element-wise "where" form as the Python.
func (r *refModel) invFreq() []float64 {
	c := r.cfg
	inv := make([]float64, c.HeadDim/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
	}
	s := c.RopeScale
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

// rope rotates each head of x at position pos, pairing i with i+half (rotate_half) or 2i with
// 2i+1 (interleaved).
func (r *refModel) rope(x []float64, pos int, inv []float64) {
	hd, half := r.cfg.HeadDim, r.cfg.HeadDim/2
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
	inv := r.invFreq()
	x := make([][]float64, len(ids))
	for p, id := range ids {
		x[p] = append([]float64(nil), r.w["model.embed_tokens.weight"][int(id)*c.Dim:(int(id)+1)*c.Dim]...)
	}
	for l := range c.Layers {
		pre := fmt.Sprintf("model.layers.%d.", l)
		ks, vs := make([][]float64, len(ids)), make([][]float64, len(ids))
		qs := make([][]float64, len(ids))
		for p := range ids {
			h := r.rmsnorm(x[p], pre+"input_layernorm.weight")
			qs[p] = r.mat(pre+"self_attn.q_proj.weight", h)
			ks[p] = r.mat(pre+"self_attn.k_proj.weight", h)
			vs[p] = r.mat(pre+"self_attn.v_proj.weight", h)
			r.rope(qs[p], p, inv)
			r.rope(ks[p], p, inv)
		}
		for p := range ids {
			att := make([]float64, c.Heads*hd)
			for h := range c.Heads {
				kv := h / group
				q := qs[p][h*hd : (h+1)*hd]
				scores := make([]float64, p+1)
				m := math.Inf(-1)
				for j := range scores {
					var s float64
					for d := range hd {
						s += q[d] * ks[j][kv*hd+d]
					}
					scores[j] = s / math.Sqrt(float64(hd))
					m = math.Max(m, scores[j])
				}
				var sum float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - m)
					sum += scores[j]
				}
				for j, a := range scores {
					for d := range hd {
						att[h*hd+d] += a / sum * vs[j][kv*hd+d]
					}
				}
			}
			o := r.mat(pre+"self_attn.o_proj.weight", att)
			for i := range o {
				x[p][i] += o[i]
			}
			h := r.rmsnorm(x[p], pre+"post_attention_layernorm.weight")
			g := r.mat(pre+"mlp.gate_proj.weight", h)
			u := r.mat(pre+"mlp.up_proj.weight", h)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			d := r.mat(pre+"mlp.down_proj.weight", g)
			for i := range d {
				x[p][i] += d[i]
			}
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
