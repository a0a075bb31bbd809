// Package cpu is the portable backend: every operation of a forward pass on the host CPU, with
// quantized matrix kernels in C (AVX2/FMA and AVX-512 VNNI variants on amd64, chosen at run time;
// portable C elsewhere; Go without cgo) and a persistent worker pool splitting each matmul over
// output rows.
package cpu

import (
	"errors"
	"fmt"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// buffer is the backend's Buffer: plain host memory.
type buffer struct{ d []float32 }

func (b *buffer) Len() int { return len(b.d) }

type viewKey struct {
	base     *float32
	off, n   int
	baseSize int
}

// maxViews bounds the view cache; a forward pass uses a few dozen distinct views, so reaching the
// bound means offsets keep changing and the cache restarts rather than growing without end.
const maxViews = 4096

type cpuBackend struct {
	pool *pool
	err  error
	// residual: activations are quantized as residual pairs (New) rather than plain int8 (NewInt8).
	residual bool

	// views caches View results so that the per-token views a forward pass takes do not allocate.
	views map[viewKey]*buffer
	// vecs holds 1-D tensors (norm weights, biases) as float32, converted once.
	vecs  map[*tensor.Tensor][]float32
	mats  map[*tensor.Tensor]*matrix
	ropes map[*backend.Rope]*ropeTable

	mm    matmulJob
	attn  attnJob
	delta deltaJob
	conv  convJob
	// quantizations counts the inputs quantized, for tests.
	quantizations int
	// xn holds a Norm's normalized input, tmp a matmul's output before it is added or
	// multiplied into dst (MatMulAdd, GLU's up projection).
	xn, tmp []float32
}

// quantKey says how a matmul input was quantized (the zero key: not yet); matmuls of one input
// with equal keys share the quantization.
type quantKey struct{ set, perm, pair, resid, tile8 bool }

// New returns a CPU backend running matmuls on threads workers; threads <= 0 means one per
// physical core. Its quantized kernels take activations as int8 blocks plus an int8 remainder,
// which keeps every product within about 1e-5 relative of float math (logprobs match a float64
// reference to 1e-3) at twice the integer work of plain int8.
func New(threads int) (backend.Backend, error) { return open(threads, true) }

// NewInt8 is New with activations quantized to plain int8 blocks, as llama.cpp does: faster
// (prefill about 2x), with errors of about 1e-2 relative per dot product.
func NewInt8(threads int) (backend.Backend, error) { return open(threads, false) }

// open keeps a failed backend from becoming a non-nil interface holding a nil pointer.
func open(threads int, residual bool) (backend.Backend, error) {
	c, err := newBackend(threads, residual)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func newBackend(threads int, residual bool) (*cpuBackend, error) {
	if threads <= 0 {
		threads = physicalCores()
	}
	if threads > 1024 {
		return nil, fmt.Errorf("cpu: %d threads is more than this backend supports", threads)
	}
	c := &cpuBackend{
		residual: residual,
		pool:     newPool(threads),
		views:    map[viewKey]*buffer{},
		vecs:     map[*tensor.Tensor][]float32{},
		mats:     map[*tensor.Tensor]*matrix{},
		ropes:    map[*backend.Rope]*ropeTable{},
	}
	c.mm.init(threads)
	c.attn.scores = make([][]float32, threads)
	return c, nil
}

// PhysicalCores is the number of physical CPU cores, the default thread count.
func PhysicalCores() int { return physicalCores() }

func (c *cpuBackend) Name() string { return "cpu" }

// Threads reports how many workers split each matmul.
func (c *cpuBackend) Threads() int { return c.pool.threads }

// fail records the first error of a step; Sync reports it.
func (c *cpuBackend) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func (c *cpuBackend) Sync() error {
	err := c.err
	c.err = nil
	return err
}

func (c *cpuBackend) Close() error {
	c.pool.close()
	return nil
}

func (c *cpuBackend) Prepare(weights []*tensor.Tensor) error {
	for _, t := range weights {
		if t == nil {
			return errors.New("cpu: nil tensor")
		}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
		if t.DType == tensor.I32 {
			return fmt.Errorf("cpu: tensor %q: dtype I32 is not a weight type", t.Name)
		}
		if len(t.Shape) == 1 {
			if _, err := c.vec(t); err != nil {
				return err
			}
			continue
		}
		if _, err := c.matrix(t); err != nil {
			return err
		}
	}
	return nil
}

func (c *cpuBackend) NewBuffer(n int) backend.Buffer {
	return &buffer{d: make([]float32, max(n, 0))}
}

func (c *cpuBackend) View(b backend.Buffer, off, n int) backend.Buffer {
	d, ok := c.buf(b)
	if !ok {
		return &buffer{}
	}
	if off < 0 || n < 0 || off+n > len(d) {
		c.fail(fmt.Errorf("cpu: view [%d, %d) of a buffer of %d", off, off+n, len(d)))
		return &buffer{}
	}
	var base *float32
	if len(d) > 0 {
		base = &d[0]
	}
	k := viewKey{base, off, n, len(d)}
	if v, ok := c.views[k]; ok {
		return v
	}
	if len(c.views) >= maxViews {
		clear(c.views)
	}
	v := &buffer{d: d[off : off+n : off+n]}
	c.views[k] = v
	return v
}

// buf returns b's storage, recording an error for a Buffer from another backend.
func (c *cpuBackend) buf(b backend.Buffer) ([]float32, bool) {
	bb, ok := b.(*buffer)
	if !ok || bb == nil {
		c.fail(fmt.Errorf("cpu: buffer %T does not belong to the cpu backend", b))
		return nil, false
	}
	return bb.d, true
}

// own reports whether every one of bufs belongs to the backend, recording an error when one
// does not; the shared argument checks may then ask their lengths.
func (c *cpuBackend) own(bufs ...backend.Buffer) bool {
	for _, b := range bufs {
		if _, ok := c.buf(b); !ok {
			return false
		}
	}
	return true
}

// need returns the first n values of b, recording an error when b is shorter.
func (c *cpuBackend) need(op string, b backend.Buffer, n int) ([]float32, bool) {
	d, ok := c.buf(b)
	if !ok {
		return nil, false
	}
	if n < 0 || len(d) < n {
		c.fail(fmt.Errorf("cpu: %s: buffer of %d values, need %d", op, len(d), n))
		return nil, false
	}
	return d[:n], true
}

func (c *cpuBackend) Read(dst []float32, src backend.Buffer) error {
	if err := c.Sync(); err != nil {
		return err
	}
	s, ok := c.buf(src)
	if !ok {
		return c.Sync()
	}
	if len(s) < len(dst) {
		return fmt.Errorf("cpu: read of %d values from a buffer of %d", len(dst), len(s))
	}
	copy(dst, s)
	return nil
}

// vec returns a 1-D tensor as float32. F32 data read in place would need aligned mmapped bytes,
// and these tensors are a few KB, so a converted copy costs nothing measurable.
func (c *cpuBackend) vec(t *tensor.Tensor) ([]float32, error) {
	if v, ok := c.vecs[t]; ok {
		return v, nil
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	v := make([]float32, t.Elems())
	for r := range t.Rows() {
		if err := tensor.DequantizeRow(t, r, v[r*t.Cols():(r+1)*t.Cols()]); err != nil {
			return nil, fmt.Errorf("cpu: %w", err)
		}
	}
	c.vecs[t] = v
	return v, nil
}

func (c *cpuBackend) Embed(dst backend.Buffer, table *tensor.Tensor, ids []int32) {
	if !c.own(dst) {
		return
	}
	if err := backend.CheckEmbed(dst, table, ids); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	d, ok := c.buf(dst)
	if !ok {
		return
	}
	cols := table.Cols()
	for i, id := range ids {
		if err := tensor.DequantizeRow(table, int(id), d[i*cols:(i+1)*cols]); err != nil {
			c.fail(fmt.Errorf("cpu: embed: %w", err))
			return
		}
	}
}

func (c *cpuBackend) Add(dst, x backend.Buffer, n int) {
	if !c.own(dst, x) {
		return
	}
	if err := backend.CheckLen("add", n, dst, x); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	d, ok1 := c.need("add", dst, n)
	s, ok2 := c.need("add", x, n)
	if ok1 && ok2 {
		for i := range d {
			d[i] += s[i]
		}
	}
}
