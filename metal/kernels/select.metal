// select.metal: a device pick. A decode step ends with the chosen token in a small result area,
// so the next step can embed it without the host, and the host reads back a few values instead
// of the whole vocabulary.
//
// Candidates are ranked by an order-preserving 32-bit key of their float value and, among
// equal keys, by the lower id, which is the CPU sampler's rule. Keys are compared as integers,
// so the result does not depend on fast-math treatment of infinities and NaNs: a NaN logit
// ranks as -inf, and -0 equals +0. Key 0 ranks below every value and pads partial tiles.
//
// argmax reduces tiles of the logits to the best one per threadgroup, with the sum of
// exp(x - that best) over the tile; topk reduces tiles to their best k, and the host runs it
// in stages, each over the previous stage's winners (p.indexed = 1: keys and ids given), until
// one threadgroup writes the result area's candidates (the first stage reads the logits
// themselves, p.indexed = 0: float bits, ids are the indices). sample_pick then merges the
// argmax winners and sums into the best candidate and the log-sum-exp of the vocabulary, and
// takes the best (greedy) or samples among the best k at a temperature with a uniform value
// the host wrote.

#define SELECT_THREADS 256
#define ARGMAX_TILE 4096
#define TOPK_TILE 1024
#define TOPK_MAX 64
// The result area of a pick, in uint words: the chosen id, the log-sum-exp (float bits), flags
// (PICK_UNSURE), then TOPK_MAX keys and TOPK_MAX ids of the best candidates, best first.
#define PICK_ID 0
#define PICK_LSE 1
#define PICK_FLAGS 2
#define PICK_KEYS 4
#define PICK_IDS 68  // PICK_KEYS + TOPK_MAX
#define PICK_WORDS 132  // PICK_IDS + TOPK_MAX
// PICK_UNSURE: a logit is NaN or +inf, or every logit is -inf; the host must pick from the
// logits themselves (the CPU sampler's treatment of those differs from the ranking here).
#define PICK_UNSURE 1

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

// key_value inverts select_key.
inline float key_value(uint k) { return as_type<float>((k & 0x80000000u) != 0 ? k & 0x7fffffffu : ~k); }

// KEY_NEG_INF is the key of -inf (and of NaN).
#define KEY_NEG_INF 0x007fffffu

inline bool ranks_before(uint ka, uint ia, uint kb, uint ib) { return ka > kb || (ka == kb && ia < ib); }

// argmax: threadgroup g reduces the logits [g*ARGMAX_TILE, (g+1)*ARGMAX_TILE) to its best one
// at outKeys[g], outIds[g], and writes part[2g] = the float sum of exp(x - max) over the tile's
// finite values (0 when the tile's max is -inf) and part[2g+1] = PICK_UNSURE when the tile holds
// a NaN or +inf, else 0: sample_pick's log-sum-exp.
kernel void argmax(device const uint* in [[buffer(0)]], device uint* outKeys [[buffer(1)]],
                   device uint* outIds [[buffer(2)]], device uint* part [[buffer(3)]],
                   constant SelectParams& p [[buffer(4)]], uint g [[threadgroup_position_in_grid]],
                   uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                   uint lane [[thread_index_in_simdgroup]]) {
  threadgroup uint tk[SELECT_THREADS / SIMD];
  threadgroup uint ti[SELECT_THREADS / SIMD];
  uint bk = 0, bi = 0xffffffffu;
  const uint end = min((g + 1) * ARGMAX_TILE, p.n);
  for (uint j = g * ARGMAX_TILE + tid; j < end; j += SELECT_THREADS) {
    uint k = select_key(in[j]);
    if (ranks_before(k, j, bk, bi)) {
      bk = k;
      bi = j;
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
      tk[0] = m2;
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  // Second pass over the tile: the sum of exp(x - max), and whether a value is NaN or +inf.
  // Values are classified by their bits, which fast math cannot change.
  const uint best = tk[0];
  const float m = key_value(best);
  float s = 0;
  uint unsure = 0;
  for (uint j = g * ARGMAX_TILE + tid; j < end; j += SELECT_THREADS) {
    uint bits = in[j];
    if ((bits & 0x7fffffffu) >= 0x7f800000u) {
      unsure |= (bits & 0x7fffffffu) > 0x7f800000u || bits == 0x7f800000u ? PICK_UNSURE : 0u;
    } else if (best > KEY_NEG_INF) {
      s += exp(as_type<float>(bits) - m);
    }
  }
  s = simd_sum(s);
  unsure = simd_max(unsure);
  threadgroup float ts[SELECT_THREADS / SIMD];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lane == 0) {
    ts[sg] = s;
    tk[sg] = unsure;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float s2 = simd_sum(lane < SELECT_THREADS / SIMD ? ts[lane] : 0.0f);
    uint u2 = simd_max(lane < SELECT_THREADS / SIMD ? tk[lane] : 0u);
    if (lane == 0) {
      part[2 * g] = as_type<uint>(s2);
      part[2 * g + 1] = u2;
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

struct PickParams {
  uint groups;    // first-stage argmax threadgroups: winners and partial sums to merge
  uint k;         // 0: greedy; else sample among the best k of the result area's candidates
  uint top;       // candidates a top-k stage wrote to the result area (0: none, greedy)
  float invTemp;  // 1 / temperature
};

// sample_pick finishes a pick in one thread (its loops are over at most a few dozen values):
// it merges the first argmax stage's winners and partial sums into the best candidate and the
// log-sum-exp over the vocabulary, then chooses: greedy, the best; else, like the CPU sampler,
// the softmax of the k best logits times invTemp, walked in id order with u (float bits at
// step[0]) times the total. The host checks a sampled pick against its own arithmetic.
kernel void sample_pick(device const uint* winKeys [[buffer(0)]], device const uint* winIds [[buffer(1)]],
                        device const uint* part [[buffer(2)]], device const uint* step [[buffer(3)]],
                        device uint* res [[buffer(4)]], constant PickParams& p [[buffer(5)]],
                        uint tid [[thread_position_in_grid]]) {
  if (tid != 0) return;
  uint bk = 0, bi = 0xffffffffu, unsure = 0;
  for (uint g = 0; g < p.groups; g++) {
    if (ranks_before(winKeys[g], winIds[g], bk, bi)) {
      bk = winKeys[g];
      bi = winIds[g];
    }
    unsure |= part[2 * g + 1];
  }
  const float m = key_value(bk);
  float sum = 0;
  for (uint g = 0; g < p.groups; g++) {
    float s = as_type<float>(part[2 * g]);
    if (s > 0) sum += s * exp(key_value(winKeys[g]) - m);
  }
  if (bk <= KEY_NEG_INF) unsure = PICK_UNSURE;
  if (p.top == 0) {
    res[PICK_KEYS] = bk;
    res[PICK_IDS] = bi;
  }
  uint id = res[PICK_IDS];
  if (p.k > 0) {
    float e[TOPK_MAX];
    const float top = key_value(res[PICK_KEYS]) * p.invTemp;
    float es = 0;
    for (uint i = 0; i < p.k; i++) {
      e[i] = exp(key_value(res[PICK_KEYS + i]) * p.invTemp - top);
      es += e[i];
    }
    float total = 0;
    for (uint i = 0; i < p.k; i++) {
      e[i] /= es;
      total += e[i];
    }
    float x = as_type<float>(step[0]) * total;
    // Walk the candidates in id order, as the CPU sampler holds them.
    uint prev = 0, last = 0;
    bool first = true;
    for (uint n = 0; n < p.k; n++) {
      uint at = 0, best = 0xffffffffu;
      for (uint i = 0; i < p.k; i++) {
        uint c = res[PICK_IDS + i];
        if ((first || c > prev) && c < best) {
          best = c;
          at = i;
        }
      }
      first = false;
      prev = best;
      last = best;
      x -= e[at];
      if (x < 0) break;
    }
    id = last;
  }
  res[PICK_ID] = id;
  res[PICK_LSE] = as_type<uint>(m + log(sum));
  res[PICK_FLAGS] = unsure;
}
