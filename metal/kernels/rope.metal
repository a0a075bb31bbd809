// rope.metal: rotary position embedding fused with the KV-cache write (keys and values, one
// pass instead of a rotation then a copy). Queries are rotated by the attention kernels as they
// load them (rope_dim in common.metal).
//
// The angles use precise::sin and cos: fast math's may be off by 2^-13 (more for the large angles
// of late positions), an error every query and key would carry into attention.

struct RopeParams {
  uint rows;     // positions pos .. pos+rows-1, pos in step[0]
  uint heads;
  uint headDim;
  uint style;    // ROPE_*
  uint pairs;    // rotated pairs: dimensions 0 .. 2*pairs-1 rotate, the rest pass through
};

struct KVStoreParams {
  RopeParams rope;  // heads = KV heads
  uint rotate;      // 1: k still needs its rotation
  uint kvHalf;      // 1: the caches hold half values (rounded to nearest), else float
};

// kv_store writes rows of k (rotated when p.rotate, and then also back into k, so k holds what
// a separate rope pass would have left there) and v into the caches (bound at the layer's position 0) at positions pos..;
// one thread per (row, KV head, pair of headDim/2).
kernel void kv_store(device float* k [[buffer(0)]], device const float* v [[buffer(1)]],
                     device const float* invFreq [[buffer(2)]], device float* kcache [[buffer(3)]],
                     device float* vcache [[buffer(4)]], device const uint* step [[buffer(5)]],
                     constant KVStoreParams& p [[buffer(6)]],
                     uint gid [[thread_position_in_grid]]) {
  RopeParams rp = p.rope;
  uint half_ = rp.headDim / 2;
  if (gid >= rp.rows * rp.heads * half_) return;
  uint i = gid % half_, h = (gid / half_) % rp.heads, r = gid / (half_ * rp.heads);
  uint2 d = rope_pair(i, rp.pairs, rp.style);
  uint src = (r * rp.heads + h) * rp.headDim;
  uint dst = ((step[0] + r) * rp.heads + h) * rp.headDim;
  float x0 = k[src + d.x], x1 = k[src + d.y];
  if (p.rotate != 0 && i < rp.pairs) {
    float a = float(step[0] + r) * invFreq[i];
    float c = precise::cos(a), s = precise::sin(a);
    float y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
    x0 = y0;
    x1 = y1;
    k[src + d.x] = x0;
    k[src + d.y] = x1;
  }
  if (p.kvHalf != 0) {
    device half* kh = (device half*)kcache;
    device half* vh = (device half*)vcache;
    kh[dst + d.x] = half(x0);
    kh[dst + d.y] = half(x1);
    vh[dst + d.x] = half(v[src + d.x]);
    vh[dst + d.y] = half(v[src + d.y]);
    return;
  }
  kcache[dst + d.x] = x0;
  kcache[dst + d.y] = x1;
  vcache[dst + d.x] = v[src + d.x];
  vcache[dst + d.y] = v[src + d.y];
}
