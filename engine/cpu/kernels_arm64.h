// NEON kernels, included by kernels_arm64.c once per level with F() naming the functions and
// DOTPROD set when signed 8-bit dot products can use sdot (vdotq_s32). No include guard on
// purpose. Integer block sums are exact and equal the portable ones; only the float
// accumulation order differs from kernels.c.

#define INLINE static inline __attribute__((always_inline))

// dot32 adds the 32 products w[i]*x[i] of one block (w as two 16-code halves, each code in
// [-128, 127], x in [-127, 127]) into the four lanes of acc.
INLINE int32x4_t F(dot32)(int32x4_t acc, int8x16_t w0, int8x16_t w1, const int8_t *x) {
	int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
#if DOTPROD
	return vdotq_s32(vdotq_s32(acc, w0, x0), w1, x1);
#else
	// Each product is at most 128*127 in magnitude, so it fits int16 and the pairwise
	// accumulation into int32 is exact.
	acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w0), vget_low_s8(x0)));
	acc = vpadalq_s16(acc, vmull_high_s8(w0, x0));
	acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
	return vpadalq_s16(acc, vmull_high_s8(w1, x1));
#endif
}

static inline float F(half)(const uint8_t *p) {
	__fp16 h;
	memcpy(&h, p, 2);
	return (float)h;
}

// comp reads element i of an Affine scales or biases tensor.
INLINE float F(comp)(const uint8_t *p, int sdt, long i) {
	if (sdt == LS_F16) return F(half)(p + 2 * i);
	if (sdt == LS_BF16) {
		uint16_t h;
		memcpy(&h, p + 2 * i, 2);
		uint32_t bits = (uint32_t)h << 16;
		float f;
		memcpy(&f, &bits, 4);
		return f;
	}
	float f;
	memcpy(&f, p + 4 * i, 4);
	return f;
}

// nib splits the 16 code bytes of a Q4_0 or 4-bit Affine block into its low nibbles (block
// elements 0-15 of the activations: Q4_0's first half, Affine's even codes in permuted order)
// and high nibbles (elements 16-31). Q4_0 (aff = 0) codes come out less their zero point 8, as
// signed values in [-8, 7]: its offset then stays inside the exact integer sum, as in the
// portable kernel, instead of a float correction that cancels most of the block's sum.
INLINE void F(nib)(const uint8_t *p, int aff, int8x16_t *lo, int8x16_t *hi) {
	uint8x16_t v = vld1q_u8(p);
	*lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15)));
	*hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
	if (!aff) {
		*lo = vsubq_s8(*lo, vdupq_n_s8(8));
		*hi = vsubq_s8(*hi, vdupq_n_s8(8));
	}
}

// groups sets the Affine group shift (groups are 32 << sh elements) and row's first group index.
INLINE void F(groups)(const lw *w, int row, int aff, int *sh, long *g0) {
	*sh = 0;
	*g0 = 0;
	if (!aff) return;
	while ((32 << *sh) < w->group) (*sh)++;
	*g0 = (long)row * (w->cols / w->group);
}

// block reads block b of a Q4_0 (aff = 0), 4-bit Affine (aff = 1) or 8-bit Affine (aff = 2) row
// p: its codes as two signed halves, its weight scale and, for Affine, its group's bias
// (w = s*q + z). 8-bit codes come out less 128, and the 128*s they leave out joins the bias.
INLINE void F(block)(const lw *w, const uint8_t *p, int b, int aff, int sdt, int sh, long g0, float *s, float *z,
	int8x16_t *lo, int8x16_t *hi) {
	if (aff) {
		long g = g0 + (b >> sh);
		*s = F(comp)(w->sc, sdt, g);
		*z = F(comp)(w->bi, sdt, g);
	} else {
		*s = F(half)(p + 18 * b);
		*z = 0;
	}
	if (aff == 2) {
		const uint8x16_t flip = vdupq_n_u8(0x80);
		*lo = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p + 32 * b), flip));
		*hi = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p + 32 * b + 16), flip));
		*z += 128 * *s;
		return;
	}
	F(nib)(aff ? p + 16 * b : p + 18 * b + 2, aff, lo, hi);
}

// nib_n runs one Q4_0 (aff = 0) or Affine (aff = 1: 4-bit, 2: 8-bit) weight row against nx (1..LAYA_NX)
// activation rows xs blocks apart: each block's codes are decoded once for all rows. The Affine
// bias multiplies each activation block's ds = d*sum(q).
INLINE void F(nib_n)(const lw *w, int row, const void *xv, long xs, int nx, float *out, int aff, int sdt) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *x = (const lq8 *)xv;
	int nb = w->cols / 32, sh;
	long g0;
	F(groups)(w, row, aff, &sh, &g0);
	float32x4_t acc[LAYA_NX];
	float corr[LAYA_NX];
	for (int r = 0; r < nx; r++) {
		acc[r] = vdupq_n_f32(0);
		corr[r] = 0;
	}
	for (int b = 0; b < nb; b++) {
		// Rows are contiguous, so reading a fixed distance ahead keeps the stream from memory
		// ahead of the decode.
		__builtin_prefetch((const char *)p + (aff == 2 ? 32 : aff ? 16 : 18) * b + LAYA_PF);
		float s, z;
		int8x16_t lo, hi;
		F(block)(w, p, b, aff, sdt, sh, g0, &s, &z, &lo, &hi);
		for (int r = 0; r < nx; r++) {
			const lq8 *xb = x + r * xs + b;
			int32x4_t t = F(dot32)(vdupq_n_s32(0), lo, hi, xb->q);
			acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(t), s * xb->d);
			if (aff) corr[r] += z * xb->ds;
		}
	}
	for (int r = 0; r < nx; r++) out[r] = vaddvq_f32(acc[r]) + corr[r];
}

// q8_n runs one Q8_0 weight row against nx activation rows.
INLINE void F(q8_n)(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *x = (const lq8 *)xv;
	int nb = w->cols / 32;
	float32x4_t acc[LAYA_NX];
	for (int r = 0; r < nx; r++) acc[r] = vdupq_n_f32(0);
	for (int b = 0; b < nb; b++) {
		const uint8_t *blk = p + 34 * b;
		__builtin_prefetch((const char *)blk + LAYA_PF);
		float d = F(half)(blk);
		int8x16_t w0 = vld1q_s8((const int8_t *)blk + 2), w1 = vld1q_s8((const int8_t *)blk + 18);
		for (int r = 0; r < nx; r++) {
			const lq8 *xb = x + r * xs + b;
			int32x4_t t = F(dot32)(vdupq_n_s32(0), w0, w1, xb->q);
			acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(t), d * xb->d);
		}
	}
	for (int r = 0; r < nx; r++) out[r] = vaddvq_f32(acc[r]);
}

// DISPATCH calls an always-inlined kernel with a constant row count so its per-row accumulators
// stay in registers.
#define DISPATCH(name, impl)                                                                \
	static void F(name)(const lw *w, int row, const void *x, long xs, int nx, float *out) { \
		switch (nx) {                                                                       \
		case 1: F(impl)(w, row, x, xs, 1, out); break;                                      \
		case 2: F(impl)(w, row, x, xs, 2, out); break;                                      \
		case 3: F(impl)(w, row, x, xs, 3, out); break;                                      \
		default: F(impl)(w, row, x, xs, 4, out); break;                                     \
		}                                                                                   \
	}

DISPATCH(q8_0, q8_n)

INLINE void F(q4_0_n)(const lw *w, int row, const void *x, long xs, int nx, float *out) {
	F(nib_n)(w, row, x, xs, nx, out, 0, 0);
}
DISPATCH(q4_0, q4_0_n)

// aff_n_s fixes the code width and the scale dtype at compile time: the conversion sits in the
// block loop.
INLINE void F(aff_n_s)(const lw *w, int row, const void *x, long xs, int nx, float *out, int aff) {
	switch (w->sdt) {
	case LS_F16: F(nib_n)(w, row, x, xs, nx, out, aff, LS_F16); break;
	case LS_BF16: F(nib_n)(w, row, x, xs, nx, out, aff, LS_BF16); break;
	default: F(nib_n)(w, row, x, xs, nx, out, aff, LS_F32); break;
	}
}

INLINE void F(aff_s)(const lw *w, int row, const void *x, long xs, int nx, float *out) {
	if (w->kind == LK_AFF8) F(aff_n_s)(w, row, x, xs, nx, out, 2);
	else F(aff_n_s)(w, row, x, xs, nx, out, 1);
}
DISPATCH(aff, aff_s)

// q5_n runs one Q5_0 weight row against nx activation rows. Each block's fifth bits (qh, bit i
// for element i) are spread to bytes by testing each byte against its bit; codes less 16 are
// signed bytes, so the zero point stays inside the exact integer sum.
INLINE void F(q5_n)(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *x = (const lq8 *)xv;
	int nb = w->cols / 32;
	static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
	const uint8x16_t bits = vld1q_u8(bit), m4 = vdupq_n_u8(15), b16 = vdupq_n_u8(16);
	float32x4_t acc[LAYA_NX];
	for (int r = 0; r < nx; r++) acc[r] = vdupq_n_f32(0);
	for (int b = 0; b < nb; b++) {
		const uint8_t *blk = p + 22 * b;
		__builtin_prefetch((const char *)blk + LAYA_PF);
		float d = F(half)(blk);
		uint32_t qh;
		memcpy(&qh, blk + 2, 4);
		uint8x16_t hl = vcombine_u8(vdup_n_u8((uint8_t)qh), vdup_n_u8((uint8_t)(qh >> 8)));
		uint8x16_t hh = vcombine_u8(vdup_n_u8((uint8_t)(qh >> 16)), vdup_n_u8((uint8_t)(qh >> 24)));
		uint8x16_t v = vld1q_u8(blk + 6);
		uint8x16_t lo = vorrq_u8(vandq_u8(v, m4), vandq_u8(vtstq_u8(hl, bits), b16));
		uint8x16_t hi = vorrq_u8(vshrq_n_u8(v, 4), vandq_u8(vtstq_u8(hh, bits), b16));
		int8x16_t w0 = vsubq_s8(vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(b16));
		int8x16_t w1 = vsubq_s8(vreinterpretq_s8_u8(hi), vreinterpretq_s8_u8(b16));
		for (int r = 0; r < nx; r++) {
			const lq8 *xb = x + r * xs + b;
			int32x4_t t = F(dot32)(vdupq_n_s32(0), w0, w1, xb->q);
			acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(t), d * xb->d);
		}
	}
	for (int r = 0; r < nx; r++) out[r] = vaddvq_f32(acc[r]);
}
DISPATCH(q5_0, q5_n)

// pair_n runs one Q4_0 or 4-bit Affine row against one residual pair (main row x, remainder row
// x + xs). The remainder's scale is exactly the main one's / 254 (see laya_quantize), so per
// block the exact integer 254*dot(q, m) + dot(q, r) takes the remainder's scale alone: a pair
// costs a second integer dot product per block but no more float work than one row. A block's
// total is at most 32*15*127*255 < 2^24 in magnitude (Q4_0's codes less 8 are smaller still),
// so it converts to float exactly.
INLINE void F(pair_n)(const lw *w, int row, const lq8 *x, long xs, float *out, int aff, int sdt) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *xr = x + xs;
	int nb = w->cols / 32, sh;
	long g0;
	F(groups)(w, row, aff, &sh, &g0);
	float32x4_t acc = vdupq_n_f32(0);
	float corr = 0;
	for (int b = 0; b < nb; b++) {
		__builtin_prefetch((const char *)p + (aff ? 16 : 18) * b + LAYA_PF);
		float s, z;
		int8x16_t lo, hi;
		F(block)(w, p, b, aff, sdt, sh, g0, &s, &z, &lo, &hi);
		int32x4_t m = F(dot32)(vdupq_n_s32(0), lo, hi, x[b].q);
		int32x4_t t = vmlaq_n_s32(F(dot32)(vdupq_n_s32(0), lo, hi, xr[b].q), m, 254);
		acc = vfmaq_n_f32(acc, vcvtq_f32_s32(t), s * xr[b].d);
		if (aff) corr += z * (x[b].ds + xr[b].ds);
	}
	*out = vaddvq_f32(acc) + corr;
}

static void F(vecpair_q4_0)(const lw *w, int row, const lq8 *x, long xs, const float *xt, const int8_t *x8, float *out) {
	(void)xt;
	(void)x8;
	F(pair_n)(w, row, x, xs, out, 0, 0);
}

static void F(vecpair_aff4)(const lw *w, int row, const lq8 *x, long xs, const float *xt, const int8_t *x8, float *out) {
	(void)xt;
	(void)x8;
	switch (w->sdt) {
	case LS_F16: F(pair_n)(w, row, x, xs, out, 1, LS_F16); break;
	case LS_BF16: F(pair_n)(w, row, x, xs, out, 1, LS_BF16); break;
	default: F(pair_n)(w, row, x, xs, out, 1, LS_F32); break;
	}
}

#if DOTPROD
// tile8 runs one Q4_0 (aff = 0) or 4-bit Affine (aff = 1) weight row against 8 activation rows
// r0..r0+7 held interleaved (x8, see laya_quantize): per block, the 4 codes of each group k are
// one 32-bit lane of the decoded codes, which sdot by lane multiplies with the same 4 elements of
// rows 0-3 and 4-7 at once, so two vectors collect the block's sums for all 8 rows and are scaled
// once by the weight scale times the rows' scales (xt). Writes 8 outputs.
INLINE void F(tile8_n)(const lw *w, int row, const int8_t *x8, const float *xt, int nrows, int r0, float *out, int aff, int sdt) {
	const uint8_t *p = w->w + (long)row * w->rowbytes;
	int nb = w->cols / 32, sh;
	long g0;
	F(groups)(w, row, aff, &sh, &g0);
	const int8_t *xb = x8 + (long)(r0 / 16) * nb * 512 + 32 * ((r0 / 8) & 1);
	const float *xd = xt + r0, *xds = xt + (long)nb * nrows + r0;
	float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0), corr0 = vdupq_n_f32(0), corr1 = vdupq_n_f32(0);
	for (int b = 0; b < nb; b++, xb += 512) {
		float s, z;
		int8x16_t lo, hi;
		F(block)(w, p, b, aff, sdt, sh, g0, &s, &z, &lo, &hi);
		int32x4_t t0 = vdupq_n_s32(0), t1 = vdupq_n_s32(0);
#define GROUP(k, v, lane)                                           \
	t0 = vdotq_laneq_s32(t0, vld1q_s8(xb + 64 * (k)), v, lane);      \
	t1 = vdotq_laneq_s32(t1, vld1q_s8(xb + 64 * (k) + 16), v, lane)
		GROUP(0, lo, 0);
		GROUP(1, lo, 1);
		GROUP(2, lo, 2);
		GROUP(3, lo, 3);
		GROUP(4, hi, 0);
		GROUP(5, hi, 1);
		GROUP(6, hi, 2);
		GROUP(7, hi, 3);
#undef GROUP
		const float *d = xd + (long)b * nrows;
		acc0 = vfmaq_f32(acc0, vcvtq_f32_s32(t0), vmulq_n_f32(vld1q_f32(d), s));
		acc1 = vfmaq_f32(acc1, vcvtq_f32_s32(t1), vmulq_n_f32(vld1q_f32(d + 4), s));
		if (aff) {
			const float *ds = xds + (long)b * nrows;
			corr0 = vfmaq_n_f32(corr0, vld1q_f32(ds), z);
			corr1 = vfmaq_n_f32(corr1, vld1q_f32(ds + 4), z);
		}
	}
	vst1q_f32(out, vaddq_f32(acc0, corr0));
	vst1q_f32(out + 4, vaddq_f32(acc1, corr1));
}

// tile8 entries: laya_matmul asks for nw (1 or 2) weight rows, 8 outputs each.
static void F(tile8_q4_0)(const lw *w, int row, int nw, const int8_t *x8, const float *xt, int nrows, int r0, float *out) {
	for (int v = 0; v < nw; v++) F(tile8_n)(w, row + v, x8, xt, nrows, r0, out + 8 * v, 0, 0);
}

static void F(tile8_aff4)(const lw *w, int row, int nw, const int8_t *x8, const float *xt, int nrows, int r0, float *out) {
	for (int v = 0; v < nw; v++) {
		switch (w->sdt) {
		case LS_F16: F(tile8_n)(w, row + v, x8, xt, nrows, r0, out + 8 * v, 1, LS_F16); break;
		case LS_BF16: F(tile8_n)(w, row + v, x8, xt, nrows, r0, out + 8 * v, 1, LS_BF16); break;
		default: F(tile8_n)(w, row + v, x8, xt, nrows, r0, out + 8 * v, 1, LS_F32); break;
		}
	}
}
#endif

// scale_min unpacks sub-block j's 6-bit scale and min of a Q4_K or Q5_K super-block.
static inline void F(scale_min)(const uint8_t *sc, int j, int *s, int *m) {
	if (j < 4) {
		*s = sc[j] & 63;
		*m = sc[j + 4] & 63;
	} else {
		*s = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
		*m = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
	}
}

// kblock is the integer sum of one block's 32 codes (c0: elements 0-15, c1: 16-31) against an
// activation row (pair = 0) or, exactly, 254*main + remainder of a residual pair, in 4 lanes.
INLINE int32x4_t F(kblock)(int8x16_t c0, int8x16_t c1, const lq8 *x, const lq8 *xr, int pair) {
	int32x4_t t = F(dot32)(vdupq_n_s32(0), c0, c1, x->q);
	return pair ? vmlaq_n_s32(F(dot32)(vdupq_n_s32(0), c0, c1, xr->q), t, 254) : t;
}

// vk is the decode mat-vec of one Q4_K (five = 0) or Q5_K row against one activation row or one
// residual pair (pair, remainder xs blocks after x), a sub-block at a time.
INLINE void F(vk_n)(const lw *w, int row, const lq8 *x, long xs, float *out, int five, int pair) {
	const uint8_t *p = w->w + (long)row * w->rowbytes;
	const lq8 *xr = x + xs;
	int nsb = w->cols / 256, bsize = five ? 176 : 144;
	float32x4_t acc = vdupq_n_f32(0);
	float corr = 0;
	const uint8x16_t m4 = vdupq_n_u8(15), one = vdupq_n_u8(1);
	for (int sb = 0; sb < nsb; sb++) {
		const uint8_t *blk = p + (long)bsize * sb, *qs = blk + (five ? 48 : 16);
		__builtin_prefetch((const char *)blk + LAYA_PF);
		__builtin_prefetch((const char *)blk + LAYA_PF + 64);
		__builtin_prefetch((const char *)blk + LAYA_PF + 128);
		float d = F(half)(blk), dmin = F(half)(blk + 2);
		uint8x16_t h0 = five ? vld1q_u8(blk + 16) : vdupq_n_u8(0), h1 = five ? vld1q_u8(blk + 32) : vdupq_n_u8(0);
		for (int g = 0; g < 4; g++) {
			uint8x16_t v0 = vld1q_u8(qs + 32 * g), v1 = vld1q_u8(qs + 32 * g + 16);
			uint8x16_t c[2][2] = {{vandq_u8(v0, m4), vandq_u8(v1, m4)}, {vshrq_n_u8(v0, 4), vshrq_n_u8(v1, 4)}};
			for (int j = 0; j < 2; j++) {
				int sj = 2 * g + j, sc, m;
				if (five) { // bit sj of each qh byte is the fifth bit of sub-block sj's codes
					int8x16_t sh = vdupq_n_s8((int8_t)-sj);
					c[j][0] = vorrq_u8(c[j][0], vshlq_n_u8(vandq_u8(vshlq_u8(h0, sh), one), 4));
					c[j][1] = vorrq_u8(c[j][1], vshlq_n_u8(vandq_u8(vshlq_u8(h1, sh), one), 4));
				}
				const lq8 *xb = x + 8 * sb + sj, *rb = xr + 8 * sb + sj;
				int32x4_t t = F(kblock)(vreinterpretq_s8_u8(c[j][0]), vreinterpretq_s8_u8(c[j][1]), xb, rb, pair);
				F(scale_min)(blk + 4, sj, &sc, &m);
				acc = vfmaq_n_f32(acc, vcvtq_f32_s32(t), d * (float)sc * (pair ? rb->d : xb->d));
				corr += dmin * (float)m * (pair ? xb->ds + rb->ds : xb->ds);
			}
		}
	}
	*out = vaddvq_f32(acc) - corr;
}

// v6 is vk for Q6_K rows: codes less their zero point 32 are signed bytes, and each block's two
// 16-code halves sum separately for their own scales.
INLINE void F(v6_n)(const lw *w, int row, const lq8 *x, long xs, float *out, int pair) {
	const uint8_t *p = w->w + (long)row * w->rowbytes;
	const lq8 *xr = x + xs;
	int nsb = w->cols / 256;
	float acc = 0;
	const uint8x16_t m4 = vdupq_n_u8(15), m2 = vdupq_n_u8(3);
	const int8x16_t z = vdupq_n_s8(0);
	for (int sb = 0; sb < nsb; sb++) {
		const uint8_t *blk = p + 210L * sb;
		for (int i = 0; i < 4; i++) __builtin_prefetch((const char *)blk + LAYA_PF + 64 * i);
		const int8_t *sc = (const int8_t *)blk + 192;
		float d = F(half)(blk + 208);
		for (int j = 0; j < 8; j++) {
			int h = j / 4, k = j % 4;
			const uint8_t *ql = blk + 64 * h + 32 * (k % 2), *qh = blk + 128 + 32 * h;
			int8x16_t c[2];
			for (int i = 0; i < 2; i++) {
				uint8x16_t l = vld1q_u8(ql + 16 * i), hb = vld1q_u8(qh + 16 * i);
				l = k < 2 ? vandq_u8(l, m4) : vshrq_n_u8(l, 4);
				hb = vandq_u8(vshlq_u8(hb, vdupq_n_s8((int8_t)(-2 * k))), m2);
				c[i] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l, vshlq_n_u8(hb, 4))), vdupq_n_s8(32));
			}
			const lq8 *xb = x + 8 * sb + j, *rb = xr + 8 * sb + j;
			// One half at a time: the other half's codes are zero.
			int32x4_t t0 = F(kblock)(c[0], z, xb, rb, pair), t1 = F(kblock)(z, c[1], xb, rb, pair);
			acc += d * (pair ? rb->d : xb->d) * ((float)sc[2 * j] * (float)vaddvq_s32(t0) + (float)sc[2 * j + 1] * (float)vaddvq_s32(t1));
		}
	}
	*out = acc;
}

static void F(vec_kq)(const lw *w, int row, const lq8 *x, const float *xt, const int8_t *x8, float *out) {
	(void)xt;
	(void)x8;
	if (w->kind == LK_Q6_K) F(v6_n)(w, row, x, 0, out, 0);
	else if (w->kind == LK_Q5_K) F(vk_n)(w, row, x, 0, out, 1, 0);
	else F(vk_n)(w, row, x, 0, out, 0, 0);
}

static void F(vecpair_kq)(const lw *w, int row, const lq8 *x, long xs, const float *xt, const int8_t *x8, float *out) {
	(void)xt;
	(void)x8;
	if (w->kind == LK_Q6_K) F(v6_n)(w, row, x, xs, out, 1);
	else if (w->kind == LK_Q5_K) F(vk_n)(w, row, x, xs, out, 1, 1);
	else F(vk_n)(w, row, x, xs, out, 0, 1);
}

#if DOTPROD
// wide2 runs nw (1 or 2) decoded weight rows (codes, scale and zero as decode_c writes them)
// against the 16 activation rows r0..r0+15 of one x8 tile: each weight row's 32 codes of a block
// are two vectors whose 32-bit lanes are groups of 4 codes, and sdot by lane multiplies a group
// with the same 4 elements of 4 activation rows at once. All codes are below 64, so they are
// valid signed bytes. out receives 16 values per weight row.
INLINE void F(wide2_n)(const uint8_t *codes, const float *scale, const float *zero, int nb, const int8_t *x8,
	const float *xt, int nrows, int r0, float *out, int nw, float zk) {
	const float *xd = xt + r0, *xds = xt + (long)nb * nrows + r0;
	const int8_t *xb = x8 + (long)(r0 / 16) * nb * 512;
	float32x4_t acc[2][4];
	for (int v = 0; v < nw; v++)
		for (int q = 0; q < 4; q++) acc[v][q] = vdupq_n_f32(0);
	for (int b = 0; b < nb; b++, xb += 512) {
		int8x16_t c[2][2];
		int32x4_t s[2][4];
		for (int v = 0; v < nw; v++) {
			const int8_t *cv = (const int8_t *)codes + ((long)v * nb + b) * 32;
			c[v][0] = vld1q_s8(cv);
			c[v][1] = vld1q_s8(cv + 16);
			for (int q = 0; q < 4; q++) s[v][q] = vdupq_n_s32(0);
		}
#define GROUP(k)                                                                              \
	do {                                                                                      \
		const int8_t *xk = xb + 64 * (k);                                                     \
		int8x16_t x0 = vld1q_s8(xk), x1 = vld1q_s8(xk + 16), x2 = vld1q_s8(xk + 32), x3 = vld1q_s8(xk + 48); \
		for (int v = 0; v < nw; v++) {                                                        \
			s[v][0] = vdotq_laneq_s32(s[v][0], x0, c[v][(k) / 4], (k) % 4);                    \
			s[v][1] = vdotq_laneq_s32(s[v][1], x1, c[v][(k) / 4], (k) % 4);                    \
			s[v][2] = vdotq_laneq_s32(s[v][2], x2, c[v][(k) / 4], (k) % 4);                    \
			s[v][3] = vdotq_laneq_s32(s[v][3], x3, c[v][(k) / 4], (k) % 4);                    \
		}                                                                                     \
	} while (0)
		GROUP(0);
		GROUP(1);
		GROUP(2);
		GROUP(3);
		GROUP(4);
		GROUP(5);
		GROUP(6);
		GROUP(7);
#undef GROUP
		for (int q = 0; q < 4; q++) {
			float32x4_t d = vld1q_f32(xd + (long)b * nrows + 4 * q), ds = vld1q_f32(xds + (long)b * nrows + 4 * q);
			for (int v = 0; v < nw; v++) {
				float sv = scale[(long)v * nb + b];
				if (zk != 0) {
					float32x4_t t = vfmaq_f32(vmulq_n_f32(ds, zk), d, vcvtq_f32_s32(s[v][q]));
					acc[v][q] = vfmaq_n_f32(acc[v][q], t, sv);
				} else {
					acc[v][q] = vfmaq_n_f32(acc[v][q], vmulq_f32(d, vcvtq_f32_s32(s[v][q])), sv);
					acc[v][q] = vfmaq_n_f32(acc[v][q], ds, zero[(long)v * nb + b]);
				}
			}
		}
	}
	for (int v = 0; v < nw; v++)
		for (int q = 0; q < 4; q++) vst1q_f32(out + 16 * v + 4 * q, acc[v][q]);
}

// wide splits its nw (1..4) rows by nt*16 activation rows into calls of wide2_n.
static void F(wide)(const uint8_t *codes, const float *scale, const float *zero, float zk, int cls, int g2, int nw, int nb,
	const int8_t *x8, const float *xt, int nrows, int r0, int nt, float *out) {
	(void)cls; // sdot takes every code below 64 as it is
	(void)g2;
	float tmp[2 * 16];
	for (int v = 0; v < nw; v += 2) {
		int n = nw - v < 2 ? 1 : 2;
		const uint8_t *c = codes + (long)v * nb * 32;
		const float *sc = scale + (long)v * nb, *z = zero + (long)v * nb;
		for (int u = 0; u < nt; u++) {
			if (n == 2) F(wide2_n)(c, sc, z, nb, x8, xt, nrows, r0 + 16 * u, tmp, 2, zk);
			else F(wide2_n)(c, sc, z, nb, x8, xt, nrows, r0 + 16 * u, tmp, 1, zk);
			for (int j = 0; j < n; j++) memcpy(out + (long)(v + j) * nt * 16 + 16 * u, tmp + 16 * j, 16 * sizeof(float));
		}
	}
}
#endif

// fl8 loads 8 weights of an F32, F16 or BF16 row from p as two float vectors. Loads go through
// bytes: rows need not be aligned to their element size.
INLINE void F(fl8)(const uint8_t *p, int kind, float32x4_t *lo, float32x4_t *hi) {
	if (kind == LK_F32) {
		*lo = vreinterpretq_f32_u8(vld1q_u8(p));
		*hi = vreinterpretq_f32_u8(vld1q_u8(p + 16));
	} else if (kind == LK_F16) {
		float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(p));
		*lo = vcvt_f32_f16(vget_low_f16(h));
		*hi = vcvt_high_f32_f16(h);
	} else { // bf16 is the top half of an f32
		uint16x8_t u = vreinterpretq_u16_u8(vld1q_u8(p));
		*lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(u), 16));
		*hi = vreinterpretq_f32_u32(vshll_high_n_u16(u, 16));
	}
}

// float_n runs one F32/F16/BF16 weight row against nx (1..LAYA_NX) float activation rows xs
// floats apart, converting each weight once for all rows.
INLINE void F(float_n)(const lw *w, int row, const float *x, long xs, int nx, float *out, int kind) {
	const uint8_t *p = w->w + row * w->rowbytes;
	int es = kind == LK_F32 ? 4 : 2, i = 0;
	float32x4_t a0[LAYA_NX], a1[LAYA_NX];
	for (int r = 0; r < nx; r++) a0[r] = a1[r] = vdupq_n_f32(0);
	for (; i + 8 <= w->cols; i += 8) {
		float32x4_t lo, hi;
		F(fl8)(p + (long)es * i, kind, &lo, &hi);
		for (int r = 0; r < nx; r++) {
			a0[r] = vfmaq_f32(a0[r], lo, vld1q_f32(x + r * xs + i));
			a1[r] = vfmaq_f32(a1[r], hi, vld1q_f32(x + r * xs + i + 4));
		}
	}
	for (int r = 0; r < nx; r++) {
		float s = vaddvq_f32(vaddq_f32(a0[r], a1[r]));
		for (int j = i; j < w->cols; j++) s += F(comp)(p, kind == LK_F32 ? LS_F32 : kind == LK_F16 ? LS_F16 : LS_BF16, j) * x[r * xs + j];
		out[r] = s;
	}
}

INLINE void F(float_k)(const lw *w, int row, const void *x, long xs, int nx, float *out) {
	switch (w->kind) {
	case LK_F32: F(float_n)(w, row, (const float *)x, xs, nx, out, LK_F32); break;
	case LK_F16: F(float_n)(w, row, (const float *)x, xs, nx, out, LK_F16); break;
	default: F(float_n)(w, row, (const float *)x, xs, nx, out, LK_BF16); break;
	}
}
DISPATCH(float, float_k)

// qblock stores 32 floats f[0..7] quantized as x ~= d*q, q = round-half-even(x*id) saturated
// to [-127, 127] as the portable code does, in perm order, with their sums, into o.
INLINE void F(qblock)(lq8 *o, const float32x4_t *f, float d, float id, int perm) {
	int32x4_t q[8];
	for (int k = 0; k < 8; k++)
		q[k] = vmaxq_s32(vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(f[k], id)), vdupq_n_s32(127)), vdupq_n_s32(-127));
	int16x8_t h[4];
	for (int k = 0; k < 4; k++) h[k] = vcombine_s16(vmovn_s32(q[2 * k]), vmovn_s32(q[2 * k + 1]));
	int8x16_t c0 = vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])), c1 = vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3]));
	if (perm) { // even elements first, then odd ones
		int8x16_t e = vuzp1q_s8(c0, c1), od = vuzp2q_s8(c0, c1);
		c0 = e;
		c1 = od;
	}
	vst1q_s8(o->q, c0);
	vst1q_s8(o->q + 16, c1);
	int s0 = vaddlvq_s8(c0), s1 = vaddlvq_s8(c1);
	o->d = d;
	o->s[0] = (int16_t)s0;
	o->s[1] = (int16_t)s1;
	o->ds = d * (float)(s0 + s1);
}

// quantize is the portable quantize_c in vectors, bit for bit: the same amax (maxnm ignores NaN
// as fmaxf does), the same d and 1/d, and round-to-nearest-even as lrintf.
static void F(quantize)(const float *x, int rows, int cols, lq8 *out, int perm, int pair) {
	int nb = cols / 32;
	for (int r = 0; r < rows; r++) {
		for (int b = 0; b < nb; b++) {
			const float *v = x + (long)r * cols + 32 * b, *u = x + (long)r * cols + 32 * (b ^ 1);
			float32x4_t f[8], m = vdupq_n_f32(0);
			for (int k = 0; k < 8; k++) {
				f[k] = vld1q_f32(v + 4 * k);
				m = vmaxnmq_f32(m, vabsq_f32(f[k]));
				if (pair) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(u + 4 * k)));
			}
			float amax = vmaxnmvq_f32(m);
			float d = amax / 127;
			F(qblock)(out + (long)r * nb + b, f, d, d > 0 ? 127 / amax : 0, perm);
		}
	}
}

// remainder is the portable quantize_remainder in vectors, bit for bit: x - d*q rounded as a
// product then a difference (no fused multiply-subtract), then quantized at d/254.
static void F(remainder)(const float *x, int nb, const lq8 *main, lq8 *out, int perm, float *scratch) {
	(void)scratch;
	for (int b = 0; b < nb; b++) {
		const float *v = x + 32 * b;
		const lq8 *m = main + b;
		int8x16_t q0 = vld1q_s8(m->q), q1 = vld1q_s8(m->q + 16);
		if (perm) { // back to element order: element 2i is code i, element 2i+1 code 16+i
			int8x16_t t = vzip1q_s8(q0, q1);
			q1 = vzip2q_s8(q0, q1);
			q0 = t;
		}
		int16x8_t h[4] = {vmovl_s8(vget_low_s8(q0)), vmovl_high_s8(q0), vmovl_s8(vget_low_s8(q1)), vmovl_high_s8(q1)};
		float32x4_t dv = vdupq_n_f32(m->d), r[8];
		for (int k = 0; k < 8; k++) {
			int32x4_t qi = k % 2 ? vmovl_high_s16(h[k / 2]) : vmovl_s16(vget_low_s16(h[k / 2]));
			r[k] = vsubq_f32(vld1q_f32(v + 4 * k), vmulq_f32(dv, vcvtq_f32_s32(qi)));
		}
		float d = m->d / 254;
		F(qblock)(out + b, r, d, d > 0 ? 1 / d : 0, perm);
	}
}

// exp4 is the x86 kernels' exp in NEON: range reduction by ln 2 in two parts, then a degree-6
// polynomial, within 2 ulp of expf over [-87, 88] (inputs are clamped there).
INLINE float32x4_t F(exp4)(float32x4_t x) {
	x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
	float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
	float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
	r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
	float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
	p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
	p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
	p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
	p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
	p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1)), p, vmulq_f32(r, r));
	int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
	return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

INLINE float F(fdot)(const float *a, const float *b, int n) {
	float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0);
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		a0 = vfmaq_f32(a0, vld1q_f32(a + i), vld1q_f32(b + i));
		a1 = vfmaq_f32(a1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
	}
	float s = vaddvq_f32(vaddq_f32(a0, a1));
	for (; i < n; i++) s += a[i] * b[i];
	return s;
}

// dot4 returns the dot products of a against the 4 rows at b (stride ld), n a multiple of 4:
// pairwise adds reduce the four rows' vectors to one instead of a horizontal sum per row.
INLINE float32x4_t F(dot4)(const float *a, const float *b, long ld, int n) {
	float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
	for (int i = 0; i < n; i += 4) {
		float32x4_t av = vld1q_f32(a + i);
		s0 = vfmaq_f32(s0, av, vld1q_f32(b + i));
		s1 = vfmaq_f32(s1, av, vld1q_f32(b + ld + i));
		s2 = vfmaq_f32(s2, av, vld1q_f32(b + 2 * ld + i));
		s3 = vfmaq_f32(s3, av, vld1q_f32(b + 3 * ld + i));
	}
	return vpaddq_f32(vpaddq_f32(s0, s1), vpaddq_f32(s2, s3));
}

// attention is the x86 kernel's scheme in NEON: with head sizes a multiple of 4 the scores come
// 4 keys at a time, and the values are summed a key at a time into 64 outputs held in registers.
static void F(attention)(const float *q, const float *k, const float *v, float *out, float *sc,
	int heads, int group, int hd, int kvw, int pos, int lo, int hi, float scale) {
	const int wide = hd % 4 == 0;
	for (int it = lo; it < hi; it++) {
		int r = it / heads, h = it % heads, n = pos + r + 1, ko = (h / group) * hd;
		const float *qh = q + (long)it * hd;
		float32x4_t mv = vdupq_n_f32(-INFINITY);
		int t = 0;
		if (wide)
			for (; t + 4 <= n; t += 4) {
				float32x4_t d = vmulq_n_f32(F(dot4)(qh, k + (long)t * kvw + ko, kvw, hd), scale);
				vst1q_f32(sc + t, d);
				mv = vmaxq_f32(mv, d);
			}
		float m = vmaxvq_f32(mv);
		for (; t < n; t++) {
			sc[t] = F(fdot)(qh, k + (long)t * kvw + ko, hd) * scale;
			m = fmaxf(m, sc[t]);
		}
		float32x4_t zs = vdupq_n_f32(0);
		mv = vdupq_n_f32(m);
		t = 0;
		for (; t + 4 <= n; t += 4) {
			float32x4_t e = F(exp4)(vsubq_f32(vld1q_f32(sc + t), mv));
			vst1q_f32(sc + t, e);
			zs = vaddq_f32(zs, e);
		}
		float z = vaddvq_f32(zs);
		for (; t < n; t++) z += (sc[t] = expf(sc[t] - m));
		float *o = out + (long)it * hd, iz = 1 / z;
		const float *vh = v + ko;
		int i = 0;
		for (; i + 64 <= hd; i += 64) {
			float32x4_t a[16];
			for (int j = 0; j < 16; j++) a[j] = vdupq_n_f32(0);
			for (int u = 0; u < n; u++) {
				const float *vu = vh + (long)u * kvw + i;
				for (int j = 0; j < 16; j++) a[j] = vfmaq_n_f32(a[j], vld1q_f32(vu + 4 * j), sc[u]);
			}
			for (int j = 0; j < 16; j++) vst1q_f32(o + i + 4 * j, vmulq_n_f32(a[j], iz));
		}
		for (; i + 4 <= hd; i += 4) {
			float32x4_t a0 = vdupq_n_f32(0);
			for (int u = 0; u < n; u++) a0 = vfmaq_n_f32(a0, vld1q_f32(vh + (long)u * kvw + i), sc[u]);
			vst1q_f32(o + i, vmulq_n_f32(a0, iz));
		}
		for (; i < hd; i++) {
			float s = 0;
			for (int u = 0; u < n; u++) s += sc[u] * vh[(long)u * kvw + i];
			o[i] = s * iz;
		}
	}
}

static void F(silu_mul)(float *dst, const float *g, const float *u, int n) {
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		float32x4_t x = vld1q_f32(g + i);
		float32x4_t y = vdivq_f32(x, vaddq_f32(vdupq_n_f32(1), F(exp4)(vnegq_f32(x))));
		vst1q_f32(dst + i, vmulq_f32(y, vld1q_f32(u + i)));
	}
	for (; i < n; i++) dst[i] = g[i] / (1 + expf(-g[i])) * u[i];
}

static void F(gelu_mul)(float *dst, const float *g, const float *u, int n) {
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		float32x4_t x = vld1q_f32(g + i);
		float32x4_t y = vmulq_n_f32(vfmaq_f32(x, vmulq_n_f32(x, 0.044715f), vmulq_f32(x, x)), LAYA_GELU_K);
		float32x4_t s = vdivq_f32(x, vaddq_f32(vdupq_n_f32(1), F(exp4)(y)));
		vst1q_f32(dst + i, vmulq_f32(s, vld1q_f32(u + i)));
	}
	for (; i < n; i++) dst[i] = g[i] / (1 + expf(LAYA_GELU_K * (g[i] + 0.044715f * g[i] * g[i] * g[i]))) * u[i];
}

// fill copies the portable table into dst and puts this level's kernels in their slots.
static void F(fill)(laya_impl *dst, const laya_impl *portable) {
	*dst = *portable;
	dst->quantize = F(quantize);
	dst->remainder = F(remainder);
	dst->attention = F(attention);
	dst->silu_mul = F(silu_mul);
	dst->gelu_mul = F(gelu_mul);
	dst->dot[LK_F32] = dst->dot[LK_F16] = dst->dot[LK_BF16] = F(float);
	dst->dot[LK_Q8_0] = F(q8_0);
	dst->dot[LK_Q4_0] = F(q4_0);
	dst->dot[LK_Q5_0] = F(q5_0);
	dst->dot[LK_AFF4] = dst->dot[LK_AFF8] = F(aff);
	dst->vecpair[LK_Q4_0] = F(vecpair_q4_0);
	dst->vecpair[LK_AFF4] = F(vecpair_aff4);
	for (int k = LK_Q4_K; k <= LK_Q6_K; k++) {
		dst->vec[k] = F(vec_kq);
		dst->vecpair[k] = F(vecpair_kq);
	}
#if DOTPROD
	// Prefill's 8-row tiles need sdot by lane; plain NEON runs prefill through dot.
	dst->tile8[LK_Q4_0] = F(tile8_q4_0);
	dst->tile8[LK_AFF4] = F(tile8_aff4);
	dst->wide = F(wide); // with the portable decoders
#endif
}

#undef DISPATCH
#undef INLINE
