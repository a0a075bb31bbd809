// select.metal: the largest logits (argmax and top-k), so that sampling reads k values back
// instead of the whole vocabulary.
//
// Candidates are ranked by an order-preserving 32-bit key of their float value and, among
// equal keys, by the lower id, which is the CPU sampler's rule. Keys are compared as integers,
// so the result does not depend on fast-math treatment of infinities and NaNs: a NaN logit
// ranks as -inf, and -0 equals +0. Key 0 ranks below every value and pads partial tiles.
//
// Both kernels reduce tiles of candidates to the best one (argmax) or best k (topk) per
// threadgroup; the host runs them in stages, each over the previous stage's winners
// (p.indexed = 1: keys and ids given), until one threadgroup remains. The first stage reads the
// logits themselves (p.indexed = 0: the input is float bits and ids are the indices).

#define SELECT_THREADS 256
#define ARGMAX_TILE 4096
#define TOPK_TILE 1024
#define TOPK_MAX 64

struct SelectParams {
  uint n;        // candidates in the input
  uint k;        // winners each threadgroup writes (1 for argmax)
  uint indexed;  // 0: input holds float logits, id = index; 1: input holds keys, ids in inIds
};

// select_key maps a float's bits to a key whose unsigned order is the float order.
inline uint select_key(uint bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) bits = 0xff800000u;  // NaN ranks as -inf
  if (bits == 0x80000000u) bits = 0;                            // -0 == +0
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

inline bool ranks_before(uint ka, uint ia, uint kb, uint ib) { return ka > kb || (ka == kb && ia < ib); }

// argmax: threadgroup g reduces candidates [g*ARGMAX_TILE, (g+1)*ARGMAX_TILE) to its best one at
// outKeys[g], outIds[g].
kernel void argmax(device const uint* in [[buffer(0)]], device const uint* inIds [[buffer(1)]],
                   device uint* outKeys [[buffer(2)]], device uint* outIds [[buffer(3)]],
                   constant SelectParams& p [[buffer(4)]], uint g [[threadgroup_position_in_grid]],
                   uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                   uint lane [[thread_index_in_simdgroup]]) {
  threadgroup uint tk[SELECT_THREADS / SIMD];
  threadgroup uint ti[SELECT_THREADS / SIMD];
  uint bk = 0, bi = 0xffffffffu;
  const uint end = min((g + 1) * ARGMAX_TILE, p.n);
  for (uint j = g * ARGMAX_TILE + tid; j < end; j += SELECT_THREADS) {
    uint k = p.indexed != 0 ? in[j] : select_key(in[j]);
    uint id = p.indexed != 0 ? inIds[j] : j;
    if (ranks_before(k, id, bk, bi)) {
      bk = k;
      bi = id;
    }
  }
  uint mk = simd_max(bk);
  uint mi = simd_min(bk == mk ? bi : 0xffffffffu);
  if (lane == 0) {
    tk[sg] = mk;
    ti[sg] = mi;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    uint k2 = lane < SELECT_THREADS / SIMD ? tk[lane] : 0;
    uint i2 = lane < SELECT_THREADS / SIMD ? ti[lane] : 0xffffffffu;
    uint m2 = simd_max(k2);
    uint j2 = simd_min(k2 == m2 ? i2 : 0xffffffffu);
    if (lane == 0) {
      outKeys[g] = m2;
      outIds[g] = j2;
    }
  }
}

// topk: threadgroup g sorts candidates [g*TOPK_TILE, (g+1)*TOPK_TILE) best first (a bitonic sort
// in threadgroup memory; ids are distinct, so the order is total) and writes the first p.k at
// outKeys/outIds[g*p.k ...].
kernel void topk(device const uint* in [[buffer(0)]], device const uint* inIds [[buffer(1)]],
                 device uint* outKeys [[buffer(2)]], device uint* outIds [[buffer(3)]],
                 constant SelectParams& p [[buffer(4)]], uint g [[threadgroup_position_in_grid]],
                 uint tid [[thread_index_in_threadgroup]]) {
  threadgroup uint keys[TOPK_TILE];
  threadgroup uint ids[TOPK_TILE];
  for (uint i = tid; i < TOPK_TILE; i += SELECT_THREADS) {
    uint j = g * TOPK_TILE + i;
    uint k = 0, id = 0xffffffffu;
    if (j < p.n) {
      k = p.indexed != 0 ? in[j] : select_key(in[j]);
      id = p.indexed != 0 ? inIds[j] : j;
    }
    keys[i] = k;
    ids[i] = id;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint size = 2; size <= TOPK_TILE; size <<= 1) {
    for (uint stride = size / 2; stride > 0; stride >>= 1) {
      for (uint i = tid; i < TOPK_TILE; i += SELECT_THREADS) {
        uint l = i ^ stride;
        if (l > i) {
          // Blocks with (i & size) == 0 end up best first, the others best last.
          bool bestFirst = (i & size) == 0;
          uint ki = keys[i], ii = ids[i], kl = keys[l], il = ids[l];
          if (ranks_before(kl, il, ki, ii) == bestFirst) {
            keys[i] = kl;
            ids[i] = il;
            keys[l] = ki;
            ids[l] = ii;
          }
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  for (uint i = tid; i < p.k; i += SELECT_THREADS) {
    outKeys[g * p.k + i] = keys[i];
    outIds[g * p.k + i] = ids[i];
  }
}
