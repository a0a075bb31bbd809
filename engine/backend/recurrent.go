package backend

import (
	"fmt"

	"github.com/layaapp/laya/engine/tensor"
)

// ConvKind says what a causal convolution reads and how it finishes.
type ConvKind int

const (
	// ConvSiLU: x rows hold the convolution's channels; y = silu(conv(x)) (Qwen3.5's convolution
	// of the fused q/k/v projection).
	ConvSiLU ConvKind = iota
	// ConvGated: x rows hold three blocks of the channels, [B | C | u]; y = C ⊙ conv(B ⊙ u)
	// (LFM2's gated short convolution).
	ConvGated
)

// DeltaShape is the geometry of a Gated DeltaNet layer: KHeads query/key heads of KDim and
// VHeads value heads of VDim, value head h reading query/key head KHead(h). Its state is VHeads
// matrices of KDim×VDim.
type DeltaShape struct {
	KHeads, VHeads, KDim, VDim int
	// Tiled: value head h reads query/key head h%KHeads instead (llama.cpp's order of the
	// value heads).
	Tiled bool
	// NegExpA: the A tensor holds -exp(A_log) rather than A_log (llama.cpp's ssm_a).
	NegExpA bool
}

// KHead is the query/key head value head h reads.
func (s DeltaShape) KHead(h int) int {
	if s.Tiled {
		return h % s.KHeads
	}
	return h / (s.VHeads / s.KHeads)
}

// StateLen is the number of floats of a layer's delta-rule state.
func (s DeltaShape) StateLen() int { return s.VHeads * s.KDim * s.VDim }

// Check reports whether s is a geometry backends can run.
func (s DeltaShape) Check() error {
	if s.KHeads <= 0 || s.VHeads <= 0 || s.VHeads%s.KHeads != 0 || s.KDim <= 0 || s.VDim <= 0 {
		return fmt.Errorf("delta rule: %d key heads of %d, %d value heads of %d", s.KHeads, s.KDim, s.VHeads, s.VDim)
	}
	return nil
}

// Recurrent is implemented by backends that run recurrent layers: LFM2's short convolutions and
// Qwen3.5's Gated DeltaNet. A recurrent layer's state is a Buffer the model owns (one per layer
// and session); each operation reads the state left by the positions before pos and leaves the
// state after its last row. At pos 0 the incoming state is taken as zeros, whatever the buffer
// holds, so a session starting over needs no clearing pass.
type Recurrent interface {
	// CausalConv convolves each channel over positions: w is [channels, kernel] (kernel K, the
	// last tap multiplying the current position), state holds the K-1 inputs before pos as rows
	// of channels (the convolved inputs, B ⊙ u for ConvGated), and dst gets rows of channels.
	CausalConv(dst, x Buffer, w *tensor.Tensor, state Buffer, kind ConvKind, pos, rows int)
	// GatedDelta runs the gated delta rule. qkv rows hold [q | k | v] (KHeads*KDim, KHeads*KDim,
	// VHeads*VDim), as the convolution left them; a and b rows hold VHeads values. Per head and
	// position: q and k are L2-normalized (eps 1e-6) and q scaled by 1/sqrt(KDim); the decay is
	// g = exp(-exp(aLog) * softplus(a + dtBias)) (with aLog holding -exp(A_log) when
	// s.NegExpA: g = exp(aLog * softplus(a + dtBias))), beta = sigmoid(b); then S = g*S,
	// S += k ⊗ beta*(v - Sᵀk), out = Sᵀq. out rows hold VHeads*VDim. state is the VHeads
	// matrices S [KDim][VDim]. Long runs may use the chunked form, which equals the step-by-step
	// one up to rounding.
	GatedDelta(out, qkv, a, b Buffer, aLog, dtBias *tensor.Tensor, state Buffer, s DeltaShape, pos, rows int)
	// GatedRMSNorm: dst[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w * silu(z[r]) for rows of
	// w.Cols() elements.
	GatedRMSNorm(dst, x, z Buffer, w *tensor.Tensor, rows int, eps float32)
	// SplitHeads writes the first half of each of n blocks of 2*width values of src to a and the
	// second half to b (Qwen3.5's q_proj yields each head's query, then its output gate).
	SplitHeads(a, b, src Buffer, n, width int)
	// SigmoidMul: x[i] *= sigmoid(gate[i]).
	SigmoidMul(x, gate Buffer, n int)
	// Copy: dst[i] = src[i] for i < n (a session keeps and restores recurrent states with it).
	Copy(dst, src Buffer, n int)
}

// CheckConv is the argument check of CausalConv on every backend: a [channels, kernel] weight
// and a state of (kernel-1)*channels values; it returns the channel count and kernel.
func CheckConv(w *tensor.Tensor, stateLen int, kind ConvKind, pos, rows int) (channels, kernel int, err error) {
	switch {
	case w == nil || len(w.Shape) != 2 || w.Shape[0] <= 0 || w.Shape[1] <= 0:
		return 0, 0, fmt.Errorf("causal conv: weight shape %v, want [channels, kernel]", shapeOf(w))
	case kind != ConvSiLU && kind != ConvGated:
		return 0, 0, fmt.Errorf("causal conv: kind %d", kind)
	case pos < 0 || rows < 0:
		return 0, 0, fmt.Errorf("causal conv: rows %d at %d", rows, pos)
	}
	channels, kernel = w.Shape[0], w.Shape[1]
	if stateLen < (kernel-1)*channels {
		return 0, 0, fmt.Errorf("causal conv: state of %d values for kernel %d over %d channels", stateLen, kernel, channels)
	}
	return channels, kernel, nil
}

func shapeOf(t *tensor.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}

// CheckGatedDelta is the argument check of GatedDelta: a valid shape, A_log and dt_bias of a
// value per value head, and buffers of rows of q|k|v, a, b and out, and a state.
func CheckGatedDelta(out, qkv, a, b Buffer, aLog, dtBias *tensor.Tensor, state Buffer, s DeltaShape, pos, rows int) error {
	const op = "delta rule"
	if err := s.Check(); err != nil {
		return err
	}
	if pos < 0 || rows < 0 {
		return fmt.Errorf("%s: rows %d at %d", op, rows, pos)
	}
	if err := checkVector(op, "A_log", aLog, s.VHeads, false); err != nil {
		return err
	}
	if err := checkVector(op, "dt_bias", dtBias, s.VHeads, false); err != nil {
		return err
	}
	width := 2*s.KHeads*s.KDim + s.VHeads*s.VDim
	for _, c := range [...]struct {
		b Buffer
		n int
	}{{out, rows * s.VHeads * s.VDim}, {qkv, rows * width}, {a, rows * s.VHeads}, {b, rows * s.VHeads}, {state, s.StateLen()}} {
		if err := checkBuf(op, c.b, c.n); err != nil {
			return err
		}
	}
	return nil
}

// CheckGatedRMSNorm is the argument check of GatedRMSNorm: a weight vector and rows of its
// length in dst, x and z.
func CheckGatedRMSNorm(dst, x, z Buffer, w *tensor.Tensor, rows int) error {
	const op = "gated rmsnorm"
	if w == nil {
		return fmt.Errorf("%s: nil weight", op)
	}
	if err := checkVector(op, "weight", w, w.Cols(), false); err != nil {
		return err
	}
	if err := checkRows(op, rows); err != nil {
		return err
	}
	return CheckLen(op, rows*w.Cols(), dst, x, z)
}

// CheckSplitHeads is the argument check of SplitHeads: n blocks of width values in a and b,
// of 2*width in src.
func CheckSplitHeads(a, b, src Buffer, n, width int) error {
	const op = "split heads"
	if n < 0 || width < 0 {
		return fmt.Errorf("%s: %d blocks of %d", op, n, width)
	}
	if err := CheckLen(op, n*width, a, b); err != nil {
		return err
	}
	return CheckLen(op, 2*n*width, src)
}
