// attention.metal: causal attention of query rows over the KV cache with online softmax; query
// row r sees positions 0..pos+r (or its last `window` of them). The caches are bound at the
// layer's position 0. pos, the position of query row 0, is read from device memory (step[0]) rather than the parameters, so a recorded
// decode plan replays unchanged at every position (see metal/README.md).
//
// attention_decode (one query row) and attention_block (a prefill block) below; both rotate q
// by RoPE as they load it (q itself is left as it is).
//
// The caches hold half values by default (p.kvHalf; half the bytes decode attention streams
// every token) or float ones; arithmetic is float32 either way.

#define ATT_SIMDGROUPS 8
#define ATT_MAX_HEAD_DIM 256
#define ATT_DIMS_PER_LANE (ATT_MAX_HEAD_DIM / SIMD)

struct AttnParams {
  uint rows;      // query rows
  uint heads;
  uint kvHeads;
  uint headDim;
  float scale;
  uint window;    // > 0: row r sees only positions pos+r-window+1 .. pos+r
  uint kvHalf;    // 1: the caches hold half values, else float
  uint pairs;     // q's RoPE rotation pairs (0: q is used as it is), rotated at its position
  uint style;     // ROPE_*
  uint splits;    // attention_decode: threadgroups per head (1: no attention_reduce pass)
};

// kv_load reads element i of a cache of half (kvHalf) or float values. The branch is uniform
// over the whole dispatch.
inline float kv_load(device const float* c, uint i, bool kvHalf) {
  return kvHalf ? float(((device const half*)c)[i]) : c[i];
}

// att_first is the first position a query at position last sees.
inline uint att_first(uint last, uint window) {
  return window > 0 && last + 1 > window ? last + 1 - window : 0;
}

// attention_block is for a prefill block: a threadgroup takes ATB_ROWS consecutive query rows of
// one head, one per simdgroup, and walks the positions in tiles of ATB_TILE that all threads
// stage in threadgroup memory, so K and V are read from device memory once per ATB_ROWS rows
// rather than once per row. Each row of q is rotated by RoPE as it is loaded, as in
// attention_decode. Loop bounds and barriers are uniform over the threadgroup; each
// simdgroup skips positions past its own row's last, and rows past the end compute nothing.
// Grid: (heads, ceil(rows/ATB_ROWS)) threadgroups of ATB_ROWS*32 threads.
#define ATB_ROWS 4
#define ATB_TILE 8

kernel void attention_block(device const float* q [[buffer(0)]], device const float* kcache [[buffer(1)]],
                            device const float* vcache [[buffer(2)]], device float* out [[buffer(3)]],
                            device const uint* step [[buffer(4)]], device const float* invFreq [[buffer(5)]],
                            constant AttnParams& p [[buffer(6)]],
                            uint2 tg [[threadgroup_position_in_grid]],
                            uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float ks[ATB_TILE * ATT_MAX_HEAD_DIM];
  threadgroup float vs[ATB_TILE * ATT_MAX_HEAD_DIM];
  const uint h = tg.x, hd = p.headDim;
  const uint kvh = h / (p.heads / p.kvHeads), kvStride = p.kvHeads * hd;
  const bool kvHalf = p.kvHalf != 0;
  const uint r0 = tg.y * ATB_ROWS, r = r0 + sg;
  const bool valid = r < p.rows;
  // The last position any row of this threadgroup sees, and this row's own.
  const uint lastAll = step[0] + min(r0 + ATB_ROWS, p.rows) - 1;
  const uint last = step[0] + r, first = att_first(last, p.window);
  float qv[ATT_DIMS_PER_LANE], acc[ATT_DIMS_PER_LANE];
  device const float* qr = q + (min(r, p.rows - 1) * p.heads + h) * hd;
  for (uint j = 0; j < ATT_DIMS_PER_LANE; j++) {
    uint d = lane + SIMD * j;
    qv[j] = d < hd ? rope_dim(qr, d, last, invFreq, p.pairs, p.style) * p.scale : 0.0f;
    acc[j] = 0.0f;
  }
  float m = -FLT_MAX, l = 0.0f;
  // Row r0 sees the earliest positions of the threadgroup's rows.
  for (uint t0 = att_first(step[0] + r0, p.window); t0 <= lastAll; t0 += ATB_TILE) {
    for (uint e = tid; e < ATB_TILE * hd; e += ATB_ROWS * SIMD) {
      uint t = t0 + e / hd, d = e % hd;
      bool in = t <= lastAll;
      ks[e] = in ? kv_load(kcache, t * kvStride + kvh * hd + d, kvHalf) : 0.0f;
      vs[e] = in ? kv_load(vcache, t * kvStride + kvh * hd + d, kvHalf) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = 0; i < ATB_TILE; i++) {
      uint t = t0 + i;
      if (!valid || t > last) break;
      if (t < first) continue;
      float dot = 0.0f;
      for (uint j = 0; j < ATT_DIMS_PER_LANE; j++) {
        uint d = lane + SIMD * j;
        if (d < hd) dot += qv[j] * ks[i * hd + d];
      }
      float s = simd_sum(dot);
      float mn = max(m, s);
      float corr = exp(m - mn), e = exp(s - mn);
      l = l * corr + e;
      for (uint j = 0; j < ATT_DIMS_PER_LANE; j++) {
        uint d = lane + SIMD * j;
        if (d < hd) acc[j] = acc[j] * corr + e * vs[i * hd + d];
      }
      m = mn;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (!valid) return;
  device float* o = out + (r * p.heads + h) * hd;
  for (uint j = 0; j < ATT_DIMS_PER_LANE; j++) {
    uint d = lane + SIMD * j;
    if (d < hd) o[d] = acc[j] / l;
  }
}

// attention_decode is decode attention (one query row, at position step[0]) with q's RoPE
// applied as it is loaded. The simdgroups of a threadgroup take interleaved runs of ATT_KEYS
// keys; the lanes share each key's dimensions, lane l holding DPL consecutive dimensions from
// l*DPL, so a key and a value row are each one coalesced load across the simdgroup, and a
// key's score is one simd_sum, known to every lane at once. Each simdgroup keeps its own online softmax; they merge
// through threadgroup memory. HD is the head size as a compile-time constant (64, 128, 256:
// whole vectors per lane, no bounds tests) or 0 for any even size up to ATT_MAX_HEAD_DIM.
//
// The scan is a template; each kernel merges its simdgroups itself, as threadgroup memory must
// be declared in the kernel (the emulator gives each kernel's arrays to its threadgroup).
//
// Long contexts split: with p.splits > 1, threadgroup (h, s) takes the s-th of p.splits equal
// parts of head h's positions and writes its (max, sum, unnormalized values) to part, and
// attention_reduce merges them. The host splits only above ATT_SPLIT_MIN positions, so a
// short decode stays one dispatch. Grid: (heads, splits) threadgroups of ATT_SIMDGROUPS*32.
#define ATT_KEYS 4
#define ATT_SPLIT_MIN 1024
#define ATT_SPLIT_LEN 512
#define ATT_SPLIT_MAX 32

// attention_scan runs one simdgroup's online softmax over its keys: (m, l, acc) such that the
// simdgroup's share of the output is acc/l with scores relative to m.
template <uint HD>
inline void attention_scan(device const float* q, device const float* kcache, device const float* vcache,
                           device const uint* step, device const float* invFreq, constant AttnParams& p, uint2 tg,
                           uint sg, uint lane, thread float& m, thread float& l, thread float* acc) {
  constexpr uint DPL = HD == 0 ? ATT_DIMS_PER_LANE : HD / SIMD;
  const uint hd = HD == 0 ? p.headDim : HD;
  const uint h = tg.x, split = tg.y;
  const uint kvh = h / (p.heads / p.kvHeads), kvStride = p.kvHeads * hd;
  const bool kvHalf = p.kvHalf != 0;
  const uint last = step[0], first = att_first(last, p.window);
  const uint per = (last - first + p.splits) / p.splits;
  const uint lo = first + split * per, hi = min(lo + per, last + 1);
  device const float* qr = q + h * hd;
  float qv[DPL];
  for (uint j = 0; j < DPL; j++) {
    const uint d = lane * DPL + j;
    qv[j] = HD != 0 || d < hd ? rope_dim(qr, d, last, invFreq, p.pairs, p.style) * p.scale : 0.0f;
    acc[j] = 0.0f;
  }
  // -FLT_MAX, not -INFINITY: fast math may assume no infinities. exp(-FLT_MAX - s) is 0.
  m = -FLT_MAX;
  l = 0.0f;
  // ATT_KEYS consecutive keys per step: their loads and simd_sums are independent, so one
  // step's latency covers all of them; keys past hi are clamped for loading and weigh 0.
  for (uint t0 = lo + sg * ATT_KEYS; t0 < hi; t0 += ATT_SIMDGROUPS * ATT_KEYS) {
    uint kp[ATT_KEYS];
    float s[ATT_KEYS];
    float mn = m;
    for (uint i = 0; i < ATT_KEYS; i++) {
      kp[i] = min(t0 + i, hi - 1) * kvStride + kvh * hd + lane * DPL;
      float d = 0.0f;
      for (uint j = 0; j < DPL; j++)
        if (HD != 0 || lane * DPL + j < hd) d += qv[j] * kv_load(kcache, kp[i] + j, kvHalf);
      s[i] = simd_sum(d);
      mn = t0 + i < hi ? max(mn, s[i]) : mn;
    }
    const float corr = exp(m - mn);
    float e[ATT_KEYS];
    l *= corr;
    for (uint i = 0; i < ATT_KEYS; i++) {
      e[i] = t0 + i < hi ? exp(s[i] - mn) : 0.0f;
      l += e[i];
    }
    for (uint j = 0; j < DPL; j++) {
      if (HD == 0 && lane * DPL + j >= hd) continue;
      float a = acc[j] * corr;
      for (uint i = 0; i < ATT_KEYS; i++) a += e[i] * kv_load(vcache, kp[i] + j, kvHalf);
      acc[j] = a;
    }
    m = mn;
  }
}

// att_merge_scale returns the largest of the simdgroups' maxima in mx and the merged
// normalizer in total.
inline void att_merge_scale(thread const float* tm, thread const float* ts, thread float& mx, thread float& total) {
  mx = tm[0];
  for (uint i = 1; i < ATT_SIMDGROUPS; i++) mx = max(mx, tm[i]);
  total = 0.0f;
  for (uint i = 0; i < ATT_SIMDGROUPS; i++) total += ts[i] * exp(tm[i] - mx);
}

// att_output is where head h's merged values go: out, normalized, or with several splits its
// part, unnormalized after the part's max and sum (which thread 0 writes).
inline device float* att_output(device float* out, device float* part, constant AttnParams& p, uint2 tg, uint tid,
                                float mx, float total, thread float& norm) {
  const uint hd = p.headDim;
  if (p.splits == 1) {
    norm = 1.0f / total;
    return out + tg.x * hd;
  }
  device float* o = part + (tg.x * p.splits + tg.y) * (hd + 2);
  if (tid == 0) {
    o[0] = mx;
    o[1] = total;
  }
  norm = 1.0f;
  return o + 2;
}

kernel void attention_decode(device const float* q [[buffer(0)]], device const float* kcache [[buffer(1)]],
                             device const float* vcache [[buffer(2)]], device float* out [[buffer(3)]],
                             device const uint* step [[buffer(4)]], device const float* invFreq [[buffer(5)]],
                             device float* part [[buffer(6)]], constant AttnParams& p [[buffer(7)]],
                             uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float tmax[ATT_SIMDGROUPS];
  threadgroup float tsum[ATT_SIMDGROUPS];
  threadgroup float tacc[ATT_SIMDGROUPS * ATT_MAX_HEAD_DIM];
  float m, l, acc[ATT_DIMS_PER_LANE];
  attention_scan<0>(q, kcache, vcache, step, invFreq, p, tg, sg, lane, m, l, acc);
  if (lane == 0) {
    tmax[sg] = m;
    tsum[sg] = l;
  }
  for (uint j = 0; j < ATT_DIMS_PER_LANE; j++) if (lane * ATT_DIMS_PER_LANE + j < p.headDim) tacc[sg * ATT_MAX_HEAD_DIM + lane * ATT_DIMS_PER_LANE + j] = acc[j];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float tm[ATT_SIMDGROUPS], ts[ATT_SIMDGROUPS], mx, total, norm;
  for (uint i = 0; i < ATT_SIMDGROUPS; i++) {
    tm[i] = tmax[i];
    ts[i] = tsum[i];
  }
  att_merge_scale(tm, ts, mx, total);
  device float* o = att_output(out, part, p, tg, tid, mx, total, norm);
  for (uint d = tid; d < p.headDim; d += ATT_SIMDGROUPS * SIMD) {
    float v = 0.0f;
    for (uint i = 0; i < ATT_SIMDGROUPS; i++) v += tacc[i * ATT_MAX_HEAD_DIM + d] * exp(tm[i] - mx);
    o[d] = v * norm;
  }
}

kernel void attention_decode_64(device const float* q [[buffer(0)]], device const float* kcache [[buffer(1)]],
                             device const float* vcache [[buffer(2)]], device float* out [[buffer(3)]],
                             device const uint* step [[buffer(4)]], device const float* invFreq [[buffer(5)]],
                             device float* part [[buffer(6)]], constant AttnParams& p [[buffer(7)]],
                             uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float tmax[ATT_SIMDGROUPS];
  threadgroup float tsum[ATT_SIMDGROUPS];
  threadgroup float tacc[ATT_SIMDGROUPS * ATT_MAX_HEAD_DIM];
  float m, l, acc[2];
  attention_scan<64>(q, kcache, vcache, step, invFreq, p, tg, sg, lane, m, l, acc);
  if (lane == 0) {
    tmax[sg] = m;
    tsum[sg] = l;
  }
  for (uint j = 0; j < 2; j++) tacc[sg * ATT_MAX_HEAD_DIM + lane * 2 + j] = acc[j];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float tm[ATT_SIMDGROUPS], ts[ATT_SIMDGROUPS], mx, total, norm;
  for (uint i = 0; i < ATT_SIMDGROUPS; i++) {
    tm[i] = tmax[i];
    ts[i] = tsum[i];
  }
  att_merge_scale(tm, ts, mx, total);
  device float* o = att_output(out, part, p, tg, tid, mx, total, norm);
  for (uint d = tid; d < p.headDim; d += ATT_SIMDGROUPS * SIMD) {
    float v = 0.0f;
    for (uint i = 0; i < ATT_SIMDGROUPS; i++) v += tacc[i * ATT_MAX_HEAD_DIM + d] * exp(tm[i] - mx);
    o[d] = v * norm;
  }
}

kernel void attention_decode_128(device const float* q [[buffer(0)]], device const float* kcache [[buffer(1)]],
                             device const float* vcache [[buffer(2)]], device float* out [[buffer(3)]],
                             device const uint* step [[buffer(4)]], device const float* invFreq [[buffer(5)]],
                             device float* part [[buffer(6)]], constant AttnParams& p [[buffer(7)]],
                             uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float tmax[ATT_SIMDGROUPS];
  threadgroup float tsum[ATT_SIMDGROUPS];
  threadgroup float tacc[ATT_SIMDGROUPS * ATT_MAX_HEAD_DIM];
  float m, l, acc[4];
  attention_scan<128>(q, kcache, vcache, step, invFreq, p, tg, sg, lane, m, l, acc);
  if (lane == 0) {
    tmax[sg] = m;
    tsum[sg] = l;
  }
  for (uint j = 0; j < 4; j++) tacc[sg * ATT_MAX_HEAD_DIM + lane * 4 + j] = acc[j];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float tm[ATT_SIMDGROUPS], ts[ATT_SIMDGROUPS], mx, total, norm;
  for (uint i = 0; i < ATT_SIMDGROUPS; i++) {
    tm[i] = tmax[i];
    ts[i] = tsum[i];
  }
  att_merge_scale(tm, ts, mx, total);
  device float* o = att_output(out, part, p, tg, tid, mx, total, norm);
  for (uint d = tid; d < p.headDim; d += ATT_SIMDGROUPS * SIMD) {
    float v = 0.0f;
    for (uint i = 0; i < ATT_SIMDGROUPS; i++) v += tacc[i * ATT_MAX_HEAD_DIM + d] * exp(tm[i] - mx);
    o[d] = v * norm;
  }
}

kernel void attention_decode_256(device const float* q [[buffer(0)]], device const float* kcache [[buffer(1)]],
                             device const float* vcache [[buffer(2)]], device float* out [[buffer(3)]],
                             device const uint* step [[buffer(4)]], device const float* invFreq [[buffer(5)]],
                             device float* part [[buffer(6)]], constant AttnParams& p [[buffer(7)]],
                             uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float tmax[ATT_SIMDGROUPS];
  threadgroup float tsum[ATT_SIMDGROUPS];
  threadgroup float tacc[ATT_SIMDGROUPS * ATT_MAX_HEAD_DIM];
  float m, l, acc[8];
  attention_scan<256>(q, kcache, vcache, step, invFreq, p, tg, sg, lane, m, l, acc);
  if (lane == 0) {
    tmax[sg] = m;
    tsum[sg] = l;
  }
  for (uint j = 0; j < 8; j++) tacc[sg * ATT_MAX_HEAD_DIM + lane * 8 + j] = acc[j];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float tm[ATT_SIMDGROUPS], ts[ATT_SIMDGROUPS], mx, total, norm;
  for (uint i = 0; i < ATT_SIMDGROUPS; i++) {
    tm[i] = tmax[i];
    ts[i] = tsum[i];
  }
  att_merge_scale(tm, ts, mx, total);
  device float* o = att_output(out, part, p, tg, tid, mx, total, norm);
  for (uint d = tid; d < p.headDim; d += ATT_SIMDGROUPS * SIMD) {
    float v = 0.0f;
    for (uint i = 0; i < ATT_SIMDGROUPS; i++) v += tacc[i * ATT_MAX_HEAD_DIM + d] * exp(tm[i] - mx);
    o[d] = v * norm;
  }
}

// attention_reduce merges the p.splits parts of each head that attention_decode left in part.
// Grid: heads threadgroups.
kernel void attention_reduce(device const float* part [[buffer(0)]], device float* out [[buffer(1)]],
                             constant AttnParams& p [[buffer(2)]], uint h [[threadgroup_position_in_grid]],
                             uint tid [[thread_index_in_threadgroup]], uint ntg [[threads_per_threadgroup]]) {
  const uint hd = p.headDim, stride = hd + 2;
  device const float* ph = part + h * p.splits * stride;
  float mx = ph[0];
  for (uint s = 1; s < p.splits; s++) mx = max(mx, ph[s * stride]);
  float total = 0.0f;
  for (uint s = 0; s < p.splits; s++) total += ph[s * stride + 1] * exp(ph[s * stride] - mx);
  for (uint d = tid; d < hd; d += ntg) {
    float v = 0.0f;
    for (uint s = 0; s < p.splits; s++) v += ph[s * stride + 2 + d] * exp(ph[s * stride] - mx);
    out[h * hd + d] = v / total;
  }
}
