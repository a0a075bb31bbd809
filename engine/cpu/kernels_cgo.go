//go:build cgo

package cpu

/*
#cgo CFLAGS: -O3 -std=c11
#cgo LDFLAGS: -lm
#include "kernels.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/layaapp/laya/engine/tensor"
)

// simdLevel is the kernel set in use: 0 portable C, then 1 AVX2, 2 AVX-512 VNNI and 3 AMX on amd64, 1
// NEON and 2 NEON with dotprod on arm64.
var simdLevel = int(C.laya_init(-1))

func init() {
	if C.sizeof_lq8 != lq8Size {
		panic(fmt.Sprintf("cpu: C activation block is %d bytes, Go assumes %d", C.sizeof_lq8, lq8Size))
	}
}

// useSIMD selects a kernel level (-1 = best available) and returns the one in effect; tests use
// it to check every level against the reference.
func useSIMD(level int) int {
	simdLevel = int(C.laya_init(C.int(level)))
	return simdLevel
}

// kernelKind maps a tensor to its C kernel, or reports false when only the generic path runs it.
func kernelKind(t *tensor.Tensor) (kind, sdt int, ok bool) {
	switch t.DType {
	case tensor.F32:
		return C.LK_F32, 0, true
	case tensor.F16:
		return C.LK_F16, 0, true
	case tensor.BF16:
		return C.LK_BF16, 0, true
	case tensor.Q8_0:
		return C.LK_Q8_0, 0, true
	case tensor.Q4_0:
		return C.LK_Q4_0, 0, true
	case tensor.Q5_0:
		return C.LK_Q5_0, 0, true
	case tensor.Q4_K:
		return C.LK_Q4_K, 0, true
	case tensor.Q5_K:
		return C.LK_Q5_K, 0, true
	case tensor.Q6_K:
		return C.LK_Q6_K, 0, true
	case tensor.Affine:
		// The kernels take groups of 32 << k elements (MLX writes 32, 64 or 128).
		if g := t.GroupSize / 32; t.GroupSize%32 != 0 || g&(g-1) != 0 || t.Scales.DType != t.Biases.DType {
			return 0, 0, false
		}
		switch t.Scales.DType {
		case tensor.F32:
			sdt = C.LS_F32
		case tensor.F16:
			sdt = C.LS_F16
		case tensor.BF16:
			sdt = C.LS_BF16
		default:
			return 0, 0, false
		}
		if t.Bits == 4 {
			return C.LK_AFF4, sdt, true
		}
		return C.LK_AFF8, sdt, true
	}
	return 0, 0, false
}

func kindIsFloat(kind int) bool { return kind == C.LK_F32 || kind == C.LK_F16 || kind == C.LK_BF16 }

func kindPermutes(kind int) bool { return C.laya_quant_perm(C.int(kind)) != 0 }

// quantize fills q (qrows*cols/32 blocks of lq8Size bytes, as uint32 words; qrows is rows, or
// 2*rows with residual pairs, see kernels.h) from x, and, when they are not empty, xt
// (max(2*qrows, 4)*cols/32 floats) and x8 ((qrows/8+1)/2*16*cols bytes, or qrows*cols below 8
// rows; only with xt) with the transposed scales and rearranged codes the decode and tile kernels
// read. scratch holds cols floats. Short buffers are a bug in this package, not bad input: C
// would write past them, so they panic.
func quantize(x []float32, rows, cols int, q []uint32, perm, pair, resid bool, scratch, xt []float32, x8 []int8) {
	checkQuantize(x, rows, cols, q, pair, resid, scratch, xt, x8)
	t, t8 := quantExtras(xt, x8)
	C.laya_quantize((*C.float)(&x[0]), C.int(rows), C.int(cols), (*C.lq8)(unsafe.Pointer(&q[0])),
		cbool(perm), cbool(pair), cbool(resid), (*C.float)(&scratch[0]), t, t8)
}

// quantizeRows is quantize's work for rows [r0, r1) of rows >= 16, r0 a multiple of 16, so
// that threads can split it (see laya_quantize_rows); each needs its own scratch.
func quantizeRows(x []float32, rows, cols, r0, r1 int, q []uint32, perm, pair, resid bool, scratch, xt []float32, x8 []int8) {
	checkQuantize(x, rows, cols, q, pair, resid, scratch, xt, x8)
	if rows < 16 || r0%16 != 0 || r0 < 0 || r1 > rows || r0 >= r1 {
		panic(fmt.Sprintf("cpu: quantize rows [%d, %d) of %d", r0, r1, rows))
	}
	t, t8 := quantExtras(xt, x8)
	C.laya_quantize_rows((*C.float)(&x[0]), C.int(rows), C.int(cols), C.int(r0), C.int(r1), (*C.lq8)(unsafe.Pointer(&q[0])),
		cbool(perm), cbool(pair), cbool(resid), (*C.float)(&scratch[0]), t, t8)
}

func checkQuantize(x []float32, rows, cols int, q []uint32, pair, resid bool, scratch, xt []float32, x8 []int8) {
	if pair && cols%64 != 0 {
		panic(fmt.Sprintf("cpu: quantize %d columns by block pairs", cols))
	}
	qrows := rows
	if resid {
		qrows = 2 * rows
	}
	n8 := (qrows/8 + 1) / 2 * 16 * cols
	if qrows < 8 {
		n8 = qrows * cols
	}
	if len(x) < rows*cols || len(q)*4 < qrows*cols/32*lq8Size || len(scratch) < cols ||
		(len(xt) > 0 && len(xt) < max(2*qrows, 4)*cols/32) || (len(xt) > 0 && len(x8) > 0 && len(x8) < n8) {
		panic(fmt.Sprintf("cpu: quantize buffers too short for %d x %d", rows, cols))
	}
}

func quantExtras(xt []float32, x8 []int8) (*C.float, *C.int8_t) {
	var t *C.float
	var t8 *C.int8_t
	if len(xt) > 0 {
		t = (*C.float)(&xt[0])
		if len(x8) > 0 {
			t8 = (*C.int8_t)(&x8[0])
		}
	}
	return t, t8
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func ptr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(&b[0])
}

// runKernel runs output rows [lo, hi) of j in one C call; it fails only when C cannot allocate
// its buffer of decoded weight rows.
func (j *matmulJob) runKernel(lo, hi int) error {
	m := j.m
	t := m.t
	w := C.lw{kind: C.int(m.kind), rows: C.int(m.rows), cols: C.int(m.cols), rowbytes: C.long(t.RowBytes()),
		w: ptr(t.Data), sdt: C.int(m.sdt), group: C.int(t.GroupSize)}
	if t.DType == tensor.Affine {
		w.sc, w.bi = ptr(t.Scales.Data), ptr(t.Biases.Data)
	}
	x := C.lx{stride: C.long(m.cols), rows: C.int(j.qrows), pairs: cbool(j.resid), pairscaled: cbool(j.pair)}
	if kindIsFloat(m.kind) {
		x.x = unsafe.Pointer(&j.x[0])
	} else {
		x.x = unsafe.Pointer(&j.xq[0])
		x.stride = C.long(m.cols / 32)
		if len(j.xt) > 0 {
			x.xt = (*C.float)(&j.xt[0])
		}
		if len(j.x8) > 0 {
			x.x8 = (*C.int8_t)(&j.x8[0])
		}
	}
	out := C.lout{dst: (*C.float)(&j.dst[0]), ldd: C.long(m.rows)}
	if j.bias != nil {
		out.bias = (*C.float)(&j.bias[0])
	}
	if C.laya_matmul(w, C.int(lo), C.int(hi), x, out) != 0 {
		return fmt.Errorf("cpu: matmul %q: no memory for the decoded weight rows (%d columns)", t.Name, m.cols)
	}
	return nil
}

// setDecodeLimit makes MatMul fail as when C cannot allocate its buffer of decoded weight rows,
// for buffers over n bytes; 0 lifts the limit. For tests.
func setDecodeLimit(n int) { C.laya_set_dec_limit(C.long(n)) }

func (j *attnJob) attend(w int, q, k, v, out []float32, pos, lo, hi int) {
	if lo >= hi {
		return
	}
	C.laya_attention((*C.float)(&q[0]), (*C.float)(&k[0]), (*C.float)(&v[0]), (*C.float)(&out[0]),
		(*C.float)(&j.scores[w][0]), C.int(j.heads), C.int(j.group), C.int(j.hd), C.int(j.kvw),
		C.int(pos), C.int(lo), C.int(hi), C.float(j.scale))
}

func siluMul(dst, gate, up []float32) {
	if len(dst) == 0 {
		return
	}
	C.laya_silu_mul((*C.float)(&dst[0]), (*C.float)(&gate[0]), (*C.float)(&up[0]), C.int(len(dst)))
}

func geluMul(dst, gate, up []float32) {
	if len(dst) == 0 {
		return
	}
	C.laya_gelu_mul((*C.float)(&dst[0]), (*C.float)(&gate[0]), (*C.float)(&up[0]), C.int(len(dst)))
}

func streamSum(p []byte) uint64 {
	if len(p) == 0 {
		return 0
	}
	return uint64(C.laya_stream((*C.uint8_t)(&p[0]), C.long(len(p))))
}
