// elementwise.metal: SiLU·mul, GELU·mul, scaling, residual add and the embedding lookup.

struct EltParams {
  uint n;
};

kernel void silu_mul(device const float* gate [[buffer(0)]], device const float* up [[buffer(1)]],
                     device float* out [[buffer(2)]], constant EltParams& p [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
  if (i >= p.n) return;
  out[i] = silu(gate[i]) * up[i];
}

kernel void gelu_mul(device const float* gate [[buffer(0)]], device const float* up [[buffer(1)]],
                     device float* out [[buffer(2)]], constant EltParams& p [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
  if (i >= p.n) return;
  out[i] = gelu_tanh(gate[i]) * up[i];
}

struct ScaleParams {
  uint n;
  float s;
};

kernel void scale_inplace(device float* x [[buffer(0)]], constant ScaleParams& p [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  if (i >= p.n) return;
  x[i] *= p.s;
}

kernel void add_inplace(device float* dst [[buffer(0)]], device const float* x [[buffer(1)]],
                        constant EltParams& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i >= p.n) return;
  dst[i] += x[i];
}

struct EmbedParams {
  Weight w;
  uint count;  // ids to look up
};

// embed writes row ids[r] of the table (dequantized) to out row r; grid (cols, count).
kernel void embed(device const uchar* w [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                  device const uchar* biases [[buffer(2)]], device const uint* ids [[buffer(3)]],
                  device float* out [[buffer(4)]], constant EmbedParams& p [[buffer(5)]],
                  uint2 gid [[thread_position_in_grid]]) {
  if (gid.x >= p.w.cols || gid.y >= p.count) return;
  out[gid.y * p.w.cols + gid.x] = dequant(p.w, w, scales, biases, ids[gid.y], gid.x);
}
