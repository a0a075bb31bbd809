// Kernels of the CPU backend: activation quantization, quantized matrix products, attention and
// element-wise ops. Portable C in kernels.c; x86 SIMD variants in kernels_amd64.c and NEON ones
// in kernels_arm64.c, chosen at run time by laya_init. Go calls each function once per matmul or per range of rows.
#ifndef LAYA_KERNELS_H
#define LAYA_KERNELS_H

#include <stdint.h>

// Weight kinds (the weight's dtype plus, for Affine, its code width).
enum {
	LK_F32, LK_F16, LK_BF16, LK_Q8_0, LK_Q4_0, LK_Q5_0, LK_Q4_K, LK_Q5_K, LK_Q6_K,
	LK_AFF4, LK_AFF8, LK_NKINDS
};

// Dtypes of Affine scales and biases.
enum { LS_F32, LS_F16, LS_BF16 };

// lq8 is 32 activations quantized to int8 with one float scale: x[i] ~= d*q[i]. s holds the sums
// of q over elements 0-15 and 16-31 and ds = d*(s[0]+s[1]), which the zero-point terms of the
// weight formats need.
typedef struct {
	float d, ds;
	int16_t s[2];
	int8_t q[32];
} lq8;

// lw describes one weight matrix (see laya_matmul).
typedef struct {
	int kind;
	int rows, cols;
	long rowbytes;
	const uint8_t *w;
	const uint8_t *sc, *bi;
	int sdt, group;
} lw;

// laya_init picks the best implementation for this CPU; force >= 0 selects one (0 portable,
// 1 AVX2 or NEON, 2 AVX-512 VNNI or NEON dotprod, 3 AMX) when available, so tests can compare them. Returns the one chosen.
int laya_init(int force);

// laya_quant_perm reports whether kind wants its activations in Affine-4 nibble order.
int laya_quant_perm(int kind);

// laya_quantize converts rows of cols floats (cols a multiple of 32) into cols/32 blocks each.
// perm stores each block's even elements first, then its odd ones, the order in which 4-bit MLX
// words hold their codes. With pair (cols a multiple of 64), blocks 2i and 2i+1 of a row share
// one scale, that of the larger amax of the two, so that a kernel may take both as one block of
// 64 (and the remainder's scale is shared too). With resid, each row becomes two rows of blocks, 2r and 2r+1: the
// quantized row and the quantized remainder x - d*q, which brings the error from amax/254 down to
// amax/64516 per element (scratch holds cols floats). Each remainder block's scale is exactly its
// main block's d/254 (float division), which kernels may rely on to combine the two products in
// integers. Below, qrows is rows, or 2*rows with resid.
// When xt is not NULL it also writes the block scales transposed, xt[b*qrows + r] = d and
// xt[(nb + b)*qrows + r] = ds of block row r's block b, and when x8 is not NULL the codes of each
// full group of 8 block rows interleaved by tiles of 16 rows ((qrows/8 + 1)/2*16*cols bytes): for
// tile t, block b and 4-code group k, the 64 bytes at (t*nb + b)*512 + 64*k hold group k of rows
// 16t..16t+15 in turn (the second half unused when only 8 rows are left). One 512-bit load takes
// 16 rows, a 256-bit one 8; the tile kernels read them.
// For a single residual pair (rows 1, resid), xt instead holds per block the remainder's d
// (xt[b]) and the sum of both parts' ds (xt[nb + b]), which is what decode's pair kernels scale by.
// For a single row (resid or not), xt[2*nb + 2*b + h] also holds the d-scaled code sum of half h
// (16 elements) of block b, both parts together; xt then has room for 4*nb floats.
// With fewer than 8 block rows, x8 (qrows*cols bytes) instead holds each row's codes by pairs of
// blocks b, b+1 (b even, both present): 16 first codes of b, of b+1, then the 16 last codes of b,
// of b+1, for the 8-block decode kernels.
void laya_quantize(const float *x, int rows, int cols, lq8 *out, int perm, int pair, int resid, float *scratch,
	float *xt, int8_t *x8);

// laya_quantize_rows does laya_quantize's work for input rows [r0, r1) of rows, for calls that
// split rows >= 16 between threads at multiples of 16 (so no two write the same x8 tile): each
// needs its own scratch. The single-row layouts are laya_quantize's alone.
void laya_quantize_rows(const float *x, int rows, int cols, int r0, int r1, lq8 *out, int perm, int pair, int resid,
	float *scratch, float *xt, int8_t *x8);

// lx describes a matmul's activations. x is lq8 blocks (stride blocks per row) for quantized
// kinds, floats (stride floats per row) for F32/F16/BF16; xt and x8 are NULL or laya_quantize's
// extra outputs for x (x8 only with xt). With pairs, x holds laya_quantize's residual pairs
// (rows counts block rows) and output row r is the sum of block rows 2r and 2r+1; pairscaled
// says x was quantized with pair (see laya_quantize).
typedef struct {
	const void *x;
	const float *xt;
	const int8_t *x8;
	long stride;
	int rows;
	int pairs, pairscaled;
} lx;

// lout is where a matmul writes: dst[r*ldd + o] for activation row r and weight row o, plus
// bias[o] when bias is not NULL.
typedef struct {
	float *dst;
	long ldd;
	const float *bias;
} lout;

// laya_matmul computes dot(W[o], x[r]) (+ bias[o]) into out for weight rows o in [r0, r1) and
// every activation row r of x. W is described by w; for Affine, w.sc and w.bi are the companion
// [rows, cols/group] tensors of dtype w.sdt. One activation row (or one residual pair) runs the
// decode kernels, more run the tiled ones. It returns 0, or -1 when the per-thread buffer of
// decoded weight rows cannot be allocated (nothing is then written).
// The descriptors travel by value, so the Go memory they point to is reachable only from the
// call's arguments, as cgo's pointer rules ask.
int laya_matmul(lw w, int r0, int r1, lx x, lout out);

// laya_set_dec_limit makes laya_matmul fail as on an allocation failure when a thread's buffer of
// decoded weight rows would exceed n bytes; 0 lifts the limit. For tests.
void laya_set_dec_limit(long n);

// laya_attention computes causal attention for items [lo, hi) of rows*heads (item i is query row
// i/heads, head i%heads) over the cached keys and values k, v ([positions][kvw]). scores is
// scratch of at least pos+rows floats.
void laya_attention(const float *q, const float *k, const float *v, float *out, float *scores,
	int heads, int group, int hd, int kvw, int pos, int lo, int hi, float scale);

// laya_stream returns the sum of the n bytes at p taken as little-endian 64-bit words, the last
// n%8 bytes one by one, read as the decode kernels read weights: in order, with software
// prefetches ahead (it measures the bandwidth they can reach). p need not be aligned.
uint64_t laya_stream(const uint8_t *p, long n);

// laya_silu_mul: dst[i] = gate[i] / (1 + exp(-gate[i])) * up[i].
void laya_silu_mul(float *dst, const float *gate, const float *up, int n);
// laya_gelu_mul: dst[i] = gelu(gate[i]) * up[i], GELU's tanh approximation.
void laya_gelu_mul(float *dst, const float *gate, const float *up, int n);

#endif
