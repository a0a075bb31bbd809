// common.metal: the helpers every kernel file uses. The host compiles all kernel files as one
// source, this file first (see metal/internal/genkernels), so later files rely on these names.
#include <metal_stdlib>
using namespace metal;

// Element types of plain tensors (norm weights, biases, MLX scales and biases, F32/F16/BF16
// matrices); the host maps tensor.DType to these codes.
#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2

// Weight formats of matrices (matvec, matmul, embed).
#define WF_F32 0
#define WF_F16 1
#define WF_BF16 2
#define WF_AFFINE 3
#define WF_Q8_0 4
#define WF_Q4_0 5
#define WF_Q4_K 6
#define WF_Q6_K 7
#define WF_Q5_0 8
#define WF_Q5_K 9

// Threads per simdgroup on every Apple GPU.
#define SIMD 32

inline float bf16_to_float(ushort u) { return as_type<float>(uint(u) << 16); }

inline float f16_at(device const uchar* p, uint byte_off) {
  return float(*(device const half*)(p + byte_off));
}

// load_elem reads element i of a plain array of dtype dt as float.
inline float load_elem(device const uchar* p, uint i, uint dt) {
  if (dt == DT_F32) return ((device const float*)p)[i];
  if (dt == DT_F16) return float(((device const half*)p)[i]);
  return bf16_to_float(((device const ushort*)p)[i]);
}

// Activations of a gated linear unit.
#define ACT_SILU 0
#define ACT_GELU_TANH 1

inline float silu(float g) { return g / (1.0f + exp(-g)); }

// gelu_tanh is GELU's tanh approximation (PyTorch's gelu(approximate="tanh")).
inline float gelu_tanh(float g) { return 0.5f * g * (1.0f + tanh(0.7978845608f * (g + 0.044715f * g * g * g))); }

inline float glu_act(float g, uint act) { return act == ACT_GELU_TANH ? gelu_tanh(g) : silu(g); }

// RoPE styles: rotation pairs (i, i+pairs) or (2i, 2i+1).
#define ROPE_HALF 0
#define ROPE_INTERLEAVED 1

// rope_pair returns the indices, within a head, of pair i of headDim/2: a rotation pair when
// i < pairs, else two dimensions a partial rotary embedding leaves unchanged.
inline uint2 rope_pair(uint i, uint pairs, uint style) {
  return style == ROPE_HALF && i < pairs ? uint2(i, i + pairs) : uint2(2 * i, 2 * i + 1);
}

// rope_dim returns dimension d of the head h points to, rotated to position pos: pair i
// of a rotation by pos*inv[i] when d belongs to one of the first pairs pairs, else h[d] as it is
// (pairs = 0: no rotation). Angles as in rope.metal, from precise::sin and cos.
inline float rope_dim(device const float* h, uint d, uint pos, device const float* inv, uint pairs, uint style) {
  uint i, d0;
  if (style == ROPE_HALF) {
    if (d >= 2 * pairs) return h[d];
    i = d < pairs ? d : d - pairs;
    d0 = i;
  } else {
    i = d / 2;
    if (i >= pairs) return h[d];
    d0 = 2 * i;
  }
  const uint d1 = style == ROPE_HALF ? i + pairs : d0 + 1;
  const float a = float(pos) * inv[i];
  const float c = precise::cos(a), s = precise::sin(a);
  return d == d0 ? h[d0] * c - h[d1] * s : h[d0] * s + h[d1] * c;
}
