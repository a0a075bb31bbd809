// dequant.metal: one weight element at a time, for every weight format. Embedding lookups and the
// prefill mat-mat stage tiles with it; the decode mat-vec kernels have their own block-wise paths.

// Weight describes a matrix as the host binds it: rows are outputs, cols inputs.
struct Weight {
  uint fmt;       // WF_*
  uint rows;      // output features
  uint cols;      // input features
  uint rowBytes;  // bytes per row of the packed data
  uint bits;      // affine: bits per code (4 or 8)
  uint groupSize; // affine: elements per scale/bias pair
  uint scaleDT;   // affine: DT_* of scales and biases
};

// Q4_K packs eight 6-bit scales and eight 6-bit mins into 12 bytes.
inline void q4k_scale_min(uint s, device const uchar* q, thread float& sc, thread float& mn) {
  if (s < 4) {
    sc = float(q[s] & 63);
    mn = float(q[s + 4] & 63);
  } else {
    sc = float((q[s + 4] & 15) | ((q[s - 4] >> 6) << 4));
    mn = float((q[s + 4] >> 4) | ((q[s] >> 6) << 4));
  }
}

inline float dequant(Weight wt, device const uchar* w, device const uchar* scales,
                     device const uchar* biases, uint row, uint col) {
  device const uchar* r = w + row * wt.rowBytes;
  if (wt.fmt == WF_F32) return ((device const float*)r)[col];
  if (wt.fmt == WF_F16) return float(((device const half*)r)[col]);
  if (wt.fmt == WF_BF16) return bf16_to_float(((device const ushort*)r)[col]);
  if (wt.fmt == WF_AFFINE) {
    uint g = row * (wt.cols / wt.groupSize) + col / wt.groupSize;
    uint q = wt.bits == 4 ? (r[col / 2] >> (4 * (col & 1))) & 15 : r[col];
    return load_elem(scales, g, wt.scaleDT) * float(q) + load_elem(biases, g, wt.scaleDT);
  }
  if (wt.fmt == WF_Q8_0) {
    device const uchar* b = r + (col / 32) * 34;
    return f16_at(b, 0) * float(((device const char*)(b + 2))[col % 32]);
  }
  if (wt.fmt == WF_Q4_0) {
    device const uchar* b = r + (col / 32) * 18;
    uint j = col % 32;
    uint q = j < 16 ? b[2 + j] & 15 : b[2 + j - 16] >> 4;
    return f16_at(b, 0) * (float(q) - 8.0f);
  }
  if (wt.fmt == WF_Q5_0) {
    device const uchar* b = r + (col / 32) * 22;
    uint j = col % 32;
    uint q = (j < 16 ? b[6 + j] & 15 : b[6 + j - 16] >> 4) | ((b[2 + j / 8] >> (j % 8)) & 1) << 4;
    return f16_at(b, 0) * (float(q) - 16.0f);
  }
  if (wt.fmt == WF_Q5_K) {
    // Q4_K's layout with 32 bytes of fifth bits before the nibbles: bit s of qh[l] for
    // element l of sub-block s.
    device const uchar* b = r + (col / 256) * 176;
    uint j = col % 256, s = j / 32, l = j % 32;
    float sc, mn;
    q4k_scale_min(s, b + 4, sc, mn);
    uint q = ((b[48 + 32 * (s / 2) + l] >> (4 * (s % 2))) & 15) | ((b[16 + l] >> s) & 1) << 4;
    return f16_at(b, 0) * sc * float(q) - f16_at(b, 2) * mn;
  }
  if (wt.fmt == WF_Q4_K) {
    device const uchar* b = r + (col / 256) * 144;
    uint j = col % 256, s = j / 32;
    float sc, mn;
    q4k_scale_min(s, b + 4, sc, mn);
    uint q = (b[16 + 32 * (s / 2) + j % 32] >> (4 * (s % 2))) & 15;
    return f16_at(b, 0) * sc * float(q) - f16_at(b, 2) * mn;
  }
  // WF_Q6_K: 128-element halves, each four 32-element quadrants sharing ql/qh bytes.
  device const uchar* b = r + (col / 256) * 210;
  uint j = col % 256, n = j / 128, quad = (j % 128) / 32, l = j % 32;
  uint ql = b[n * 64 + l + (quad & 1) * 32];
  uint lo = quad < 2 ? ql & 15 : ql >> 4;
  uint hi = (b[128 + n * 32 + l] >> (2 * quad)) & 3;
  float sc = float(((device const char*)(b + 192))[n * 8 + l / 16 + 2 * quad]);
  return f16_at(b, 208) * sc * float(int(lo | (hi << 4)) - 32);
}
