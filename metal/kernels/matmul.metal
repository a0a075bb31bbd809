// matmul.metal: out[m][o] = sum_i x[m][i] * W[o][i] (+ bias[o]) for a prefill block, any weight
// format. A threadgroup of 4 simdgroups computes a 32x32 tile of out: per 32-wide step of the
// inputs it stages the x tile and the dequantized, transposed W tile in threadgroup memory
// (zero-filled past the edges, so no size needs to be a multiple of the tile), and each
// simdgroup accumulates its 16x16 quarter as 2x2 simdgroup_matrix 8x8 products. Every weight is
// read once per 32 rows of x instead of once per row as in matvec.
// Grid: (ceil(outputs/32), ceil(rows/32)) threadgroups of 128 threads.

#define MM_TILE 32
#define MM_THREADS 128

struct MatMulParams {
  Weight w;
  uint rows;  // rows of x
  uint hasBias;
  uint biasDT;
};

kernel void matmul(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                   device const uchar* biases [[buffer(2)]], device const uchar* bias [[buffer(3)]],
                   device const float* x [[buffer(4)]], device float* out [[buffer(5)]],
                   constant MatMulParams& p [[buffer(6)]], uint2 tg [[threadgroup_position_in_grid]],
                   uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[MM_TILE * MM_TILE];  // [m][k]
  threadgroup float ws[MM_TILE * MM_TILE];  // [k][o]
  threadgroup float cs[MM_TILE * MM_TILE];  // [m][o]
  const Weight wt = p.w;
  const uint o0 = tg.x * MM_TILE, m0 = tg.y * MM_TILE;
  const uint sm = (sg / 2) * 16, so = (sg % 2) * 16;
  simdgroup_float8x8 acc[2][2];
  for (uint i = 0; i < 2; i++)
    for (uint j = 0; j < 2; j++) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  for (uint k0 = 0; k0 < wt.cols; k0 += MM_TILE) {
    for (uint e = tid; e < MM_TILE * MM_TILE; e += MM_THREADS) {
      uint a = e / MM_TILE, b = e % MM_TILE;
      uint m = m0 + a, k = k0 + b;
      xs[e] = m < p.rows && k < wt.cols ? x[m * wt.cols + k] : 0.0f;
      // W element (o0 + a, k0 + b) goes to ws[b][a]: consecutive threads read along a W row.
      uint o = o0 + a;
      ws[b * MM_TILE + a] = o < wt.rows && k < wt.cols ? dequant(wt, w, scales, biases, o, k) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint kk = 0; kk < MM_TILE; kk += 8) {
      simdgroup_float8x8 xa[2], wb[2];
      for (uint i = 0; i < 2; i++) simdgroup_load(xa[i], xs + (sm + 8 * i) * MM_TILE + kk, MM_TILE);
      for (uint j = 0; j < 2; j++) simdgroup_load(wb[j], ws + kk * MM_TILE + so + 8 * j, MM_TILE);
      for (uint i = 0; i < 2; i++)
        for (uint j = 0; j < 2; j++) simdgroup_multiply_accumulate(acc[i][j], xa[i], wb[j], acc[i][j]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  for (uint i = 0; i < 2; i++)
    for (uint j = 0; j < 2; j++) simdgroup_store(acc[i][j], cs + (sm + 8 * i) * MM_TILE + so + 8 * j, MM_TILE);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint e = tid; e < MM_TILE * MM_TILE; e += MM_THREADS) {
    uint m = m0 + e / MM_TILE, o = o0 + e % MM_TILE;
    if (m < p.rows && o < wt.rows) out[m * wt.rows + o] = cs[e] + (p.hasBias != 0 ? load_elem(bias, o, p.biasDT) : 0.0f);
  }
}
