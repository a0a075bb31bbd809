// matvec.metal: the decode mat-vecs, one kernel per weight format. matvecs_<fmt> writes
// out_i[o] = sum_j x[j] * W_i[o][j] (+ bias_i[o]) for up to 3 weights W_i of one format over one
// x (q, k and v; the output head; one weight for any other single-row MatMul), their rows one
// grid, optionally adding out_0 to a residual (MatMulAdd); matvec_glu_<fmt> writes
// act(x·gateᵀ) * (x·upᵀ) for an MLP's gate and up weights. Both can fold an RMSNorm of x in:
// the lanes add up x² in the loop that loads x for the dot products, each simdgroup reads all
// of x so its simd_sum is the row's sum, and the dot products of W with x*(w+offset) are scaled
// by 1/sqrt(mean(x²)+eps) at the end; no separate pass over x, no normalized copy.
//
// The structure follows MLX's qmv_fast: a threadgroup of 2 simdgroups, each producing 4 output
// rows; every lane owns 16 consecutive inputs per step (512 per simdgroup step), reads x once
// for all 4 rows (and for gate and up), and the rows' partial dots meet in simd_sum. Rows past
// the end are clamped for reading and skipped for writing, so any row count works; inputs past
// the end of an F32/F16/BF16 row (the only formats whose cols need not be a multiple of 16) are
// skipped. Grid: sum of ceil(rows_i/8) threadgroups of 64 threads.

// NormParams describes an RMSNorm folded into a mat-vec: x is used as x*(w+offset)/sqrt(mean(x²)+eps).
struct NormParams {
  uint on;  // 0: x is used as it is
  uint dt;  // DT_* of the norm weight
  float eps;
  float offset;
};

// MatVecsParams: up to 3 weights that share format and cols (w; its rows field is unused).
struct MatVecsParams {
  Weight w;
  uint rows0;  // output rows of weight 0, 1, 2; 0 when there is no such weight
  uint rows1;
  uint rows2;
  uint hasBias;  // bit i: weight i has a bias
  uint biasDT0;
  uint biasDT1;
  uint biasDT2;
  uint addTo;  // 1: also residual[row] += out0[row] (one weight)
  NormParams norm;
};

// GLUParams: an MLP's gate and up weights (same format and shape) over one x.
struct GLUParams {
  Weight gate;
  Weight up;
  uint act;  // ACT_*
  NormParams norm;
};

#define MV_ROWS 4
#define MV_SIMDGROUPS 2
#define MV_CHUNK 16

// Each format supplies load_x (fill xv with the 16 inputs of chunk c starting at p, possibly
// pre-scaled, and return their plain sum; n is how many inputs are left in the row, so at least
// 1) and dot (the chunk's contribution to one row). load_x reads device memory (x itself) or a
// thread array (x already multiplied by a folded norm's weight).

struct FmtFloat {
  template <typename P>
  static float load_x(P p, uint, uint n, thread float* xv) {
    for (uint j = 0; j < MV_CHUNK; j++) xv[j] = j < n ? p[j] : 0.0f;
    return 0.0f;
  }
};

struct FmtF32 : FmtFloat {
  static float dot(Weight wt, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float) {
    device const float* p = (device const float*)r + c * MV_CHUNK;
    uint n = min(uint(MV_CHUNK), wt.cols - c * MV_CHUNK);
    float s = 0.0f;
    for (uint j = 0; j < n; j++) s += p[j] * xv[j];
    return s;
  }
};

struct FmtF16 : FmtFloat {
  static float dot(Weight wt, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float) {
    device const half* p = (device const half*)r + c * MV_CHUNK;
    uint n = min(uint(MV_CHUNK), wt.cols - c * MV_CHUNK);
    float s = 0.0f;
    for (uint j = 0; j < n; j++) s += float(p[j]) * xv[j];
    return s;
  }
};

struct FmtBF16 : FmtFloat {
  static float dot(Weight wt, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float) {
    device const ushort* p = (device const ushort*)r + c * MV_CHUNK;
    uint n = min(uint(MV_CHUNK), wt.cols - c * MV_CHUNK);
    float s = 0.0f;
    for (uint j = 0; j < n; j++) s += bf16_to_float(p[j]) * xv[j];
    return s;
  }
};

// 4-bit affine: x is pre-divided by 16^(j%4) so each code is used in place inside its 16-bit
// word (w & 0x00f0 is 16*q), as MLX does, saving a shift per element.
struct FmtAffine4 {
  template <typename P>
  static float load_x(P p, uint, uint, thread float* xv) {
    float s = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j += 4) {
      s += p[j] + p[j + 1] + p[j + 2] + p[j + 3];
      xv[j] = p[j];
      xv[j + 1] = p[j + 1] / 16.0f;
      xv[j + 2] = p[j + 2] / 256.0f;
      xv[j + 3] = p[j + 3] / 4096.0f;
    }
    return s;
  }
  static float dot(Weight wt, device const uchar* r, device const uchar* scales,
                   device const uchar* biases, uint row, uint c, thread const float* xv, float xs) {
    device const ushort* q = (device const ushort*)(r + c * 8);
    float a = 0.0f;
    for (uint t = 0; t < 4; t++) {
      uint v = q[t];
      a += xv[4 * t] * float(v & 0x000f) + xv[4 * t + 1] * float(v & 0x00f0) +
           xv[4 * t + 2] * float(v & 0x0f00) + xv[4 * t + 3] * float(v & 0xf000);
    }
    uint g = row * (wt.cols / wt.groupSize) + c * MV_CHUNK / wt.groupSize;
    return load_elem(scales, g, wt.scaleDT) * a + load_elem(biases, g, wt.scaleDT) * xs;
  }
};

struct FmtAffine8 {
  template <typename P>
  static float load_x(P p, uint, uint, thread float* xv) {
    float s = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j++) {
      xv[j] = p[j];
      s += p[j];
    }
    return s;
  }
  static float dot(Weight wt, device const uchar* r, device const uchar* scales,
                   device const uchar* biases, uint row, uint c, thread const float* xv, float xs) {
    device const uchar* q = r + c * MV_CHUNK;
    float a = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j++) a += xv[j] * float(q[j]);
    uint g = row * (wt.cols / wt.groupSize) + c * MV_CHUNK / wt.groupSize;
    return load_elem(scales, g, wt.scaleDT) * a + load_elem(biases, g, wt.scaleDT) * xs;
  }
};

// Q8_0: a chunk is half of a 32-element block.
struct FmtQ8_0 : FmtAffine8 {
  static float dot(Weight, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float) {
    device const uchar* b = r + (c / 2) * 34;
    device const char* q = (device const char*)(b + 2) + (c % 2) * 16;
    float a = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j++) a += xv[j] * float(q[j]);
    return f16_at(b, 0) * a;
  }
};

// Q4_0: chunk 2b holds the low nibbles of block b's 16 bytes, chunk 2b+1 the high nibbles. The
// codes are read as 16-bit words and used in place, masked but not shifted, as for 4-bit affine:
// element 2t of a chunk sits at bit 0 (low nibbles) or 4 (high) of word t, element 2t+1 at bit
// 8 or 12, so x is pre-divided by 1, 256 (low) or 16, 4096 (high); powers of two, exactly.
struct FmtQ4_0 {
  template <typename P>
  static float load_x(P p, uint c, uint, thread float* xv) {
    const float lo = c % 2 == 0 ? 1.0f : 1.0f / 16.0f, hi = lo / 256.0f;
    float s = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j += 2) {
      s += p[j] + p[j + 1];
      xv[j] = p[j] * lo;
      xv[j + 1] = p[j + 1] * hi;
    }
    return s;
  }
  static float dot(Weight, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float xs) {
    device const uchar* b = r + (c / 2) * 18;
    device const ushort* q = (device const ushort*)(b + 2);
    const uint mask = c % 2 == 0 ? 0x0f0fu : 0xf0f0u;
    float a = 0.0f;
    for (uint t = 0; t < MV_CHUNK / 2; t++) {
      uint v = q[t] & mask;
      a += xv[2 * t] * float(v & 0x00ffu) + xv[2 * t + 1] * float(v & 0xff00u);
    }
    return f16_at(b, 0) * (a - 8.0f * xs);
  }
};

// Q5_0: Q4_0 with a fifth bit per code (bit j of the block's 4 qh bytes for element j).
struct FmtQ5_0 : FmtAffine8 {
  static float dot(Weight, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float xs) {
    device const uchar* b = r + (c / 2) * 22;
    uint h = c % 2, shift = 4 * h;
    uint qh = (uint(b[2 + 2 * h]) | uint(b[3 + 2 * h]) << 8) << 4;  // bit j at 4+j: the code's bit 4
    float a = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j++) a += xv[j] * float(((b[6 + j] >> shift) & 15) | ((qh >> j) & 16));
    return f16_at(b, 0) * (a - 16.0f * xs);
  }
};

// Q5_K: Q4_K with a fifth bit per code, bit s of qh[l] for element l of sub-block s.
struct FmtQ5_K : FmtAffine8 {
  static float dot(Weight, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float xs) {
    device const uchar* b = r + (c / 16) * 176;
    uint cc = c % 16, s = cc / 2, l0 = 16 * (cc % 2);
    float sc, mn;
    q4k_scale_min(s, b + 4, sc, mn);
    device const uchar* q = b + 48 + 32 * (s / 2) + l0;
    device const uchar* qh = b + 16 + l0;
    uint shift = 4 * (s % 2);
    float a = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j++) a += xv[j] * float(((q[j] >> shift) & 15) | ((qh[j] >> s) & 1) << 4);
    return f16_at(b, 0) * sc * a - f16_at(b, 2) * mn * xs;
  }
};

// Q4_K: a chunk is half of one 32-element sub-block, so it has one scale and one min.
struct FmtQ4_K : FmtAffine8 {
  static float dot(Weight, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float xs) {
    device const uchar* b = r + (c / 16) * 144;
    uint cc = c % 16, s = cc / 2;
    float sc, mn;
    q4k_scale_min(s, b + 4, sc, mn);
    device const uchar* q = b + 16 + 32 * (s / 2) + 16 * (cc % 2);
    uint shift = 4 * (s % 2);
    float a = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j++) a += xv[j] * float((q[j] >> shift) & 15);
    return f16_at(b, 0) * sc * a - f16_at(b, 2) * mn * xs;
  }
};

// Q6_K: a chunk lies in one quadrant of one 128-element half and has a single scale.
struct FmtQ6_K : FmtAffine8 {
  static float dot(Weight, device const uchar* r, device const uchar*, device const uchar*, uint,
                   uint c, thread const float* xv, float xs) {
    device const uchar* b = r + (c / 16) * 210;
    uint e = 16 * (c % 16), n = e / 128, quad = (e % 128) / 32, l0 = e % 32;
    device const uchar* ql = b + n * 64 + l0 + (quad & 1) * 32;
    device const uchar* qh = b + 128 + n * 32 + l0;
    uint lshift = quad < 2 ? 0 : 4, hshift = 2 * quad;
    float a = 0.0f;
    for (uint j = 0; j < MV_CHUNK; j++) {
      uint q = ((ql[j] >> lshift) & 15) | (((qh[j] >> hshift) & 3) << 4);
      a += xv[j] * float(q);
    }
    float sc = float(((device const char*)(b + 192))[n * 8 + l0 / 16 + 2 * quad]);
    return f16_at(b, 208) * sc * (a - 32.0f * xs);
  }
};

// mv_load fills xv with chunk c of x for F::dot and returns F::load_x's sum; with a folded norm
// it adds the chunk's squares of x to ss and loads x times the norm weight instead.
template <class F>
inline float mv_load(device const float* x, uint cols, device const uchar* nw, NormParams nm, uint c,
                     thread float* xv, thread float& ss) {
  const uint i0 = c * MV_CHUNK, n = cols - i0;
  if (nm.on == 0) return F::load_x(x + i0, c, n, xv);
  float t[MV_CHUNK];
  for (uint j = 0; j < MV_CHUNK; j++) {
    const float v = j < n ? x[i0 + j] : 0.0f;
    ss += v * v;
    t[j] = j < n ? v * (load_elem(nw, i0 + j, nm.dt) + nm.offset) : 0.0f;
  }
  return F::load_x(t, c, n, xv);
}

// mv_norm_scale is the folded norm's 1/sqrt(mean(x²)+eps), or 1 without a norm. Every lane of
// the simdgroup calls it: each simdgroup loaded all of x, so the simd_sum of ss is the row's.
inline float mv_norm_scale(NormParams nm, float ss, uint cols) {
  if (nm.on == 0) return 1.0f;
  return rsqrt(simd_sum(ss) / float(cols) + nm.eps);
}

// matvecs_impl: threadgroups [0, g0) make weight 0's rows, the next g1 weight 1's, the rest
// weight 2's (gk = ceil(rowsk/8)).
template <class F>
inline void matvecs_impl(device const uchar* w0, device const uchar* s0, device const uchar* b0, device const uchar* bias0,
                         device const uchar* w1, device const uchar* s1, device const uchar* b1, device const uchar* bias1,
                         device const uchar* w2, device const uchar* s2, device const uchar* b2, device const uchar* bias2,
                         device const float* x, device const uchar* nw, device float* out0, device float* out1,
                         device float* out2, device float* residual, constant MatVecsParams& p, uint tg, uint sg,
                         uint lane) {
  const uint per = MV_SIMDGROUPS * MV_ROWS;
  const uint g0 = (p.rows0 + per - 1) / per, g1 = (p.rows1 + per - 1) / per;
  uint t = tg, k = 0;
  if (t >= g0) {
    t -= g0;
    k = 1;
    if (t >= g1) {
      t -= g1;
      k = 2;
    }
  }
  device const uchar* w = k == 0 ? w0 : k == 1 ? w1 : w2;
  device const uchar* scales = k == 0 ? s0 : k == 1 ? s1 : s2;
  device const uchar* biases = k == 0 ? b0 : k == 1 ? b1 : b2;
  device const uchar* bias = k == 0 ? bias0 : k == 1 ? bias1 : bias2;
  device float* out = k == 0 ? out0 : k == 1 ? out1 : out2;
  const uint biasDT = k == 0 ? p.biasDT0 : k == 1 ? p.biasDT1 : p.biasDT2;
  const bool hasBias = ((p.hasBias >> k) & 1) != 0;
  Weight wt = p.w;
  wt.rows = k == 0 ? p.rows0 : k == 1 ? p.rows1 : p.rows2;
  const NormParams nm = p.norm;
  const uint row0 = (t * MV_SIMDGROUPS + sg) * MV_ROWS;
  float acc[MV_ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
  float xv[MV_CHUNK];
  float ss = 0.0f;
  const uint chunks = (wt.cols + MV_CHUNK - 1) / MV_CHUNK;
  for (uint c = lane; c < chunks; c += SIMD) {
    const float xs = mv_load<F>(x, wt.cols, nw, nm, c, xv, ss);
    for (uint r = 0; r < MV_ROWS; r++) {
      uint row = min(row0 + r, wt.rows - 1);
      acc[r] += F::dot(wt, w + row * wt.rowBytes, scales, biases, row, c, xv, xs);
    }
  }
  const float rn = mv_norm_scale(nm, ss, wt.cols);
  for (uint r = 0; r < MV_ROWS; r++) {
    float s = simd_sum(acc[r]) * rn;
    uint row = row0 + r;
    if (lane == 0 && row < wt.rows) {
      s += hasBias ? load_elem(bias, row, biasDT) : 0.0f;
      out[row] = s;
      if (p.addTo != 0) residual[row] += s;
    }
  }
}

// matvec_glu_impl: each simdgroup makes 4 rows of gate and up from one read of x and writes
// act(gate)*up.
template <class F>
inline void matvec_glu_impl(device const uchar* wg, device const uchar* sg_, device const uchar* bg,
                            device const uchar* wu, device const uchar* su, device const uchar* bu,
                            device const float* x, device const uchar* nw, device float* out,
                            constant GLUParams& p, uint tg, uint sg, uint lane) {
  const Weight wt = p.gate, wt2 = p.up;
  const NormParams nm = p.norm;
  const uint row0 = (tg * MV_SIMDGROUPS + sg) * MV_ROWS;
  float ag[MV_ROWS] = {0.0f, 0.0f, 0.0f, 0.0f}, au[MV_ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
  float xv[MV_CHUNK];
  float ss = 0.0f;
  const uint chunks = (wt.cols + MV_CHUNK - 1) / MV_CHUNK;
  for (uint c = lane; c < chunks; c += SIMD) {
    const float xs = mv_load<F>(x, wt.cols, nw, nm, c, xv, ss);
    for (uint r = 0; r < MV_ROWS; r++) {
      uint row = min(row0 + r, wt.rows - 1);
      ag[r] += F::dot(wt, wg + row * wt.rowBytes, sg_, bg, row, c, xv, xs);
      au[r] += F::dot(wt2, wu + row * wt2.rowBytes, su, bu, row, c, xv, xs);
    }
  }
  const float rn = mv_norm_scale(nm, ss, wt.cols);
  for (uint r = 0; r < MV_ROWS; r++) {
    float g = simd_sum(ag[r]) * rn, u = simd_sum(au[r]) * rn;
    uint row = row0 + r;
    if (lane == 0 && row < wt.rows) out[row] = glu_act(g, p.act) * u;
  }
}

kernel void matvecs_f32(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtF32>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_f16(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtF16>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_bf16(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtBF16>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_affine4(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtAffine4>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_affine8(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtAffine8>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_q8_0(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtQ8_0>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_q4_0(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtQ4_0>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_q5_0(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtQ5_0>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_q4_k(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtQ4_K>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_q5_k(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtQ5_K>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvecs_q6_k(device const uchar* w0 [[buffer(0)]], device const uchar* s0 [[buffer(1)]],
                       device const uchar* b0 [[buffer(2)]], device const uchar* bias0 [[buffer(3)]],
                       device const uchar* w1 [[buffer(4)]], device const uchar* s1 [[buffer(5)]],
                       device const uchar* b1 [[buffer(6)]], device const uchar* bias1 [[buffer(7)]],
                       device const uchar* w2 [[buffer(8)]], device const uchar* s2 [[buffer(9)]],
                       device const uchar* b2 [[buffer(10)]], device const uchar* bias2 [[buffer(11)]],
                       device const float* x [[buffer(12)]], device const uchar* nw [[buffer(13)]],
                       device float* out0 [[buffer(14)]], device float* out1 [[buffer(15)]],
                       device float* out2 [[buffer(16)]], device float* residual [[buffer(17)]],
                       constant MatVecsParams& p [[buffer(18)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvecs_impl<FmtQ6_K>(w0, s0, b0, bias0, w1, s1, b1, bias1, w2, s2, b2, bias2, x, nw, out0, out1, out2, residual, p, tg,
                   sg, lane);
}

kernel void matvec_glu_f32(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtF32>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_f16(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtF16>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_bf16(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtBF16>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_affine4(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtAffine4>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_affine8(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtAffine8>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_q8_0(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtQ8_0>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_q4_0(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtQ4_0>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_q5_0(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtQ5_0>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_q4_k(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtQ4_K>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_q5_k(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtQ5_K>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}

kernel void matvec_glu_q6_k(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                           device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                           device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                           device const float* x [[buffer(6)]], device const uchar* nw [[buffer(7)]],
                           device float* out [[buffer(8)]], constant GLUParams& p [[buffer(9)]],
                           uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  matvec_glu_impl<FmtQ6_K>(wg, sg_, bg, wu, su, bu, x, nw, out, p, tg, sg, lane);
}
