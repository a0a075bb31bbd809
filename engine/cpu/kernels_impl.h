// Internal interface between the dispatcher (kernels.c) and the SIMD implementations.
#ifndef LAYA_KERNELS_IMPL_H
#define LAYA_KERNELS_IMPL_H

#include "kernels.h"

// LAYA_NX is how many activation rows one dot call takes: each decoded weight block is reused
// for all of them, which is what makes batched prefill cheaper than separate mat-vecs.
#define LAYA_NX 4

// LAYA_GELU_K is -2*sqrt(2/pi): GELU's tanh form 0.5x(1 + tanh(y)) equals x*sigmoid(2y), with
// y = sqrt(2/pi)*(x + 0.044715x^3), so the kernels compute x / (1 + exp(LAYA_GELU_K*(...))).
#define LAYA_GELU_K (-1.5957691216057308f)

// LAYA_PF is how many bytes ahead of the decode kernels the weight stream is prefetched (rows
// are contiguous); laya_stream reads at the same distance.
#ifndef LAYA_PF
#if defined(__aarch64__)
#define LAYA_PF 2048
#else
#define LAYA_PF 4096
#endif
#endif

// Classes of decoded weight codes (laya_impl.cls): unsigned below 128, unsigned below 16, or
// signed bytes.
enum { LC_U7, LC_U4, LC_S8 };

typedef void (*laya_dotfn)(const lw *w, int row, const void *x, long xstride, int nx, float *out);

// laya_tile8fn computes nw (1 or 2) weight rows from row on against activation rows r0..r0+7
// (r0 a multiple of 8) of nrows, reading their interleaved codes x8 and transposed scales xt (see
// laya_quantize), and writes 8 outputs per weight row.
typedef void (*laya_tile8fn)(const lw *w, int row, int nw, const int8_t *x8, const float *xt, int nrows, int r0, float *out);

// laya_vecfn computes one weight row against a single activation row with its transposed scales
// and its codes by block pairs (x8, see laya_quantize).
typedef void (*laya_vecfn)(const lw *w, int row, const lq8 *x, const float *xt, const int8_t *x8, float *out);

// laya_pairfn computes one weight row against one residual pair of activation rows (xstride
// blocks apart) with their transposed scales and codes by block pairs.
typedef void (*laya_pairfn)(const lw *w, int row, const lq8 *x, long xstride, const float *xt, const int8_t *x8, float *out);

typedef struct {
	// quantize: with pair, blocks 2i and 2i+1 of a row share the scale of their larger amax.
	void (*quantize)(const float *x, int rows, int cols, lq8 *out, int perm, int pair);
	// remainder quantizes x - d*q of nb blocks x against their quantized main blocks as residual
	// blocks of scale d/254 (scratch: 32*nb floats).
	void (*remainder)(const float *x, int nb, const lq8 *main, lq8 *out, int perm, float *scratch);
	laya_dotfn dot[LK_NKINDS];
	// fwide, where present, runs F32/F16/BF16 rows fwnw at a time against LAYA_NX activation
	// rows (out[v*LAYA_NX + r]); nw may be smaller for the last rows.
	void (*fwide)(const lw *w, int row, int nw, const float *x, long xstride, int nx, float *out);
	int fwnw;
	// tile8 holds 8-row kernels for the kinds that have them (NULL elsewhere): with 8 rows in one
	// vector the float scaling runs once per block instead of once per row.
	laya_tile8fn tile8[LK_NKINDS];
	// decode writes nw weight rows as unsigned codes with a scale and zero per block, which
	// wide (up to 4 weight rows against 16 or 32 activation rows) runs for every kind that has a
	// decoder; zk[kind] != 0 says its zeros are zk*scale. Where both are present they take every
	// 16 activation rows, and the 8-row tiles what is left.
	void (*decode[LK_NKINDS])(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero);
	float zk[LK_NKINDS];
	// cls[kind] says what the decoder's codes are (LC_*), for kernels whose products are summed
	// in 16 bits; g2: each even block shares its scale and zero with the next (Affine with
	// groups of 64 or more).
	int cls[LK_NKINDS];
	void (*wide)(const uint8_t *codes, const float *scale, const float *zero, float zk, int cls, int g2, int nw, int nb,
		const int8_t *x8, const float *xt, int nrows, int r0, int nt, float *out);
	// wide16, where present (AMX), takes the place of wide: 16 decoded weight rows (codes, scale
	// and zero as the decoders write them) against the nt 16-row tiles of x8 from row 0, zk as in
	// wide (g2 too; g2 == 2 when each block pair's activations also share their scales, see
	// laya_quantize); out[(16*t + v)*16 + i] receives weight row v against activation row 16t+i.
	void (*wide16)(const uint8_t *codes, const float *scale, const float *zero, float zk, int g2, int nb,
		const int8_t *x8, const float *xt, int nrows, int nt, float *out);
	// vec holds single-row kernels that scale eight blocks at once (decode), where present;
	// vecpair the same for one residual pair.
	laya_vecfn vec[LK_NKINDS];
	laya_pairfn vecpair[LK_NKINDS];
	void (*attention)(const float *q, const float *k, const float *v, float *out, float *scores,
		int heads, int group, int hd, int kvw, int pos, int lo, int hi, float scale);
	void (*silu_mul)(float *dst, const float *gate, const float *up, int n);
	void (*gelu_mul)(float *dst, const float *gate, const float *up, int n);
} laya_impl;

// laya_simd returns the SIMD implementation of a level when this build and CPU have it, else
// NULL: on amd64 1 is AVX2+FMA+F16C, 2 AVX-512 VNNI on top and 3 AMX-INT8 tiles on top of that
// (prefill only), on arm64 1 is NEON and 2 NEON with the dotprod extension.
const laya_impl *laya_simd(int level);

// laya_portable returns the portable implementation, whose kernels a SIMD level keeps for the
// slots it does not fill.
const laya_impl *laya_portable(void);

float laya_half(uint16_t h);
float laya_companion(const uint8_t *p, int sdt, long i);

#endif
