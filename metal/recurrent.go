package metal

import (
	"fmt"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// The recurrent layers' operations (recurrent.metal). A call depends on its position only
// through whether it is 0 (the state then counts as zeros), so decode steps replay.

var _ backend.Recurrent = (*Backend)(nil)

func boolWord(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CausalConv records a depthwise causal convolution over rows of x, carrying state.
func (b *Backend) CausalConv(dst, x backend.Buffer, w *tensor.Tensor, state backend.Buffer, kind backend.ConvKind, pos, rows int) {
	sb, ok := state.(*buffer)
	if !ok || sb == nil {
		b.fail(fmt.Errorf("metal: causal conv: state %T does not belong to the metal backend", state))
		return
	}
	ch, k, err := backend.CheckConv(w, sb.n, kind, pos, rows)
	if err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	in := ch
	if kind == backend.ConvGated {
		in = 3 * ch
	}
	wt, ok1 := b.vector("causal conv", w, ch*k)
	xa, ok2 := b.buf("causal conv", x, rows*in)
	d, ok3 := b.buf("causal conv", dst, rows*ch)
	st, ok4 := b.buf("causal conv", state, max((k-1)*ch, 1))
	if !ok1 || !ok2 || !ok3 || !ok4 || rows == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callCausalConv, w: wt, args: [6]Arg{xa, st, d}, rows: rows, n: ch, k: k,
		style: uint32(kind), pairs: boolWord(pos == 0)}})
}

func (b *Backend) recordCausalConv(c *call) {
	o := &c.op
	p := mslConvParams{channels: uint32(o.n), taps: uint32(o.k), rows: uint32(o.rows),
		gated: boolWord32(o.style == uint32(backend.ConvGated)), fresh: uint32(o.pairs), wDT: o.w.dt}
	b.pl.encCausalConv(groups1(o.n, 64), [3]uint32{64, 1, 1}, o.args[0], o.w.data, o.args[1], o.args[2], &p)
}

func boolWord32(b bool) uint32 { return uint32(boolWord(b)) }

// GatedDelta records the gated delta rule, step by step over the rows.
func (b *Backend) GatedDelta(out, qkv, a, bb backend.Buffer, aLog, dtBias *tensor.Tensor, state backend.Buffer, s backend.DeltaShape, pos, rows int) {
	if !b.own("delta rule", out, qkv, a, bb, state) {
		return
	}
	if err := backend.CheckGatedDelta(out, qkv, a, bb, aLog, dtBias, state, s, pos, rows); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	if s.KDim > mslDeltaMaxDim {
		b.fail(fmt.Errorf("metal: delta rule: key heads of %d (at most %d)", s.KDim, mslDeltaMaxDim))
		return
	}
	width := 2*s.KHeads*s.KDim + s.VHeads*s.VDim
	aw, ok1 := b.vector("delta rule", aLog, s.VHeads)
	dt, ok2 := b.vector("delta rule", dtBias, s.VHeads)
	o, ok3 := b.buf("delta rule", out, rows*s.VHeads*s.VDim)
	x, ok4 := b.buf("delta rule", qkv, rows*width)
	av, ok5 := b.buf("delta rule", a, rows*s.VHeads)
	bv, ok6 := b.buf("delta rule", bb, rows*s.VHeads)
	st, ok7 := b.buf("delta rule", state, s.StateLen())
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 || rows == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callGatedDelta, w: aw, bias: dt, args: [6]Arg{x, av, bv, st, o}, rows: rows,
		heads: s.VHeads, kvHeads: s.KHeads, headDim: s.KDim, n: s.VDim,
		style: boolWord32(s.Tiled) | boolWord32(s.NegExpA)<<1, pairs: boolWord(pos == 0)}})
}

func (b *Backend) recordGatedDelta(c *call) {
	o := &c.op
	p := mslDeltaParams{kHeads: uint32(o.kvHeads), vHeads: uint32(o.heads), kDim: uint32(o.headDim), vDim: uint32(o.n),
		rows: uint32(o.rows), fresh: uint32(o.pairs), tiled: o.style & 1, negExpA: o.style >> 1 & 1,
		aDT: o.w.dt, dtDT: o.bias.dt}
	// Four simdgroups, four state columns, per threadgroup.
	b.pl.encGatedDelta([3]uint32{uint32(o.heads), uint32((o.n + 3) / 4), 1}, [3]uint32{128, 1, 1},
		o.args[0], o.args[1], o.args[2], o.w.data, o.bias.data, o.args[3], o.args[4], &p)
}

// GatedRMSNorm records dst = rmsnorm(x)·w·silu(z) over rows of w's width.
func (b *Backend) GatedRMSNorm(dst, x, z backend.Buffer, w *tensor.Tensor, rows int, eps float32) {
	if !b.own("gated rmsnorm", dst, x, z) {
		return
	}
	if err := backend.CheckGatedRMSNorm(dst, x, z, w, rows); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	n := w.Cols()
	wt, ok1 := b.vector("gated rmsnorm", w, n)
	d, ok2 := b.buf("gated rmsnorm", dst, rows*n)
	xa, ok3 := b.buf("gated rmsnorm", x, rows*n)
	za, ok4 := b.buf("gated rmsnorm", z, rows*n)
	if !ok1 || !ok2 || !ok3 || !ok4 || rows == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callGatedRMSNorm, w: wt, args: [6]Arg{xa, za, d}, rows: rows, n: n, eps: eps}})
}

func (b *Backend) recordGatedRMSNorm(c *call) {
	o := &c.op
	p := mslGatedNormParams{n: uint32(o.n), wDT: o.w.dt, eps: o.eps}
	b.pl.encGatedRmsnorm([3]uint32{uint32(o.rows), 1, 1}, [3]uint32{128, 1, 1}, o.args[0], o.args[1], o.w.data, o.args[2], &p)
}

// SplitHeads records the split of n blocks of 2*width values of src into their halves.
func (b *Backend) SplitHeads(a, bb, src backend.Buffer, n, width int) {
	if !b.own("split heads", a, bb, src) {
		return
	}
	if err := backend.CheckSplitHeads(a, bb, src, n, width); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	aa, ok1 := b.buf("split heads", a, n*width)
	ba, ok2 := b.buf("split heads", bb, n*width)
	s, ok3 := b.buf("split heads", src, 2*n*width)
	if !ok1 || !ok2 || !ok3 || n*width == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callSplitHeads, args: [6]Arg{s, aa, ba}, n: n, k: width}})
}

func (b *Backend) recordSplitHeads(c *call) {
	o := &c.op
	b.pl.encSplitHeads(groups1(o.n*o.k, 256), [3]uint32{256, 1, 1}, o.args[0], o.args[1], o.args[2],
		&mslSplitParams{n: uint32(o.n), width: uint32(o.k)})
}

// SigmoidMul records x *= sigmoid(gate).
func (b *Backend) SigmoidMul(x, gate backend.Buffer, n int) {
	if !b.own("sigmoid mul", x, gate) {
		return
	}
	if err := backend.CheckLen("sigmoid mul", n, x, gate); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	xa, ok1 := b.buf("sigmoid mul", x, n)
	g, ok2 := b.buf("sigmoid mul", gate, n)
	if !ok1 || !ok2 || n <= 0 {
		return
	}
	b.emit(call{op: callOp{kind: callSigmoidMul, args: [6]Arg{xa, g}, n: n}})
}

func (b *Backend) recordSigmoidMul(c *call) {
	b.pl.encSigmoidMul(groups1(c.op.n, 256), [3]uint32{256, 1, 1}, c.op.args[0], c.op.args[1], &mslEltParams{n: uint32(c.op.n)})
}

// Copy records dst[:n] = src[:n].
func (b *Backend) Copy(dst, src backend.Buffer, n int) {
	if !b.own("copy", dst, src) {
		return
	}
	if err := backend.CheckLen("copy", n, dst, src); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	d, ok1 := b.buf("copy", dst, n)
	s, ok2 := b.buf("copy", src, n)
	if !ok1 || !ok2 || n <= 0 {
		return
	}
	b.emit(call{op: callOp{kind: callCopy, args: [6]Arg{s, d}, n: n}})
}

func (b *Backend) recordCopy(c *call) {
	b.pl.encCopyBuf(groups1(c.op.n, 256), [3]uint32{256, 1, 1}, c.op.args[0], c.op.args[1], &mslEltParams{n: uint32(c.op.n)})
}
