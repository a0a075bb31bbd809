package metal

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// Backend implements backend.Backend on a Device. Operations only append dispatches to the
// step's plan (no allocation once the plan has grown to a step's size), or, when the step
// repeats the last one's calls, only update per-step values of the kept plan (replay.go); Read
// and Sync submit the plan in one Device.Submit call and wait for it, Commit submits it without
// waiting. Errors of an operation are kept and reported by the next Sync, Read or Commit, as
// the interface asks; a step with an error is dropped, not run. Like every backend, it
// is used by one goroutine at a time (the engine serializes forward passes).
type Backend struct {
	dev     Device
	pl      plan
	weights map[*tensor.Tensor]*weight
	ropes   map[*backend.Rope]Arg
	// up are two upload areas for per-step host data (token ids, positions, a pick's uniform
	// value): a step writes up[cur] while the step before, in flight, may still read the other.
	// cur flips with every submission; planCur is the parity the kept plan binds (replay.go).
	up                  [2]Buf
	cur, planCur        int
	uploadSize, uploadN int
	// seq counts submissions; done is the last one known finished; used[i] is the last
	// submission that read up[i].
	seq, done uint64
	used      [2]uint64
	// log holds the calls of the plan in pl.ds (see replay.go); while replaying, cursor is the
	// next call a matching step must make.
	log       []call
	replaying bool
	cursor    int
	// midStep is set when a step was submitted in parts (the upload area filled up), which
	// makes it unfit for replay.
	midStep bool
	ids     []int32 // of the Embed call being made
	u       float32 // of the Pick call being made
	word    [4]byte
	caches  uint64
	sel     selector
	// scratch holds what an operation computes on the way to its output (scratch.go).
	scratch [numScratch]scratchBuf
	err     error
	// dropped are buffers of unreachable KV caches, freed after the next wait so no submitted
	// dispatch can still use them.
	droppedMu sync.Mutex
	dropped   []Buf
	// kvF32 makes KV caches hold float32 values instead of half ones.
	kvF32 bool
	// attnSplit is where decode attention splits a head's positions (attnSplits), zero for
	// the defaults.
	attnSplit [2]int
}

// weight is a prepared tensor: its bytes bound in place and the kernel parameters describing it.
type weight struct {
	data, scales, biases Arg
	desc                 mslWeight
	dt                   uint32 // DT_* for plain F32/F16/BF16 vectors (norms, biases)
}

type buffer struct {
	h      Buf
	off, n int // in float32 elements
}

func (x *buffer) Len() int { return x.n }

func (x *buffer) arg() Arg { return Arg{x.h, uint64(x.off) * 4} }

type kvCache struct {
	// id tells caches apart in a recorded plan even when a freed cache's handles are reused.
	id    uint64
	shape backend.AttnShape
	k, v  Buf
	// elem is the bytes of one cached value: 2 (half) or 4 (float32).
	elem int
	backend.LayerLens
}

func (c *kvCache) Shape() backend.AttnShape { return c.shape }

const initialUpload = 64 << 10

// Option configures a Backend.
type Option func(*Backend)

// Float32KV makes the backend's KV caches hold float32 keys and values instead of half ones,
// for tests that compare attention with a float32 reference closely.
func Float32KV() Option { return func(b *Backend) { b.kvF32 = true } }

// New returns a backend running on dev; it owns dev and closes it in Close. Its KV caches hold
// half values unless Float32KV is given.
func New(dev Device, opts ...Option) (*Backend, error) {
	var up [2]Buf
	for i := range up {
		var err error
		if up[i], err = dev.NewBuffer(initialUpload); err != nil {
			return nil, fmt.Errorf("metal: %s: upload buffer: %w", dev.Name(), err)
		}
	}
	b := &Backend{
		dev:        dev,
		weights:    map[*tensor.Tensor]*weight{},
		ropes:      map[*backend.Rope]Arg{},
		up:         up,
		uploadSize: initialUpload,
		sel:        selector{lastPick: -1},
	}
	for _, o := range opts {
		o(b)
	}
	return b, nil
}

// KVBytesPerElement is the size of one key or value in the caches NewKVCache makes.
func (b *Backend) KVBytesPerElement() int {
	if b.kvF32 {
		return 4
	}
	return 2
}

// Name is "metal" on every device: the kernels are the same.
func (b *Backend) Name() string { return "metal" }

func (b *Backend) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// dtCode maps a plain element type to the kernels' DT_* codes.
func dtCode(d tensor.DType) (uint32, bool) {
	switch d {
	case tensor.F32:
		return mslDtF32, true
	case tensor.F16:
		return mslDtF16, true
	case tensor.BF16:
		return mslDtBf16, true
	}
	return 0, false
}

// Prepare binds every tensor's bytes for the kernels, in place where the device allows.
func (b *Backend) Prepare(weights []*tensor.Tensor) error {
	for _, t := range weights {
		if t == nil {
			return errors.New("metal: nil tensor")
		}
		if _, ok := b.weights[t]; ok {
			continue
		}
		w, err := b.prepare(t)
		if err != nil {
			return fmt.Errorf("metal: tensor %q: %w", t.Name, err)
		}
		b.weights[t] = w
	}
	return nil
}

func (b *Backend) prepare(t *tensor.Tensor) (*weight, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	w := &weight{desc: mslWeight{rows: uint32(t.Rows()), cols: uint32(t.Cols()), rowBytes: uint32(t.RowBytes())}}
	if t.ByteSize() > math.MaxUint32 || t.Cols() > math.MaxUint32/16 {
		return nil, fmt.Errorf("%v is too large for 32-bit kernel indexing", t.Shape)
	}
	switch t.DType {
	case tensor.F32:
		w.desc.fmt = mslWfF32
	case tensor.F16:
		w.desc.fmt = mslWfF16
	case tensor.BF16:
		w.desc.fmt = mslWfBf16
	case tensor.Q8_0:
		w.desc.fmt = mslWfQ80
	case tensor.Q4_0:
		w.desc.fmt = mslWfQ40
	case tensor.Q5_0:
		w.desc.fmt = mslWfQ50
	case tensor.Q4_K:
		w.desc.fmt = mslWfQ4K
	case tensor.Q5_K:
		w.desc.fmt = mslWfQ5K
	case tensor.Q6_K:
		w.desc.fmt = mslWfQ6K
	case tensor.Affine:
		// A mat-vec chunk of 16 inputs must lie inside one scale group.
		if t.GroupSize%mslMvChunk != 0 {
			return nil, fmt.Errorf("affine group size %d is not a multiple of %d", t.GroupSize, mslMvChunk)
		}
		if t.Scales.DType != t.Biases.DType {
			return nil, fmt.Errorf("affine scales %v and biases %v differ in dtype", t.Scales.DType, t.Biases.DType)
		}
		sdt, ok := dtCode(t.Scales.DType)
		if !ok {
			return nil, fmt.Errorf("affine scales of dtype %v", t.Scales.DType)
		}
		w.desc.fmt, w.desc.bits, w.desc.groupSize, w.desc.scaleDT = mslWfAffine, uint32(t.Bits), uint32(t.GroupSize), sdt
	default:
		return nil, fmt.Errorf("dtype %v is not supported by the metal backend", t.DType)
	}
	w.dt, _ = dtCode(t.DType)
	var err error
	if w.data, err = b.dev.Wrap(t.Data); err != nil {
		return nil, err
	}
	w.scales, w.biases = w.data, w.data
	if t.DType == tensor.Affine {
		if w.scales, err = b.dev.Wrap(t.Scales.Data); err != nil {
			return nil, err
		}
		if w.biases, err = b.dev.Wrap(t.Biases.Data); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (b *Backend) weight(op string, t *tensor.Tensor) (*weight, bool) {
	if t == nil {
		b.fail(fmt.Errorf("metal: %s: nil tensor", op))
		return nil, false
	}
	w, ok := b.weights[t]
	if !ok {
		b.fail(fmt.Errorf("metal: %s: tensor %q was not prepared", op, t.Name))
	}
	return w, ok
}

// vector returns a prepared plain F32/F16/BF16 tensor of n elements.
func (b *Backend) vector(op string, t *tensor.Tensor, n int) (*weight, bool) {
	w, ok := b.weight(op, t)
	if !ok {
		return nil, false
	}
	if _, plain := dtCode(t.DType); !plain || t.Elems() != n {
		b.fail(fmt.Errorf("metal: %s: tensor %q is %v %v, want %d F32/F16/BF16 values", op, t.Name, t.DType, t.Shape, n))
		return nil, false
	}
	return w, true
}

// NewBuffer returns a zeroed device buffer of n float32 values.
func (b *Backend) NewBuffer(n int) backend.Buffer {
	h, err := b.dev.NewBuffer(max(n, 1) * 4)
	if err != nil {
		b.fail(fmt.Errorf("metal: buffer of %d values: %w", n, err))
		return &buffer{}
	}
	return &buffer{h: h, n: max(n, 0)}
}

// View is the part [off, off+n) of x, sharing its memory.
func (b *Backend) View(x backend.Buffer, off, n int) backend.Buffer {
	bb, ok := x.(*buffer)
	if !ok || bb == nil || off < 0 || n < 0 || off+n > bb.n {
		b.fail(fmt.Errorf("metal: view [%d, %d) of %T", off, off+n, x))
		return &buffer{}
	}
	return &buffer{h: bb.h, off: bb.off + off, n: n}
}

// own reports whether every one of bufs belongs to this backend, recording an error when one
// does not; the shared argument checks may then ask their lengths.
func (b *Backend) own(op string, bufs ...backend.Buffer) bool {
	for _, x := range bufs {
		if bb, ok := x.(*buffer); !ok || bb == nil {
			b.fail(fmt.Errorf("metal: %s: buffer %T does not belong to the metal backend", op, x))
			return false
		}
	}
	return true
}

// buf checks that x belongs to this backend and holds at least n values.
func (b *Backend) buf(op string, x backend.Buffer, n int) (Arg, bool) {
	bb, ok := x.(*buffer)
	if !ok || bb == nil {
		b.fail(fmt.Errorf("metal: %s: buffer %T does not belong to the metal backend", op, x))
		return Arg{}, false
	}
	if n < 0 || bb.n < n {
		b.fail(fmt.Errorf("metal: %s: buffer of %d values, need %d", op, bb.n, n))
		return Arg{}, false
	}
	return bb.arg(), true
}

// NewKVCache allocates keys and values (half, or float32 with Float32KV) for every layer; its memory is returned to the
// device after the cache becomes unreachable.
func (b *Backend) NewKVCache(s backend.AttnShape) backend.KVCache {
	b.caches++
	c := &kvCache{id: b.caches, shape: s, elem: b.KVBytesPerElement()}
	if s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0 || s.Context <= 0 ||
		s.Heads%s.KVHeads != 0 || s.HeadDim%2 != 0 || s.HeadDim > mslAttMaxHeadDim {
		b.fail(fmt.Errorf("metal: kv cache shape %+v (head dim must be even and at most %d)", s, mslAttMaxHeadDim))
		c.shape = backend.AttnShape{}
		return c
	}
	size := s.Layers * s.Context * s.KVHeads * s.HeadDim * c.elem
	var err error
	if c.k, err = b.dev.NewBuffer(size); err == nil {
		if c.v, err = b.dev.NewBuffer(size); err != nil {
			b.dev.Free(c.k)
		}
	}
	if err != nil {
		b.fail(fmt.Errorf("metal: kv cache of %d bytes: %w", 2*size, err))
		c.shape = backend.AttnShape{}
		return c
	}
	c.LayerLens = make([]int, s.Layers)
	runtime.AddCleanup(c, b.drop, [2]Buf{c.k, c.v})
	return c
}

// drop runs on the cleanup goroutine when a cache becomes unreachable.
func (b *Backend) drop(bufs [2]Buf) {
	b.droppedMu.Lock()
	b.dropped = append(b.dropped, bufs[0], bufs[1])
	b.droppedMu.Unlock()
}

func (b *Backend) freeDropped() {
	b.droppedMu.Lock()
	defer b.droppedMu.Unlock()
	for _, h := range b.dropped {
		b.dev.Free(h)
	}
	b.dropped = b.dropped[:0]
}

func groups1(n, per int) [3]uint32 { return [3]uint32{uint32((n + per - 1) / per), 1, 1} }

// Embed records the lookup of ids in table (any weight format) into dst.
func (b *Backend) Embed(dst backend.Buffer, table *tensor.Tensor, ids []int32) {
	if !b.own("embed", dst) {
		return
	}
	if err := backend.CheckEmbed(dst, table, ids); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	w, ok1 := b.weight("embed", table)
	d, ok2 := b.buf("embed", dst, len(ids)*table.Cols())
	if !ok1 || !ok2 || len(ids) == 0 {
		return
	}
	b.ids = ids
	b.emit(call{op: callOp{kind: callEmbed, w: w, args: [6]Arg{d}, n: len(ids)}})
	b.ids = nil
}

func (b *Backend) recordEmbed(c *call, write bool) {
	o := &c.op
	if !b.slot(c, write) {
		return
	}
	p := mslEmbedParams{w: o.w.desc, count: uint32(o.n)}
	b.pl.encEmbed([3]uint32{(o.w.desc.cols + 63) / 64, uint32(o.n), 1}, [3]uint32{64, 1, 1},
		o.w.data, o.w.scales, o.w.biases, c.slot, o.args[0], &p)
}

// reserve takes n bytes of the current upload area for the current step. When the area is
// full it runs what is recorded so far, so those uploads may be overwritten, and grows the
// areas if they are still too small.
func (b *Backend) reserve(n int) (Arg, bool) {
	n = (n + 15) &^ 15
	if b.uploadN+n > b.uploadSize {
		if err := b.flush(false); err != nil {
			b.fail(err)
			return Arg{}, false
		}
		if n > b.uploadSize {
			for i := range b.up {
				up, err := b.dev.NewBuffer(2 * n)
				if err != nil {
					b.fail(fmt.Errorf("metal: upload buffer: %w", err))
					return Arg{}, false
				}
				b.dev.Free(b.up[i])
				b.up[i] = up
			}
			b.uploadSize = 2 * n
		}
	}
	up, ok := b.uploadArea()
	if !ok {
		return Arg{}, false
	}
	a := Arg{up, uint64(b.uploadN)}
	b.uploadN += n
	return a, true
}

// uploadArea returns the upload area the current step writes, after waiting for the
// submission that last read it when that may still run.
func (b *Backend) uploadArea() (Buf, bool) {
	if b.used[b.cur] > b.done {
		if err := b.waitFor(b.used[b.cur]); err != nil {
			b.fail(err)
			return 0, false
		}
	}
	return b.up[b.cur], true
}

// RMSNorm records a normalization of rows of x into dst (which may be x).
func (b *Backend) RMSNorm(dst, x backend.Buffer, w *tensor.Tensor, rows int, eps, offset float32) {
	if !b.own("rmsnorm", dst, x) {
		return
	}
	if err := backend.CheckRMSNorm(dst, x, w, rows); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	n := w.Cols()
	wt, ok1 := b.vector("rmsnorm", w, n)
	d, ok2 := b.buf("rmsnorm", dst, rows*n)
	s, ok3 := b.buf("rmsnorm", x, rows*n)
	if !ok1 || !ok2 || !ok3 || rows == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callRMSNorm, norm: wt, args: [6]Arg{d, s}, rows: rows, n: n, eps: eps, offset: offset}})
}

func (b *Backend) recordRMSNorm(c *call) {
	o := &c.op
	b.encRMSNorm(o, o.args[1], o.args[0])
}

// encRMSNorm records the normalization of o.rows rows of o.n values of x into dst by o's norm.
func (b *Backend) encRMSNorm(o *callOp, x, dst Arg) {
	p := mslRMSNormParams{n: uint32(o.n), wDT: o.norm.dt, eps: o.eps, offset: o.offset}
	b.pl.encRmsnorm([3]uint32{uint32(o.rows), 1, 1}, [3]uint32{256, 1, 1}, x, o.norm.data, dst, &p)
}

// normed records o's folded norm of x into the scratch o carries in args[slot] and returns
// where the normalized rows are: x itself when o has no norm.
func (b *Backend) normed(o *callOp, x Arg, slot int) Arg {
	if o.norm == nil {
		return x
	}
	b.encRMSNorm(o, x, o.args[slot])
	return o.args[slot]
}

// norm resolves a folded Norm over rows of cols values for op: its weight (nil for the zero
// Norm) and the scratch the rows are normalized into.
func (b *Backend) norm(op string, n backend.Norm, rows, cols int) (*weight, Arg, bool) {
	if n.W == nil {
		return nil, Arg{}, true
	}
	w, ok := b.vector(op, n.W, cols)
	if !ok {
		return nil, Arg{}, false
	}
	a, ok := b.scratchArg(scratchNorm, rows*cols)
	return w, a, ok
}

// matrix resolves a weight matrix and its optional bias for op.
func (b *Backend) matrix(op string, w, bias *tensor.Tensor) (*weight, *weight, bool) {
	wt, ok := b.weight(op, w)
	if !ok || bias == nil {
		return wt, nil, ok
	}
	bw, ok := b.vector(op+" bias", bias, w.Rows())
	return wt, bw, ok
}

// MatMul records dst = x·Wᵀ (+ bias): a mat-vec for one row, the tiled mat-mat for a block.
func (b *Backend) MatMul(dst, x backend.Buffer, w, bias *tensor.Tensor, rows int) {
	if !b.own("matmul", dst, x) {
		return
	}
	if err := backend.CheckMatMul(dst, x, w, bias, rows); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	wt, bw, ok1 := b.matrix("matmul", w, bias)
	d, ok2 := b.buf("matmul", dst, rows*w.Rows())
	s, ok3 := b.buf("matmul", x, rows*w.Cols())
	if !ok1 || !ok2 || !ok3 || rows == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callMatMul, w: wt, bias: bw, args: [6]Arg{d, s}, rows: rows}})
}

func (b *Backend) recordMatMul(c *call) {
	o := &c.op
	b.encMatMul(o.w, o.bias, o.args[1], o.args[0], o.rows)
}

// maxMatMuls is the most weights one MatMuls call takes (Qwen3.5's four input projections).
const maxMatMuls = 4

// MatMuls records, for one row, one matvecs pass per up to maxMatVecs weights of one format
// with the norm folded in; for a block, the norm into a scratch and a matmul per weight.
func (b *Backend) MatMuls(dst []backend.Buffer, x backend.Buffer, norm backend.Norm, w, bias []*tensor.Tensor, rows int) {
	if !b.own("matmuls", x) || !b.own("matmuls", dst...) {
		return
	}
	if err := backend.CheckMatMuls(dst, x, norm, w, bias, rows); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	if len(w) > maxMatMuls {
		b.fail(fmt.Errorf("metal: matmuls: %d weights, at most %d", len(w), maxMatMuls))
		return
	}
	cols := w[0].Cols()
	o := callOp{kind: callMatMuls, rows: rows, n: cols, k: len(w), eps: norm.Eps, offset: norm.Offset}
	var ok bool
	if o.args[0], ok = b.buf("matmuls", x, rows*cols); !ok {
		return
	}
	if o.norm, o.args[1], ok = b.norm("matmuls", norm, rows, cols); !ok {
		return
	}
	for i, wi := range w {
		var bi *tensor.Tensor
		if bias != nil {
			bi = bias[i]
		}
		if o.mats[i], o.biases[i], ok = b.matrix("matmuls", wi, bi); !ok {
			return
		}
		if o.args[2+i], ok = b.buf("matmuls", dst[i], rows*wi.Rows()); !ok {
			return
		}
	}
	if rows > 0 {
		b.emit(call{op: o})
	}
}

func (b *Backend) recordMatMuls(c *call) {
	o := &c.op
	if o.rows == 1 {
		norm := foldedNorm{w: o.norm, eps: o.eps, offset: o.offset}
		for i := 0; i < o.k; {
			j := i + 1
			for j < o.k && j-i < maxMatVecs && sameLayout(o.mats[i].desc, o.mats[j].desc) {
				j++
			}
			b.pl.encMatVecs(o.mats[i:j], o.biases[i:j], o.args[0], o.args[2+i:2+j], norm, Arg{}, false)
			i = j
		}
		return
	}
	x := b.normed(o, o.args[0], 1)
	for i := range o.k {
		b.encMatMul(o.mats[i], o.biases[i], x, o.args[2+i], o.rows)
	}
}

// MatMulAdd records dst += x·Wᵀ: a matvecs pass that also adds its output to dst for one row,
// a mat-mat into a scratch and an add for a block.
func (b *Backend) MatMulAdd(dst, x backend.Buffer, w *tensor.Tensor, rows int) {
	if !b.own("matmul-add", dst, x) {
		return
	}
	if err := backend.CheckMatMulAdd(dst, x, w, rows); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	wt, ok1 := b.weight("matmul-add", w)
	d, ok2 := b.buf("matmul-add", dst, rows*w.Rows())
	s, ok3 := b.buf("matmul-add", x, rows*w.Cols())
	tmp, ok4 := b.scratchArg(scratchTmp, rows*w.Rows())
	if !ok1 || !ok2 || !ok3 || !ok4 || rows == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callMatMulAdd, w: wt, args: [6]Arg{d, s, tmp}, rows: rows}})
}

func (b *Backend) recordMatMulAdd(c *call) {
	o := &c.op
	wt, d, s, tmp := o.w, o.args[0], o.args[1], o.args[2]
	out := int(wt.desc.rows)
	if o.rows == 1 {
		b.pl.encMatVecs([]*weight{wt}, nil, s, []Arg{tmp}, foldedNorm{}, d, true)
		return
	}
	b.encMatMul(wt, nil, s, tmp, o.rows)
	n := o.rows * out
	b.pl.encAddInplace(groups1(n, 256), [3]uint32{256, 1, 1}, d, tmp, &mslEltParams{n: uint32(n)})
}

// GLU records, for one row, one matvec_glu pass with the norm folded in; for a block, the norm
// into a scratch, the gate and up matmuls and the activation.
func (b *Backend) GLU(dst, x backend.Buffer, norm backend.Norm, gate, up *tensor.Tensor, act backend.Activation, rows int) {
	if !b.own("glu", dst, x) {
		return
	}
	if err := backend.CheckGLU(dst, x, norm, gate, up, act, rows); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	ffn, cols := gate.Rows(), gate.Cols()
	o := callOp{kind: callGLU, rows: rows, n: cols, k: ffn, style: uint32(act), eps: norm.Eps, offset: norm.Offset}
	var ok1, ok2, ok3, ok4, ok5, ok6 bool
	o.mats[0], ok1 = b.weight("glu", gate)
	o.mats[1], ok2 = b.weight("glu", up)
	o.args[0], ok3 = b.buf("glu", dst, rows*ffn)
	o.args[1], ok4 = b.buf("glu", x, rows*cols)
	o.norm, o.args[2], ok5 = b.norm("glu", norm, rows, cols)
	// Gate then up, for the fused pass's outputs and the unfused up projection.
	o.args[3], ok6 = b.scratchArg(scratchGLU, 2*rows*ffn)
	o.args[4] = Arg{o.args[3].Buf, o.args[3].Off + 4*uint64(rows*ffn)}
	if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && rows > 0 {
		b.emit(call{op: o})
	}
}

func (b *Backend) recordGLU(c *call) {
	o := &c.op
	wg, wu, d, u := o.mats[0], o.mats[1], o.args[0], o.args[4]
	if o.rows == 1 && sameLayout(wg.desc, wu.desc) {
		act := uint32(mslActSilu)
		if o.style == uint32(backend.GELUTanh) {
			act = mslActGeluTanh
		}
		b.pl.encGLU(wg, wu, o.args[1], foldedNorm{w: o.norm, eps: o.eps, offset: o.offset}, act, d)
		return
	}
	x := b.normed(o, o.args[1], 2)
	n := o.rows * o.k
	b.encMatMul(wg, nil, x, d, o.rows)
	b.encMatMul(wu, nil, x, u, o.rows)
	if o.style == uint32(backend.GELUTanh) {
		b.pl.encGeluMul(groups1(n, 256), [3]uint32{256, 1, 1}, d, u, d, &mslEltParams{n: uint32(n)})
		return
	}
	b.pl.encSiluMul(groups1(n, 256), [3]uint32{256, 1, 1}, d, u, d, &mslEltParams{n: uint32(n)})
}

// encMatMul records out = x·wᵀ (+ bias) for rows of x: a mat-vec for one row, the tiled
// mat-mat for a block.
func (b *Backend) encMatMul(wt, bias *weight, x, out Arg, rows int) {
	n := int(wt.desc.rows)
	biasArg, hasBias, biasDT := wt.data, uint32(0), uint32(0)
	if bias != nil {
		biasArg, hasBias, biasDT = bias.data, 1, bias.dt
	}
	if rows == 1 {
		b.pl.encMatVecs([]*weight{wt}, []*weight{bias}, x, []Arg{out}, foldedNorm{}, Arg{}, false)
		return
	}
	p := mslMatMulParams{w: wt.desc, rows: uint32(rows), hasBias: hasBias, biasDT: biasDT}
	b.pl.encMatmul([3]uint32{uint32((n + mslMmTile - 1) / mslMmTile), uint32((rows + mslMmTile - 1) / mslMmTile), 1},
		[3]uint32{mslMmThreads, 1, 1}, wt.data, wt.scales, wt.biases, biasArg, x, out, &p)
}

// Mat-vec geometry: rows per threadgroup and threads per threadgroup.
const mvRowsPerGroup = mslMvRows * mslMvSimdgroups

var mvThreads = [3]uint32{mslMvSimdgroups * mslSimd, 1, 1}

// ropeTable returns the device copy of r.InvFreq, uploaded on first use.
func (b *Backend) ropeTable(r *backend.Rope) (Arg, bool) {
	if a, ok := b.ropes[r]; ok {
		return a, true
	}
	if err := r.Check(); err != nil || r.HeadDim > mslAttMaxHeadDim {
		b.fail(fmt.Errorf("metal: rope: head dim %d (at most %d) with %d frequencies", r.HeadDim, mslAttMaxHeadDim, len(r.InvFreq)))
		return Arg{}, false
	}
	h, err := b.dev.NewBuffer(4 * len(r.InvFreq))
	if err != nil {
		b.fail(fmt.Errorf("metal: rope table: %w", err))
		return Arg{}, false
	}
	a := Arg{Buf: h}
	b.dev.Write(a, unsafe.Slice((*byte)(unsafe.Pointer(&r.InvFreq[0])), 4*len(r.InvFreq)))
	b.ropes[r] = a
	return a, true
}

func ropeStyle(s backend.RopeStyle) uint32 {
	if s == backend.RopeInterleaved {
		return mslRopeInterleaved
	}
	return mslRopeHalf
}

// cache returns cache as this backend's.
func (b *Backend) cache(op string, cache backend.KVCache) (*kvCache, bool) {
	c, ok := cache.(*kvCache)
	if !ok || c == nil {
		b.fail(fmt.Errorf("metal: %s: cache %T does not belong to the metal backend", op, cache))
		return nil, false
	}
	return c, true
}

// rope resolves an optional rotation into callOp fields: its frequency table (x when rope is
// nil, bound but unread), pair count (0: no rotation) and style.
func (b *Backend) rope(r *backend.Rope, x Arg, o *callOp) bool {
	if r == nil {
		o.args[2] = x
		return true
	}
	inv, ok := b.ropeTable(r)
	o.args[2], o.pairs, o.style = inv, len(r.InvFreq), ropeStyle(r.Style)
	return ok
}

// StoreKV records kv_store: k rotated (when rope is set) and v written to the cache, as half
// or float32.
func (b *Backend) StoreKV(cache backend.KVCache, layer, pos, rows int, k, v backend.Buffer, rope *backend.Rope) {
	c, ok := b.cache("store kv", cache)
	if !ok {
		return
	}
	s := c.shape
	if !b.own("store kv", k, v) {
		return
	}
	if err := backend.CheckStoreKV(s, c.LayerLens, layer, pos, rows, k, v, rope); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	kvw := s.KVHeads * s.HeadDim
	o := callOp{kind: callStoreKV, rows: rows, kvHeads: s.KVHeads, headDim: s.HeadDim, cache: c.id, kvHalf: c.elem == 2}
	ka, ok1 := b.buf("store kv", k, rows*kvw)
	va, ok2 := b.buf("store kv", v, rows*kvw)
	if !ok1 || !ok2 || !b.rope(rope, ka, &o) || rows == 0 {
		return
	}
	c.LayerLens[layer] = pos + rows
	off := c.layerOffset(layer)
	o.args[0], o.args[1], o.args[3], o.args[4] = ka, va, Arg{c.k, off}, Arg{c.v, off}
	b.emit(call{op: o, pos: pos})
}

// layerOffset is the byte offset of layer's keys (and values) in the cache's buffers.
func (c *kvCache) layerOffset(layer int) uint64 {
	s := c.shape
	return uint64(layer) * uint64(s.Context) * uint64(s.KVHeads*s.HeadDim) * uint64(c.elem)
}

func (b *Backend) recordStoreKV(c *call, write bool) {
	if !b.slot(c, write) {
		return
	}
	o := &c.op
	// Without a rotation, kv_store's pairs cover the head with no rotation pair.
	p := mslKVStoreParams{rope: mslRopeParams{rows: uint32(o.rows), heads: uint32(o.kvHeads), headDim: uint32(o.headDim),
		style: o.style, pairs: uint32(o.pairs)}, rotate: boolWord32(o.pairs > 0), kvHalf: boolWord32(o.kvHalf)}
	b.pl.encKvStore(groups1(o.rows*o.kvHeads*o.headDim/2, 256), [3]uint32{256, 1, 1}, o.args[0], o.args[1], o.args[2],
		o.args[3], o.args[4], c.slot, &p)
}

// Attention records the rotation of q in place (when rope is set) and causal attention of q
// over the cache: the decode kernel for one row, the block kernel for more.
func (b *Backend) Attention(out, q backend.Buffer, cache backend.KVCache, layer, pos, rows, window int, rope *backend.Rope) {
	c, ok := b.cache("attention", cache)
	if !ok {
		return
	}
	s := c.shape
	if !b.own("attention", out, q) {
		return
	}
	if err := backend.CheckAttention(s, c.LayerLens, out, q, layer, pos, rows, window, rope); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	qw := s.Heads * s.HeadDim
	o := callOp{kind: callAttention, rows: rows, heads: s.Heads, kvHeads: s.KVHeads, headDim: s.HeadDim, window: window,
		scale: s.AttnScale(), cache: c.id, kvHalf: c.elem == 2}
	oa, ok1 := b.buf("attention", out, rows*qw)
	qa, ok2 := b.buf("attention", q, rows*qw)
	if !ok1 || !ok2 || !b.rope(rope, qa, &o) || rows == 0 {
		return
	}
	off := c.layerOffset(layer)
	o.args[0], o.args[1], o.args[3], o.args[4] = oa, qa, Arg{c.k, off}, Arg{c.v, off}
	if rows == 1 {
		// The split depends on the position: a step past a threshold differs from the last
		// step's call and is recorded afresh (replay.go).
		positions := pos + 1
		if window > 0 {
			positions = min(positions, window)
		}
		if o.k = b.attnSplits(positions); o.k > 1 {
			if o.args[5], ok = b.scratchArg(scratchAttn, o.k*s.Heads*(s.HeadDim+2)); !ok {
				return
			}
		}
	}
	b.emit(call{op: o, pos: pos})
}

// recordAttention records, for one row, attention_decode (and attention_reduce when o.k > 1
// splits), for a block attention_block; both rotate q as they load it.
func (b *Backend) recordAttention(c *call, write bool) {
	if !b.slot(c, write) {
		return
	}
	o := &c.op
	oa, qa, inv, kc, vc := o.args[0], o.args[1], o.args[2], o.args[3], o.args[4]
	ap := mslAttnParams{rows: uint32(o.rows), heads: uint32(o.heads), kvHeads: uint32(o.kvHeads), headDim: uint32(o.headDim),
		scale: o.scale, window: uint32(o.window), kvHalf: boolWord32(o.kvHalf), pairs: uint32(o.pairs), style: o.style,
		splits: uint32(max(o.k, 1))}
	if o.rows == 1 {
		part := o.args[5]
		if o.k <= 1 {
			part = oa // bound, unused
		}
		b.pl.encDecodeAttention(qa, kc, vc, oa, c.slot, inv, part, &ap)
		return
	}
	b.pl.encAttentionBlock([3]uint32{uint32(o.heads), uint32((o.rows + mslAtbRows - 1) / mslAtbRows), 1},
		[3]uint32{mslAtbRows * mslSimd, 1, 1}, qa, kc, vc, oa, c.slot, inv, &ap)
}

// Scale records x *= s.
func (b *Backend) Scale(x backend.Buffer, n int, s float32) {
	if !b.own("scale", x) {
		return
	}
	if err := backend.CheckLen("scale", n, x); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	xa, ok := b.buf("scale", x, n)
	if !ok || n == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callScale, args: [6]Arg{xa}, n: n, scale: s}})
}

func (b *Backend) recordScale(c *call) {
	b.pl.encScaleInplace(groups1(c.op.n, 256), [3]uint32{256, 1, 1}, c.op.args[0], &mslScaleParams{n: uint32(c.op.n), s: c.op.scale})
}

// Add records dst += x.
func (b *Backend) Add(dst, x backend.Buffer, n int) {
	if !b.own("add", dst, x) {
		return
	}
	if err := backend.CheckLen("add", n, dst, x); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	d, ok1 := b.buf("add", dst, n)
	s, ok2 := b.buf("add", x, n)
	if !ok1 || !ok2 || n == 0 {
		return
	}
	b.emit(call{op: callOp{kind: callAdd, args: [6]Arg{d, s}, n: n}})
}

func (b *Backend) recordAdd(c *call) {
	d, s, n := c.op.args[0], c.op.args[1], c.op.n
	b.pl.encAddInplace(groups1(n, 256), [3]uint32{256, 1, 1}, d, s, &mslEltParams{n: uint32(n)})
}

// Read submits the recorded step, waits for it and everything committed before, and copies
// the first len(dst) values of src. Picks not yet reported are dropped.
func (b *Backend) Read(dst []float32, src backend.Buffer) error {
	a, ok := b.buf("read", src, len(dst))
	b.sel.npend = 0
	if err := b.flush(true); err != nil || !ok {
		return err
	}
	if len(dst) > 0 {
		b.dev.Read(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), a)
	}
	return nil
}

// Sync submits the recorded step, waits for it and everything committed before, and reports
// the first error since the last Sync. Picks not yet reported are dropped.
func (b *Backend) Sync() error {
	b.sel.npend = 0
	return b.flush(true)
}

// Commit submits the recorded step without waiting for it, so the device works while the host
// goes on; the next Read or Sync waits for it. It reports the errors of the recorded operations
// and those the device sees at submission; errors while the step runs come with that Read or
// Sync. The next step's calls write their per-step values into the other of two upload areas
// (replay.go), so one step can be recorded and committed while the one before runs.
func (b *Backend) Commit() error { return b.submit(true) }

// Close releases the device and everything allocated on it.
func (b *Backend) Close() error { return b.dev.Close() }
