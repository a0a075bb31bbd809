package cpu

import (
	"errors"
	"fmt"
	"math"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

var _ backend.Recurrent = (*cpuBackend)(nil)

// deltaChunk is how many positions the chunked delta rule takes at once, as transformers'
// torch_chunk_gated_delta_rule does.
const deltaChunk = 64

func (c *cpuBackend) CausalConv(dst, x backend.Buffer, w *tensor.Tensor, state backend.Buffer, kind backend.ConvKind, pos, rows int) {
	st, ok := c.buf(state)
	if !ok {
		return
	}
	ch, k, err := backend.CheckConv(w, len(st), kind, pos, rows)
	if err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	wv, err := c.vec(w)
	if err != nil {
		c.fail(fmt.Errorf("cpu: causal conv: %w", err))
		return
	}
	in := ch
	if kind == backend.ConvGated {
		in = 3 * ch
	}
	xs, ok1 := c.need("causal conv", x, rows*in)
	d, ok2 := c.need("causal conv", dst, rows*ch)
	if !ok1 || !ok2 {
		return
	}
	j := &c.conv
	if len(j.ones) < ch {
		j.ones = make([]float32, ch)
		for i := range j.ones {
			j.ones[i] = 1
		}
	}
	j.d, j.x, j.w, j.st = d, xs, wv, st[:(k-1)*ch]
	j.gated, j.fresh = kind == backend.ConvGated, pos == 0
	j.ch, j.k, j.in, j.rows = ch, k, in, rows
	c.pool.parallel(j, (ch+convBlock-1)/convBlock, 1)
}

// convBlock is how many channels one item of a convJob covers.
const convBlock = 256

// convJob runs a causal convolution, a block of channels per item: every row of those channels,
// then their state. Channels are independent, so workers share nothing they write.
type convJob struct {
	d, x, w, st  []float32
	ones         []float32 // the up operand that makes siluMul a plain SiLU
	gated, fresh bool
	ch, k, in    int
	rows         int
}

func (j *convJob) run(_, lo, hi int) {
	for b := lo; b < hi; b++ {
		j.block(b*convBlock, min((b+1)*convBlock, j.ch))
	}
}

// block convolves channels [c0, c1) over the call's rows.
func (j *convJob) block(c0, c1 int) {
	ch, k, in, hist := j.ch, j.k, j.in, j.k-1
	if j.fresh {
		for h := range hist {
			clear(j.st[h*ch+c0 : h*ch+c1])
		}
	}
	w := j.w[c0*k : c1*k]
	for r := range j.rows {
		out := j.d[r*ch+c0 : r*ch+c1]
		clear(out)
		// Tap by tap over the block's channels (each channel's taps summed in order).
		for t := range k {
			switch p := r - hist + t; {
			case p < 0:
				for i, v := range j.st[(hist+p)*ch+c0 : (hist+p)*ch+c1] {
					out[i] += w[i*k+t] * v
				}
			case j.gated:
				row := j.x[p*in : (p+1)*in]
				bv, uv := row[c0:c1], row[2*ch+c0:2*ch+c1]
				for i := range out {
					out[i] += w[i*k+t] * (bv[i] * uv[i])
				}
			default:
				for i, v := range j.x[p*in+c0 : p*in+c1] {
					out[i] += w[i*k+t] * v
				}
			}
		}
		if j.gated {
			for i, cv := range j.x[r*in+ch+c0 : r*in+ch+c1] {
				out[i] *= cv
			}
		} else {
			siluMul(out, out, j.ones[:len(out)])
		}
	}
	// The new state is the last hist inputs; when fewer rows came, part of it is the old state
	// moved forward (reading ahead of the write, so in place is safe).
	for h := range hist {
		r := j.rows - hist + h
		dst := j.st[h*ch+c0 : h*ch+c1]
		switch {
		case r < 0:
			copy(dst, j.st[(hist+r)*ch+c0:(hist+r)*ch+c1])
		case j.gated:
			row := j.x[r*in : (r+1)*in]
			for i := range dst {
				dst[i] = row[c0+i] * row[2*ch+c0+i]
			}
		default:
			copy(dst, j.x[r*in+c0:r*in+c1])
		}
	}
}

func silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// softplus is log(1+e^x), linear above 20 as torch's softplus is.
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}

// deltaJob runs the gated delta rule, one value head per item.
type deltaJob struct {
	out, qkv, a, b, state []float32
	aLog, dtBias          []float32
	s                     backend.DeltaShape
	pos, rows             int
	scratch               []deltaScratch // per worker
}

// deltaScratch is one worker's room for a chunk of one head.
type deltaScratch struct {
	q, k, w  []float32 // [deltaChunk][KDim]
	u        []float32 // [deltaChunk][VDim]
	t        []float32 // [deltaChunk][deltaChunk]
	beta, g  []float32 // per position: beta, and the cumulative log decay within the chunk
	tmp      []float32 // VDim
	capK, cV int
}

func (sc *deltaScratch) fit(s backend.DeltaShape) {
	if sc.capK >= s.KDim && sc.cV >= s.VDim {
		return
	}
	sc.capK, sc.cV = s.KDim, s.VDim
	sc.q = make([]float32, deltaChunk*s.KDim)
	sc.k = make([]float32, deltaChunk*s.KDim)
	sc.w = make([]float32, deltaChunk*s.KDim)
	sc.u = make([]float32, deltaChunk*s.VDim)
	sc.t = make([]float32, deltaChunk*deltaChunk)
	sc.beta = make([]float32, deltaChunk)
	sc.g = make([]float32, deltaChunk)
	sc.tmp = make([]float32, s.VDim)
}

func (c *cpuBackend) GatedDelta(out, qkv, a, b backend.Buffer, aLog, dtBias *tensor.Tensor, state backend.Buffer, s backend.DeltaShape, pos, rows int) {
	if !c.own(out, qkv, a, b, state) {
		return
	}
	if err := backend.CheckGatedDelta(out, qkv, a, b, aLog, dtBias, state, s, pos, rows); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	al, err1 := c.vec(aLog)
	dt, err2 := c.vec(dtBias)
	if err := errors.Join(err1, err2); err != nil {
		c.fail(fmt.Errorf("cpu: delta rule: %w", err))
		return
	}
	width := 2*s.KHeads*s.KDim + s.VHeads*s.VDim
	o, ok1 := c.need("delta rule", out, rows*s.VHeads*s.VDim)
	x, ok2 := c.need("delta rule", qkv, rows*width)
	av, ok3 := c.need("delta rule", a, rows*s.VHeads)
	bv, ok4 := c.need("delta rule", b, rows*s.VHeads)
	st, ok5 := c.need("delta rule", state, s.StateLen())
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return
	}
	j := &c.delta
	if len(j.scratch) != c.pool.threads {
		j.scratch = make([]deltaScratch, c.pool.threads)
	}
	j.out, j.qkv, j.a, j.b, j.state, j.aLog, j.dtBias = o, x, av, bv, st, al, dt
	j.s, j.pos, j.rows = s, pos, rows
	c.pool.parallel(j, s.VHeads, 1)
}

func (j *deltaJob) run(w, lo, hi int) {
	sc := &j.scratch[w]
	sc.fit(j.s)
	for h := lo; h < hi; h++ {
		j.head(sc, h)
	}
}

// head runs value head h over the call's rows: step by step for a single row (decode), by
// chunks otherwise (prefill), as transformers does.
func (j *deltaJob) head(sc *deltaScratch, h int) {
	s := j.s
	dk, dv := s.KDim, s.VDim
	st := j.state[h*dk*dv : (h+1)*dk*dv]
	if j.pos == 0 {
		clear(st)
	}
	// Chunks start at multiples of deltaChunk positions, so a run resumed from a state kept at
	// such a position rounds exactly as the run that kept it.
	for r0, n := 0, 0; r0 < j.rows; r0 += n {
		n = min(deltaChunk-(j.pos+r0)%deltaChunk, j.rows-r0)
		j.load(sc, h, r0, n)
		if n == 1 {
			j.step(sc, h, r0, st)
		} else {
			j.chunk(sc, h, r0, n, st)
		}
	}
}

// load gathers rows [r0, r0+n) of head h into the scratch: q and k L2-normalized (q also scaled
// by 1/sqrt(KDim)), beta, and the running sum of the log decay.
func (j *deltaJob) load(sc *deltaScratch, h, r0, n int) {
	s := j.s
	dk := s.KDim
	kh := s.KHead(h)
	width := 2*s.KHeads*dk + s.VHeads*s.VDim
	scale := float32(1 / math.Sqrt(float64(dk)))
	negA := -float32(math.Exp(float64(j.aLog[h])))
	if s.NegExpA {
		negA = j.aLog[h]
	}
	var cum float32
	for i := range n {
		row := j.qkv[(r0+i)*width:]
		l2norm(sc.q[i*dk:(i+1)*dk], row[kh*dk:(kh+1)*dk], scale)
		l2norm(sc.k[i*dk:(i+1)*dk], row[(s.KHeads+kh)*dk:(s.KHeads+kh+1)*dk], 1)
		ab := (r0+i)*s.VHeads + h
		sc.beta[i] = sigmoid(j.b[ab])
		cum += negA * softplus(j.a[ab]+j.dtBias[h])
		sc.g[i] = cum
	}
}

// l2norm writes x / sqrt(sum(x^2) + 1e-6) * scale to dst, as transformers' l2norm (the FLA
// library's form).
func l2norm(dst, x []float32, scale float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := float32(1/math.Sqrt(ss+1e-6)) * scale
	for i, v := range x {
		dst[i] = v * inv
	}
}

// value is head h's v at row r of the call.
func (j *deltaJob) value(h, r int) []float32 {
	s := j.s
	width := 2*s.KHeads*s.KDim + s.VHeads*s.VDim
	off := r*width + 2*s.KHeads*s.KDim + h*s.VDim
	return j.qkv[off : off+s.VDim]
}

// step is the recurrent form for one row: S = g*S; S += k ⊗ beta*(v - Sᵀk); out = Sᵀq.
func (j *deltaJob) step(sc *deltaScratch, h, r int, st []float32) {
	dk, dv := j.s.KDim, j.s.VDim
	q, k := sc.q[:dk], sc.k[:dk]
	g := float32(math.Exp(float64(sc.g[0])))
	mem := sc.tmp[:dv]
	clear(mem)
	for kk := range dk {
		row := st[kk*dv : (kk+1)*dv]
		kv := k[kk]
		for vv := range row {
			row[vv] *= g
			mem[vv] += row[vv] * kv
		}
	}
	v := j.value(h, r)
	beta := sc.beta[0]
	for vv := range mem {
		mem[vv] = (v[vv] - mem[vv]) * beta
	}
	o := j.out[(r*j.s.VHeads+h)*dv : (r*j.s.VHeads+h+1)*dv]
	clear(o)
	for kk := range dk {
		row := st[kk*dv : (kk+1)*dv]
		kv, qv := k[kk], q[kk]
		for vv := range row {
			row[vv] += kv * mem[vv]
			o[vv] += row[vv] * qv
		}
	}
}

// chunk is the chunked form over rows [r0, r0+n), transformers' torch_chunk_gated_delta_rule:
// with T the strictly lower matrix T[i][j] = beta_i (k_i·k_j) e^(g_i-g_j), it solves
// (I+T) U = beta v and (I+T) W = beta e^g k, then per row v'_i = U_i - W_i S,
// out_i = e^(g_i) q_i S + Σ_{j≤i} (q_i·k_j) e^(g_i-g_j) v'_j, and S = e^(g_last) S +
// Σ_j e^(g_last-g_j) k_j ⊗ v'_j.
func (j *deltaJob) chunk(sc *deltaScratch, h, r0, n int, st []float32) {
	dk, dv := j.s.KDim, j.s.VDim
	q, k, w, u, t, g := sc.q, sc.k, sc.w, sc.u, sc.t, sc.g
	for i := range n {
		ki := k[i*dk : (i+1)*dk]
		for jj := range i {
			t[i*deltaChunk+jj] = sc.beta[i] * dot(ki, k[jj*dk:(jj+1)*dk]) * float32(math.Exp(float64(g[i]-g[jj])))
		}
		// Forward substitution, row i from the rows before it.
		ui, wi := u[i*dv:(i+1)*dv], w[i*dk:(i+1)*dk]
		v := j.value(h, r0+i)
		eg := float32(math.Exp(float64(g[i])))
		for vv := range ui {
			ui[vv] = sc.beta[i] * v[vv]
		}
		for kk := range wi {
			wi[kk] = sc.beta[i] * eg * ki[kk]
		}
		for jj := range i {
			tij := t[i*deltaChunk+jj]
			axpy(ui, -tij, u[jj*dv:(jj+1)*dv])
			axpy(wi, -tij, w[jj*dk:(jj+1)*dk])
		}
	}
	// v'_i = U_i - W_i S, in place of U; out_i's read of the old state with it.
	for i := range n {
		ui, wi, qi := u[i*dv:(i+1)*dv], w[i*dk:(i+1)*dk], q[i*dk:(i+1)*dk]
		o := j.out[((r0+i)*j.s.VHeads+h)*dv : ((r0+i)*j.s.VHeads+h+1)*dv]
		clear(o)
		eg := float32(math.Exp(float64(g[i])))
		for kk := range dk {
			row := st[kk*dv : (kk+1)*dv]
			axpy(ui, -wi[kk], row)
			axpy(o, eg*qi[kk], row)
		}
	}
	for i := range n {
		qi := q[i*dk : (i+1)*dk]
		o := j.out[((r0+i)*j.s.VHeads+h)*dv : ((r0+i)*j.s.VHeads+h+1)*dv]
		for jj := 0; jj <= i; jj++ {
			c := dot(qi, k[jj*dk:(jj+1)*dk]) * float32(math.Exp(float64(g[i]-g[jj])))
			axpy(o, c, u[jj*dv:(jj+1)*dv])
		}
	}
	last := g[n-1]
	el := float32(math.Exp(float64(last)))
	for kk := range dk {
		row := st[kk*dv : (kk+1)*dv]
		for vv := range row {
			row[vv] *= el
		}
		for jj := range n {
			axpy(row, k[jj*dk+kk]*float32(math.Exp(float64(last-g[jj]))), u[jj*dv:(jj+1)*dv])
		}
	}
}

// axpy: y += a*x.
func axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

func (c *cpuBackend) GatedRMSNorm(dst, x, z backend.Buffer, w *tensor.Tensor, rows int, eps float32) {
	if !c.own(dst, x, z) {
		return
	}
	if err := backend.CheckGatedRMSNorm(dst, x, z, w, rows); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	wv, err := c.vec(w)
	if err != nil {
		c.fail(fmt.Errorf("cpu: gated rmsnorm: %w", err))
		return
	}
	n := len(wv)
	d, ok1 := c.need("gated rmsnorm", dst, rows*n)
	s, ok2 := c.need("gated rmsnorm", x, rows*n)
	g, ok3 := c.need("gated rmsnorm", z, rows*n)
	if !ok1 || !ok2 || !ok3 {
		return
	}
	for r := range rows {
		xr, dr, zr := s[r*n:(r+1)*n], d[r*n:(r+1)*n], g[r*n:(r+1)*n]
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		inv := float32(1 / math.Sqrt(ss/float64(n)+float64(eps)))
		for i, v := range xr {
			dr[i] = v * inv * wv[i] * silu(zr[i])
		}
	}
}

func (c *cpuBackend) SplitHeads(a, b, src backend.Buffer, n, width int) {
	if !c.own(a, b, src) {
		return
	}
	if err := backend.CheckSplitHeads(a, b, src, n, width); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	av, ok1 := c.need("split heads", a, n*width)
	bv, ok2 := c.need("split heads", b, n*width)
	s, ok3 := c.need("split heads", src, 2*n*width)
	if !ok1 || !ok2 || !ok3 {
		return
	}
	for i := range n {
		copy(av[i*width:(i+1)*width], s[2*i*width:])
		copy(bv[i*width:(i+1)*width], s[(2*i+1)*width:])
	}
}

func (c *cpuBackend) SigmoidMul(x, gate backend.Buffer, n int) {
	if !c.own(x, gate) {
		return
	}
	if err := backend.CheckLen("sigmoid mul", n, x, gate); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	d, ok1 := c.need("sigmoid mul", x, n)
	g, ok2 := c.need("sigmoid mul", gate, n)
	if !ok1 || !ok2 {
		return
	}
	for i, v := range g {
		d[i] *= sigmoid(v)
	}
}

func (c *cpuBackend) Copy(dst, src backend.Buffer, n int) {
	if !c.own(dst, src) {
		return
	}
	if err := backend.CheckLen("copy", n, dst, src); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	d, ok1 := c.need("copy", dst, n)
	s, ok2 := c.need("copy", src, n)
	if ok1 && ok2 {
		copy(d, s)
	}
}
