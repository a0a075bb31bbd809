// recurrent.metal: the recurrent layers' operations (backend.Recurrent): LFM2's gated short
// convolution and Qwen3.5's convolution, Gated DeltaNet's delta rule (step by step, the state
// in registers), its gated RMSNorm, the split of Qwen3.5's gated query and the sigmoid gate, and
// a buffer copy for state snapshots.

struct ConvParams {
  uint channels;
  uint taps;  // the state holds the taps-1 inputs before the first row
  uint rows;
  uint gated;  // 1: x rows are [B | C | u], y = C * conv(B * u); 0: y = silu(conv(x))
  uint fresh;  // 1: position 0, the state is taken as zeros
  uint wDT;    // DT_* of the weight [channels, kernel]
};

inline float conv_input(device const float* x, device const float* state, int r, uint i, constant ConvParams& p) {
  uint hist = p.taps - 1;
  if (r < 0) return p.fresh != 0 ? 0.0f : state[uint(int(hist) + r) * p.channels + i];
  if (p.gated != 0) {
    device const float* row = x + uint(r) * 3 * p.channels;
    return row[i] * row[2 * p.channels + i];
  }
  return x[uint(r) * p.channels + i];
}

// causal_conv: one thread per channel, walking the rows; each thread reads and writes only its
// channel of the state, the old values before the new (rows ahead of the write).
kernel void causal_conv(device const float* x [[buffer(0)]], device const uchar* w [[buffer(1)]],
                        device float* state [[buffer(2)]], device float* out [[buffer(3)]],
                        constant ConvParams& p [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  if (i >= p.channels) return;
  int hist = int(p.taps) - 1;
  for (uint r = 0; r < p.rows; r++) {
    float s = 0.0f;
    for (uint j = 0; j < p.taps; j++) {
      s += load_elem(w, i * p.taps + j, p.wDT) * conv_input(x, state, int(r) - hist + int(j), i, p);
    }
    if (p.gated != 0) {
      s *= x[r * 3 * p.channels + p.channels + i];
    } else {
      s = s / (1.0f + exp(-s));
    }
    out[r * p.channels + i] = s;
  }
  for (int h = 0; h < hist; h++) {
    state[uint(h) * p.channels + i] = conv_input(x, state, int(p.rows) - hist + h, i, p);
  }
}

struct DeltaParams {
  uint kHeads;
  uint vHeads;
  uint kDim;
  uint vDim;
  uint rows;
  uint fresh;    // 1: position 0, the state is taken as zeros
  uint tiled;    // 1: value head h reads key head h % kHeads, else h / (vHeads / kHeads)
  uint negExpA;  // 1: the A tensor holds -exp(A_log)
  uint aDT;      // DT_* of the A tensor
  uint dtDT;     // DT_* of dt_bias
};

// DELTA_MAX_DIM bounds the key head size gated_delta takes (Qwen3.5's is 128).
#define DELTA_MAX_DIM 256
#define DELTA_PER_LANE 8

// gated_delta: one simdgroup per state column (value head h = threadgroup x, column c). Its
// lanes hold the column S[k][c] in registers, lane l the rows k = l + 32*j, for every row of the
// call, so the state is read and written once per call: per row, S = g*S; S += k * beta*(v - Sᵀk);
// out = Sᵀq, the sums over k by simd_sum. Simdgroups share nothing, so no barriers.
kernel void gated_delta(device const float* qkv [[buffer(0)]], device const float* a [[buffer(1)]],
                        device const float* b [[buffer(2)]], device const uchar* aw [[buffer(3)]],
                        device const uchar* dtBias [[buffer(4)]], device float* state [[buffer(5)]],
                        device float* out [[buffer(6)]], constant DeltaParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                        uint nsg [[simdgroups_per_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  uint h = tg.x, c = tg.y * nsg + sg;
  if (c >= p.vDim) return;
  uint kh = p.tiled != 0 ? h % p.kHeads : h / (p.vHeads / p.kHeads);
  uint width = 2 * p.kHeads * p.kDim + p.vHeads * p.vDim;
  device float* S = state + h * p.kDim * p.vDim + c;
  float col[DELTA_PER_LANE];
  for (uint j = 0; j < DELTA_PER_LANE; j++) {
    uint k = lane + 32 * j;
    col[j] = (p.fresh == 0 && k < p.kDim) ? S[k * p.vDim] : 0.0f;
  }
  float A = load_elem(aw, h, p.aDT);
  float negA = p.negExpA != 0 ? A : -exp(A);
  float dt = load_elem(dtBias, h, p.dtDT);
  float scale = rsqrt(float(p.kDim));
  for (uint r = 0; r < p.rows; r++) {
    device const float* q = qkv + r * width + kh * p.kDim;
    device const float* kk = qkv + r * width + (p.kHeads + kh) * p.kDim;
    float qv[DELTA_PER_LANE], kv[DELTA_PER_LANE];
    float sq = 0.0f, sk = 0.0f;
    for (uint j = 0; j < DELTA_PER_LANE; j++) {
      uint k = lane + 32 * j;
      qv[j] = k < p.kDim ? q[k] : 0.0f;
      kv[j] = k < p.kDim ? kk[k] : 0.0f;
      sq += qv[j] * qv[j];
      sk += kv[j] * kv[j];
    }
    float iq = rsqrt(simd_sum(sq) + 1e-6f) * scale, ik = rsqrt(simd_sum(sk) + 1e-6f);
    float x = a[r * p.vHeads + h] + dt;
    float sp = x > 20.0f ? x : log(1.0f + exp(x));
    float g = exp(negA * sp);
    float beta = 1.0f / (1.0f + exp(-b[r * p.vHeads + h]));
    float mem = 0.0f;
    for (uint j = 0; j < DELTA_PER_LANE; j++) {
      kv[j] *= ik;
      col[j] *= g;
      mem += col[j] * kv[j];
    }
    float delta = (qkv[r * width + 2 * p.kHeads * p.kDim + h * p.vDim + c] - simd_sum(mem)) * beta;
    float o = 0.0f;
    for (uint j = 0; j < DELTA_PER_LANE; j++) {
      col[j] += kv[j] * delta;
      o += col[j] * qv[j] * iq;
    }
    o = simd_sum(o);
    if (lane == 0) out[(r * p.vHeads + h) * p.vDim + c] = o;
  }
  for (uint j = 0; j < DELTA_PER_LANE; j++) {
    uint k = lane + 32 * j;
    if (k < p.kDim) S[k * p.vDim] = col[j];
  }
}

struct GatedNormParams {
  uint n;    // row width
  uint wDT;  // DT_* of the weight
  float eps;
};

// gated_rmsnorm: one threadgroup per row, out = x / rms(x) * w * silu(z); out may be x.
kernel void gated_rmsnorm(device const float* x [[buffer(0)]], device const float* z [[buffer(1)]],
                          device const uchar* w [[buffer(2)]], device float* out [[buffer(3)]],
                          constant GatedNormParams& p [[buffer(4)]], uint row [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]], uint ntg [[threads_per_threadgroup]],
                          uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float partial[32];
  x += row * p.n;
  z += row * p.n;
  out += row * p.n;
  float ss = 0.0f;
  for (uint i = tid; i < p.n; i += ntg) ss += x[i] * x[i];
  ss = simd_sum(ss);
  if (lane == 0) partial[sg] = ss;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float total = 0.0f;
  for (uint s = 0; s < nsg; s++) total += partial[s];
  float inv = rsqrt(total / float(p.n) + p.eps);
  for (uint i = tid; i < p.n; i += ntg) {
    float g = z[i];
    out[i] = x[i] * inv * load_elem(w, i, p.wDT) * (g / (1.0f + exp(-g)));
  }
}

struct SplitParams {
  uint n;      // blocks
  uint width;  // values per half block
};

// split_heads: a gets the first half of each block of 2*width values of src, b the second.
kernel void split_heads(device const float* src [[buffer(0)]], device float* a [[buffer(1)]],
                        device float* b [[buffer(2)]], constant SplitParams& p [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
  if (i >= p.n * p.width) return;
  uint blk = i / p.width, j = i % p.width;
  a[i] = src[2 * blk * p.width + j];
  b[i] = src[(2 * blk + 1) * p.width + j];
}

kernel void sigmoid_mul(device float* x [[buffer(0)]], device const float* gate [[buffer(1)]],
                        constant EltParams& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i >= p.n) return;
  x[i] *= 1.0f / (1.0f + exp(-gate[i]));
}

kernel void copy_buf(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                     constant EltParams& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i >= p.n) return;
  dst[i] = src[i];
}
