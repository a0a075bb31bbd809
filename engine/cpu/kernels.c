// Portable implementations and run-time dispatch. The portable kernels compute exactly the same
// integer block sums as the SIMD ones, so any SIMD variant can be checked against them, and both
// against the Go reference dequantization.
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"

// The SIMD quantizers must write the same bytes as these, so no a*b+c here may become a fused
// multiply-add: clang fuses within expressions by default (GCC does not under -std=c11).
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

float laya_half(uint16_t h) {
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | man << 13;
	} else if (exp != 0) {
		bits = sign | (exp + 112) << 23 | man << 13;
	} else if (man == 0) {
		bits = sign;
	} else {
		uint32_t e = 113;
		while (!(man & 0x400)) {
			man <<= 1;
			e--;
		}
		bits = sign | e << 23 | (man & 0x3ff) << 13;
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static inline float bf16(uint16_t b) {
	uint32_t bits = (uint32_t)b << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static inline uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

float laya_companion(const uint8_t *p, int sdt, long i) {
	switch (sdt) {
	case LS_F16:
		return laya_half(u16(p + 2 * i));
	case LS_BF16:
		return bf16(u16(p + 2 * i));
	default: {
		float f;
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	}
}

int laya_quant_perm(int kind) { return kind == LK_AFF4; }

static float amax_c(const float *v) {
	float amax = 0;
	for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(v[i]));
	return amax;
}

static void quantize_c(const float *x, int rows, int cols, lq8 *out, int perm, int pair) {
	int nb = cols / 32;
	for (int r = 0; r < rows; r++) {
		for (int b = 0; b < nb; b++) {
			const float *v = x + (long)r * cols + 32 * b;
			lq8 *o = out + (long)r * nb + b;
			float amax = amax_c(v);
			if (pair) amax = fmaxf(amax, amax_c(x + (long)r * cols + 32 * (b ^ 1)));
			float d = amax / 127, id = d > 0 ? 127 / amax : 0;
			o->d = d;
			int s0 = 0, s1 = 0;
			for (int i = 0; i < 32; i++) {
				int src = perm ? (i < 16 ? 2 * i : 2 * (i - 16) + 1) : i;
				int q = (int)lrintf(v[src] * id);
				o->q[i] = (int8_t)q;
				if (i < 16) s0 += q; else s1 += q;
			}
			o->s[0] = (int16_t)s0;
			o->s[1] = (int16_t)s1;
			o->ds = d * (float)(s0 + s1);
		}
	}
}

// Each portable dot kernel handles one weight row against nx activation rows.

static void dot_float_c(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	const uint8_t *p = w->w + row * w->rowbytes;
	for (int r = 0; r < nx; r++) {
		const float *x = (const float *)xv + r * xs;
		float s = 0;
		for (int i = 0; i < w->cols; i++) {
			float wv;
			if (w->kind == LK_F32) memcpy(&wv, p + 4 * i, 4);
			else if (w->kind == LK_F16) wv = laya_half(u16(p + 2 * i));
			else wv = bf16(u16(p + 2 * i));
			s += wv * x[i];
		}
		out[r] = s;
	}
}

// dot_legacy_c handles Q8_0, Q4_0 and Q5_0: per block, the integer sum of codes times
// activations, less the zero point times the activation sum, scaled by both block scales.

static void dot_legacy_c(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	const uint8_t *p = w->w + row * w->rowbytes;
	int nb = w->cols / 32;
	for (int r = 0; r < nx; r++) {
		const lq8 *x = (const lq8 *)xv + r * xs;
		float acc = 0;
		for (int b = 0; b < nb; b++) {
			int q[32], off = 0;
			const uint8_t *blk;
			switch (w->kind) {
			case LK_Q8_0:
				blk = p + 34 * b;
				for (int i = 0; i < 32; i++) q[i] = (int8_t)blk[2 + i];
				break;
			case LK_Q4_0:
				blk = p + 18 * b;
				for (int i = 0; i < 16; i++) {
					q[i] = blk[2 + i] & 15;
					q[i + 16] = blk[2 + i] >> 4;
				}
				off = 8;
				break;
			default: { // LK_Q5_0
				blk = p + 22 * b;
				uint32_t qh = (uint32_t)blk[2] | (uint32_t)blk[3] << 8 | (uint32_t)blk[4] << 16 | (uint32_t)blk[5] << 24;
				for (int i = 0; i < 16; i++) {
					q[i] = (blk[6 + i] & 15) | ((qh >> i) & 1) << 4;
					q[i + 16] = (blk[6 + i] >> 4) | ((qh >> (i + 16)) & 1) << 4;
				}
				off = 16;
			}
			}
			int sum = 0;
			for (int i = 0; i < 32; i++) sum += q[i] * x[b].q[i];
			sum -= off * (x[b].s[0] + x[b].s[1]);
			acc += laya_half(u16(blk)) * x[b].d * (float)sum;
		}
		out[r] = acc;
	}
}

static void scale_min_k4(const uint8_t *sc, int j, int *s, int *m) {
	if (j < 4) {
		*s = sc[j] & 63;
		*m = sc[j + 4] & 63;
	} else {
		*s = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
		*m = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
	}
}

static void dot_k_c(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	const uint8_t *p = w->w + row * w->rowbytes;
	int nsb = w->cols / 256;
	for (int r = 0; r < nx; r++) {
		const lq8 *x = (const lq8 *)xv + r * xs;
		float acc = 0;
		for (int sb = 0; sb < nsb; sb++) {
			const lq8 *xb = x + 8 * sb;
			if (w->kind == LK_Q6_K) {
				const uint8_t *blk = p + 210 * sb;
				float d = laya_half(u16(blk + 208));
				for (int j = 0; j < 8; j++) { // activation block j: half j/4, quarter k = j%4
					int h = j / 4, k = j % 4;
					const uint8_t *ql = blk + 64 * h + 32 * (k % 2), *qh = blk + 128 + 32 * h;
					const int8_t *sc = (const int8_t *)blk + 192 + 8 * h + 2 * k;
					int sum[2] = {0, 0};
					for (int l = 0; l < 32; l++) {
						int q = ((ql[l] >> (4 * (k / 2))) & 15) | ((qh[l] >> (2 * k)) & 3) << 4;
						sum[l / 16] += (q - 32) * xb[j].q[l];
					}
					acc += d * xb[j].d * (float)(sc[0] * sum[0] + sc[1] * sum[1]);
				}
				continue;
			}
			int five = w->kind == LK_Q5_K;
			const uint8_t *blk = p + (five ? 176 : 144) * sb;
			float d = laya_half(u16(blk)), dmin = laya_half(u16(blk + 2));
			const uint8_t *qs = blk + (five ? 48 : 16), *qh = blk + 16;
			for (int j = 0; j < 8; j++) {
				int s, m, sum = 0;
				scale_min_k4(blk + 4, j, &s, &m);
				for (int l = 0; l < 32; l++) {
					int q = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
					if (five) q |= ((qh[l] >> j) & 1) << 4;
					sum += q * xb[j].q[l];
				}
				acc += xb[j].d * (d * s * (float)sum - dmin * m * (float)(xb[j].s[0] + xb[j].s[1]));
			}
		}
		out[r] = acc;
	}
}

static void dot_affine_c(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	int bits = w->kind == LK_AFF4 ? 4 : 8, nb = w->cols / 32, ng = w->cols / w->group;
	const uint8_t *p = w->w + row * w->rowbytes;
	for (int r = 0; r < nx; r++) {
		const lq8 *x = (const lq8 *)xv + r * xs;
		float acc = 0;
		for (int b = 0; b < nb; b++) {
			long g = (long)row * ng + (32 * b) / w->group;
			float s = laya_companion(w->sc, w->sdt, g), bias = laya_companion(w->bi, w->sdt, g);
			int sum = 0;
			if (bits == 4) {
				// Permuted activations: block element i < 16 is code 2i, i >= 16 is code 2(i-16)+1.
				const uint8_t *c = p + 16 * b;
				for (int i = 0; i < 16; i++) sum += (c[i] & 15) * x[b].q[i] + (c[i] >> 4) * x[b].q[i + 16];
			} else {
				const uint8_t *c = p + 32 * b;
				for (int i = 0; i < 32; i++) sum += c[i] * x[b].q[i];
			}
			acc += x[b].d * (s * (float)sum + bias * (float)(x[b].s[0] + x[b].s[1]));
		}
		out[r] = acc;
	}
}

static void attention_c(const float *q, const float *k, const float *v, float *out, float *sc,
	int heads, int group, int hd, int kvw, int pos, int lo, int hi, float scale) {
	for (int it = lo; it < hi; it++) {
		int r = it / heads, h = it % heads, n = pos + r + 1, ko = (h / group) * hd;
		const float *qh = q + (long)it * hd;
		float m = -INFINITY;
		for (int t = 0; t < n; t++) {
			const float *kt = k + (long)t * kvw + ko;
			float s = 0;
			for (int i = 0; i < hd; i++) s += qh[i] * kt[i];
			sc[t] = s * scale;
			m = fmaxf(m, sc[t]);
		}
		float z = 0;
		for (int t = 0; t < n; t++) z += (sc[t] = expf(sc[t] - m));
		float *o = out + (long)it * hd, iz = 1 / z;
		for (int i = 0; i < hd; i++) o[i] = 0;
		for (int t = 0; t < n; t++) {
			const float *vt = v + (long)t * kvw + ko;
			float a = sc[t] * iz;
			for (int i = 0; i < hd; i++) o[i] += a * vt[i];
		}
	}
}

static void silu_mul_c(float *dst, const float *g, const float *u, int n) {
	for (int i = 0; i < n; i++) dst[i] = g[i] / (1 + expf(-g[i])) * u[i];
}

// gelu_mul_c uses GELU's tanh form as x*sigmoid(2y), y = sqrt(2/pi)*(x + 0.044715x^3): the same
// value as 0.5x(1 + tanh(y)), in the shape of the SiLU kernel.
static void gelu_mul_c(float *dst, const float *g, const float *u, int n) {
	for (int i = 0; i < n; i++) {
		float x = g[i];
		dst[i] = x / (1 + expf(LAYA_GELU_K * (x + 0.044715f * x * x * x))) * u[i];
	}
}

// quantize_remainder quantizes the remainders x - d*q of the nb blocks main (computed into
// scratch) with the fixed scale d/254 of each main block: the remainder of round-to-nearest is
// at most d/2, so its codes fit in [-127, 127] and the error is at most d/508 = amax/64516, the
// bound a remainder scaled by its own amax has too. The fixed ratio lets kernels sum
// 254*dot(w, q) + dot(w, r) exactly in integers and scale once.
static void quantize_remainder(const float *x, int nb, const lq8 *main, lq8 *out, int perm, float *scratch) {
	for (int i = 0; i < 32 * nb; i++) {
		const lq8 *q = main + i / 32;
		int e = i % 32, at = perm ? (e % 2) * 16 + e / 2 : e;
		scratch[i] = x[i] - q->d * (float)q->q[at];
	}
	for (int b = 0; b < nb; b++) {
		const float *v = scratch + 32 * b;
		float d = main[b].d / 254, id = d > 0 ? 1 / d : 0;
		lq8 *o = out + b;
		o->d = d;
		int s0 = 0, s1 = 0;
		for (int i = 0; i < 32; i++) {
			int src = perm ? (i < 16 ? 2 * i : 2 * (i - 16) + 1) : i;
			long q = lrintf(v[src] * id);
			// Float rounding can push a remainder of exactly d/2 a hair past 127 steps.
			q = q > 127 ? 127 : q < -127 ? -127 : q;
			o->q[i] = (int8_t)q;
			if (i < 16) s0 += (int)q; else s1 += (int)q;
		}
		o->s[0] = (int16_t)s0;
		o->s[1] = (int16_t)s1;
		o->ds = d * (float)(s0 + s1);
	}
}

// decode_c writes nw weight rows of the 4-, 5- and 6-bit kinds as the SIMD decoders do (see
// laya_impl.decode): 32 unsigned codes per block in the order of its activations, with a scale
// and zero per block, w = scale*code + zero (zero unwritten where laya_impl.zk gives it), and
// Q6_K's rows as two virtual rows each, one per 16-code half of every block (the other half at
// the zero point 32). The NEON tile kernel takes it; decoding is a small part of prefill.
static void decode_c(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero) {
	int nb = w->cols / 32;
	for (int v = 0; v < nw; v++) {
		const uint8_t *p = w->w + (long)(row + v) * w->rowbytes;
		for (int b = 0; b < nb; b++) {
			uint8_t *c = codes + ((long)v * nb + b) * 32;
			float *sc = scale + (long)v * nb + b, *z = zero + (long)v * nb + b;
			switch (w->kind) {
			case LK_Q4_0: {
				const uint8_t *blk = p + 18 * b;
				*sc = laya_half(u16(blk));
				for (int i = 0; i < 16; i++) {
					c[i] = blk[2 + i] & 15;
					c[i + 16] = blk[2 + i] >> 4;
				}
				break;
			}
			case LK_Q5_0: {
				const uint8_t *blk = p + 22 * b;
				uint32_t qh = (uint32_t)blk[2] | (uint32_t)blk[3] << 8 | (uint32_t)blk[4] << 16 | (uint32_t)blk[5] << 24;
				*sc = laya_half(u16(blk));
				for (int i = 0; i < 16; i++) {
					c[i] = (blk[6 + i] & 15) | ((qh >> i) & 1) << 4;
					c[i + 16] = (blk[6 + i] >> 4) | ((qh >> (i + 16)) & 1) << 4;
				}
				break;
			}
			case LK_Q4_K:
			case LK_Q5_K: {
				int five = w->kind == LK_Q5_K, j = b % 8, s, m;
				const uint8_t *blk = p + (five ? 176 : 144) * (b / 8), *qs = blk + (five ? 48 : 16), *qh = blk + 16;
				scale_min_k4(blk + 4, j, &s, &m);
				*sc = laya_half(u16(blk)) * (float)s;
				*z = -laya_half(u16(blk + 2)) * (float)m;
				for (int l = 0; l < 32; l++) {
					c[l] = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
					if (five) c[l] |= ((qh[l] >> j) & 1) << 4;
				}
				break;
			}
			case LK_Q6_K: {
				int j = b % 8, h = j / 4, k = j % 4;
				const uint8_t *blk = p + 210 * (b / 8), *ql = blk + 64 * h + 32 * (k % 2), *qh = blk + 128 + 32 * h;
				const int8_t *s6 = (const int8_t *)blk + 192 + 8 * h + 2 * k;
				float d = laya_half(u16(blk + 208));
				uint8_t *c0 = codes + ((long)(2 * v) * nb + b) * 32, *c1 = c0 + (long)nb * 32;
				scale[(long)(2 * v) * nb + b] = d * (float)s6[0];
				scale[(long)(2 * v + 1) * nb + b] = d * (float)s6[1];
				for (int l = 0; l < 32; l++) {
					uint8_t q = ((ql[l] >> (4 * (k / 2))) & 15) | ((qh[l] >> (2 * k)) & 3) << 4;
					c0[l] = l < 16 ? q : 32;
					c1[l] = l < 16 ? 32 : q;
				}
				break;
			}
			default: { // LK_AFF4: codes in nibble order, as its activations are permuted
				long g = (long)(row + v) * (w->cols / w->group) + (32 * b) / w->group;
				const uint8_t *q = p + 16 * b;
				*sc = laya_companion(w->sc, w->sdt, g);
				*z = laya_companion(w->bi, w->sdt, g);
				for (int i = 0; i < 16; i++) {
					c[i] = q[i] & 15;
					c[i + 16] = q[i] >> 4;
				}
			}
			}
		}
	}
}

static laya_impl impl_c = {
	.quantize = quantize_c,
	.remainder = quantize_remainder,
	.dot = {
		[LK_F32] = dot_float_c, [LK_F16] = dot_float_c, [LK_BF16] = dot_float_c,
		[LK_Q8_0] = dot_legacy_c, [LK_Q4_0] = dot_legacy_c, [LK_Q5_0] = dot_legacy_c,
		[LK_Q4_K] = dot_k_c, [LK_Q5_K] = dot_k_c, [LK_Q6_K] = dot_k_c,
		[LK_AFF4] = dot_affine_c, [LK_AFF8] = dot_affine_c,
	},
	// Only implementations with a tile kernel (wide) use the decoders.
	.decode = {
		[LK_Q4_0] = decode_c, [LK_Q5_0] = decode_c, [LK_Q4_K] = decode_c, [LK_Q5_K] = decode_c,
		[LK_Q6_K] = decode_c, [LK_AFF4] = decode_c,
	},
	.zk = {[LK_Q4_0] = -8, [LK_Q5_0] = -16, [LK_Q6_K] = -32},
	.attention = attention_c,
	.silu_mul = silu_mul_c,
	.gelu_mul = gelu_mul_c,
};

static const laya_impl *impl = &impl_c;

const laya_impl *laya_portable(void) { return &impl_c; }

int laya_init(int force) {
	const laya_impl *best = &impl_c;
	int level = 0;
	for (int l = 1; l <= 3; l++) {
		const laya_impl *cand = laya_simd(l);
		if (cand && (force < 0 || l <= force)) {
			best = cand;
			level = l;
		}
	}
	impl = best;
	return level;
}

void laya_quantize_rows(const float *x, int rows, int cols, int r0, int r1, lq8 *out, int perm, int pair, int resid,
	float *scratch, float *xt, int8_t *x8) {
	int nb = cols / 32, qrows = resid ? 2 * rows : rows, q0 = resid ? 2 * r0 : r0, q1 = resid ? 2 * r1 : r1;
	if (!resid) {
		impl->quantize(x + (long)r0 * cols, r1 - r0, cols, out + (long)r0 * nb, perm, pair);
	} else {
		for (int r = r0; r < r1; r++) {
			const float *v = x + (long)r * cols;
			lq8 *main = out + (long)(2 * r) * nb;
			impl->quantize(v, 1, cols, main, perm, pair);
			impl->remainder(v, nb, main, main + nb, perm, scratch);
		}
	}
	if (!xt) return;
	if (x8 && qrows < 8) {
		// Too few rows for tiles: the decode kernels read each row's codes by pairs of blocks.
		for (int r = q0; r < q1; r++) {
			for (int b = 0; b + 1 < nb; b += 2) {
				const lq8 *q = out + (long)r * nb + b;
				int8_t *t = x8 + (long)r * cols + 32 * b;
				memcpy(t, q[0].q, 16);
				memcpy(t + 16, q[1].q, 16);
				memcpy(t + 32, q[0].q + 16, 16);
				memcpy(t + 48, q[1].q + 16, 16);
			}
		}
	}
	for (int r = q0; r < q1; r++) {
		for (int b = 0; b < nb; b++) {
			const lq8 *q = out + (long)r * nb + b;
			xt[(long)b * qrows + r] = q->d;
			xt[(long)(nb + b) * qrows + r] = q->ds;
			if (x8 && r < qrows / 8 * 8) {
				int8_t *t = x8 + ((long)(r / 16) * nb + b) * 512 + 4 * (r % 16);
				for (int k = 0; k < 8; k++) memcpy(t + 64 * k, q->q + 4 * k, 4);
			}
		}
	}
}

void laya_quantize(const float *x, int rows, int cols, lq8 *out, int perm, int pair, int resid, float *scratch,
	float *xt, int8_t *x8) {
	int nb = cols / 32;
	laya_quantize_rows(x, rows, cols, 0, rows, out, perm, pair, resid, scratch, xt, x8);
	if (!xt) return;
	if (resid && rows == 1) {
		// A single pair is what decode runs: its kernels take the remainder's d and the pair's
		// ds sum per block, so xt holds those instead (nb floats each).
		for (int b = 0; b < nb; b++) {
			xt[b] = out[nb + b].d;
			xt[nb + b] = out[b].ds + out[nb + b].ds;
		}
	}
	if (rows == 1) {
		// Then the d-scaled sums of each block's two 16-element halves (of the pair's two
		// parts together), for kinds with a scale per 16 weights.
		for (int b = 0; b < nb; b++) {
			for (int h = 0; h < 2; h++) {
				float v = out[b].d * (float)out[b].s[h];
				if (resid) v += out[nb + b].d * (float)out[nb + b].s[h];
				xt[2 * nb + 2 * b + h] = v;
			}
		}
	}
}

// laya_store writes the outputs of activation rows r..r+n-1 for weight row o. With pairs, rows
// 2i and 2i+1 are the main and residual parts of input row i and their outputs add up.
static inline void laya_store(float *dst, long ldd, int o, int r, int n, const float *v, float b, int pairs) {
	for (int i = 0; i < n; i++) {
		int row = r + i;
		if (!pairs) {
			dst[(long)row * ldd + o] = v[i] + b;
		} else if (row % 2 == 0) {
			dst[(long)(row / 2) * ldd + o] = v[i] + b;
		} else {
			dst[(long)(row / 2) * ldd + o] += v[i];
		}
	}
}

// laya_store_tile is laya_store for the n outputs of nw weight rows from o on (out holds n
// values per weight row): each activation row's nw outputs are adjacent in dst, so writing them
// together touches one cache line where laya_store row by row would touch nw lines per row.
static inline void laya_store_tile(float *dst, long ldd, int o, int nw, int r, int n, const float *out, const float *bias, int pairs) {
	if (!pairs) {
		for (int i = 0; i < n; i++)
			for (int v = 0; v < nw; v++) dst[(long)(r + i) * ldd + o + v] = out[n * v + i] + (bias ? bias[o + v] : 0);
		return;
	}
	for (int i = 0; i < n; i += 2) // r and n are even
		for (int v = 0; v < nw; v++)
			dst[(long)((r + i) / 2) * ldd + o + v] = out[n * v + i] + out[n * v + i + 1] + (bias ? bias[o + v] : 0);
}

// matvec runs the decode kernels: one activation row (or one residual pair) against output rows
// [r0, r1), when this level has a kernel for the kind; it returns 0 when it has none.
static int matvec(const lw *w, int r0, int r1, const lx *x, const lout *out) {
	if (!x->x8) return 0;
	if (x->rows == 1 && !x->pairs && impl->vec[w->kind]) {
		for (int o = r0; o < r1; o++) {
			impl->vec[w->kind](w, o, (const lq8 *)x->x, x->xt, x->x8, out->dst + o);
			if (out->bias) out->dst[o] += out->bias[o];
		}
		return 1;
	}
	if (x->rows == 2 && x->pairs && impl->vecpair[w->kind]) {
		for (int o = r0; o < r1; o++) {
			impl->vecpair[w->kind](w, o, (const lq8 *)x->x, x->stride, x->xt, x->x8, out->dst + o);
			if (out->bias) out->dst[o] += out->bias[o];
		}
		return 1;
	}
	return 0;
}

// ldec is one thread's buffer of decoded weight rows for the wide kernels, in the layout the
// decoders write: g rows of nb blocks' codes, then their scales and zero points, then (with
// wide16) the 16x16 output tiles of every 16 activation rows.
typedef struct {
	uint8_t *codes;
	float *scale, *zero, *out16;
} ldec;

// dec_limit, when positive, refuses decode buffers larger than it as if calloc failed, so tests
// can reach that path (laya_set_dec_limit).
static long dec_limit;

void laya_set_dec_limit(long n) { dec_limit = n; }

// decbuf points b into this thread's decode buffer, grown to hold g rows of nb blocks and nt
// output tiles; it returns -1 when the memory cannot be had.
static int decbuf(int g, int nb, int nt, ldec *b) {
	static __thread uint8_t *dec;
	static __thread long deccap;
	long need = (long)g * nb * (32 + 2 * sizeof(float)) + (impl->wide16 ? 256L * nt * sizeof(float) : 0);
	if (dec_limit > 0 && need > dec_limit) return -1;
	if (need > deccap) {
		free(dec);
		// zeroed, so that the rows past a short group that wide16 computes anyway are finite
		dec = calloc(1, need);
		deccap = dec ? need : 0;
		if (!dec) return -1;
	}
	b->codes = dec;
	b->scale = (float *)(dec + (long)g * nb * 32);
	b->zero = b->scale + (long)g * nb;
	b->out16 = b->zero + (long)g * nb;
	return 0;
}

// rowtail computes activation rows [r, nx) for weight row o, by 8-row tiles when this level has
// them and then LAYA_NX rows at a time.
static void rowtail(const lw *w, int o, int r, const lx *x, const lout *out, laya_tile8fn t8) {
	long step = w->kind == LK_F32 || w->kind == LK_F16 || w->kind == LK_BF16 ? (long)sizeof(float) : (long)sizeof(lq8);
	float b = out->bias ? out->bias[o] : 0, tmp[32];
	if (t8 && r + 8 <= x->rows) {
		t8(w, o, 1, x->x8, x->xt, x->rows, r, tmp);
		laya_store(out->dst, out->ldd, o, r, 8, tmp, b, x->pairs);
		r += 8;
	}
	for (; r < x->rows; r += LAYA_NX) {
		int n = x->rows - r < LAYA_NX ? x->rows - r : LAYA_NX;
		impl->dot[w->kind](w, o, (const char *)x->x + r * x->stride * step, x->stride, n, tmp);
		laya_store(out->dst, out->ldd, o, r, n, tmp, b, x->pairs);
	}
}

// matmat_wide decodes each group of 4 weight rows (16 with wide16) once into the thread's
// decode buffer, then runs it against every 16 or 32 activation rows.
static int matmat_wide(const lw *w, int r0, int r1, const lx *x, const lout *out) {
	int kind = w->kind, nb = w->cols / 32, g = impl->wide16 ? 16 : 4, nx = x->rows, nt = nx / 16;
	int g2 = (kind == LK_AFF4 || kind == LK_AFF8) && w->group >= 64 && nb % 2 == 0;
	if (g2 && x->pairscaled) g2 = 2;
	ldec d;
	if (decbuf(g, nb, nt, &d) != 0) return -1;
	laya_tile8fn t8 = impl->tile8[kind];
	float wt[4 * 32];
	// Q6_K's scales cover 16 codes: its decoder writes each row as two virtual rows, one
	// per half of every block (the other half's codes at the zero point), whose outputs add.
	int vf = kind == LK_Q6_K ? 2 : 1;
	for (int o = r0; o < r1;) {
		int nw = r1 - o < g / vf ? r1 - o : g / vf, r = 0;
		impl->decode[kind](w, o, nw, d.codes, d.scale, d.zero);
		if (impl->wide16) {
			impl->wide16(d.codes, d.scale, d.zero, impl->zk[kind], g2, nb, x->x8, x->xt, nx, nt, d.out16);
			for (int t = 0; t < nt; t++) {
				float *ot = d.out16 + 256L * t;
				if (vf == 2)
					for (int v = 0; v < nw; v++)
						for (int i = 0; i < 16; i++) ot[16 * v + i] = ot[16 * 2 * v + i] + ot[16 * (2 * v + 1) + i];
				laya_store_tile(out->dst, out->ldd, o, nw, 16 * t, 16, ot, out->bias, x->pairs);
			}
			r = 16 * nt;
		} else while (r + 16 <= nx) {
			int two = r + 32 <= nx ? 2 : 1, n = 16 * two;
			impl->wide(d.codes, d.scale, d.zero, impl->zk[kind], impl->cls[kind], g2, nw * vf, nb, x->x8, x->xt, nx, r, two, wt);
			if (vf == 2) // fold each virtual pair into its row's slot
				for (int v = 0; v < nw; v++)
					for (int i = 0; i < n; i++) wt[n * v + i] = wt[n * 2 * v + i] + wt[n * (2 * v + 1) + i];
			laya_store_tile(out->dst, out->ldd, o, nw, r, n, wt, out->bias, x->pairs);
			r += n;
		}
		for (int v = 0; v < nw; v++) rowtail(w, o + v, r, x, out, t8); // fewer than 16 rows left
		o += nw;
	}
	return 0;
}

// matmat_float runs float weights LAYA_NX activation rows at a time against fwnw weight rows.
static void matmat_float(const lw *w, int r0, int r1, const lx *x, const lout *out) {
	float ft[4 * LAYA_NX];
	for (int o = r0; o < r1;) {
		int nw = r1 - o < impl->fwnw ? r1 - o : impl->fwnw;
		for (int r = 0; r < x->rows; r += LAYA_NX) {
			int n = x->rows - r < LAYA_NX ? x->rows - r : LAYA_NX;
			impl->fwide(w, o, nw, (const float *)x->x + (long)r * x->stride, x->stride, n, ft);
			for (int v = 0; v < nw; v++) laya_store(out->dst, out->ldd, o + v, r, n, ft + LAYA_NX * v, out->bias ? out->bias[o + v] : 0, 0);
		}
		o += nw;
	}
}

// matmat_tiles runs the 8-row tiles, two weight rows at a time (they share their activation
// loads), and the dot kernels for the rows the tiles leave.
static void matmat_tiles(const lw *w, int r0, int r1, const lx *x, const lout *out) {
	laya_tile8fn t8 = x->x8 ? impl->tile8[w->kind] : 0;
	float tmp[32];
	for (int o = r0; o < r1;) {
		int nw = t8 && o + 1 < r1 ? 2 : 1, r = 0;
		if (t8) {
			for (; r + 8 <= x->rows; r += 8) {
				t8(w, o, nw, x->x8, x->xt, x->rows, r, tmp);
				for (int v = 0; v < nw; v++) laya_store(out->dst, out->ldd, o + v, r, 8, tmp + 8 * v, out->bias ? out->bias[o + v] : 0, x->pairs);
			}
		}
		for (int v = 0; v < nw; v++) rowtail(w, o + v, r, x, out, 0);
		o += nw;
	}
}

int laya_matmul(lw w, int r0, int r1, lx x, lout out) {
	int isfloat = w.kind == LK_F32 || w.kind == LK_F16 || w.kind == LK_BF16;
	if (matvec(&w, r0, r1, &x, &out)) return 0;
	if (x.x8 && x.rows >= 16 && impl->wide && impl->decode[w.kind]) return matmat_wide(&w, r0, r1, &x, &out);
	if (isfloat && impl->fwide && x.rows > 1) {
		matmat_float(&w, r0, r1, &x, &out);
		return 0;
	}
	matmat_tiles(&w, r0, r1, &x, &out);
	return 0;
}

void laya_attention(const float *q, const float *k, const float *v, float *out, float *scores,
	int heads, int group, int hd, int kvw, int pos, int lo, int hi, float scale) {
	impl->attention(q, k, v, out, scores, heads, group, hd, kvw, pos, lo, hi, scale);
}

uint64_t laya_stream(const uint8_t *p, long n) {
	uint64_t a[8] = {0};
	long i = 0;
	for (; i + 64 <= n; i += 64) { // a cache line per step; a prefetch past the end cannot fault
		__builtin_prefetch(p + i + LAYA_PF);
		for (int k = 0; k < 8; k++) {
			uint64_t v;
			memcpy(&v, p + i + 8 * k, 8);
			a[k] += v;
		}
	}
	for (; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, p + i, 8);
		a[0] += v;
	}
	for (; i < n; i++) a[1] += p[i];
	return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

void laya_silu_mul(float *dst, const float *gate, const float *up, int n) {
	impl->silu_mul(dst, gate, up, n);
}

void laya_gelu_mul(float *dst, const float *gate, const float *up, int n) {
	impl->gelu_mul(dst, gate, up, n);
}
