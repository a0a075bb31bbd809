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
	// upload holds per-step host data (token ids) until the plan runs.
	upload              Buf
	uploadSize, uploadN int
	lastRope            ropeRecord
	// log holds the calls of the plan in pl.ds (see replay.go); while replaying, cursor is the
	// next call a matching step must make, and stepPos is the first position of the step.
	log       []call
	replaying bool
	cursor    int
	stepPos   int
	// midStep is set when a step was submitted in parts (the upload area filled up), which
	// makes it unfit for replay.
	midStep bool
	ids     []int32 // of the Embed call being made
	word    [4]byte
	caches  uint64
	sel     selector
	// recent are the last two dispatches when they are single-row mat-vecs, newest last, so
	// SiLUMul can merge gate, up and itself into one matvec_silu pass and Add can fold a
	// residual add into the mat-vec that produced its operand.
	recent [2]mvRecord
	err    error
	// inflight is set while submitted work has not been waited for.
	inflight bool
	// dropped are buffers of unreachable KV caches, freed after the next wait so no submitted
	// dispatch can still use them.
	droppedMu sync.Mutex
	dropped   []Buf
	// kvF32 makes KV caches hold float32 values instead of half ones.
	kvF32 bool
}

// mvRecord is a recorded single-row mat-vec; index -1 when there is none.
type mvRecord struct {
	index        int
	w            *weight
	bias, x, out Arg
	p            mslMatVecParams
	groups       [3]uint32
}

// weight is a prepared tensor: its bytes bound in place and the kernel parameters describing it.
type weight struct {
	data, scales, biases Arg
	desc                 mslWeight
	matvec, fused        kernelID // matvec_<fmt> and matvec_silu_<fmt>
	dt                   uint32   // DT_* for plain F32/F16/BF16 vectors (norms, biases)
}

// ropeRecord remembers the last Rope dispatch so Attention can fold the rotation of k into the
// cache write.
type ropeRecord struct {
	index int // in pl.ds; -1 when the last dispatch is not a rope
	op    callOp
	pos   int
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
	up, err := dev.NewBuffer(initialUpload)
	if err != nil {
		return nil, fmt.Errorf("metal: %s: upload buffer: %w", dev.Name(), err)
	}
	b := &Backend{
		dev:        dev,
		weights:    map[*tensor.Tensor]*weight{},
		ropes:      map[*backend.Rope]Arg{},
		upload:     up,
		uploadSize: initialUpload,
		lastRope:   ropeRecord{index: -1},
		stepPos:    -1,
		recent:     [2]mvRecord{{index: -1}, {index: -1}},
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

// barrier marks that the next dispatch does not continue a fusable sequence.
func (b *Backend) barrier() {
	b.lastRope.index = -1
	b.recent = [2]mvRecord{{index: -1}, {index: -1}}
}

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
		w.desc.fmt, w.matvec, w.fused = mslWfF32, kMatvecF32, kMatvecSiluF32
	case tensor.F16:
		w.desc.fmt, w.matvec, w.fused = mslWfF16, kMatvecF16, kMatvecSiluF16
	case tensor.BF16:
		w.desc.fmt, w.matvec, w.fused = mslWfBf16, kMatvecBf16, kMatvecSiluBf16
	case tensor.Q8_0:
		w.desc.fmt, w.matvec, w.fused = mslWfQ80, kMatvecQ80, kMatvecSiluQ80
	case tensor.Q4_0:
		w.desc.fmt, w.matvec, w.fused = mslWfQ40, kMatvecQ40, kMatvecSiluQ40
	case tensor.Q5_0:
		w.desc.fmt, w.matvec, w.fused = mslWfQ50, kMatvecQ50, kMatvecSiluQ50
	case tensor.Q4_K:
		w.desc.fmt, w.matvec, w.fused = mslWfQ4K, kMatvecQ4K, kMatvecSiluQ4K
	case tensor.Q5_K:
		w.desc.fmt, w.matvec, w.fused = mslWfQ5K, kMatvecQ5K, kMatvecSiluQ5K
	case tensor.Q6_K:
		w.desc.fmt, w.matvec, w.fused = mslWfQ6K, kMatvecQ6K, kMatvecSiluQ6K
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
		w.matvec, w.fused = kMatvecAffine4, kMatvecSiluAffine4
		if t.Bits == 8 {
			w.matvec, w.fused = kMatvecAffine8, kMatvecSiluAffine8
		}
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
	w, ok := b.weight("embed", table)
	if !ok {
		return
	}
	d, ok := b.buf("embed", dst, len(ids)*table.Cols())
	if !ok || len(ids) == 0 {
		return
	}
	for _, id := range ids {
		if id < 0 || int(id) >= table.Rows() {
			b.fail(fmt.Errorf("metal: embed: token id %d outside the table's %d rows", id, table.Rows()))
			return
		}
	}
	b.ids = ids
	b.emit(call{op: callOp{kind: callEmbed, w: w, args: [6]Arg{d}, n: len(ids)}})
	b.ids = nil
}

func (b *Backend) recordEmbed(c *call, write bool) {
	b.barrier()
	o := &c.op
	if !b.slot(c, write) {
		return
	}
	p := mslEmbedParams{w: o.w.desc, count: uint32(o.n)}
	b.pl.encEmbed([3]uint32{(o.w.desc.cols + 63) / 64, uint32(o.n), 1}, [3]uint32{64, 1, 1},
		o.w.data, o.w.scales, o.w.biases, c.slot, o.args[0], &p)
}

// reserve takes n bytes of the upload area for the current step. When the area is full it runs
// what is recorded so far, so those uploads may be overwritten, and grows the area if it is
// still too small.
func (b *Backend) reserve(n int) (Arg, bool) {
	n = (n + 15) &^ 15
	if b.uploadN+n > b.uploadSize {
		if err := b.flush(false); err != nil {
			b.fail(err)
			return Arg{}, false
		}
		if n > b.uploadSize {
			up, err := b.dev.NewBuffer(2 * n)
			if err != nil {
				b.fail(fmt.Errorf("metal: upload buffer: %w", err))
				return Arg{}, false
			}
			b.dev.Free(b.upload)
			b.upload, b.uploadSize = up, 2*n
		}
	}
	a := Arg{b.upload, uint64(b.uploadN)}
	b.uploadN += n
	return a, true
}

// RMSNorm records a normalization of rows of x into dst (which may be x).
func (b *Backend) RMSNorm(dst, x backend.Buffer, w *tensor.Tensor, rows int, eps, offset float32) {
	if w == nil {
		b.fail(errors.New("metal: rmsnorm: nil weight"))
		return
	}
	n := w.Cols()
	wt, ok1 := b.vector("rmsnorm", w, n)
	d, ok2 := b.buf("rmsnorm", dst, rows*n)
	s, ok3 := b.buf("rmsnorm", x, rows*n)
	if !ok1 || !ok2 || !ok3 || rows <= 0 {
		return
	}
	b.emit(call{op: callOp{kind: callRMSNorm, w: wt, args: [6]Arg{d, s}, rows: rows, n: n, eps: eps, offset: offset}})
}

func (b *Backend) recordRMSNorm(c *call) {
	b.barrier()
	o := &c.op
	p := mslRMSNormParams{n: uint32(o.n), wDT: o.w.dt, eps: o.eps, offset: o.offset}
	b.pl.encRmsnorm([3]uint32{uint32(o.rows), 1, 1}, [3]uint32{256, 1, 1}, o.args[1], o.w.data, o.args[0], &p)
}

// MatMul records dst = x·Wᵀ (+ bias): a mat-vec for one row, the tiled mat-mat for a block.
func (b *Backend) MatMul(dst, x backend.Buffer, w, bias *tensor.Tensor, rows int) {
	wt, ok := b.weight("matmul", w)
	if !ok {
		return
	}
	out, in := w.Rows(), w.Cols()
	d, ok1 := b.buf("matmul", dst, rows*out)
	s, ok2 := b.buf("matmul", x, rows*in)
	if !ok1 || !ok2 || rows <= 0 {
		return
	}
	var bw *weight
	if bias != nil {
		if bw, ok = b.vector("matmul bias", bias, out); !ok {
			return
		}
	}
	b.emit(call{op: callOp{kind: callMatMul, w: wt, bias: bw, args: [6]Arg{d, s}, rows: rows}})
}

func (b *Backend) recordMatMul(c *call) {
	o := &c.op
	prev := b.recent[1]
	b.barrier()
	wt, d, s := o.w, o.args[0], o.args[1]
	out := int(wt.desc.rows)
	biasArg, hasBias, biasDT := wt.data, uint32(0), uint32(0)
	if o.bias != nil {
		biasArg, hasBias, biasDT = o.bias.data, 1, o.bias.dt
	}
	if o.rows == 1 {
		r := mvRecord{w: wt, bias: biasArg, x: s, out: d,
			p:      mslMatVecParams{w: wt.desc, hasBias: hasBias, biasDT: biasDT},
			groups: [3]uint32{uint32((out + mvRowsPerGroup - 1) / mvRowsPerGroup), 1, 1}}
		// residual is unused unless addTo is set; any valid binding will do.
		b.pl.encMatvec(wt.matvec, r.groups, mvThreads, wt.data, wt.scales, wt.biases, biasArg, s, d, d, &r.p)
		r.index = len(b.pl.ds) - 1
		b.recent = [2]mvRecord{prev, r}
		return
	}
	p := mslMatMulParams{w: wt.desc, rows: uint32(o.rows), hasBias: hasBias, biasDT: biasDT}
	b.pl.encMatmul([3]uint32{uint32((out + mslMmTile - 1) / mslMmTile), uint32((o.rows + mslMmTile - 1) / mslMmTile), 1},
		[3]uint32{mslMmThreads, 1, 1}, wt.data, wt.scales, wt.biases, biasArg, s, d, &p)
}

// Mat-vec geometry: rows per threadgroup and threads per threadgroup.
const mvRowsPerGroup = mslMvRows * mslMvSimdgroups

var mvThreads = [3]uint32{mslMvSimdgroups * mslSimd, 1, 1}

// encMatvec records the mat-vec kernel k, one of the matvec_* family, which all share the
// signature of matvec_f32 (the generator checks each; this only picks the id).
func (pl *plan) encMatvec(k kernelID, groups, threads [3]uint32, w, scales, biases, bias, x, out, residual Arg, p *mslMatVecParams) {
	pl.encMatvecF32(groups, threads, w, scales, biases, bias, x, out, residual, p)
	pl.ds[len(pl.ds)-1].Kernel = k
}

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

// Rope records the rotation of rows of x at positions pos.. in place.
func (b *Backend) Rope(x backend.Buffer, rows, heads, pos int, rope *backend.Rope) {
	if rope == nil {
		b.fail(errors.New("metal: rope: nil rope"))
		return
	}
	inv, ok1 := b.ropeTable(rope)
	xa, ok2 := b.buf("rope", x, rows*heads*rope.HeadDim)
	if !ok1 || !ok2 || rows <= 0 || heads <= 0 || pos < 0 {
		return
	}
	b.emit(call{op: callOp{kind: callRope, args: [6]Arg{xa, inv}, rows: rows, heads: heads,
		headDim: rope.HeadDim, pairs: len(rope.InvFreq), style: ropeStyle(rope.Style)}, pos: pos})
}

func (b *Backend) recordRope(c *call, write bool) {
	b.barrier()
	if !b.slot(c, write) {
		return
	}
	o := &c.op
	p := mslRopeParams{rows: uint32(o.rows), heads: uint32(o.heads), headDim: uint32(o.headDim), style: o.style, pairs: uint32(o.pairs)}
	b.pl.encRope(groups1(o.rows*o.heads*o.pairs, 256), [3]uint32{256, 1, 1}, o.args[0], o.args[1], c.slot, &p)
	b.lastRope = ropeRecord{index: len(b.pl.ds) - 1, op: *o, pos: c.pos}
}

// Attention records the cache write of k and v and causal attention of q over the cache.
func (b *Backend) Attention(out, q, k, v backend.Buffer, cache backend.KVCache, layer, pos, rows, window int) {
	c, ok := cache.(*kvCache)
	if !ok || c == nil || c.LayerLens == nil {
		b.fail(fmt.Errorf("metal: attention: cache %T does not belong to the metal backend", cache))
		return
	}
	s := c.shape
	if err := backend.CheckAttention(s, c.LayerLens, layer, pos, rows, window); err != nil {
		b.fail(fmt.Errorf("metal: %w", err))
		return
	}
	qw, kvw := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	oa, ok1 := b.buf("attention", out, rows*qw)
	qa, ok2 := b.buf("attention", q, rows*qw)
	ka, ok3 := b.buf("attention", k, rows*kvw)
	va, ok4 := b.buf("attention", v, rows*kvw)
	if !ok1 || !ok2 || !ok3 || !ok4 || rows == 0 {
		return
	}
	c.LayerLens[layer] = pos + rows
	layerOff := uint64(layer) * uint64(s.Context) * uint64(kvw) * uint64(c.elem)
	b.emit(call{op: callOp{kind: callAttention, args: [6]Arg{oa, qa, ka, va, {c.k, layerOff}, {c.v, layerOff}},
		rows: rows, heads: s.Heads, kvHeads: s.KVHeads, headDim: s.HeadDim, window: window, scale: s.AttnScale(),
		cache: c.id, kvHalf: c.elem == 2}, pos: pos})
}

func (b *Backend) recordAttention(c *call, write bool) {
	fused := b.lastRope
	b.barrier()
	if !b.slot(c, write) {
		return
	}
	o := &c.op
	oa, qa, ka, va, kc, vc := o.args[0], o.args[1], o.args[2], o.args[3], o.args[4], o.args[5]
	// Without a rotation, kv_store's pairs cover the head with no rotation pair.
	kvHalf := uint32(0)
	if o.kvHalf {
		kvHalf = 1
	}
	kp := mslKVStoreParams{rope: mslRopeParams{rows: uint32(o.rows), heads: uint32(o.kvHeads), headDim: uint32(o.headDim)}, kvHalf: kvHalf}
	inv := ka
	// The model rotated k just before: do that rotation while writing the cache.
	if fused.index == len(b.pl.ds)-1 && fused.op.args[0] == ka && fused.op.rows == o.rows && fused.pos == c.pos &&
		fused.op.heads == o.kvHeads && fused.op.headDim == o.headDim {
		b.pl.ds = b.pl.ds[:fused.index]
		kp.rotate, kp.rope.style, kp.rope.pairs, inv = 1, fused.op.style, uint32(fused.op.pairs), fused.op.args[1]
	}
	b.pl.encKvStore(groups1(o.rows*o.kvHeads*o.headDim/2, 256), [3]uint32{256, 1, 1}, ka, va, inv, kc, vc, c.slot, &kp)
	ap := mslAttnParams{rows: uint32(o.rows), heads: uint32(o.heads), kvHeads: uint32(o.kvHeads), headDim: uint32(o.headDim),
		scale: o.scale, window: uint32(o.window), kvHalf: kvHalf}
	if o.rows == 1 {
		b.pl.encAttention([3]uint32{uint32(o.heads), 1, 1}, [3]uint32{mslAttSimdgroups * mslSimd, 1, 1}, qa, kc, vc, oa, c.slot, &ap)
		return
	}
	b.pl.encAttentionBlock([3]uint32{uint32(o.heads), uint32((o.rows + mslAtbRows - 1) / mslAtbRows), 1},
		[3]uint32{mslAtbRows * mslSimd, 1, 1}, qa, kc, vc, oa, c.slot, qa, &ap)
}

// SiLUMul records dst = silu(gate)·up.
func (b *Backend) SiLUMul(dst, gate, up backend.Buffer, n int) {
	d, ok1 := b.buf("silumul", dst, n)
	g, ok2 := b.buf("silumul", gate, n)
	u, ok3 := b.buf("silumul", up, n)
	if !ok1 || !ok2 || !ok3 || n <= 0 {
		return
	}
	b.emit(call{op: callOp{kind: callSiLUMul, args: [6]Arg{d, g, u}, n: n}})
}

func (b *Backend) recordSiLUMul(c *call) {
	r := b.recent
	b.barrier()
	d, g, u, n := c.op.args[0], c.op.args[1], c.op.args[2], c.op.n
	// The gate and up projections of x were the last two dispatches: one pass does all three.
	if r[0].out == u && r[1].out == g {
		r[0], r[1] = r[1], r[0]
	}
	// d must not be x: other threadgroups still read x while one writes d.
	last := len(b.pl.ds) - 1
	if r[0].index == last-1 && r[1].index == last && r[0].x == r[1].x && r[0].out == g && r[1].out == u &&
		r[0].p.hasBias == 0 && r[1].p.hasBias == 0 && r[0].w.fused == r[1].w.fused &&
		r[0].w.desc.rows == uint32(n) && r[1].w.desc.rows == uint32(n) && r[0].w.desc.cols == r[1].w.desc.cols &&
		d.Buf != r[0].x.Buf {
		b.pl.ds = b.pl.ds[:last-1]
		wg, wu := r[0].w, r[1].w
		p := mslMatVecPairParams{gate: wg.desc, up: wu.desc}
		b.pl.encMatvecSilu(wg.fused, r[0].groups, mvThreads, wg.data, wg.scales, wg.biases, wu.data, wu.scales, wu.biases, r[0].x, g, u, d, &p)
		return
	}
	b.pl.encSiluMul(groups1(n, 256), [3]uint32{256, 1, 1}, g, u, d, &mslEltParams{n: uint32(n)})
}

// GELUMul records dst = gelu(gate)·up (tanh approximation).
func (b *Backend) GELUMul(dst, gate, up backend.Buffer, n int) {
	d, ok1 := b.buf("gelumul", dst, n)
	g, ok2 := b.buf("gelumul", gate, n)
	u, ok3 := b.buf("gelumul", up, n)
	if !ok1 || !ok2 || !ok3 || n <= 0 {
		return
	}
	b.emit(call{op: callOp{kind: callGELUMul, args: [6]Arg{d, g, u}, n: n}})
}

func (b *Backend) recordGELUMul(c *call) {
	b.barrier()
	b.pl.encGeluMul(groups1(c.op.n, 256), [3]uint32{256, 1, 1}, c.op.args[1], c.op.args[2], c.op.args[0], &mslEltParams{n: uint32(c.op.n)})
}

// Scale records x *= s.
func (b *Backend) Scale(x backend.Buffer, n int, s float32) {
	xa, ok := b.buf("scale", x, n)
	if !ok || n <= 0 {
		return
	}
	b.emit(call{op: callOp{kind: callScale, args: [6]Arg{xa}, n: n, scale: s}})
}

func (b *Backend) recordScale(c *call) {
	b.barrier()
	b.pl.encScaleInplace(groups1(c.op.n, 256), [3]uint32{256, 1, 1}, c.op.args[0], &mslScaleParams{n: uint32(c.op.n), s: c.op.scale})
}

// encMatvecSilu records k, one of the matvec_silu family, which share matvec_silu_f32's
// signature.
func (pl *plan) encMatvecSilu(k kernelID, groups, threads [3]uint32, wg, sg, bg, wu, su, bu, x, gate, up, out Arg, p *mslMatVecPairParams) {
	pl.encMatvecSiluF32(groups, threads, wg, sg, bg, wu, su, bu, x, gate, up, out, p)
	pl.ds[len(pl.ds)-1].Kernel = k
}

// Add records dst += x.
func (b *Backend) Add(dst, x backend.Buffer, n int) {
	d, ok1 := b.buf("add", dst, n)
	s, ok2 := b.buf("add", x, n)
	if !ok1 || !ok2 || n <= 0 {
		return
	}
	b.emit(call{op: callOp{kind: callAdd, args: [6]Arg{d, s}, n: n}})
}

func (b *Backend) recordAdd(c *call) {
	r := b.recent[1]
	b.barrier()
	d, s, n := c.op.args[0], c.op.args[1], c.op.n
	// x is the output of the mat-vec just recorded: that pass adds it to dst too. dst must not
	// be the mat-vec's input, which other threadgroups still read, nor its output.
	if r.index == len(b.pl.ds)-1 && r.out == s && r.p.w.rows == uint32(n) && r.x.Buf != d.Buf && r.out.Buf != d.Buf {
		b.pl.ds = b.pl.ds[:r.index]
		r.p.addTo = 1
		b.pl.encMatvec(r.w.matvec, r.groups, mvThreads, r.w.data, r.w.scales, r.w.biases, r.bias, r.x, r.out, d, &r.p)
		return
	}
	b.pl.encAddInplace(groups1(n, 256), [3]uint32{256, 1, 1}, d, s, &mslEltParams{n: uint32(n)})
}

// Read submits the recorded step, waits for it and everything committed before, and copies
// the first len(dst) values of src.
func (b *Backend) Read(dst []float32, src backend.Buffer) error {
	a, ok := b.buf("read", src, len(dst))
	if err := b.flush(true); err != nil || !ok {
		return err
	}
	if len(dst) > 0 {
		b.dev.Read(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), a)
	}
	return nil
}

// Sync submits the recorded step, waits for it and everything committed before, and reports
// the first error since the last Sync.
func (b *Backend) Sync() error { return b.flush(true) }

// Commit submits the recorded step without waiting for it, so the device works while the host
// goes on; the next Read or Sync waits for it. It reports the errors of the recorded operations
// and those the device sees at submission; errors while the step runs come with that Read or
// Sync. Until then the host must not write what the committed step still reads; in
// particular the next step's calls write their token ids and positions into the same upload
// area, so today only a Read or Sync may follow a Commit before the next step's calls.
func (b *Backend) Commit() error { return b.submit(true) }

// Close releases the device and everything allocated on it.
func (b *Backend) Close() error { return b.dev.Close() }
