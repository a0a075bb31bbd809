package engine

import (
	"fmt"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/weights"
)

// Recurrent layers: LFM2's gated short convolutions and Qwen3.5's Gated DeltaNet. Their memory of
// earlier positions is a fixed-size state per layer instead of a KV cache, so it cannot be cut
// back to a shorter prefix; sessions keep snapshots of it instead (see snapshots.go).

// recurrent is what a model with recurrent layers adds to Model.
type recurrent struct {
	// layers lists the recurrent layers' indices; a state holds one conv (and, for DeltaNet, one
	// delta) buffer per entry.
	layers []int
	delta  backend.DeltaShape
}

// recBuffers are the recurrent layers' working buffers, part of activations: in is the
// in-projection (LFM2's B|C|x, DeltaNet's q|k|v), conv the convolution's output, z/a/b
// DeltaNet's gate, decay and beta projections, core its output; qg and gate Qwen3.5's gated
// query projection.
type recBuffers struct {
	in, conv, z, a, b, core backend.Buffer
	qg, gate                backend.Buffer
	// ins are the outputs of a layer's input projections, as recLayer.ins lists them.
	ins []backend.Buffer
}

// recLayer holds a recurrent layer's weights.
type recLayer struct {
	index int // in recurrent.layers and the state's buffers
	// LFM2: in (3*Dim rows), conv [Dim, kernel], out.
	// DeltaNet: in (q|k|v rows), conv [in rows, kernel], out, and the rest.
	in, conv, out     *tensor.Tensor
	z, a, b           *tensor.Tensor
	aLog, dtBias, nrm *tensor.Tensor
	// ins are the input projections of the layer's normalized input: in (and z, a, b).
	ins []*tensor.Tensor
}

// recState is one session's recurrent state: per recurrent layer, the convolution's last inputs
// and the delta rule's matrices (nil for short convolutions).
type recState struct {
	conv, delta []backend.Buffer
	floats      int // in all buffers
}

// hybridCache is a session's memory for a model with recurrent layers: the backend's KV cache of
// its attention layers and the recurrent state. Truncate only cuts the KV cache; the session
// restores the state from a snapshot (see Session.rewind).
type hybridCache struct {
	backend.KVCache
	st *recState
}

// newCache returns an empty cache of ctx positions for the model: a plain KV cache, or a
// hybridCache for a model with recurrent layers. The caller holds m.mu.
func (m *Model) newCache(ctx int) backend.KVCache {
	kv := m.be.NewKVCache(m.kvShape(ctx))
	if m.rec == nil {
		return kv
	}
	return &hybridCache{KVCache: kv, st: m.newRecState()}
}

// splitCache returns the KV cache forward passes to attention and the recurrent state, nil for
// a model without recurrent layers.
func splitCache(cache backend.KVCache) (backend.KVCache, *recState) {
	if h, ok := cache.(*hybridCache); ok {
		return h.KVCache, h.st
	}
	return cache, nil
}

// recConvWidth is the channel count of a hybrid model's convolutions: the model width for
// LFM2, q|k|v for DeltaNet.
func recConvWidth(c weights.Config) int {
	if c.Arch == "lfm2" {
		return c.Dim
	}
	hy := c.Hybrid
	return 2*hy.LinKHeads*hy.LinKDim + hy.LinVHeads*hy.LinVDim
}

// newRecState allocates a state for every recurrent layer. Its content is never cleared: a pass
// at position 0 ignores what a state holds.
func (m *Model) newRecState() *recState {
	r := m.rec
	hist := (m.cfg.Hybrid.ConvKernel - 1) * recConvWidth(m.cfg)
	st := &recState{conv: make([]backend.Buffer, len(r.layers)), delta: make([]backend.Buffer, len(r.layers))}
	for i, li := range r.layers {
		st.conv[i] = m.be.NewBuffer(max(hist, 1))
		st.floats += max(hist, 1)
		if m.cfg.Layer(li).Kind == weights.LayerLinearAttention {
			st.delta[i] = m.be.NewBuffer(r.delta.StateLen())
			st.floats += r.delta.StateLen()
		}
	}
	return st
}

// copyState copies src's buffers into dst's (of the same model). The caller holds m.mu.
func (m *Model) copyState(dst, src *recState) {
	ops := m.be.(backend.Recurrent)
	for i := range src.conv {
		ops.Copy(dst.conv[i], src.conv[i], src.conv[i].Len())
		if src.delta[i] != nil {
			ops.Copy(dst.delta[i], src.delta[i], src.delta[i].Len())
		}
	}
}

// recStateBytes is the memory of one recurrent state of the model.
func (m *Model) recStateBytes() int64 {
	if m.rec == nil {
		return 0
	}
	hist := int64(max((m.cfg.Hybrid.ConvKernel-1)*recConvWidth(m.cfg), 1))
	var n int64
	for _, li := range m.rec.layers {
		n += hist
		if m.cfg.Layer(li).Kind == weights.LayerLinearAttention {
			n += int64(m.rec.delta.StateLen())
		}
	}
	return 4 * n
}

// canRun reports whether be runs every layer of the model: recurrent layers need
// backend.Recurrent.
func (m *Model) canRun(be backend.Backend) error {
	if m.rec == nil {
		return nil
	}
	if _, ok := be.(backend.Recurrent); !ok {
		return fmt.Errorf("backend %s does not run %s's recurrent layers; use the cpu backend", be.Name(), m.cfg.Arch)
	}
	return nil
}

// newRecBuffers allocates the recurrent layers' working buffers for rows positions, nil for a
// model without recurrent layers.
func newRecBuffers(be backend.Backend, c weights.Config, rows int) *recBuffers {
	hy := c.Hybrid
	if hy == nil {
		return nil
	}
	r := &recBuffers{}
	width := recConvWidth(c)
	in := width
	if c.Arch == "lfm2" {
		in = 3 * c.Dim
	}
	r.in, r.conv = be.NewBuffer(rows*in), be.NewBuffer(rows*width)
	r.ins = []backend.Buffer{r.in}
	if vd := hy.LinVHeads * hy.LinVDim; vd > 0 {
		r.z, r.core = be.NewBuffer(rows*vd), be.NewBuffer(rows*vd)
		r.a, r.b = be.NewBuffer(rows*hy.LinVHeads), be.NewBuffer(rows*hy.LinVHeads)
		r.ins = []backend.Buffer{r.in, r.z, r.a, r.b}
	}
	if hy.AttnGate {
		qd := c.Heads * c.HeadDim
		r.qg, r.gate = be.NewBuffer(rows*2*qd), be.NewBuffer(rows*qd)
	}
	return r
}

// bindRecurrent binds layer i's recurrent block under prefix p.
func (m *Model) bindRecurrent(l *layer, i int, p string, get func(string, ...int) *tensor.Tensor) {
	c := m.cfg
	hy := c.Hybrid
	if m.rec == nil {
		m.rec = &recurrent{delta: backend.DeltaShape{KHeads: hy.LinKHeads, VHeads: hy.LinVHeads, KDim: hy.LinKDim,
			VDim: hy.LinVDim, Tiled: hy.TiledVHeads, NegExpA: hy.NegExpA}}
	}
	rl := &recLayer{index: len(m.rec.layers)}
	m.rec.layers = append(m.rec.layers, i)
	l.rec = rl
	switch c.Layer(i).Kind {
	case weights.LayerShortConv:
		rl.in = get(p+"conv.in_proj.weight", 3*c.Dim, c.Dim)
		rl.conv = get(p+"conv.conv.weight", c.Dim, hy.ConvKernel)
		rl.out = get(p+"conv.out_proj.weight", c.Dim, c.Dim)
		rl.ins = []*tensor.Tensor{rl.in}
	case weights.LayerLinearAttention:
		d := m.rec.delta
		kd, vd := d.KHeads*d.KDim, d.VHeads*d.VDim
		rl.in = get(p+"linear_attn.in_proj_qkv.weight", 2*kd+vd, c.Dim)
		rl.z = get(p+"linear_attn.in_proj_z.weight", vd, c.Dim)
		rl.a = get(p+"linear_attn.in_proj_a.weight", d.VHeads, c.Dim)
		rl.b = get(p+"linear_attn.in_proj_b.weight", d.VHeads, c.Dim)
		rl.conv = get(p+"linear_attn.conv1d.weight", 2*kd+vd, hy.ConvKernel)
		rl.aLog = get(p+"linear_attn.A_log", d.VHeads)
		rl.dtBias = get(p+"linear_attn.dt_bias", d.VHeads)
		rl.nrm = get(p+"linear_attn.norm.weight", d.VDim)
		rl.out = get(p+"linear_attn.out_proj.weight", c.Dim, vd)
		rl.ins = []*tensor.Tensor{rl.in, rl.z, rl.a, rl.b}
	}
}

// shortConv is LFM2's gated short convolution block: a.x, normalized by norm, to a.x.
func (m *Model) shortConv(l *layer, norm backend.Norm, st *recState, pos, n int) {
	be, a, r := m.be, m.act, m.act.rec
	w := l.rec
	be.MatMuls(r.ins[:1], a.x, norm, w.ins, nil, n)
	be.(backend.Recurrent).CausalConv(r.conv, r.in, w.conv, st.conv[w.index], backend.ConvGated, pos, n)
	m.residual(r.conv, w.out, l.postAttnNorm, n)
}

// deltaNet is Qwen3.5's Gated DeltaNet block: a.x, normalized by norm, to a.x.
func (m *Model) deltaNet(l *layer, norm backend.Norm, st *recState, pos, n int) {
	be, a, r := m.be, m.act, m.act.rec
	ops := be.(backend.Recurrent)
	w, d := l.rec, m.rec.delta
	be.MatMuls(r.ins, a.x, norm, w.ins, nil, n)
	ops.CausalConv(r.conv, r.in, w.conv, st.conv[w.index], backend.ConvSiLU, pos, n)
	ops.GatedDelta(r.core, r.conv, r.a, r.b, w.aLog, w.dtBias, st.delta[w.index], d, pos, n)
	ops.GatedRMSNorm(r.core, r.core, r.z, w.nrm, n*d.VHeads, float32(m.cfg.NormEps))
	m.residual(r.core, w.out, l.postAttnNorm, n)
}
