package backend

import (
	"errors"
	"fmt"

	"github.com/layaapp/laya/engine/tensor"
)

// The argument checks every backend makes, one per operation, so that all backends reject the
// same calls with the same errors. Each returns an error naming the operation; a backend adds
// its own checks (a buffer of another backend, a dtype it has no kernel for) and its prefix.

// CheckLen reports whether each of bufs is set and holds at least n values, n not negative.
func CheckLen(op string, n int, bufs ...Buffer) error {
	if n < 0 {
		return fmt.Errorf("%s: %d values", op, n)
	}
	for _, b := range bufs {
		if err := checkBuf(op, b, n); err != nil {
			return err
		}
	}
	return nil
}

func checkBuf(op string, b Buffer, n int) error {
	if b == nil {
		return fmt.Errorf("%s: nil buffer", op)
	}
	if b.Len() < n {
		return fmt.Errorf("%s: buffer of %d values, need %d", op, b.Len(), n)
	}
	return nil
}

// checkMatrix reports whether w is a weight matrix of cols columns (any when cols < 0).
func checkMatrix(op string, w *tensor.Tensor, cols int) error {
	switch {
	case w == nil:
		return fmt.Errorf("%s: nil weight", op)
	case len(w.Shape) != 2:
		return fmt.Errorf("%s: weight %q has shape %v, want [out, in]", op, w.Name, w.Shape)
	case cols >= 0 && w.Cols() != cols:
		return fmt.Errorf("%s: weight %q has %d columns, want %d", op, w.Name, w.Cols(), cols)
	}
	return nil
}

// checkVector reports whether v is nil (when optional) or a vector of n values.
func checkVector(op, what string, v *tensor.Tensor, n int, optional bool) error {
	switch {
	case v == nil && optional:
		return nil
	case v == nil:
		return fmt.Errorf("%s: nil %s", op, what)
	case v.Rows() != 1 || v.Cols() != n:
		return fmt.Errorf("%s: %s %q has shape %v, want %d values", op, what, v.Name, v.Shape, n)
	}
	return nil
}

func checkRows(op string, rows int) error {
	if rows < 0 {
		return fmt.Errorf("%s: %d rows", op, rows)
	}
	return nil
}

// CheckEmbed is the argument check of Embed: a table, and dst holding a row per id. The ids
// themselves are checked against the table's rows.
func CheckEmbed(dst Buffer, table *tensor.Tensor, ids []int32) error {
	if err := checkMatrix("embed", table, -1); err != nil {
		return err
	}
	for _, id := range ids {
		if id < 0 || int(id) >= table.Rows() {
			return fmt.Errorf("embed: token id %d outside the table's %d rows", id, table.Rows())
		}
	}
	return CheckLen("embed", len(ids)*table.Cols(), dst)
}

// CheckRMSNorm is the argument check of RMSNorm: a weight vector and rows of its length.
func CheckRMSNorm(dst, x Buffer, w *tensor.Tensor, rows int) error {
	if w == nil {
		return errors.New("rmsnorm: nil weight")
	}
	if err := checkVector("rmsnorm", "weight", w, w.Cols(), false); err != nil {
		return err
	}
	if err := checkRows("rmsnorm", rows); err != nil {
		return err
	}
	return CheckLen("rmsnorm", rows*w.Cols(), dst, x)
}

// CheckMatMul is the argument check of MatMul.
func CheckMatMul(dst, x Buffer, w, bias *tensor.Tensor, rows int) error {
	const op = "matmul"
	if err := checkMatrix(op, w, -1); err != nil {
		return err
	}
	if err := checkVector(op, "bias", bias, w.Rows(), true); err != nil {
		return err
	}
	if err := checkRows(op, rows); err != nil {
		return err
	}
	if err := CheckLen(op, rows*w.Cols(), x); err != nil {
		return err
	}
	return CheckLen(op, rows*w.Rows(), dst)
}

// checkNorm reports whether n is the zero Norm or one over rows of cols values.
func checkNorm(op string, n Norm, cols int) error {
	if n.W == nil {
		return nil
	}
	return checkVector(op, "norm weight", n.W, cols, false)
}

// CheckMatMuls is the argument check of MatMuls: as many outputs (and biases, when given) as
// weights, at least one, all weights of x's width.
func CheckMatMuls(dst []Buffer, x Buffer, norm Norm, w, bias []*tensor.Tensor, rows int) error {
	const op = "matmuls"
	switch {
	case len(w) == 0:
		return fmt.Errorf("%s: no weights", op)
	case len(dst) != len(w) || (bias != nil && len(bias) != len(w)):
		return fmt.Errorf("%s: %d outputs and %d biases for %d weights", op, len(dst), len(bias), len(w))
	}
	if err := checkMatrix(op, w[0], -1); err != nil {
		return err
	}
	cols := w[0].Cols()
	for i, wi := range w {
		if err := checkMatrix(op, wi, cols); err != nil {
			return err
		}
		if bias != nil {
			if err := checkVector(op, "bias", bias[i], wi.Rows(), true); err != nil {
				return err
			}
		}
	}
	if err := checkInput(op, x, norm, cols, rows); err != nil {
		return err
	}
	for i, d := range dst {
		if err := CheckLen(op, rows*w[i].Rows(), d); err != nil {
			return err
		}
	}
	return nil
}

// CheckMatMulAdd is the argument check of MatMulAdd.
func CheckMatMulAdd(dst, x Buffer, w *tensor.Tensor, rows int) error {
	if err := CheckMatMul(dst, x, w, nil, rows); err != nil {
		return fmt.Errorf("matmul-add: %w", err)
	}
	return nil
}

// CheckGLU is the argument check of GLU: gate and up of one shape, [ffn, cols].
func CheckGLU(dst, x Buffer, norm Norm, gate, up *tensor.Tensor, act Activation, rows int) error {
	const op = "glu"
	if err := checkMatrix(op, gate, -1); err != nil {
		return err
	}
	if err := checkMatrix(op, up, gate.Cols()); err != nil {
		return err
	}
	cols, ffn := gate.Cols(), gate.Rows()
	switch {
	case up.Rows() != ffn:
		return fmt.Errorf("%s: gate %v and up %v differ in shape", op, gate.Shape, up.Shape)
	case act != SiLU && act != GELUTanh:
		return fmt.Errorf("%s: activation %d", op, act)
	}
	if err := checkInput(op, x, norm, cols, rows); err != nil {
		return err
	}
	return CheckLen(op, rows*ffn, dst)
}

// checkRope reports whether rope is nil or a rotation of the cache's heads.
func checkRope(op string, r *Rope, s AttnShape) error {
	if r == nil {
		return nil
	}
	if err := r.Check(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if r.HeadDim != s.HeadDim {
		return fmt.Errorf("%s: rope of head dim %d for heads of %d", op, r.HeadDim, s.HeadDim)
	}
	return nil
}

// CheckStoreKV is the argument check of StoreKV for a cache of shape s whose layers hold lens
// positions: layer within the cache, positions [pos, pos+rows) within its context and
// continuing what the layer holds.
func CheckStoreKV(s AttnShape, lens LayerLens, layer, pos, rows int, k, v Buffer, rope *Rope) error {
	const op = "store kv"
	switch {
	case layer < 0 || layer >= s.Layers || layer >= len(lens):
		return fmt.Errorf("%s: layer %d of a %d-layer cache", op, layer, s.Layers)
	case rows < 0 || pos < 0 || pos+rows > s.Context || pos > lens[layer]:
		return fmt.Errorf("%s: layer %d positions [%d, %d) with %d cached of context %d", op, layer, pos, pos+rows, lens[layer], s.Context)
	}
	if err := checkRope(op, rope, s); err != nil {
		return err
	}
	return CheckLen(op, rows*s.KVHeads*s.HeadDim, k, v)
}

// CheckAttention is the argument check of Attention for a cache of shape s whose layers hold
// lens positions: layer within the cache, the keys of positions [0, pos+rows) stored, and
// window not negative.
func CheckAttention(s AttnShape, lens LayerLens, out, q Buffer, layer, pos, rows, window int, rope *Rope) error {
	const op = "attention"
	switch {
	case layer < 0 || layer >= s.Layers || layer >= len(lens):
		return fmt.Errorf("%s: layer %d of a %d-layer cache", op, layer, s.Layers)
	case rows < 0 || pos < 0 || pos+rows > lens[layer]:
		return fmt.Errorf("%s: layer %d positions [%d, %d) with %d stored", op, layer, pos, pos+rows, lens[layer])
	case window < 0:
		return fmt.Errorf("%s: window %d", op, window)
	}
	if err := checkRope(op, rope, s); err != nil {
		return err
	}
	return CheckLen(op, rows*s.Heads*s.HeadDim, out, q)
}

// checkInput checks the shared input of MatMuls and GLU: rows of cols values, normalized by norm.
func checkInput(op string, x Buffer, norm Norm, cols, rows int) error {
	if err := checkNorm(op, norm, cols); err != nil {
		return err
	}
	if err := checkRows(op, rows); err != nil {
		return err
	}
	return CheckLen(op, rows*cols, x)
}
