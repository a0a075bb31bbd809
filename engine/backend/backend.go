// Package backend is the boundary between model code and the hardware that runs it. A model's
// forward pass is written once as a sequence of these operations; the CPU backend executes each
// call as it comes, a GPU backend may record them and submit the step at Sync.
package backend

import (
	"fmt"
	"math"

	"github.com/layaapp/laya/engine/tensor"
)

// Buffer is a backend-owned array of float32 activations.
type Buffer interface {
	Len() int
}

// RopeStyle says how rotary embeddings pair up dimensions of a head.
type RopeStyle int

const (
	// RopeHalf pairs dimension i with i+headDim/2 (HuggingFace rotate_half).
	RopeHalf RopeStyle = iota
	// RopeInterleaved pairs dimension 2i with 2i+1 (GGUF llama files, whose q/k are permuted).
	RopeInterleaved
)

// Rope describes one rotary position embedding of a model. InvFreq has at most HeadDim/2
// entries (already scaled, e.g. by llama3 rope scaling); the angle for position p and pair i is
// p*InvFreq[i]. The first 2*len(InvFreq) dimensions of each head rotate and the rest pass
// through unchanged (partial rotary embedding): with RopeHalf, dimension i pairs with
// i+len(InvFreq). A backend may precompute tables from it once; the model passes the same *Rope
// every call.
type Rope struct {
	HeadDim int
	Style   RopeStyle
	InvFreq []float32
}

// AttnShape is the attention geometry a KV cache is made for.
type AttnShape struct {
	Layers, Heads, KVHeads, HeadDim int
	// Context is the number of positions the cache holds.
	Context int
	// Scale multiplies attention scores; 0 means 1/sqrt(HeadDim).
	Scale float32
}

// AttnScale is the score factor of attention over a cache of shape s.
func (s AttnShape) AttnScale() float32 {
	if s.Scale != 0 {
		return s.Scale
	}
	return float32(1 / math.Sqrt(float64(s.HeadDim)))
}

// KVCache holds the keys and values of every layer for positions [0, Len()).
type KVCache interface {
	Shape() AttnShape
	// Len is the number of positions filled, equal for all layers after a full step.
	Len() int
	// Truncate drops positions >= n, so a session can reuse a common prefix.
	Truncate(n int)
}

// Norm is an RMSNorm folded into the operation that reads its input: with W set, each input
// row x is used as x / sqrt(mean(x²) + Eps) * (W + Offset), without being written anywhere.
// The zero Norm uses x as it is. A backend may run it unfused (normalize into a scratch).
type Norm struct {
	W           *tensor.Tensor
	Eps, Offset float32
}

// Activation is the activation of a gated linear unit.
type Activation int

const (
	// SiLU makes the unit SwiGLU.
	SiLU Activation = iota
	// GELUTanh, GELU's tanh approximation, makes it GeGLU.
	GELUTanh
)

// Backend runs the operations of a forward pass. Row-major layouts throughout: a buffer holding
// rows of width d has row r at [r*d, (r+1)*d). Weight matrices are [out, in] (tensor.Tensor
// convention) in any dtype the backend supports; it must return an error from Prepare for one it
// does not. Errors of individual operations (a GPU fault) surface at Sync.
type Backend interface {
	// Name is "cpu" or "metal".
	Name() string
	// Prepare is called once with every tensor of a model before first use; the backend may
	// wrap or index them but must not copy weights it can read in place.
	Prepare(weights []*tensor.Tensor) error
	NewBuffer(n int) Buffer
	// View is the part [off, off+n) of b, usable wherever a Buffer is.
	View(b Buffer, off, n int) Buffer
	NewKVCache(shape AttnShape) KVCache

	// Embed writes rows of table (dequantized) for each id into dst: [len(ids), cols].
	Embed(dst Buffer, table *tensor.Tensor, ids []int32)
	// RMSNorm: dst[r] = x[r] / sqrt(mean(x[r]^2) + eps) * (w + offset), for rows of w.Cols()
	// elements (offset 1 is Gemma's zero-centred norm; the weights are not copied to add it).
	// dst may be x.
	RMSNorm(dst, x Buffer, w *tensor.Tensor, rows int, eps, offset float32)
	// MatMul: dst[r][o] = sum_i x[r][i] * W[o][i] (+ bias[o] when bias is not nil). dst must
	// not overlap x, here and in every matmul below.
	MatMul(dst, x Buffer, w, bias *tensor.Tensor, rows int)
	// MatMuls is the shared-input multi-matmul: dst[i] = norm(x)·w[i]ᵀ (+ bias[i] when bias is
	// not nil and bias[i] is not nil) for each i, e.g. the q, k and v projections of one input.
	// The weights have the same column count.
	MatMuls(dst []Buffer, x Buffer, norm Norm, w, bias []*tensor.Tensor, rows int)
	// MatMulAdd is a matmul plus residual: dst[r][o] += sum_i x[r][i] * W[o][i].
	MatMulAdd(dst, x Buffer, w *tensor.Tensor, rows int)
	// GLU is a gated linear unit: dst = act(norm(x)·gateᵀ) ⊙ (norm(x)·upᵀ), gate and up being
	// [ffn, cols] and dst rows of ffn.
	GLU(dst, x Buffer, norm Norm, gate, up *tensor.Tensor, act Activation, rows int)
	// StoreKV stores k and v (rows of [KVHeads*HeadDim]) at positions pos..pos+rows-1 of layer,
	// rotating each row of k by rope at its position first (nil: no rotation). The positions
	// continue what the layer holds (pos beyond it would leave a gap); the layer then holds
	// pos+rows positions. The backend may rotate k in place: its contents are unspecified
	// afterwards.
	StoreKV(cache KVCache, layer, pos, rows int, k, v Buffer, rope *Rope)
	// Attention writes to out (rows of [Heads*HeadDim]) causal attention of q (rows of
	// [Heads*HeadDim]), each row r rotated by rope at position pos+r (nil: no rotation), over
	// the keys and values StoreKV left at positions [0, pos+r] of layer, or only the last window
	// of them, (pos+r-window, pos+r], when window > 0 (sliding-window layers read no older
	// keys). Scores are scaled by the cache shape's AttnScale; heads are grouped (query head h
	// reads KV head h/(Heads/KVHeads)). The backend may rotate q in place: its contents are
	// unspecified afterwards.
	Attention(out, q Buffer, cache KVCache, layer, pos, rows, window int, rope *Rope)
	// Scale: x[i] *= s.
	Scale(x Buffer, n int, s float32)
	// Add: dst[i] += x[i].
	Add(dst, x Buffer, n int)
	// Read copies the first len(dst) values of src into dst, waiting for pending work.
	Read(dst []float32, src Buffer) error
	// Sync waits for all submitted work and reports the first error.
	Sync() error
	// Close releases the backend's resources.
	Close() error
}

// LayerLens counts the positions each layer of a KV cache holds. Backends embed it in their
// caches for the Len and Truncate of KVCache.
type LayerLens []int

// Len reports the last layer's length, which a step fills last.
func (l LayerLens) Len() int {
	if len(l) == 0 {
		return 0
	}
	return l[len(l)-1]
}

// Truncate drops positions >= n in every layer.
func (l LayerLens) Truncate(n int) {
	for i := range l {
		l[i] = max(min(l[i], n), 0)
	}
}

// Check reports whether r is a rotary embedding backends can apply: an even HeadDim and 1 to
// HeadDim/2 frequencies.
func (r *Rope) Check() error {
	if r.HeadDim <= 0 || r.HeadDim%2 != 0 || len(r.InvFreq) == 0 || len(r.InvFreq) > r.HeadDim/2 {
		return fmt.Errorf("rope: head dim %d with %d frequencies", r.HeadDim, len(r.InvFreq))
	}
	return nil
}
