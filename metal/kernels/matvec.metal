// matvec.metal: out[b][o] = sum_i x[b][i] * W[o][i] (+ bias[o]) for decode, one kernel per weight
// format. The structure follows MLX's qmv_fast: a threadgroup of 2 simdgroups, each producing 4
// output rows; every lane owns 16 consecutive inputs per step (512 per simdgroup step), reads
// x once for all 4 rows, and the rows' partial dots meet in simd_sum. Rows past the end are
// clamped for reading and skipped for writing, so any row count works; inputs past the end of
// an F32/F16/BF16 row (the only formats whose cols need not be a multiple of 16) are skipped.
// Grid: (ceil(rows/8), batch) threadgroups of 64 threads.

struct MatVecParams {
  Weight w;
  uint hasBias;
  uint biasDT;
  uint addTo;  // 1: also residual[row] += out[row] (the residual add that follows o/down)
};

// MatVecPairParams: two matrices of the same format and shape over one x (gate and up).
struct MatVecPairParams {
  Weight gate;
  Weight up;
};

#define MV_ROWS 4
#define MV_SIMDGROUPS 2
#define MV_CHUNK 16

// Each format supplies load_x (fill 16 inputs of chunk c, possibly pre-scaled, and return their
// plain sum) and dot (the chunk's contribution to one row).

struct FmtFloat {
  static float load_x(device const float* x, uint c, uint k, thread float* xv) {
    for (uint j = 0; j < MV_CHUNK; j++) {
      uint i = c * MV_CHUNK + j;
      xv[j] = i < k ? x[i] : 0.0f;
    }
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
  static float load_x(device const float* x, uint c, uint, thread float* xv) {
    device const float* p = x + c * MV_CHUNK;
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
  static float load_x(device const float* x, uint c, uint, thread float* xv) {
    device const float* p = x + c * MV_CHUNK;
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
  static float load_x(device const float* x, uint c, uint, thread float* xv) {
    device const float* p = x + c * MV_CHUNK;
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

template <class F>
inline void matvec_impl(device const uchar* w, device const uchar* scales, device const uchar* biases,
                        device const uchar* bias, device const float* x, device float* out,
                        device float* residual, constant MatVecParams& p, uint2 tg, uint sg, uint lane) {
  const Weight wt = p.w;
  const uint row0 = (tg.x * MV_SIMDGROUPS + sg) * MV_ROWS;
  x += tg.y * wt.cols;
  out += tg.y * wt.rows;
  float acc[MV_ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
  float xv[MV_CHUNK];
  const uint chunks = (wt.cols + MV_CHUNK - 1) / MV_CHUNK;
  for (uint c = lane; c < chunks; c += SIMD) {
    float xs = F::load_x(x, c, wt.cols, xv);
    for (uint r = 0; r < MV_ROWS; r++) {
      uint row = min(row0 + r, wt.rows - 1);
      acc[r] += F::dot(wt, w + row * wt.rowBytes, scales, biases, row, c, xv, xs);
    }
  }
  for (uint r = 0; r < MV_ROWS; r++) {
    float s = simd_sum(acc[r]);
    uint row = row0 + r;
    if (lane == 0 && row < wt.rows) {
      s += p.hasBias != 0 ? load_elem(bias, row, p.biasDT) : 0.0f;
      out[row] = s;
      if (p.addTo != 0) residual[tg.y * wt.rows + row] += s;
    }
  }
}

// matvec_silu_impl is the gate and up projections of an MLP in one pass: each simdgroup makes 4
// rows of both from one read of x, writes them (so the two MatMul results exist as if run
// separately) and out = silu(gate) * up.
template <class F>
inline void matvec_silu_impl(device const uchar* wg, device const uchar* sg_, device const uchar* bg,
                             device const uchar* wu, device const uchar* su, device const uchar* bu,
                             device const float* x, device float* gate, device float* up, device float* out,
                             constant MatVecPairParams& p, uint2 tg, uint sg, uint lane) {
  const Weight wt = p.gate, wt2 = p.up;
  const uint row0 = (tg.x * MV_SIMDGROUPS + sg) * MV_ROWS;
  float ag[MV_ROWS] = {0.0f, 0.0f, 0.0f, 0.0f}, au[MV_ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
  float xv[MV_CHUNK];
  const uint chunks = (wt.cols + MV_CHUNK - 1) / MV_CHUNK;
  for (uint c = lane; c < chunks; c += SIMD) {
    float xs = F::load_x(x, c, wt.cols, xv);
    for (uint r = 0; r < MV_ROWS; r++) {
      uint row = min(row0 + r, wt.rows - 1);
      ag[r] += F::dot(wt, wg + row * wt.rowBytes, sg_, bg, row, c, xv, xs);
      au[r] += F::dot(wt2, wu + row * wt2.rowBytes, su, bu, row, c, xv, xs);
    }
  }
  for (uint r = 0; r < MV_ROWS; r++) {
    float g = simd_sum(ag[r]), u = simd_sum(au[r]);
    uint row = row0 + r;
    if (lane == 0 && row < wt.rows) {
      gate[row] = g;
      up[row] = u;
      out[row] = g / (1.0f + exp(-g)) * u;
    }
  }
}

kernel void matvec_f32(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtF32>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_f16(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtF16>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_bf16(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtBF16>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_affine4(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtAffine4>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_affine8(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtAffine8>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_q8_0(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtQ8_0>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_q4_0(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtQ4_0>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_q5_0(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtQ5_0>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_q4_k(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtQ4_K>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_q5_k(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtQ5_K>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_q6_k(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                        device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                        device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                        device float* residual [[buffer(6)]], constant MatVecParams& p [[buffer(7)]],
                        uint2 tg [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_impl<FmtQ6_K>(w, scales, biases, bias, x, out, residual, p, tg, sg, lane);
}

kernel void matvec_silu_f32(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtF32>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_f16(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtF16>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_bf16(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtBF16>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_affine4(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtAffine4>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_affine8(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtAffine8>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_q8_0(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtQ8_0>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_q4_0(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtQ4_0>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_q5_0(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtQ5_0>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_q4_k(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtQ4_K>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_q5_k(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtQ5_K>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}

kernel void matvec_silu_q6_k(device const uchar* wg [[buffer(0)]], device const uchar* sg_ [[buffer(1)]],
                             device const uchar* bg [[buffer(2)]], device const uchar* wu [[buffer(3)]],
                             device const uchar* su [[buffer(4)]], device const uchar* bu [[buffer(5)]],
                             device const float* x [[buffer(6)]], device float* gate [[buffer(7)]],
                             device float* up [[buffer(8)]], device float* out [[buffer(9)]],
                             constant MatVecPairParams& p [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  matvec_silu_impl<FmtQ6_K>(wg, sg_, bg, wu, su, bu, x, gate, up, out, p, tg, sg, lane);
}
