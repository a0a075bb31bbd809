// x86-64 SIMD variants. Each level is compiled under its own target pragma, so the package builds
// with baseline flags and the binary still runs (portable kernels) on CPUs without AVX2.
// syscall(2), which -std=c11 hides, asks Linux for the AMX tile state.
#define _DEFAULT_SOURCE
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels_impl.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define F(n) avx2_##n
#define VNNI 0
#include "kernels_x86.h"
#undef F
#undef VNNI
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")
#define F(n) vnni_##n
#define VNNI 1
#include "kernels_x86.h"
#undef F
#undef VNNI
#pragma GCC pop_options


#ifdef __linux__
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni,amx-tile,amx-int8")

// ldtilecfg reads all 64 bytes of a tile configuration, so configurations live in memory, not
// on the stack.
typedef struct {
	uint8_t palette, start, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
} __attribute__((packed, aligned(64))) amx_config;

// Tiles 0 and 1 take the int32 sums of alternate blocks (16 weight rows by 16 activation rows),
// 2 and 3 their weight codes (16 rows of 32 unsigned codes), 4 and 5 their activation codes as
// x8 holds them (8 groups of 4 codes of 16 rows: the layout tdpbusd wants for its second operand).
static const amx_config amx_cfg = {
	.palette = 1,
	.colsb = {64, 64, 32, 32, 64, 64},
	.rows = {16, 16, 16, 16, 8, 8},
};

// amx_cfg64 configures the tiles for amx_pairs: codes and activations 64 bytes (two blocks) deep.
static const amx_config amx_cfg64 = {
	.palette = 1,
	.colsb = {64, 64, 64, 64, 64, 64},
	.rows = {16, 16, 16, 16, 16, 16},
};

// amx_scale adds one block's integer sums (c: 16 weight rows of 16 activation rows) into acc
// with the same float steps as the VNNI wide kernel: t = d_x*sum (+ zk*ds_x), acc += t*scale
// (+ ds_x*zero for kinds with their own zeros).
static inline __attribute__((always_inline)) void amx_scale(__m512 *acc, const int32_t *c, const float *sc,
	const float *zr, long nb, const float *xd, const float *xds, float zk, int own) {
	__m512 d = _mm512_loadu_ps(xd), ds = _mm512_loadu_ps(xds);
	__m512 z = own ? _mm512_setzero_ps() : _mm512_mul_ps(ds, _mm512_set1_ps(zk));
#pragma GCC unroll 16
	for (int v = 0; v < 16; v++) {
		__m512 t = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * v)), z);
		acc[v] = _mm512_fmadd_ps(t, _mm512_set1_ps(sc[v * nb]), acc[v]);
		if (own) acc[v] = _mm512_fmadd_ps(ds, _mm512_set1_ps(zr[v * nb]), acc[v]);
	}
}

// amx_scale2 is amx_scale for two blocks that share their weight scale and zero (g2): one scale
// and one zero product per row for the pair, the two blocks' ds added once.
static inline __attribute__((always_inline)) void amx_scale2(__m512 *acc, const int32_t *c, const float *sc,
	const float *zr, long nb, const float *xd, const float *xds, int nrows) {
	__m512 d0 = _mm512_loadu_ps(xd), d1 = _mm512_loadu_ps(xd + nrows);
	__m512 ds = _mm512_add_ps(_mm512_loadu_ps(xds), _mm512_loadu_ps(xds + nrows));
#pragma GCC unroll 16
	for (int v = 0; v < 16; v++) {
		__m512 t = _mm512_mul_ps(d0, _mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * v)));
		t = _mm512_fmadd_ps(d1, _mm512_cvtepi32_ps(_mm512_load_si512(c + 256 + 16 * v)), t);
		acc[v] = _mm512_fmadd_ps(t, _mm512_set1_ps(sc[v * nb]), acc[v]);
		acc[v] = _mm512_fmadd_ps(ds, _mm512_set1_ps(zr[v * nb]), acc[v]);
	}
}

// amx_scalep is amx_scale2 for a pair whose activation blocks share their scale too: the pair's
// sums come out of one product, so one conversion and one multiply per row scale both blocks.
static inline __attribute__((always_inline)) void amx_scalep(__m512 *acc, const int32_t *c, const float *sc,
	const float *zr, long nb, const float *xd, const float *xds, int nrows) {
	__m512 d = _mm512_loadu_ps(xd), ds = _mm512_add_ps(_mm512_loadu_ps(xds), _mm512_loadu_ps(xds + nrows));
#pragma GCC unroll 16
	for (int v = 0; v < 16; v++) {
		__m512 t = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * v)));
		acc[v] = _mm512_fmadd_ps(t, _mm512_set1_ps(sc[v * nb]), acc[v]);
		acc[v] = _mm512_fmadd_ps(ds, _mm512_set1_ps(zr[v * nb]), acc[v]);
	}
}

// amx_pairs is amx_tile for g2 == 2 (the tiles configured by amx_cfg64): a pair of blocks that
// shares its weight scale and zero and its activation scales is one block of 64 codes, one
// tdpbusd, one store and one scaling, pipelined as amx_tile pipelines blocks.
static inline __attribute__((always_inline)) void amx_pairs(const uint8_t *codes, const float *scale, const float *zero,
	int nb, const int8_t *x8, const float *xt, int nrows, int t, float *out) {
	const float *xd = xt + 16 * t, *xds = xt + (long)nb * nrows + 16 * t;
	const int8_t *xb = x8 + (long)t * nb * 512;
	const long ws = 32L * nb;
	const int np = nb / 2;
	int32_t ring[4 * 256] __attribute__((aligned(64)));
	__m512 acc[16];
	for (int v = 0; v < 16; v++) acc[v] = _mm512_setzero_ps();
#define AMX_PAIR(p, ct, at, xt_, pt)                                                                             \
	do {                                                                                                     \
		if ((p) < np) {                                                                                  \
			_tile_loadd(at, codes + 64L * (p), ws);                                                  \
			_tile_loadd(xt_, xb + 1024L * (p), 64);                                                  \
			_tile_zero(ct);                                                                          \
			_tile_dpbusd(ct, at, xt_);                                                               \
		}                                                                                                \
		if ((p) >= 1 && (p) - 1 < np) _tile_stored(pt, ring + 256 * (((p) - 1) & 3), 64);              \
		if ((p) >= 2 && (p) - 2 < np)                                                                    \
			amx_scalep(acc, ring + 256 * (((p) - 2) & 3), scale + 2 * ((p) - 2), zero + 2 * ((p) - 2), nb, \
				xd + 2L * ((p) - 2) * nrows, xds + 2L * ((p) - 2) * nrows, nrows);                     \
	} while (0)
	for (int p = 0; p < np + 2; p += 2) {
		AMX_PAIR(p, 0, 2, 4, 1);
		AMX_PAIR(p + 1, 1, 3, 5, 0);
	}
#undef AMX_PAIR
	for (int v = 0; v < 16; v++) _mm512_storeu_ps(out + 16 * v, acc[v]);
}

// amx_tile runs 16 weight rows against activation tile t, a block per tdpbusd: the weight scale
// changes from block to block, so every block's sums leave the tile for the float scaling. The
// two sum tiles alternate, and a ring of 4 holds the stored sums, which are read back two blocks
// later: a load right behind a tile store waits for it to retire. With g2 each pair is scaled
// once its second block is read back. The measurements behind both, and the variants dropped,
// are in docs/performance.md.
static inline __attribute__((always_inline)) void amx_tile(const uint8_t *codes, const float *scale, const float *zero,
	float zk, int own, int g2, int nb, const int8_t *x8, const float *xt, int nrows, int t, float *out) {
	const float *xd = xt + 16 * t, *xds = xt + (long)nb * nrows + 16 * t;
	const int8_t *xb = x8 + (long)t * nb * 512;
	const long ws = 32L * nb;
	int32_t ring[4 * 256] __attribute__((aligned(64)));
	__m512 acc[16];
	for (int v = 0; v < 16; v++) acc[v] = _mm512_setzero_ps();
#define AMX_STEP(b, ct, at, xt_, pt)                                                                             \
	do {                                                                                                     \
		if ((b) < nb) {                                                                                  \
			_tile_loadd(at, codes + 32L * (b), ws);                                                  \
			_tile_loadd(xt_, xb + 512L * (b), 64);                                                   \
			_tile_zero(ct);                                                                          \
			_tile_dpbusd(ct, at, xt_);                                                               \
		}                                                                                                \
		if ((b) >= 1 && (b) - 1 < nb) _tile_stored(pt, ring + 256 * (((b) - 1) & 3), 64);              \
		if ((b) >= 2 && (b) - 2 < nb && !g2)                                                             \
			amx_scale(acc, ring + 256 * (((b) - 2) & 3), scale + (b) - 2, zero + (b) - 2, nb,        \
				xd + (long)((b) - 2) * nrows, xds + (long)((b) - 2) * nrows, zk, own);           \
		if ((b) >= 3 && (b) - 2 < nb && g2 && ((b) & 1))                                                 \
			amx_scale2(acc, ring + 256 * (((b) - 3) & 3), scale + (b) - 3, zero + (b) - 3, nb,       \
				xd + (long)((b) - 3) * nrows, xds + (long)((b) - 3) * nrows, nrows);             \
	} while (0)
	for (int b = 0; b < nb + 2; b += 2) {
		AMX_STEP(b, 0, 2, 4, 1);
		AMX_STEP(b + 1, 1, 3, 5, 0);
	}
#undef AMX_STEP
	for (int v = 0; v < 16; v++) _mm512_storeu_ps(out + 16 * v, acc[v]);
}

static void amx_wide16(const uint8_t *codes, const float *scale, const float *zero, float zk, int g2, int nb,
	const int8_t *x8, const float *xt, int nrows, int nt, float *out) {
	if (g2 == 2) {
		_tile_loadconfig(&amx_cfg64);
		for (int t = 0; t < nt; t++) amx_pairs(codes, scale, zero, nb, x8, xt, nrows, t, out + 256L * t);
		_tile_release();
		return;
	}
	_tile_loadconfig(&amx_cfg);
	for (int t = 0; t < nt; t++) {
		if (zk != 0) amx_tile(codes, scale, zero, zk, 0, 0, nb, x8, xt, nrows, t, out + 256L * t);
		else if (g2) amx_tile(codes, scale, zero, 0, 1, 1, nb, x8, xt, nrows, t, out + 256L * t);
		else amx_tile(codes, scale, zero, 0, 1, 0, nb, x8, xt, nrows, t, out + 256L * t);
	}
	// Released tiles go back to their init state, which context switches do not save.
	_tile_release();
}

#pragma GCC pop_options

static laya_impl amx_impl;

// amx_usable reports AMX-TILE and AMX-INT8 in CPUID and, since Linux hands the 8 KiB of tile
// state only to processes that ask for it, the kernel's permission (ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA). The permission is per process and Go's 32 KiB signal stacks hold the
// larger signal frame it brings.
static int amx_usable(void) {
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> 25 & 1)) return 0;
	return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}
#endif

const laya_impl *laya_simd(int level) {
	__builtin_cpu_init();
	int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
	int vnni = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
		   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
	if (level == 1 && avx2) return &avx2_impl;
	if (level == 2 && vnni) return &vnni_impl;
#ifdef __linux__
	// laya_init runs from the Go package's initialization, before any kernel, so the one-time
	// fill never races with a reader.
	static int amx = -1;
	if (level == 3 && vnni) {
		if (amx < 0) {
			amx = amx_usable();
			amx_impl = vnni_impl;
			amx_impl.wide16 = amx_wide16;
		}
		if (amx) return &amx_impl;
	}
#endif
	return 0;
}
