package cpu

import (
	"fmt"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// lq8Size is the size of one C activation block (kernels.h lq8): 32 int8 codes, scale, sums.
const lq8Size = 44

// tile8 enables the kernels that read transposed scales and interleaved codes (decode mat-vecs,
// prefill tiles); tests turn it off to check them against the others.
var tile8 = true

// matrix is a prepared weight matrix: the tensor plus the kernel that runs it.
type matrix struct {
	t          *tensor.Tensor
	rows, cols int
	// fast: a C kernel of the given kind (and Affine scale dtype) handles it; otherwise the
	// generic dequantize-and-dot path does.
	fast      bool
	kind, sdt int
}

// matrix validates t once and caches it, so MatMul on the hot path is a map lookup.
func (c *cpuBackend) matrix(t *tensor.Tensor) (*matrix, error) {
	if m, ok := c.mats[t]; ok {
		return m, nil
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	switch t.DType {
	case tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q5_0,
		tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Affine:
	default:
		return nil, fmt.Errorf("cpu: tensor %q: dtype %v has no matmul kernel", t.Name, t.DType)
	}
	m := &matrix{t: t, rows: t.Rows(), cols: t.Cols()}
	m.kind, m.sdt, m.fast = kernelKind(t)
	c.mats[t] = m
	return m, nil
}

// matmulJob splits one MatMul over output rows.
type matmulJob struct {
	m      *matrix
	dst, x []float32
	bias   []float32
	rows   int
	// xq holds x quantized to lq8 blocks for the quantized kernels; xt their scales transposed
	// and x8 their codes interleaved by 16 rows (for full groups of 8 rows), or by block pairs
	// below 8 rows, for the kernels that scale 8 blocks or 8 rows at once.
	xq []uint32
	xt []float32
	x8 []int8
	// resid: x was quantized as residual pairs, qrows block rows in all (see kernels.h); pair:
	// with each pair of blocks sharing its scale.
	resid   bool
	pair    bool
	qrows   int
	scratch []float32
	// tmp is per-worker scratch for the generic path: one dequantized weight row.
	tmp   [][]float32
	errs  []error
	quant quantJob
}

func (j *matmulJob) init(threads int) {
	j.tmp = make([][]float32, threads)
	j.errs = make([]error, threads)
	j.quant = quantJob{j: j, scratch: make([][]float32, threads)}
}

// quantJob quantizes a matmul's activations (into its matmulJob's buffers), 16 rows per item.
type quantJob struct {
	j       *matmulJob
	x       []float32
	cols    int
	perm    bool
	pair    bool
	scratch [][]float32 // per worker, cols floats
}

func (q *quantJob) run(w, lo, hi int) {
	j := q.j
	quantizeRows(q.x, j.rows, q.cols, 16*lo, min(16*hi, j.rows), j.xq, q.perm, q.pair, j.resid, q.scratch[w][:q.cols], j.xt, j.x8)
}

func (c *cpuBackend) MatMul(dst, x backend.Buffer, w, bias *tensor.Tensor, rows int) {
	if !c.own(dst, x) {
		return
	}
	if err := backend.CheckMatMul(dst, x, w, bias, rows); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	d, ok1 := c.need("matmul", dst, rows*w.Rows())
	s, ok2 := c.need("matmul", x, rows*w.Cols())
	if ok1 && ok2 {
		var q quantKey
		c.matmul(d, s, w, bias, rows, &q)
	}
}

// MatMuls normalizes x once (when norm asks) and quantizes it once for all the weights that
// take the same quantization.
func (c *cpuBackend) MatMuls(dst []backend.Buffer, x backend.Buffer, norm backend.Norm, w, bias []*tensor.Tensor, rows int) {
	if !c.own(x) || !c.own(dst...) {
		return
	}
	if err := backend.CheckMatMuls(dst, x, norm, w, bias, rows); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	cols := w[0].Cols()
	s, ok := c.need("matmuls", x, rows*cols)
	if !ok {
		return
	}
	s = c.normed(s, norm, rows, cols)
	var q quantKey
	for i, wi := range w {
		d, ok := c.need("matmuls", dst[i], rows*wi.Rows())
		if !ok {
			return
		}
		var b *tensor.Tensor
		if bias != nil {
			b = bias[i]
		}
		c.matmul(d, s, wi, b, rows, &q)
	}
}

func (c *cpuBackend) MatMulAdd(dst, x backend.Buffer, w *tensor.Tensor, rows int) {
	if !c.own(dst, x) {
		return
	}
	if err := backend.CheckMatMulAdd(dst, x, w, rows); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	d, ok1 := c.need("matmul-add", dst, rows*w.Rows())
	s, ok2 := c.need("matmul-add", x, rows*w.Cols())
	if !ok1 || !ok2 {
		return
	}
	c.tmp = grow(c.tmp, len(d))
	var q quantKey
	c.matmul(c.tmp, s, w, nil, rows, &q)
	for i, v := range c.tmp {
		d[i] += v
	}
}

// GLU quantizes the (normalized) input once for gate and up.
func (c *cpuBackend) GLU(dst, x backend.Buffer, norm backend.Norm, gate, up *tensor.Tensor, act backend.Activation, rows int) {
	if !c.own(dst, x) {
		return
	}
	if err := backend.CheckGLU(dst, x, norm, gate, up, act, rows); err != nil {
		c.fail(fmt.Errorf("cpu: %w", err))
		return
	}
	d, ok1 := c.need("glu", dst, rows*gate.Rows())
	s, ok2 := c.need("glu", x, rows*gate.Cols())
	if !ok1 || !ok2 {
		return
	}
	s = c.normed(s, norm, rows, gate.Cols())
	c.tmp = grow(c.tmp, len(d))
	var q quantKey
	c.matmul(d, s, gate, nil, rows, &q)
	c.matmul(c.tmp, s, up, nil, rows, &q)
	if act == backend.GELUTanh {
		geluMul(d, d, c.tmp)
	} else {
		siluMul(d, d, c.tmp)
	}
}

// matmul runs d = s·wᵀ (+ bias) for a checked w. q says how mm's activation buffers hold s
// quantized; the matmuls of one input in one operation pass the
// same q, so s is quantized again only when a weight needs another quantization.
func (c *cpuBackend) matmul(d, s []float32, w, bias *tensor.Tensor, rows int, q *quantKey) {
	m, err := c.matrix(w)
	if err != nil {
		c.fail(err)
		return
	}
	var bv []float32
	if bias != nil {
		if bv, err = c.vec(bias); err != nil {
			c.fail(err)
			return
		}
	}
	if rows == 0 {
		return
	}
	j := &c.mm
	j.m, j.dst, j.x, j.bias, j.rows = m, d, s, bv, rows
	j.resid, j.qrows = false, rows
	if m.fast && !kindIsFloat(m.kind) {
		if c.residual {
			j.resid, j.qrows = true, 2*rows
		}
		// Prefill activations of weights grouped by 64 or more share a scale per pair of blocks,
		// which lets the AMX kernel take each pair as one block of 64 (2026-12-03, Xeon).
		pair := rows >= 16 && w.DType == tensor.Affine && w.GroupSize%64 == 0
		key := quantKey{true, kindPermutes(m.kind), pair, j.resid, tile8}
		if key != *q {
			*q = key
			c.quantizeInput(s, rows, m.cols, key.perm, pair)
		}
		j.pair = pair
	}
	// About eight chunks per worker balance a shared machine in decode; each is whole groups of
	// the rows the kernels decode together (4, or 16 for AMX prefill tiles). A prefill chunk of
	// one group is thousands of times a chunk's overhead, and the last chunk leaves the other
	// workers waiting for it.
	chunk := max(4, (m.rows/(8*c.pool.threads)+3)/4*4)
	if rows >= 16 {
		chunk = 16
	}
	c.pool.parallel(j, m.rows, chunk)
	for i, e := range j.errs {
		if e != nil {
			c.fail(e)
			j.errs[i] = nil
		}
	}
}

// quantizeInput quantizes rows of x (cols wide) into c.mm's activation buffers, the layouts
// laya_quantize describes.
func (c *cpuBackend) quantizeInput(s []float32, rows, cols int, perm, pair bool) {
	j := &c.mm
	c.quantizations++
	n := j.qrows * cols / 32 * lq8Size / 4
	if cap(j.xq) < n {
		j.xq = make([]uint32, n)
	}
	if cap(j.scratch) < cols {
		j.scratch = make([]float32, cols)
	}
	j.xq = j.xq[:n]
	j.xt, j.x8 = j.xt[:0], j.x8[:0]
	if tile8 {
		// A single row's xt also holds its half-block sums (see kernels.h).
		nt, n8 := max(2*j.qrows, 4)*cols/32, (j.qrows/8+1)/2*16*cols
		if j.qrows < 8 { // codes by block pairs for the decode kernels
			n8 = j.qrows * cols
		}
		if cap(j.xt) < nt {
			j.xt = make([]float32, nt)
		}
		if cap(j.x8) < n8 {
			j.x8 = make([]int8, n8)
		}
		j.xt, j.x8 = j.xt[:nt], j.x8[:n8]
	}
	if rows >= 32 && c.pool.threads > 1 {
		// Prefill splits it over the pool: serial, it took about 5% of a 2-thread prefill (2-vCPU
		// machine).
		q := &j.quant
		q.x, q.cols, q.perm, q.pair = s, cols, perm, pair
		for w := range q.scratch {
			if cap(q.scratch[w]) < cols {
				q.scratch[w] = make([]float32, cols)
			}
		}
		c.pool.parallel(q, (rows+15)/16, 1)
	} else {
		quantize(s, rows, cols, j.xq, perm, pair, j.resid, j.scratch, j.xt, j.x8)
	}
}

func (j *matmulJob) run(w, lo, hi int) {
	if j.m.fast {
		if err := j.runKernel(lo, hi); err != nil {
			j.errs[w] = err
		}
		return
	}
	m := j.m
	if len(j.tmp[w]) < m.cols {
		j.tmp[w] = make([]float32, m.cols)
	}
	tmp := j.tmp[w][:m.cols]
	for o := lo; o < hi; o++ {
		if err := tensor.DequantizeRow(m.t, o, tmp); err != nil {
			j.errs[w] = fmt.Errorf("cpu: matmul: %w", err)
			return
		}
		var b float32
		if j.bias != nil {
			b = j.bias[o]
		}
		for r := range j.rows {
			j.dst[r*m.rows+o] = dot(tmp, j.x[r*m.cols:(r+1)*m.cols]) + b
		}
	}
}
