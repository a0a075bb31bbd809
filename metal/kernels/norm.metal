// norm.metal: RMSNorm, one threadgroup per row. In place (out == x) is allowed: every thread
// reads its elements again only after the barrier that ends the reduction.

struct RMSNormParams {
  uint n;    // row width
  uint wDT;  // DT_* of the weight
  float eps;
  float offset;  // added to every weight: 1 for zero-centred (1+w) norms
};

kernel void rmsnorm(device const float* x [[buffer(0)]], device const uchar* w [[buffer(1)]],
                    device float* out [[buffer(2)]], constant RMSNormParams& p [[buffer(3)]],
                    uint row [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                    uint ntg [[threads_per_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                    uint nsg [[simdgroups_per_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float partial[32];
  x += row * p.n;
  out += row * p.n;
  float ss = 0.0f;
  for (uint i = tid; i < p.n; i += ntg) ss += x[i] * x[i];
  ss = simd_sum(ss);
  if (lane == 0) partial[sg] = ss;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float total = 0.0f;
  for (uint s = 0; s < nsg; s++) total += partial[s];
  float inv = rsqrt(total / float(p.n) + p.eps);
  for (uint i = tid; i < p.n; i += ntg) out[i] = x[i] * inv * (load_elem(w, i, p.wDT) + p.offset);
}
