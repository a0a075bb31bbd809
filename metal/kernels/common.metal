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
