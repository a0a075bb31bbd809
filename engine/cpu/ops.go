package cpu

import (
	"fmt"
	"math"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

func (c *cpuBackend) RMSNorm(dst, x backend.Buffer, w *tensor.Tensor, rows int, eps, offset float32) {
	if !c.own(dst, x) {
		return
	}
	if err := backend.CheckRMSNorm(dst, x, w, rows); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	n := w.Cols()
	d, ok1 := c.need("rmsnorm", dst, rows*n)
	s, ok2 := c.need("rmsnorm", x, rows*n)
	if ok1 && ok2 {
		c.rmsNorm(d, s, w, rows, eps, offset)
	}
}

// rmsNorm normalizes rows of s into d (which may be s) with the checked weight w.
func (c *cpuBackend) rmsNorm(d, s []float32, w *tensor.Tensor, rows int, eps, offset float32) {
	wv, err := c.vec(w)
	if err != nil {
		c.fail(fmt.Errorf("cpu: rmsnorm: %w", err))
		return
	}
	n := len(wv)
	for r := range rows {
		xr, dr := s[r*n:(r+1)*n], d[r*n:(r+1)*n]
		// float64 sum: the mean of thousands of squares loses digits in float32.
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		inv := float32(1 / math.Sqrt(ss/float64(n)+float64(eps)))
		for i, v := range xr {
			dr[i] = v * inv * (wv[i] + offset)
		}
	}
}

// normed returns rows of x (cols wide) as norm makes them: x itself for the zero Norm, else
// normalized into the backend's scratch.
func (c *cpuBackend) normed(x []float32, norm backend.Norm, rows, cols int) []float32 {
	if norm.W == nil {
		return x
	}
	c.xn = grow(c.xn, rows*cols)
	c.rmsNorm(c.xn, x, norm.W, rows, norm.Eps, norm.Offset)
	return c.xn
}

// grow returns b resized to n, reallocated only when it is too small.
func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// ropeTable holds cos and sin of p*InvFreq[i] for positions [0, positions), row-major by position.
type ropeTable struct {
	half      int
	positions int
	cos, sin  []float32
}

// ropeFor returns the table for r covering at least n positions, growing it by doubling so a
// growing context reallocates only a logarithmic number of times.
func (c *cpuBackend) ropeFor(r *backend.Rope, n int) (*ropeTable, error) {
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	t := c.ropes[r]
	if t != nil && t.positions >= n {
		return t, nil
	}
	half := len(r.InvFreq)
	p := max(n, 1024)
	if t != nil {
		p = max(n, 2*t.positions)
	}
	t = &ropeTable{half: half, positions: p, cos: make([]float32, p*half), sin: make([]float32, p*half)}
	for pos := range p {
		for i, f := range r.InvFreq {
			// float64 angle: p*f in float32 loses the low bits of large positions.
			a := float64(pos) * float64(f)
			t.cos[pos*half+i] = float32(math.Cos(a))
			t.sin[pos*half+i] = float32(math.Sin(a))
		}
	}
	c.ropes[r] = t
	return t, nil
}

// rotate applies r (its table t) to rows of d, each heads*HeadDim, row i at position pos+i.
func rotate(d []float32, rows, heads, pos int, r *backend.Rope, t *ropeTable) {
	hd := r.HeadDim
	// half pairs rotate; a partial rotary embedding leaves dimensions 2*half.. unchanged.
	half := t.half
	for i := range rows {
		cs := t.cos[(pos+i)*half : (pos+i+1)*half]
		sn := t.sin[(pos+i)*half : (pos+i+1)*half]
		for h := range heads {
			v := d[(i*heads+h)*hd : (i*heads+h+1)*hd]
			if r.Style == backend.RopeInterleaved {
				for j := range half {
					a, b := v[2*j], v[2*j+1]
					v[2*j] = a*cs[j] - b*sn[j]
					v[2*j+1] = b*cs[j] + a*sn[j]
				}
			} else {
				lo, hi := v[:half], v[half:2*half]
				for j := range half {
					a, b := lo[j], hi[j]
					lo[j] = a*cs[j] - b*sn[j]
					hi[j] = b*cs[j] + a*sn[j]
				}
			}
		}
	}
}

// rope rotates rows of d by r when r is set.
func (c *cpuBackend) rope(d []float32, rows, heads, pos int, r *backend.Rope) bool {
	if r == nil || rows == 0 {
		return true
	}
	t, err := c.ropeFor(r, pos+rows)
	if err != nil {
		c.fail(err)
		return false
	}
	rotate(d, rows, heads, pos, r, t)
	return true
}

// kvCache stores keys and values as float32, per layer [Context][KVHeads*HeadDim]. The slices
// come from fresh zero pages, so positions never written cost no resident memory.
type kvCache struct {
	shape backend.AttnShape
	k, v  [][]float32
	backend.LayerLens
}

func (k *kvCache) Shape() backend.AttnShape { return k.shape }

func (c *cpuBackend) NewKVCache(s backend.AttnShape) backend.KVCache {
	kc := &kvCache{shape: s}
	if s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0 || s.Context <= 0 || s.Heads%s.KVHeads != 0 {
		c.fail(fmt.Errorf("cpu: kv cache shape %+v", s))
		kc.shape = backend.AttnShape{}
		return kc
	}
	w := s.KVHeads * s.HeadDim
	kc.k, kc.v, kc.LayerLens = make([][]float32, s.Layers), make([][]float32, s.Layers), make([]int, s.Layers)
	for l := range s.Layers {
		kc.k[l] = make([]float32, s.Context*w)
		kc.v[l] = make([]float32, s.Context*w)
	}
	return kc
}

// attnJob computes attention for (row, head) items of one Attention call.
type attnJob struct {
	out, q       []float32
	k, v         []float32
	heads, group int
	hd, kvw, pos int
	window       int
	scale        float32
	// scores is per-worker scratch of at least Context values.
	scores [][]float32
}

// run computes items [lo, hi). With a window, each row's keys start at the window's first
// position, so the kernel sees a shorter cache and does no work for older keys.
func (j *attnJob) run(w, lo, hi int) {
	if j.window <= 0 {
		j.attend(w, j.q, j.k, j.v, j.out, j.pos, lo, hi)
		return
	}
	for lo < hi {
		r := lo / j.heads
		end := min(hi, (r+1)*j.heads)
		first := max(0, j.pos+r+1-j.window)
		qo, ko := r*j.heads*j.hd, first*j.kvw
		// As row 0 of a call at position pos+r-first over keys [first, pos+r].
		j.attend(w, j.q[qo:], j.k[ko:], j.v[ko:], j.out[qo:], j.pos+r-first, lo-r*j.heads, end-r*j.heads)
		lo = end
	}
}

// cache returns cache as this backend's.
func (c *cpuBackend) cache(op string, cache backend.KVCache) (*kvCache, bool) {
	kc, ok := cache.(*kvCache)
	if !ok || kc == nil {
		c.fail(fmt.Errorf("cpu: %s: cache %T does not belong to the cpu backend", op, cache))
	}
	return kc, ok && kc != nil
}

func (c *cpuBackend) StoreKV(cache backend.KVCache, layer, pos, rows int, k, v backend.Buffer, rope *backend.Rope) {
	kc, ok := c.cache("store kv", cache)
	if !ok {
		return
	}
	s := kc.shape
	if !c.own(k, v) {
		return
	}
	if err := backend.CheckStoreKV(s, kc.LayerLens, layer, pos, rows, k, v, rope); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	kvw := s.KVHeads * s.HeadDim
	kd, ok1 := c.need("store kv", k, rows*kvw)
	vd, ok2 := c.need("store kv", v, rows*kvw)
	if !ok1 || !ok2 {
		return
	}
	kr := kc.k[layer][pos*kvw : (pos+rows)*kvw]
	copy(kr, kd)
	copy(kc.v[layer][pos*kvw:], vd)
	if c.rope(kr, rows, s.KVHeads, pos, rope) {
		kc.LayerLens[layer] = pos + rows
	}
}

func (c *cpuBackend) Attention(out, q backend.Buffer, cache backend.KVCache, layer, pos, rows, window int, rope *backend.Rope) {
	kc, ok := c.cache("attention", cache)
	if !ok {
		return
	}
	s := kc.shape
	if !c.own(out, q) {
		return
	}
	if err := backend.CheckAttention(s, kc.LayerLens, out, q, layer, pos, rows, window, rope); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	qw := s.Heads * s.HeadDim
	o, ok1 := c.need("attention", out, rows*qw)
	qd, ok2 := c.need("attention", q, rows*qw)
	if !ok1 || !ok2 || !c.rope(qd, rows, s.Heads, pos, rope) {
		return
	}
	j := &c.attn
	for w := range j.scores {
		if len(j.scores[w]) < s.Context {
			j.scores[w] = make([]float32, s.Context)
		}
	}
	j.out, j.q, j.k, j.v = o, qd, kc.k[layer], kc.v[layer]
	j.heads, j.group, j.hd, j.kvw, j.pos, j.window = s.Heads, s.Heads/s.KVHeads, s.HeadDim, s.KVHeads*s.HeadDim, pos, window
	j.scale = s.AttnScale()
	// Later rows see more positions; small chunks keep the causal triangle balanced.
	items := rows * s.Heads
	c.pool.parallel(j, items, max(1, items/(8*c.pool.threads)))
}

func (c *cpuBackend) Scale(x backend.Buffer, n int, s float32) {
	if !c.own(x) {
		return
	}
	if err := backend.CheckLen("scale", n, x); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	d, ok := c.need("scale", x, n)
	if ok {
		for i := range d {
			d[i] *= s
		}
	}
}
