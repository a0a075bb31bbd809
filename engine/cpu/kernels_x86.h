// x86 SIMD kernels, included by kernels_amd64.c once per instruction-set level with F() naming
// the functions and VNNI set when u8*s8 dot products can use vpdpbusd. No include guard on
// purpose. Integer block sums are exact; only float accumulation order differs from kernels.c.

#define LOADU(p) _mm256_loadu_si256((const __m256i *)(p))

static inline float F(hsum)(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

static inline int F(hsumi)(__m256i v) {
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return _mm_cvtsi128_si32(s);
}

static inline int F(u16)(const uint8_t *p) {
	uint16_t h;
	memcpy(&h, p, 2);
	return h;
}

static inline float F(half)(const uint8_t *p) {
	uint16_t h;
	memcpy(&h, p, 2);
	return _cvtsh_ss(h);
}

// nib32 spreads 16 bytes into 32 codes: low nibbles, then high nibbles.
static inline __m256i F(nib32)(const uint8_t *p) {
	__m128i b = _mm_loadu_si128((const __m128i *)p);
	__m256i v = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
	return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

// dotu8 sums u[i]*s[i] (u unsigned, s signed bytes) in groups of four into 8 int32 lanes.
static inline __m256i F(dotu8)(__m256i u, __m256i s) {
#if VNNI
	return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// dots8 is dotu8 for two signed operands (w in [-128, 127], s in [-127, 127]).
static inline __m256i F(dots8)(__m256i w, __m256i s) {
	return F(dotu8)(_mm256_sign_epi8(w, w), _mm256_sign_epi8(s, w));
}

static inline __m256 F(exp)(__m256 x) {
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1)));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// qblock quantizes 32 floats (a, b, c, e in order) as x ~= d*q with q = round-half-even(x*id),
// saturated to [-127, 127], stored in perm order (see laya_quantize) with their sums into o.
static inline void F(qblock)(lq8 *o, __m256 a, __m256 b, __m256 c, __m256 e, float d, float id, int perm) {
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	// Within each 128-bit lane: even bytes first, then odd.
	const __m256i evenodd = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
		0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
	__m256 iv = _mm256_set1_ps(id);
	o->d = d;
	__m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(a, iv)), i1 = _mm256_cvtps_epi32(_mm256_mul_ps(b, iv));
	__m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(c, iv)), i3 = _mm256_cvtps_epi32(_mm256_mul_ps(e, iv));
	__m256i q = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
	q = _mm256_max_epi8(_mm256_permutevar8x32_epi32(q, order), _mm256_set1_epi8(-127));
	if (perm) q = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(q, evenodd), 0xd8);
	_mm256_storeu_si256((__m256i *)o->q, q);
	// Lanes 0-3 of s sum stored elements 0-15, lanes 4-7 elements 16-31.
	__m256i s = F(dotu8)(_mm256_set1_epi8(1), q);
	__m128i lo = _mm256_castsi256_si128(s), hi = _mm256_extracti128_si256(s, 1);
	lo = _mm_hadd_epi32(lo, lo);
	hi = _mm_hadd_epi32(hi, hi);
	o->s[0] = (int16_t)(_mm_cvtsi128_si32(lo) + _mm_extract_epi32(lo, 1));
	o->s[1] = (int16_t)(_mm_cvtsi128_si32(hi) + _mm_extract_epi32(hi, 1));
	o->ds = o->d * (float)(o->s[0] + o->s[1]);
}

static inline float F(amax)(__m256 a, __m256 b, __m256 c, __m256 d) {
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	__m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(a, absmask), _mm256_and_ps(b, absmask)),
		_mm256_max_ps(_mm256_and_ps(c, absmask), _mm256_and_ps(d, absmask)));
	__m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
	m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
	m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
	return _mm_cvtss_f32(m4);
}

static void F(quantize)(const float *x, int rows, int cols, lq8 *out, int perm, int pair) {
	int nb = cols / 32;
	for (long i = 0; i < (long)rows * nb; i++) {
		const float *v = x + 32 * i;
		__m256 a = _mm256_loadu_ps(v), b = _mm256_loadu_ps(v + 8), c = _mm256_loadu_ps(v + 16), d = _mm256_loadu_ps(v + 24);
		float amax = F(amax)(a, b, c, d);
		if (pair) { // nb is even, so block i^1 is in the same row
			const float *u = x + 32 * (i ^ 1);
			amax = fmaxf(amax, F(amax)(_mm256_loadu_ps(u), _mm256_loadu_ps(u + 8), _mm256_loadu_ps(u + 16), _mm256_loadu_ps(u + 24)));
		}
		F(qblock)(out + i, a, b, c, d, amax / 127, amax > 0 ? 127 / amax : 0, perm);
	}
}

// remainder is laya_quantize's remainder step (see quantize_remainder in kernels.c, which it
// matches bit for bit): x - d*q of each block of x, in element order, quantized with scale d/254.
static void F(remainder)(const float *x, int nb, const lq8 *main, lq8 *out, int perm, float *scratch) {
	(void)scratch;
	for (int b = 0; b < nb; b++) {
		const float *v = x + 32 * b;
		const lq8 *m = main + b;
		__m128i q0 = _mm_loadu_si128((const __m128i *)m->q), q1 = _mm_loadu_si128((const __m128i *)(m->q + 16));
		if (perm) { // back to element order: element 2i is code i, element 2i+1 code 16+i
			__m128i t = _mm_unpacklo_epi8(q0, q1);
			q1 = _mm_unpackhi_epi8(q0, q1);
			q0 = t;
		}
		__m256 dv = _mm256_set1_ps(m->d), r[4];
		for (int k = 0; k < 4; k++) {
			__m128i src = k < 2 ? q0 : q1;
			__m128i part = k % 2 ? _mm_srli_si128(src, 8) : src;
			__m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part));
			r[k] = _mm256_sub_ps(_mm256_loadu_ps(v + 8 * k), _mm256_mul_ps(dv, qf));
		}
		float d = m->d / 254;
		F(qblock)(out + b, r[0], r[1], r[2], r[3], d, d > 0 ? 1 / d : 0, perm);
	}
}

// Each kernel processes one weight row against nx (1..LAYA_NX) activation rows; the _n variants
// are always inlined with a constant nx so the per-row accumulators stay in registers.
#define DISPATCH(name)                                                                      \
	static void F(name)(const lw *w, int row, const void *x, long xs, int nx, float *out) { \
		switch (nx) {                                                                       \
		case 1: F(name##_n)(w, row, x, xs, 1, out); break;                                  \
		case 2: F(name##_n)(w, row, x, xs, 2, out); break;                                  \
		case 3: F(name##_n)(w, row, x, xs, 3, out); break;                                  \
		default: F(name##_n)(w, row, x, xs, 4, out); break;                                 \
		}                                                                                   \
	}

#define INLINE static inline __attribute__((always_inline))

// DISPATCHK is DISPATCH for kernels that also take their weight kind as a constant.
#define DISPATCHK(name, impl, kind)                                                         \
	static void F(name)(const lw *w, int row, const void *x, long xs, int nx, float *out) { \
		switch (nx) {                                                                       \
		case 1: F(impl)(w, row, x, xs, 1, out, kind); break;                                \
		case 2: F(impl)(w, row, x, xs, 2, out, kind); break;                                \
		case 3: F(impl)(w, row, x, xs, 3, out, kind); break;                                \
		default: F(impl)(w, row, x, xs, 4, out, kind); break;                               \
		}                                                                                   \
	}

// legacy_blk adds weight block b of a Q8_0, Q4_0 or Q5_0 row (w = d*(q - off)) times activation
// block b of nx rows into acc, and d_w*d_x*sum(q_x) into corr for the offset term.
INLINE void F(legacy_blk)(const uint8_t *p, const lq8 *x, long xs, int nx, int kind, int b, __m256 *acc, float *corr) {
	int bsize = kind == LK_Q8_0 ? 34 : kind == LK_Q4_0 ? 18 : 22;
	const uint8_t *blk = p + bsize * b;
	float d = F(half)(blk);
	__m256i q;
	if (kind == LK_Q8_0) {
		q = LOADU(blk + 2);
	} else if (kind == LK_Q4_0) {
		q = F(nib32)(blk + 2);
	} else {
		const __m256i bitsel = _mm256_set1_epi64x(0x8040201008040201LL);
		const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
			2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
		uint32_t qh;
		memcpy(&qh, blk + 2, 4);
		// Byte i of hb is 0x10 when bit i of qh is set.
		__m256i hb = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread);
		hb = _mm256_cmpeq_epi8(_mm256_and_si256(hb, bitsel), bitsel);
		q = _mm256_or_si256(F(nib32)(blk + 6), _mm256_and_si256(hb, _mm256_set1_epi8(0x10)));
	}
	for (int r = 0; r < nx; r++) {
		const lq8 *xb = x + r * xs + b;
		__m256i a = LOADU(xb->q);
		__m256i s = kind == LK_Q8_0 ? F(dots8)(q, a) : F(dotu8)(q, a);
		acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * xb->d), acc[r]);
		if (kind != LK_Q8_0) corr[r] += d * xb->ds;
	}
}

// The two accumulator sets of the kernels below alternate between blocks so that consecutive
// FMAs do not wait on each other.
INLINE void F(legacy_n)(const lw *w, int row, const void *xv, long xs, int nx, float *out, int kind) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *x = (const lq8 *)xv;
	int nb = w->cols / 32, b = 0;
	float off = kind == LK_Q8_0 ? 0 : kind == LK_Q4_0 ? 8 : 16;
	__m256 a0[LAYA_NX], a1[LAYA_NX];
	float c0[LAYA_NX], c1[LAYA_NX];
	for (int r = 0; r < nx; r++) {
		a0[r] = a1[r] = _mm256_setzero_ps();
		c0[r] = c1[r] = 0;
	}
	for (; b + 1 < nb; b += 2) {
		F(legacy_blk)(p, x, xs, nx, kind, b, a0, c0);
		F(legacy_blk)(p, x, xs, nx, kind, b + 1, a1, c1);
	}
	if (b < nb) F(legacy_blk)(p, x, xs, nx, kind, b, a0, c0);
	for (int r = 0; r < nx; r++) out[r] = F(hsum)(_mm256_add_ps(a0[r], a1[r])) - off * (c0[r] + c1[r]);
}
DISPATCHK(q8_0, legacy_n, LK_Q8_0)
DISPATCHK(q4_0, legacy_n, LK_Q4_0)
DISPATCHK(q5_0, legacy_n, LK_Q5_0)

static inline void F(scale_min)(const uint8_t *sc, int j, int *s, int *m) {
	if (j < 4) {
		*s = sc[j] & 63;
		*m = sc[j + 4] & 63;
	} else {
		*s = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
		*m = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
	}
}

// q45k handles Q4_K and Q5_K: per 256-element super-block, eight 32-element sub-blocks with 6-bit
// scales and mins; w = d*s*q - dmin*m.
INLINE void F(q45k_n)(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *x = (const lq8 *)xv;
	int five = w->kind == LK_Q5_K, bsize = five ? 176 : 144, nsb = w->cols / 256;
	__m256 acc[2][LAYA_NX];
	float corr[LAYA_NX];
	for (int r = 0; r < nx; r++) {
		acc[0][r] = acc[1][r] = _mm256_setzero_ps();
		corr[r] = 0;
	}
	const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
	for (int sb = 0; sb < nsb; sb++) {
		const uint8_t *blk = p + bsize * sb;
		float d = F(half)(blk), dmin = F(half)(blk + 2);
		const uint8_t *qs = blk + (five ? 48 : 16);
		__m256i qh = five ? LOADU(blk + 16) : _mm256_setzero_si256();
		float ds[8], ms[8];
		for (int j = 0; j < 8; j++) {
			int s, m;
			F(scale_min)(blk + 4, j, &s, &m);
			ds[j] = d * (float)s;
			ms[j] = dmin * (float)m;
		}
		for (int g = 0; g < 4; g++) {
			__m256i v = LOADU(qs + 32 * g);
			__m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
			if (five) {
				__m256i b0 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g)), one);
				__m256i b1 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g + 1)), one);
				lo = _mm256_or_si256(lo, _mm256_slli_epi16(b0, 4));
				hi = _mm256_or_si256(hi, _mm256_slli_epi16(b1, 4));
			}
			for (int r = 0; r < nx; r++) {
				const lq8 *x0 = x + r * xs + 8 * sb + 2 * g, *x1 = x0 + 1;
				__m256i s0 = F(dotu8)(lo, LOADU(x0->q)), s1 = F(dotu8)(hi, LOADU(x1->q));
				acc[0][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(ds[2 * g] * x0->d), acc[0][r]);
				acc[1][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_set1_ps(ds[2 * g + 1] * x1->d), acc[1][r]);
				corr[r] += ms[2 * g] * x0->ds + ms[2 * g + 1] * x1->ds;
			}
		}
	}
	for (int r = 0; r < nx; r++) out[r] = F(hsum)(_mm256_add_ps(acc[0][r], acc[1][r])) - corr[r];
}
DISPATCH(q45k)

// q6k_quarter adds quarter k (32 elements: activation block 8*sb + 4*h + k) of half h of a Q6_K
// super-block into acc and corr.
INLINE void F(q6k_quarter)(const uint8_t *blk, __m256i ql0, __m256i ql1, __m256i qh, const lq8 *xb0, long xs, int nx, int h, int k, __m256 *acc, float *corr) {
	const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
	__m256i ql = k % 2 ? ql1 : ql0;
	__m256i lo = k < 2 ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
	__m256i hb = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2);
	__m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 4));
	float d = F(half)(blk + 208);
	const int8_t *sc = (const int8_t *)blk + 192 + 8 * h;
	float s0 = d * (float)sc[2 * k], s1 = d * (float)sc[2 * k + 1];
	for (int r = 0; r < nx; r++) {
		const lq8 *xb = xb0 + r * xs;
		__m256i s = F(dotu8)(q, LOADU(xb->q));
		__m256 f = _mm256_set_m128(_mm_set1_ps(xb->d * s1), _mm_set1_ps(xb->d * s0));
		acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), f, acc[r]);
		corr[r] += xb->d * (s0 * (float)xb->s[0] + s1 * (float)xb->s[1]);
	}
}

// q6k: 6-bit codes in two 128-element halves, int8 scale per 16 elements; w = d*sc*(q - 32).
INLINE void F(q6k_n)(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *x = (const lq8 *)xv;
	int nsb = w->cols / 256;
	__m256 a0[LAYA_NX], a1[LAYA_NX];
	float c0[LAYA_NX], c1[LAYA_NX];
	for (int r = 0; r < nx; r++) {
		a0[r] = a1[r] = _mm256_setzero_ps();
		c0[r] = c1[r] = 0;
	}
	for (int sb = 0; sb < nsb; sb++) {
		const uint8_t *blk = p + 210 * sb;
		for (int h = 0; h < 2; h++) {
			__m256i qh = LOADU(blk + 128 + 32 * h);
			__m256i ql0 = LOADU(blk + 64 * h), ql1 = LOADU(blk + 64 * h + 32);
			const lq8 *xb = x + 8 * sb + 4 * h;
			F(q6k_quarter)(blk, ql0, ql1, qh, xb, xs, nx, h, 0, a0, c0);
			F(q6k_quarter)(blk, ql0, ql1, qh, xb + 1, xs, nx, h, 1, a1, c1);
			F(q6k_quarter)(blk, ql0, ql1, qh, xb + 2, xs, nx, h, 2, a0, c0);
			F(q6k_quarter)(blk, ql0, ql1, qh, xb + 3, xs, nx, h, 3, a1, c1);
		}
	}
	for (int r = 0; r < nx; r++) out[r] = F(hsum)(_mm256_add_ps(a0[r], a1[r])) - 32 * (c0[r] + c1[r]);
}
DISPATCH(q6k)

// comp reads element i of an Affine scales or biases tensor.
static inline float F(comp)(const uint8_t *p, int sdt, long i) {
	uint16_t h;
	if (sdt == LS_F32) {
		float f;
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	memcpy(&h, p + 2 * i, 2);
	if (sdt == LS_F16) return _cvtsh_ss(h);
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

// comp8 reads elements i..i+7 of an Affine scales or biases tensor.
static inline __m256 F(comp8)(const uint8_t *p, int sdt, long i) {
	if (sdt == LS_F32) return _mm256_loadu_ps((const float *)(p + 4 * i));
	__m128i h = _mm_loadu_si128((const __m128i *)(p + 2 * i));
	if (sdt == LS_F16) return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// affine_blk adds activation block b of nx rows times the matching 32 codes of an MLX row with
// group scale s into acc, and bias*sum(x) into corr.
INLINE void F(affine_blk)(const uint8_t *p, const lq8 *x, long xs, int nx, int four, int b, float s, float bias, __m256 *acc, float *corr) {
	// 4-bit: nibbles of 16 bytes are [even codes | odd codes], matching the permuted
	// activations; 8-bit: 32 codes in order, flipped to signed (q-128) for the sign trick.
	__m256i q = four ? F(nib32)(p + 16 * b) : _mm256_xor_si256(LOADU(p + 32 * b), _mm256_set1_epi8((char)0x80));
	for (int r = 0; r < nx; r++) {
		const lq8 *xb = x + r * xs + b;
		__m256i a = LOADU(xb->q);
		__m256i t = four ? F(dotu8)(q, a) : F(dots8)(q, a);
		acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(s * xb->d), acc[r]);
		corr[r] += bias * xb->ds;
	}
}

// affine: MLX codes with a float scale and bias per group of w->group (a multiple of 32). The
// loop runs over pairs of blocks with no per-group loop, whose overhead showed at group 32/64.
INLINE void F(affine_n)(const lw *w, int row, const void *xv, long xs, int nx, float *out, int four, int sdt) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *x = (const lq8 *)xv;
	int ng = w->cols / w->group, nb = w->cols / 32, b = 0, sh = 0;
	while ((32 << sh) < w->group) sh++; // groups are 32 << sh elements (32, 64, 128)
	long g0 = (long)row * ng;
	__m256 a0[LAYA_NX], a1[LAYA_NX];
	float c0[LAYA_NX], c1[LAYA_NX];
	for (int r = 0; r < nx; r++) {
		a0[r] = a1[r] = _mm256_setzero_ps();
		c0[r] = c1[r] = 0;
	}
	// The 8-bit codes' shift by 128 joins the bias.
	const float shift = four ? 0 : 128;
	for (; b + 1 < nb; b += 2) {
		long ga = g0 + (b >> sh), gb = g0 + ((b + 1) >> sh);
		float sa = F(comp)(w->sc, sdt, ga), ba = F(comp)(w->bi, sdt, ga);
		float sb = F(comp)(w->sc, sdt, gb), bb = F(comp)(w->bi, sdt, gb);
		F(affine_blk)(p, x, xs, nx, four, b, sa, ba + shift * sa, a0, c0);
		F(affine_blk)(p, x, xs, nx, four, b + 1, sb, bb + shift * sb, a1, c1);
	}
	if (b < nb) {
		long ga = g0 + (b >> sh);
		float sa = F(comp)(w->sc, sdt, ga), ba = F(comp)(w->bi, sdt, ga);
		F(affine_blk)(p, x, xs, nx, four, b, sa, ba + shift * sa, a0, c0);
	}
	for (int r = 0; r < nx; r++) out[r] = F(hsum)(_mm256_add_ps(a0[r], a1[r])) + c0[r] + c1[r];
}
// affine_s fixes the scale dtype at compile time too: the conversion sits in the inner loop.
INLINE void F(affine_s)(const lw *w, int row, const void *x, long xs, int nx, float *out, int four) {
	switch (w->sdt) {
	case LS_F16: F(affine_n)(w, row, x, xs, nx, out, four, LS_F16); break;
	case LS_BF16: F(affine_n)(w, row, x, xs, nx, out, four, LS_BF16); break;
	default: F(affine_n)(w, row, x, xs, nx, out, four, LS_F32); break;
	}
}
DISPATCHK(aff4, affine_s, 1)
DISPATCHK(aff8, affine_s, 0)

// tile runs nw (1 or 2) consecutive Q4_0 (aff = 0) or 4-bit Affine (aff = 1) weight rows against
// the 8 activation rows r0..r0+7 held interleaved (x8, see laya_quantize): per block, each group
// of 4 weight codes is broadcast and multiplied with the same 4 elements of 8 rows at once, so
// one vector collects the block's dot products for 8 rows and is scaled once by the weight scale
// times the rows' scales. The zero point (-8*d for Q4_0, the bias for Affine) multiplies the
// rows' sums. It takes the 8 rows that wide leaves over, and the tiles of fewer than 16 rows.
// out receives 8 values per weight row.
INLINE void F(tile_n)(const lw *w, int row, const int8_t *x8, const float *xt, int nrows, int r0, float *out, int nw, int aff, int sdt) {
	int nb = w->cols / 32, sh = 0;
	long ng = 0;
	if (aff) {
		while ((32 << sh) < w->group) sh++;
		ng = w->cols / w->group;
	}
	const float *xd = xt + r0, *xds = xt + (long)nb * nrows + r0;
	// The rows' 16-row tile, then their half of it.
	const int8_t *xb = x8 + (long)(r0 / 16) * nb * 512 + 32 * ((r0 / 8) & 1);
	__m256 acc[2], corr[2];
	for (int v = 0; v < nw; v++) acc[v] = corr[v] = _mm256_setzero_ps();
	uint32_t codes[2][8] __attribute__((aligned(32)));
	for (int b = 0; b < nb; b++, xb += 512) {
		__m256 sv[2], zv[2];
		for (int v = 0; v < nw; v++) {
			const uint8_t *p = w->w + (long)(row + v) * w->rowbytes;
			__m256i q;
			if (aff) {
				long g = (long)(row + v) * ng + (b >> sh);
				sv[v] = _mm256_set1_ps(F(comp)(w->sc, sdt, g));
				zv[v] = _mm256_set1_ps(F(comp)(w->bi, sdt, g));
				q = F(nib32)(p + 16 * b);
			} else {
				const uint8_t *blk = p + 18 * b;
				float scale = F(half)(blk);
				sv[v] = _mm256_set1_ps(scale);
				zv[v] = _mm256_set1_ps(-8 * scale);
				q = F(nib32)(blk + 2);
			}
			_mm256_store_si256((__m256i *)codes[v], q);
		}
		__m256i s[2][2];
		for (int v = 0; v < nw; v++) s[v][0] = s[v][1] = _mm256_setzero_si256();
		for (int k = 0; k < 8; k++) {
			__m256i xv = LOADU(xb + 64 * k);
			for (int v = 0; v < nw; v++) {
				__m256i c = _mm256_set1_epi32((int)codes[v][k]);
#if VNNI
				s[v][k & 1] = _mm256_dpbusd_epi32(s[v][k & 1], c, xv);
#else
				s[v][k & 1] = _mm256_add_epi32(s[v][k & 1], F(dotu8)(c, xv));
#endif
			}
		}
		__m256 d = _mm256_loadu_ps(xd + (long)b * nrows), ds = _mm256_loadu_ps(xds + (long)b * nrows);
		for (int v = 0; v < nw; v++) {
			acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s[v][0], s[v][1])), _mm256_mul_ps(d, sv[v]), acc[v]);
			corr[v] = _mm256_fmadd_ps(ds, zv[v], corr[v]);
		}
	}
	for (int v = 0; v < nw; v++) _mm256_storeu_ps(out + 8 * v, _mm256_add_ps(acc[v], corr[v]));
}

// TILE2 expands a tile call for nw = 1 or 2 weight rows with everything else constant.
#define TILE2(aff, sdt)                                                                   \
	do {                                                                                  \
		if (nw == 2) F(tile_n)(w, row, x8, xt, nrows, r0, out, 2, aff, sdt);               \
		else F(tile_n)(w, row, x8, xt, nrows, r0, out, 1, aff, sdt);                       \
	} while (0)

static void F(tile8_q4_0)(const lw *w, int row, int nw, const int8_t *x8, const float *xt, int nrows, int r0, float *out) {
	TILE2(0, 0);
}

static void F(tile8_aff4)(const lw *w, int row, int nw, const int8_t *x8, const float *xt, int nrows, int r0, float *out) {
	switch (w->sdt) {
	case LS_F16: TILE2(1, LS_F16); break;
	case LS_BF16: TILE2(1, LS_BF16); break;
	default: TILE2(1, LS_F32); break;
	}
}
#undef TILE2

// The decoders write nw weight rows as 32 unsigned codes per block (in the order of their
// activations) with a float scale and zero per block, w = scale*code + zero; kinds whose zero
// is a fixed multiple of the scale (laya_impl.zk) leave zero unwritten.
static void F(decode_q4_0)(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero) {
	int nb = w->cols / 32;
	for (int v = 0; v < nw; v++) {
		const uint8_t *p = w->w + (long)(row + v) * w->rowbytes;
		for (int b = 0; b < nb; b++, codes += 32) {
			scale[v * nb + b] = F(half)(p + 18 * b);
			_mm256_storeu_si256((__m256i *)codes, F(nib32)(p + 18 * b + 2));
		}
	}
	(void)zero;
}

static void F(decode_q8_0)(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero) {
	int nb = w->cols / 32;
	for (int v = 0; v < nw; v++) {
		const uint8_t *p = w->w + (long)(row + v) * w->rowbytes;
		for (int b = 0; b < nb; b++, codes += 32) {
			scale[v * nb + b] = F(half)(p + 34 * b);
#if VNNI
			// q + 128 as an unsigned byte; the zero is -128*scale.
			_mm256_storeu_si256((__m256i *)codes, _mm256_xor_si256(LOADU(p + 34 * b + 2), _mm256_set1_epi8((char)0x80)));
#else
			// The signed codes themselves (LC_S8), with no zero.
			_mm256_storeu_si256((__m256i *)codes, LOADU(p + 34 * b + 2));
			zero[v * nb + b] = 0;
#endif
		}
	}
	(void)zero;
}

static void F(decode_q5_0)(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero) {
	int nb = w->cols / 32;
	const __m256i bitsel = _mm256_set1_epi64x(0x8040201008040201LL);
	const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
		2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
	for (int v = 0; v < nw; v++) {
		const uint8_t *p = w->w + (long)(row + v) * w->rowbytes;
		for (int b = 0; b < nb; b++, codes += 32) {
			const uint8_t *blk = p + 22 * b;
			uint32_t qh;
			memcpy(&qh, blk + 2, 4);
			__m256i hb = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread);
			hb = _mm256_cmpeq_epi8(_mm256_and_si256(hb, bitsel), bitsel);
			scale[v * nb + b] = F(half)(blk);
			_mm256_storeu_si256((__m256i *)codes,
				_mm256_or_si256(F(nib32)(blk + 6), _mm256_and_si256(hb, _mm256_set1_epi8(0x10))));
		}
	}
	(void)zero;
}

// decode_k handles Q4_K and Q5_K: sub-block j of a super-block has scale d*s_j and zero -dmin*m_j.
static void F(decode_k)(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero) {
	int five = w->kind == LK_Q5_K, bsize = five ? 176 : 144, nsb = w->cols / 256, nb = w->cols / 32;
	const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
	for (int v = 0; v < nw; v++) {
		const uint8_t *p = w->w + (long)(row + v) * w->rowbytes;
		for (int sb = 0; sb < nsb; sb++) {
			const uint8_t *blk = p + bsize * sb, *qs = blk + (five ? 48 : 16);
			float d = F(half)(blk), dmin = F(half)(blk + 2);
			__m256i qh = five ? LOADU(blk + 16) : _mm256_setzero_si256();
			for (int j = 0; j < 8; j++) {
				int sc, m;
				F(scale_min)(blk + 4, j, &sc, &m);
				scale[v * nb + 8 * sb + j] = d * (float)sc;
				zero[v * nb + 8 * sb + j] = -dmin * (float)m;
			}
			for (int g = 0; g < 4; g++, codes += 64) {
				__m256i x = LOADU(qs + 32 * g);
				__m256i lo = _mm256_and_si256(x, m4), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
				if (five) {
					lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g)), one), 4));
					hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g + 1)), one), 4));
				}
				_mm256_storeu_si256((__m256i *)codes, lo);
				_mm256_storeu_si256((__m256i *)(codes + 32), hi);
			}
		}
	}
}

// decode_q6k writes each of nw (1 or 2) Q6_K rows as two virtual rows (see laya_matmul): row
// 2v holds the first 16 codes of every block with the scale of those 16 and the zero point
// (32) in place of the last 16, row 2v+1 the other way round; w = scale*(code - 32).
static void F(decode_q6k)(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero) {
	int nsb = w->cols / 256, nb = w->cols / 32;
	const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3), z32 = _mm256_set1_epi8(32);
	const __m256i first = _mm256_setr_epi64x(-1, -1, 0, 0); // bytes 0-15
	for (int v = 0; v < nw; v++) {
		const uint8_t *p = w->w + (long)(row + v) * w->rowbytes;
		uint8_t *c0 = codes + (long)(2 * v) * nb * 32, *c1 = c0 + (long)nb * 32;
		float *s0 = scale + (long)(2 * v) * nb, *s1 = s0 + nb;
		for (int sb = 0; sb < nsb; sb++) {
			const uint8_t *blk = p + 210 * sb;
			const int8_t *sc = (const int8_t *)blk + 192;
			float d = F(half)(blk + 208);
			for (int h = 0; h < 2; h++) {
				__m256i qh = LOADU(blk + 128 + 32 * h), ql0 = LOADU(blk + 64 * h), ql1 = LOADU(blk + 64 * h + 32);
				for (int k = 0; k < 4; k++) {
					int b = 8 * sb + 4 * h + k;
					__m256i ql = k % 2 ? ql1 : ql0;
					__m256i lo = k < 2 ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
					__m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2), 4));
					_mm256_storeu_si256((__m256i *)(c0 + 32 * b), _mm256_blendv_epi8(z32, q, first));
					_mm256_storeu_si256((__m256i *)(c1 + 32 * b), _mm256_blendv_epi8(q, z32, first));
					s0[b] = d * (float)sc[8 * h + 2 * k];
					s1[b] = d * (float)sc[8 * h + 2 * k + 1];
				}
			}
		}
	}
	(void)zero;
}

// decode_aff handles 4- and 8-bit Affine rows (4-bit codes in nibble order, see laya_quantize).
// Scales and biases convert once per group and the scale dtype is fixed per loop.
INLINE void F(decode_aff_n)(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero, int sdt, int four) {
	int nb = w->cols / 32, per = w->group / 32;
	long ng = w->cols / w->group;
	for (int v = 0; v < nw; v++) {
		const uint8_t *p = w->w + (long)(row + v) * w->rowbytes;
		// Without VNNI, 8-bit codes are stored less 128 as signed bytes (LC_S8), the zero taking
		// the 128*scale back.
		const int s8 = !VNNI && !four;
		for (int b = 0; b < nb; b++, codes += 32) {
			__m256i c = four ? F(nib32)(p + 16 * b) : LOADU(p + 32 * b);
			_mm256_storeu_si256((__m256i *)codes, s8 ? _mm256_xor_si256(c, _mm256_set1_epi8((char)0x80)) : c);
		}
		for (long g = 0; g < ng; g++) {
			float sv = F(comp)(w->sc, sdt, (long)(row + v) * ng + g), zv = F(comp)(w->bi, sdt, (long)(row + v) * ng + g);
			if (s8) zv += 128 * sv;
			for (int i = 0; i < per; i++) {
				scale[v * nb + g * per + i] = sv;
				zero[v * nb + g * per + i] = zv;
			}
		}
	}
}

static void F(decode_aff)(const lw *w, int row, int nw, uint8_t *codes, float *scale, float *zero) {
	int four = w->kind == LK_AFF4;
	switch (w->sdt) {
	case LS_F16: F(decode_aff_n)(w, row, nw, codes, scale, zero, LS_F16, four); break;
	case LS_BF16: F(decode_aff_n)(w, row, nw, codes, scale, zero, LS_BF16, four); break;
	default: F(decode_aff_n)(w, row, nw, codes, scale, zero, LS_F32, four); break;
	}
}

#if VNNI
// wide runs nw (1..4) decoded weight rows (codes, scale and zero as the decoders write them, nb
// blocks per row) against nt*16 activation rows (nt = 1 or 2) in 512-bit vectors, each vector
// holding two 8-row tiles of x8: every group of 4 codes is broadcast from memory and multiplied
// with the same 4 elements of 16 rows at once. Four weight rows share each activation load and
// eight accumulators hide vpdpbusd's latency, so the loop is bound by the dot products. With
// zk != 0 every zero is zk*scale (Q4_0: -8), which saves a multiply-add per block. out receives
// nt*16 values per weight row.
INLINE void F(wide_n)(const uint8_t *codes, const float *scale, const float *zero, int nb, const int8_t *x8, const float *xt, int nrows, int r0, float *out, int nw, int nt, float zk, int g2) {
	const float *xd = xt + r0, *xds = xt + (long)nb * nrows + r0;
	const int8_t *xb = x8 + (long)(r0 / 16) * nb * 512;
	const long ts = (long)nb * 512; // bytes from one 16-row tile to the next
	const int32_t *cw = (const int32_t *)codes;
	const int step = g2 ? 2 : 1;
	__m512 acc[4][2], t[4][2];
	for (int v = 0; v < nw; v++)
		for (int u = 0; u < nt; u++) acc[v][u] = _mm512_setzero_ps();
	for (int b = 0; b < nb; b += step) {
		for (int j = 0; j < step; j++, xb += 512) {
			__m512i s[4][2];
			for (int v = 0; v < nw; v++)
				for (int u = 0; u < nt; u++) s[v][u] = _mm512_setzero_si512();
#pragma GCC unroll 8
			for (int k = 0; k < 8; k++) {
				__m512i xv[2];
				for (int u = 0; u < nt; u++) xv[u] = _mm512_loadu_si512(xb + u * ts + 64 * k);
				for (int v = 0; v < nw; v++) {
					__m512i c = _mm512_set1_epi32(cw[((long)v * nb + b + j) * 8 + k]);
					for (int u = 0; u < nt; u++) s[v][u] = _mm512_dpbusd_epi32(s[v][u], c, xv[u]);
				}
			}
			// t collects d_x*sum(code*q_x) (plus zk*ds_x when the zero is zk*scale) over the
			// blocks that share a scale.
			for (int u = 0; u < nt; u++) {
				__m512 d = _mm512_loadu_ps(xd + (long)(b + j) * nrows + 16 * u);
				__m512 z = zk != 0 ? _mm512_mul_ps(_mm512_loadu_ps(xds + (long)(b + j) * nrows + 16 * u), _mm512_set1_ps(zk))
						   : _mm512_setzero_ps();
				for (int v = 0; v < nw; v++)
					t[v][u] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s[v][u]), j ? t[v][u] : z);
			}
		}
		for (int u = 0; u < nt; u++) {
			__m512 ds = zk != 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(xds + (long)b * nrows + 16 * u);
			if (g2) ds = _mm512_add_ps(ds, _mm512_loadu_ps(xds + (long)(b + 1) * nrows + 16 * u));
			for (int v = 0; v < nw; v++) {
				acc[v][u] = _mm512_fmadd_ps(t[v][u], _mm512_set1_ps(scale[v * nb + b]), acc[v][u]);
				if (zk == 0) acc[v][u] = _mm512_fmadd_ps(ds, _mm512_set1_ps(zero[v * nb + b]), acc[v][u]);
			}
		}
	}
	for (int v = 0; v < nw; v++)
		for (int u = 0; u < nt; u++) _mm512_storeu_ps(out + 16 * (nt * v + u), acc[v][u]);
}

// WIDE4 expands a wide call for nw = 1..4 weight rows with everything else constant.
#define WIDE4(nt, prop, g2)                                                                                \
	do {                                                                                                   \
		switch (nw) {                                                                                      \
		case 4: F(wide_n)(codes, scale, zero, nb, x8, xt, nrows, r0, out, 4, nt, prop ? zk : 0, g2); break; \
		case 3: F(wide_n)(codes, scale, zero, nb, x8, xt, nrows, r0, out, 3, nt, prop ? zk : 0, g2); break; \
		case 2: F(wide_n)(codes, scale, zero, nb, x8, xt, nrows, r0, out, 2, nt, prop ? zk : 0, g2); break; \
		default: F(wide_n)(codes, scale, zero, nb, x8, xt, nrows, r0, out, 1, nt, prop ? zk : 0, g2); break; \
		}                                                                                                  \
	} while (0)

// With g2 (only for kinds with their own zeros), blocks b and b+1 (b even) share their scale and
// zero, so the float work of the two is one multiply-add per row pair.
static void F(wide)(const uint8_t *codes, const float *scale, const float *zero, float zk, int cls, int g2, int nw, int nb,
	const int8_t *x8, const float *xt, int nrows, int r0, int nt, float *out) {
	(void)cls; // vpdpbusd widens every product of unsigned codes
	if (zk != 0) {
		if (nt == 2) WIDE4(2, 1, 0);
		else WIDE4(1, 1, 0);
	} else if (g2) {
		if (nt == 2) WIDE4(2, 0, 1);
		else WIDE4(1, 0, 1);
	} else {
		if (nt == 2) WIDE4(2, 0, 0);
		else WIDE4(1, 0, 0);
	}
}
#undef WIDE4
#else
// wide2 is wide for 256-bit vectors: nw (1 or 2) decoded weight rows against the 16 activation
// rows r0..r0+15 (two 8-row halves of one x8 tile). vpmaddubsw sums pairs of products in 16
// bits: with LC_U4 codes (below 16) a whole block's pairs add up without overflow (8 groups * 2
// * 15 * 127 < 2^15), so they widen to 32 bits once per block instead of once per group; LC_S8
// codes take the usual sign trick (|code| times activation with the code's sign), whose pairs
// stay within 2 * 128 * 127. out receives 16 values per weight row.
INLINE void F(wide2_n)(const uint8_t *codes, const float *scale, const float *zero, int nb, const int8_t *x8, const float *xt, int nrows, int r0, float *out, int nw, float zk, int cls) {
	const int small = cls == LC_U4;
	const float *xd = xt + r0, *xds = xt + (long)nb * nrows + r0;
	const int8_t *xb = x8 + (long)(r0 / 16) * nb * 512;
	const int32_t *cw = (const int32_t *)codes;
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[2][2];
	for (int v = 0; v < nw; v++) acc[v][0] = acc[v][1] = _mm256_setzero_ps();
	for (int b = 0; b < nb; b++, xb += 512) {
		__m256i s[2][2];
		for (int v = 0; v < nw; v++) s[v][0] = s[v][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++) {
			__m256i x0 = LOADU(xb + 64 * k), x1 = LOADU(xb + 64 * k + 32);
			for (int v = 0; v < nw; v++) {
				__m256i c = _mm256_set1_epi32(cw[((long)v * nb + b) * 8 + k]), p0, p1;
				if (cls == LC_S8) {
					__m256i a = _mm256_sign_epi8(c, c);
					p0 = _mm256_maddubs_epi16(a, _mm256_sign_epi8(x0, c));
					p1 = _mm256_maddubs_epi16(a, _mm256_sign_epi8(x1, c));
				} else {
					p0 = _mm256_maddubs_epi16(c, x0);
					p1 = _mm256_maddubs_epi16(c, x1);
				}
				if (small) {
					s[v][0] = _mm256_add_epi16(s[v][0], p0);
					s[v][1] = _mm256_add_epi16(s[v][1], p1);
				} else {
					s[v][0] = _mm256_add_epi32(s[v][0], _mm256_madd_epi16(p0, ones));
					s[v][1] = _mm256_add_epi32(s[v][1], _mm256_madd_epi16(p1, ones));
				}
			}
		}
		for (int u = 0; u < 2; u++) {
			__m256 d = _mm256_loadu_ps(xd + (long)b * nrows + 8 * u), ds = _mm256_loadu_ps(xds + (long)b * nrows + 8 * u);
			__m256 zd = _mm256_mul_ps(ds, _mm256_set1_ps(zk));
			for (int v = 0; v < nw; v++) {
				__m256i t = small ? _mm256_madd_epi16(s[v][u], ones) : s[v][u];
				__m256 sv = _mm256_set1_ps(scale[v * nb + b]);
				if (zk != 0) {
					acc[v][u] = _mm256_fmadd_ps(_mm256_fmadd_ps(d, _mm256_cvtepi32_ps(t), zd), sv, acc[v][u]);
				} else {
					__m256 f = _mm256_mul_ps(d, _mm256_cvtepi32_ps(t));
					acc[v][u] = _mm256_fmadd_ps(ds, _mm256_set1_ps(zero[v * nb + b]), _mm256_fmadd_ps(f, sv, acc[v][u]));
				}
			}
		}
	}
	for (int v = 0; v < nw; v++)
		for (int u = 0; u < 2; u++) _mm256_storeu_ps(out + 16 * v + 8 * u, acc[v][u]);
}

// wide splits its nw (1..4) rows by nt*16 activation rows into calls of wide2_n, which keeps
// its accumulators within the sixteen 256-bit registers.
static void F(wide)(const uint8_t *codes, const float *scale, const float *zero, float zk, int cls, int g2, int nw, int nb,
	const int8_t *x8, const float *xt, int nrows, int r0, int nt, float *out) {
	(void)g2; // the 256-bit kernel scales every block
	float tmp[2 * 16];
#define WIDE2(n, zk, cls) F(wide2_n)(c, sc, z, nb, x8, xt, nrows, r0 + 16 * u, tmp, n, zk, cls)
	for (int v = 0; v < nw; v += 2) {
		int n = nw - v < 2 ? 1 : 2;
		const uint8_t *c = codes + (long)v * nb * 32;
		const float *sc = scale + (long)v * nb, *z = zero + (long)v * nb;
		for (int u = 0; u < nt; u++) {
			if (zk != 0 && cls == LC_U4) n == 2 ? WIDE2(2, zk, LC_U4) : WIDE2(1, zk, LC_U4);
			else if (zk != 0) n == 2 ? WIDE2(2, zk, LC_U7) : WIDE2(1, zk, LC_U7);
			else if (cls == LC_U4) n == 2 ? WIDE2(2, 0, LC_U4) : WIDE2(1, 0, LC_U4);
			else if (cls == LC_S8) n == 2 ? WIDE2(2, 0, LC_S8) : WIDE2(1, 0, LC_S8);
			else n == 2 ? WIDE2(2, 0, LC_U7) : WIDE2(1, 0, LC_U7);
			for (int j = 0; j < n; j++) memcpy(out + (long)(v + j) * nt * 16 + 16 * u, tmp + 16 * j, 16 * sizeof(float));
		}
	}
#undef WIDE2
}
#endif

// pairdot is the exact integer 254*dot(q, m) + dot(q, r) of one block's 4-bit codes q against a
// residual pair's main codes m and remainder codes r (whose scale is the main one's / 254, see
// laya_quantize), in 8 lanes. A block's total is at most 32*15*127*255 < 2^24 in magnitude, so it
// converts to float exactly.
static inline __m256i F(pairdot)(__m256i q, __m256i m, __m256i r) {
#if VNNI
	// The main products' pairs (at most 2*15*127 each) take their factor 254 in a 16-bit dot.
	__m256i s = _mm256_dpwssd_epi32(_mm256_setzero_si256(), _mm256_maddubs_epi16(q, m), _mm256_set1_epi16(254));
	return _mm256_dpbusd_epi32(s, q, r);
#else
	return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(q, m), _mm256_set1_epi16(254)),
		_mm256_madd_epi16(_mm256_maddubs_epi16(q, r), _mm256_set1_epi16(1)));
#endif
}

// dot2 is dotu8 for two blocks at once: lo and hi hold the low and high nibbles of both blocks'
// codes (one block per 128-bit half), xl and xh the matching activation halves (x8 by pairs); lanes
// 0-3 sum the first block, lanes 4-7 the second.
static inline __m256i F(dot2)(__m256i lo, __m256i hi, __m256i xl, __m256i xh) {
#if VNNI
	return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, xl), hi, xh);
#else
	// Each 16-bit product pair is at most 2*15*127 in magnitude, so the sums do not saturate.
	return _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo, xl), _mm256_maddubs_epi16(hi, xh)), _mm256_set1_epi16(1));
#endif
}

// pairdot2 is pairdot for two blocks laid out as in dot2: main halves ml, mh and remainder halves
// rl, rh.
static inline __m256i F(pairdot2)(__m256i lo, __m256i hi, __m256i ml, __m256i mh, __m256i rl, __m256i rh) {
	__m256i m = _mm256_add_epi16(_mm256_maddubs_epi16(lo, ml), _mm256_maddubs_epi16(hi, mh));
#if VNNI
	__m256i s = _mm256_dpwssd_epi32(_mm256_setzero_si256(), m, _mm256_set1_epi16(254));
	return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(s, lo, rl), hi, rh);
#else
	__m256i r = _mm256_add_epi16(_mm256_maddubs_epi16(lo, rl), _mm256_maddubs_epi16(hi, rh));
	return _mm256_add_epi32(_mm256_madd_epi16(m, _mm256_set1_epi16(254)), _mm256_madd_epi16(r, _mm256_set1_epi16(1)));
#endif
}

// scale8 adds eight blocks' integer sums times their scales into acc and acc2: d[j] holds partial
// sums of blocks 2j (lanes 0-3) and 2j+1 (lanes 4-7), sx block b's scale in lane b. Each d[j]
// takes its blocks' scales spread by one permute, which costs fewer shuffles than reducing the
// sums to one lane per block first (the shuffle ports are also what the scale inserts use).
INLINE void F(scale8)(const __m256i *d, __m256 sx, __m256 *acc, __m256 *acc2) {
	*acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[0]), _mm256_permutevar8x32_ps(sx, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)), *acc);
	*acc2 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[1]), _mm256_permutevar8x32_ps(sx, _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3)), *acc2);
	*acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[2]), _mm256_permutevar8x32_ps(sx, _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5)), *acc);
	*acc2 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[3]), _mm256_permutevar8x32_ps(sx, _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7)), *acc2);
}

// vec runs one Q4_0 (aff = 0) or 4-bit Affine (aff = 1) row against one activation row (pair = 0)
// or one residual pair (pair = 1: main row x, remainder row x + xs), eight blocks at a time: the
// float scaling is four multiply-adds per eight blocks, with the weight scales converted
// together, the activation scales read from xt and the codes from x8 by block pairs (nrows =
// 1 + pair, see laya_quantize); the last blocks (fewer than 8) take x. A pair
// costs a second integer dot product per block but no more float work: its two sums combine
// exactly (pairdot) and take the remainder's scale.
INLINE void F(vec_n)(const lw *w, int row, const lq8 *x, long xs, const float *xt, const int8_t *x8, float *out, int aff, int sdt, int pair) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const lq8 *xr = x + xs;
	const float *xd = xt, *xds = xt + w->cols / 32;
	int nb = w->cols / 32, sh = 0, b = 0, ngr = 0;
	long g0 = 0;
	if (aff) {
		while ((32 << sh) < w->group) sh++;
		g0 = (long)row * (w->cols / w->group);
		ngr = 8 >> sh ? 8 >> sh : 1; // groups spanned by 8 blocks
	}
	__m256 acc = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), corr = _mm256_setzero_ps();
	const __m256i m4 = _mm256_set1_epi8(15);
	const __m256i spread = _mm256_setr_epi32(0 >> sh, 1 >> sh, 2 >> sh, 3 >> sh, 4 >> sh, 5 >> sh, 6 >> sh, 7 >> sh);
	for (; b + 8 <= nb; b += 8) {
		// Decode streams each weight once: fetch LAYA_PF bytes ahead (rows are contiguous) so
		// that the next rows' loads do not wait on memory.
		const char *ahead = (const char *)p + (aff ? 16 : 18) * b + LAYA_PF;
		_mm_prefetch(ahead, _MM_HINT_T0);
		_mm_prefetch(ahead + 64, _MM_HINT_T0);
		if (!aff) _mm_prefetch(ahead + 128, _MM_HINT_T0);
		__m256 scale, zero;
		if (aff) {
			long gi = g0 + (b >> sh);
			__m256 s8, z8;
			if (gi + 8 <= (long)w->rows * (w->cols / w->group)) { // 8 values readable
				s8 = F(comp8)(w->sc, sdt, gi);
				z8 = F(comp8)(w->bi, sdt, gi);
			} else {
				float sv[8] = {0}, zv[8] = {0};
				for (int i = 0; i < ngr; i++) {
					sv[i] = F(comp)(w->sc, sdt, gi + i);
					zv[i] = F(comp)(w->bi, sdt, gi + i);
				}
				s8 = _mm256_loadu_ps(sv);
				z8 = _mm256_loadu_ps(zv);
			}
			scale = _mm256_permutevar8x32_ps(s8, spread);
			zero = _mm256_permutevar8x32_ps(z8, spread);
		} else {
			// The eight half scales meet in two 64-bit registers and move over in two
			// transfers: eight 16-bit inserts would compete with the block sums for the shuffle
			// ports, and a vector load of just-stored halves would stall on store forwarding.
			const uint8_t *blk = p + 18 * b;
			uint64_t l = (uint64_t)F(u16)(blk) | (uint64_t)F(u16)(blk + 18) << 16 | (uint64_t)F(u16)(blk + 36) << 32 |
				(uint64_t)F(u16)(blk + 54) << 48;
			uint64_t u = (uint64_t)F(u16)(blk + 72) | (uint64_t)F(u16)(blk + 90) << 16 | (uint64_t)F(u16)(blk + 108) << 32 |
				(uint64_t)F(u16)(blk + 126) << 48;
			__m128i h = _mm_insert_epi64(_mm_cvtsi64_si128((long long)l), (long long)u, 1);
			scale = _mm256_cvtph_ps(h);
			zero = _mm256_mul_ps(scale, _mm256_set1_ps(-8));
		}
		__m256i d[4];
		for (int i = 0; i < 8; i += 2) {
			__m256i v;
			if (aff) {
				v = LOADU(p + 16 * (b + i));
			} else {
				const uint8_t *blk = p + 18 * (b + i) + 2;
				v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)blk)),
					_mm_loadu_si128((const __m128i *)(blk + 18)), 1);
			}
			__m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
			const int8_t *xa = x8 + 32 * (b + i), *ra = xa + w->cols;
			d[i / 2] = pair ? F(pairdot2)(lo, hi, LOADU(xa), LOADU(xa + 32), LOADU(ra), LOADU(ra + 32))
					: F(dot2)(lo, hi, LOADU(xa), LOADU(xa + 32));
		}
		// For a pair, xt holds the remainder's d and the pair's ds sum (see laya_quantize).
		__m256 xs8 = _mm256_loadu_ps(xd + b), xds8 = _mm256_loadu_ps(xds + b);
		F(scale8)(d, _mm256_mul_ps(scale, xs8), &acc, &acc2);
		corr = _mm256_fmadd_ps(zero, xds8, corr);
	}
	float tail = 0;
	for (; b < nb; b++) { // fewer than 8 blocks left
		float scale, zero;
		__m256i q;
		if (aff) {
			scale = F(comp)(w->sc, sdt, g0 + (b >> sh));
			zero = F(comp)(w->bi, sdt, g0 + (b >> sh));
			q = F(nib32)(p + 16 * b);
		} else {
			scale = F(half)(p + 18 * b);
			zero = -8 * scale;
			q = F(nib32)(p + 18 * b + 2);
		}
		if (pair) {
			__m256i s = F(pairdot)(q, LOADU(x[b].q), LOADU(xr[b].q));
			tail += xr[b].d * scale * (float)F(hsumi)(s) + zero * (x[b].ds + xr[b].ds);
		} else {
			tail += x[b].d * scale * (float)F(hsumi)(F(dotu8)(q, LOADU(x[b].q))) + zero * x[b].ds;
		}
	}
	*out = F(hsum)(_mm256_add_ps(_mm256_add_ps(acc, acc2), corr)) + tail;
}

static void F(vec_q4_0)(const lw *w, int row, const lq8 *x, const float *xt, const int8_t *x8, float *out) {
	F(vec_n)(w, row, x, 0, xt, x8, out, 0, 0, 0);
}

static void F(vecpair_q4_0)(const lw *w, int row, const lq8 *x, long xs, const float *xt, const int8_t *x8, float *out) {
	F(vec_n)(w, row, x, xs, xt, x8, out, 0, 0, 1);
}

static void F(vec_aff4)(const lw *w, int row, const lq8 *x, const float *xt, const int8_t *x8, float *out) {
	switch (w->sdt) {
	case LS_F16: F(vec_n)(w, row, x, 0, xt, x8, out, 1, LS_F16, 0); break;
	case LS_BF16: F(vec_n)(w, row, x, 0, xt, x8, out, 1, LS_BF16, 0); break;
	default: F(vec_n)(w, row, x, 0, xt, x8, out, 1, LS_F32, 0); break;
	}
}

static void F(vecpair_aff4)(const lw *w, int row, const lq8 *x, long xs, const float *xt, const int8_t *x8, float *out) {
	switch (w->sdt) {
	case LS_F16: F(vec_n)(w, row, x, xs, xt, x8, out, 1, LS_F16, 1); break;
	case LS_BF16: F(vec_n)(w, row, x, xs, xt, x8, out, 1, LS_BF16, 1); break;
	default: F(vec_n)(w, row, x, xs, xt, x8, out, 1, LS_F32, 1); break;
	}
}

// vk is vec for Q4_K (five = 0) and Q5_K rows, a super-block (eight sub-blocks of 32 codes)
// at a time: the 6-bit scales and mins unpack in general-purpose registers, each group of 64
// codes is dotted with its two activation blocks as they lie in x (one block per vector), and
// the two results are folded into one vector of both blocks' lanes, scaled as in vec.
INLINE void F(vk_n)(const lw *w, int row, const lq8 *x, long xs, const float *xt, float *out, int five, int pair) {
	const uint8_t *p = w->w + (long)row * w->rowbytes;
	const lq8 *xr = x + xs;
	int nsb = w->cols / 256, nb = w->cols / 32, bsize = five ? 176 : 144;
	const float *xd = xt, *xds = xt + nb;
	__m256 acc = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), corr = _mm256_setzero_ps();
	const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
	for (int sb = 0; sb < nsb; sb++) {
		const uint8_t *blk = p + (long)bsize * sb, *qs = blk + (five ? 48 : 16);
		const char *ahead = (const char *)blk + LAYA_PF;
		_mm_prefetch(ahead, _MM_HINT_T0);
		_mm_prefetch(ahead + 64, _MM_HINT_T0);
		_mm_prefetch(ahead + 128, _MM_HINT_T0);
		uint32_t u0, u1, u2;
		memcpy(&u0, blk + 4, 4);
		memcpy(&u1, blk + 8, 4);
		memcpy(&u2, blk + 12, 4);
		// Bytes j of sc and mn are sub-block j's scale and min (see scale_min).
		uint64_t sc = (u0 & 0x3f3f3f3f) | (uint64_t)((u2 & 0x0f0f0f0f) | ((u0 >> 6) & 0x03030303) << 4) << 32;
		uint64_t mn = (u1 & 0x3f3f3f3f) | (uint64_t)(((u2 >> 4) & 0x0f0f0f0f) | ((u1 >> 6) & 0x03030303) << 4) << 32;
		__m256 scale = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc))), _mm256_set1_ps(F(half)(blk)));
		__m256 mins = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mn))), _mm256_set1_ps(F(half)(blk + 2)));
		__m256i qh = five ? LOADU(blk + 16) : _mm256_setzero_si256(), dd[4];
		for (int g = 0; g < 4; g++) {
			__m256i v = LOADU(qs + 32 * g);
			__m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
			if (five) {
				lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g)), one), 4));
				hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g + 1)), one), 4));
			}
			const lq8 *a = x + 8 * sb + 2 * g, *ar = xr + 8 * sb + 2 * g;
			__m256i s0, s1;
			if (pair) {
				s0 = F(pairdot)(lo, LOADU(a[0].q), LOADU(ar[0].q));
				s1 = F(pairdot)(hi, LOADU(a[1].q), LOADU(ar[1].q));
			} else {
				s0 = F(dotu8)(lo, LOADU(a[0].q));
				s1 = F(dotu8)(hi, LOADU(a[1].q));
			}
			dd[g] = _mm256_add_epi32(_mm256_permute2x128_si256(s0, s1, 0x20), _mm256_permute2x128_si256(s0, s1, 0x31));
		}
		F(scale8)(dd, _mm256_mul_ps(scale, _mm256_loadu_ps(xd + 8 * sb)), &acc, &acc2);
		corr = _mm256_fmadd_ps(mins, _mm256_loadu_ps(xds + 8 * sb), corr);
	}
	*out = F(hsum)(_mm256_sub_ps(_mm256_add_ps(acc, acc2), corr));
}

static void F(vec_k)(const lw *w, int row, const lq8 *x, const float *xt, const int8_t *x8, float *out) {
	(void)x8;
	if (w->kind == LK_Q5_K) F(vk_n)(w, row, x, 0, xt, out, 1, 0);
	else F(vk_n)(w, row, x, 0, xt, out, 0, 0);
}

static void F(vecpair_k)(const lw *w, int row, const lq8 *x, long xs, const float *xt, const int8_t *x8, float *out) {
	(void)x8;
	if (w->kind == LK_Q5_K) F(vk_n)(w, row, x, xs, xt, out, 1, 1);
	else F(vk_n)(w, row, x, xs, xt, out, 0, 1);
}

// v6 is vec for Q6_K rows, a super-block at a time. Each block's integer sums keep its two
// 16-code halves in separate lanes (0-3 and 4-7), so every lane takes its half's scale in float
// with no horizontal sums until the end; the zero point (32) multiplies the halves' activation
// sums, which laya_quantize lays out for a single row at xt + 2*nb.
INLINE void F(v6_n)(const lw *w, int row, const lq8 *x, long xs, const float *xt, float *out, int pair) {
	const uint8_t *p = w->w + (long)row * w->rowbytes;
	const lq8 *xr = x + xs;
	int nsb = w->cols / 256, nb = w->cols / 32;
	const float *xd = xt, *xh = xt + 2 * nb;
	__m256 acc = _mm256_setzero_ps(), corr = _mm256_setzero_ps();
	const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
	for (int sb = 0; sb < nsb; sb++) {
		const uint8_t *blk = p + 210L * sb;
		const char *ahead = (const char *)blk + LAYA_PF;
		_mm_prefetch(ahead, _MM_HINT_T0);
		_mm_prefetch(ahead + 64, _MM_HINT_T0);
		_mm_prefetch(ahead + 128, _MM_HINT_T0);
		_mm_prefetch(ahead + 192, _MM_HINT_T0);
		// sf[0] holds blocks 0-3's half scales (block j's at 2j, 2j+1), sf[1] blocks 4-7's.
		__m128i sc = _mm_loadu_si128((const __m128i *)(blk + 192));
		__m256 d = _mm256_set1_ps(F(half)(blk + 208));
		__m256 sf[2] = {_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), d),
			_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), d)};
		corr = _mm256_fmadd_ps(sf[0], _mm256_loadu_ps(xh + 16 * sb), corr);
		corr = _mm256_fmadd_ps(sf[1], _mm256_loadu_ps(xh + 16 * sb + 8), corr);
		for (int h = 0; h < 2; h++) {
			__m256i qh = LOADU(blk + 128 + 32 * h), ql0 = LOADU(blk + 64 * h), ql1 = LOADU(blk + 64 * h + 32);
			for (int k = 0; k < 4; k++) {
				int j = 4 * h + k, b = 8 * sb + j;
				__m256i ql = k % 2 ? ql1 : ql0;
				__m256i lo = k < 2 ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
				__m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2), 4));
				__m256i t = pair ? F(pairdot)(q, LOADU(x[b].q), LOADU(xr[b].q)) : F(dotu8)(q, LOADU(x[b].q));
				__m256i idx = _mm256_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1);
				__m256 f = _mm256_mul_ps(_mm256_permutevar8x32_ps(sf[h], idx), _mm256_broadcast_ss(xd + b));
				acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), f, acc);
			}
		}
	}
	*out = F(hsum)(acc) - 32 * F(hsum)(corr);
}

static void F(vec_q6k)(const lw *w, int row, const lq8 *x, const float *xt, const int8_t *x8, float *out) {
	(void)x8;
	F(v6_n)(w, row, x, 0, xt, out, 0);
}

static void F(vecpair_q6k)(const lw *w, int row, const lq8 *x, long xs, const float *xt, const int8_t *x8, float *out) {
	(void)x8;
	F(v6_n)(w, row, x, xs, xt, out, 1);
}

static inline __m256 F(load8w)(const uint8_t *p, int kind) {
	if (kind == LK_F32) return _mm256_loadu_ps((const float *)p);
	__m128i h = _mm_loadu_si128((const __m128i *)p);
	if (kind == LK_F16) return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline float F(load1w)(const uint8_t *p, int kind, int i) {
	if (kind == LK_F32) {
		float f;
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	uint16_t h;
	memcpy(&h, p + 2 * i, 2);
	if (kind == LK_F16) return _cvtsh_ss(h);
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

INLINE void F(float_n)(const lw *w, int row, const void *xv, long xs, int nx, float *out) {
	const uint8_t *p = w->w + row * w->rowbytes;
	const float *x = (const float *)xv;
	int kind = w->kind, esz = kind == LK_F32 ? 4 : 2, n = w->cols, i = 0;
	__m256 acc[2][LAYA_NX];
	for (int r = 0; r < nx; r++) acc[0][r] = acc[1][r] = _mm256_setzero_ps();
	for (; i + 16 <= n; i += 16) {
		__m256 w0 = F(load8w)(p + esz * i, kind), w1 = F(load8w)(p + esz * (i + 8), kind);
		for (int r = 0; r < nx; r++) {
			acc[0][r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * xs + i), acc[0][r]);
			acc[1][r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + r * xs + i + 8), acc[1][r]);
		}
	}
	for (int r = 0; r < nx; r++) {
		float s = F(hsum)(_mm256_add_ps(acc[0][r], acc[1][r]));
		for (int j = i; j < n; j++) s += F(load1w)(p, kind, j) * x[r * xs + j];
		out[r] = s;
	}
}
DISPATCH(float)

// fwide runs nw (1..FW) F32, F16 or BF16 weight rows against nx (1..LAYA_NX) float activation
// rows: each converted weight vector serves every activation row and each activation load every
// weight row, so prefill is bound by the multiply-adds rather than by loads. out[v*LAYA_NX + r]
// receives weight row v against activation row r.
#if VNNI
#define FW 4
#else
#define FW 2
#endif
INLINE void F(fwide_n)(const lw *w, int row, int nw, const float *x, long xs, int nx, float *out, int kind) {
	int esz = kind == LK_F32 ? 4 : 2, n = w->cols, i = 0;
	const uint8_t *p[FW];
	__m256 acc[FW][LAYA_NX];
	for (int v = 0; v < nw; v++) {
		p[v] = w->w + (long)(row + v) * w->rowbytes;
		for (int r = 0; r < nx; r++) acc[v][r] = _mm256_setzero_ps();
	}
	for (; i + 8 <= n; i += 8) {
		__m256 wv[FW];
		for (int v = 0; v < nw; v++) wv[v] = F(load8w)(p[v] + (long)esz * i, kind);
		for (int r = 0; r < nx; r++) {
			__m256 xv = _mm256_loadu_ps(x + r * xs + i);
			for (int v = 0; v < nw; v++) acc[v][r] = _mm256_fmadd_ps(wv[v], xv, acc[v][r]);
		}
	}
	for (int v = 0; v < nw; v++) {
		for (int r = 0; r < nx; r++) {
			float sum = F(hsum)(acc[v][r]);
			for (int j = i; j < n; j++) sum += F(load1w)(p[v], kind, j) * x[r * xs + j];
			out[v * LAYA_NX + r] = sum;
		}
	}
}

static void F(fwide)(const lw *w, int row, int nw, const float *x, long xs, int nx, float *out) {
#define FW_NX(k, nwc)                                                       \
	switch (nx) {                                                           \
	case 4: F(fwide_n)(w, row, nwc, x, xs, 4, out, k); break;               \
	case 3: F(fwide_n)(w, row, nwc, x, xs, 3, out, k); break;               \
	case 2: F(fwide_n)(w, row, nwc, x, xs, 2, out, k); break;               \
	default: F(fwide_n)(w, row, nwc, x, xs, 1, out, k); break;              \
	}
#define FW_KIND(nwc)                                                        \
	switch (w->kind) {                                                      \
	case LK_F16: FW_NX(LK_F16, nwc); break;                                 \
	case LK_BF16: FW_NX(LK_BF16, nwc); break;                               \
	default: FW_NX(LK_F32, nwc); break;                                     \
	}
	if (nw == FW) {
		FW_KIND(FW);
	} else {
		for (int v = 0; v < nw; v++, out += LAYA_NX, row++) { // a last group of fewer rows
			FW_KIND(1);
		}
	}
#undef FW_KIND
#undef FW_NX
}
#undef FW


static inline float F(dot)(const float *a, const float *b, int n) {
	__m256 acc = _mm256_setzero_ps();
	int i = 0;
	for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
	float s = F(hsum)(acc);
	for (; i < n; i++) s += a[i] * b[i];
	return s;
}

// dot8 returns the dot products of a against the 8 rows at b (stride ld), n a multiple of 8:
// each row's products accumulate in their own vector, and one transposing reduction leaves
// the 8 sums in one vector, instead of a horizontal sum per row.
static inline __m256 F(dot8)(const float *a, const float *b, long ld, int n) {
	__m256 s[8];
	for (int j = 0; j < 8; j++) s[j] = _mm256_setzero_ps();
	for (int i = 0; i < n; i += 8) {
		__m256 av = _mm256_loadu_ps(a + i);
		for (int j = 0; j < 8; j++) s[j] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + j * ld + i), s[j]);
	}
	__m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(s[0], s[1]), _mm256_hadd_ps(s[2], s[3]));
	__m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(s[4], s[5]), _mm256_hadd_ps(s[6], s[7]));
	return _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
}

// attention: with head sizes a multiple of 8 the scores come 8 keys at a time, and the values
// are summed a key at a time into 64 outputs held in registers, so each score is broadcast once
// per 64 outputs (prefill spent 3.9% of its time here on the 2-vCPU machine).
static void F(attention)(const float *q, const float *k, const float *v, float *out, float *sc,
	int heads, int group, int hd, int kvw, int pos, int lo, int hi, float scale) {
	const int wide = hd % 8 == 0;
	for (int it = lo; it < hi; it++) {
		int r = it / heads, h = it % heads, n = pos + r + 1, ko = (h / group) * hd;
		const float *qh = q + (long)it * hd;
		__m256 mv = _mm256_set1_ps(-INFINITY);
		int t = 0;
		if (wide)
			for (; t + 8 <= n; t += 8) {
				__m256 d = _mm256_mul_ps(F(dot8)(qh, k + (long)t * kvw + ko, kvw, hd), _mm256_set1_ps(scale));
				_mm256_storeu_ps(sc + t, d);
				mv = _mm256_max_ps(mv, d);
			}
		__m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mv), _mm256_extractf128_ps(mv, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		float m = fmaxf(_mm_cvtss_f32(m4), _mm_cvtss_f32(_mm_shuffle_ps(m4, m4, 1)));
		for (; t < n; t++) {
			sc[t] = F(dot)(qh, k + (long)t * kvw + ko, hd) * scale;
			m = fmaxf(m, sc[t]);
		}
		__m256 zs = _mm256_setzero_ps();
		mv = _mm256_set1_ps(m);
		t = 0;
		for (; t + 8 <= n; t += 8) {
			__m256 e = F(exp)(_mm256_sub_ps(_mm256_loadu_ps(sc + t), mv));
			_mm256_storeu_ps(sc + t, e);
			zs = _mm256_add_ps(zs, e);
		}
		float z = F(hsum)(zs);
		for (; t < n; t++) z += (sc[t] = expf(sc[t] - m));
		float *o = out + (long)it * hd, iz = 1 / z;
		const float *vh = v + ko;
		int i = 0;
		for (; i + 64 <= hd; i += 64) {
			__m256 a[8];
			for (int j = 0; j < 8; j++) a[j] = _mm256_setzero_ps();
			for (int u = 0; u < n; u++) {
				__m256 p = _mm256_set1_ps(sc[u]);
				const float *vu = vh + (long)u * kvw + i;
				for (int j = 0; j < 8; j++) a[j] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vu + 8 * j), a[j]);
			}
			for (int j = 0; j < 8; j++) _mm256_storeu_ps(o + i + 8 * j, _mm256_mul_ps(a[j], _mm256_set1_ps(iz)));
		}
		for (; i + 8 <= hd; i += 8) {
			__m256 a0 = _mm256_setzero_ps();
			for (int u = 0; u < n; u++) a0 = _mm256_fmadd_ps(_mm256_set1_ps(sc[u]), _mm256_loadu_ps(vh + (long)u * kvw + i), a0);
			_mm256_storeu_ps(o + i, _mm256_mul_ps(a0, _mm256_set1_ps(iz)));
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
	const __m256 one = _mm256_set1_ps(1);
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(g + i);
		__m256 e = F(exp)(_mm256_sub_ps(_mm256_setzero_ps(), x));
		__m256 y = _mm256_div_ps(x, _mm256_add_ps(one, e));
		_mm256_storeu_ps(dst + i, _mm256_mul_ps(y, _mm256_loadu_ps(u + i)));
	}
	for (; i < n; i++) dst[i] = g[i] / (1 + expf(-g[i])) * u[i];
}

static void F(gelu_mul)(float *dst, const float *g, const float *u, int n) {
	int i = 0;
	const __m256 one = _mm256_set1_ps(1), k = _mm256_set1_ps(LAYA_GELU_K), c = _mm256_set1_ps(0.044715f);
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(g + i);
		__m256 e = F(exp)(_mm256_mul_ps(k, _mm256_fmadd_ps(_mm256_mul_ps(c, x), _mm256_mul_ps(x, x), x)));
		_mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
	}
	for (; i < n; i++) dst[i] = g[i] / (1 + expf(LAYA_GELU_K * (g[i] + 0.044715f * g[i] * g[i] * g[i]))) * u[i];
}

static const laya_impl F(impl) = {
	.quantize = F(quantize),
	.remainder = F(remainder),
	.dot = {
		[LK_F32] = F(float), [LK_F16] = F(float), [LK_BF16] = F(float),
		[LK_Q8_0] = F(q8_0), [LK_Q4_0] = F(q4_0), [LK_Q5_0] = F(q5_0),
		[LK_Q4_K] = F(q45k), [LK_Q5_K] = F(q45k), [LK_Q6_K] = F(q6k),
		[LK_AFF4] = F(aff4), [LK_AFF8] = F(aff8),
	},
	.fwide = F(fwide),
	.fwnw =
#if VNNI
		4,
#else
		2,
#endif
	.tile8 = {[LK_Q4_0] = F(tile8_q4_0), [LK_AFF4] = F(tile8_aff4)},
	.decode = {
		[LK_Q4_0] = F(decode_q4_0), [LK_Q5_0] = F(decode_q5_0), [LK_Q4_K] = F(decode_k), [LK_Q5_K] = F(decode_k),
		[LK_Q6_K] = F(decode_q6k), [LK_AFF4] = F(decode_aff), [LK_Q8_0] = F(decode_q8_0), [LK_AFF8] = F(decode_aff),
	},
	.cls = {
		[LK_Q4_0] = LC_U4, [LK_Q4_K] = LC_U4, [LK_AFF4] = LC_U4,
#if !VNNI
		[LK_Q8_0] = LC_S8, [LK_AFF8] = LC_S8,
#endif
	},
#if VNNI
	.zk = {[LK_Q4_0] = -8, [LK_Q8_0] = -128, [LK_Q5_0] = -16, [LK_Q6_K] = -32},
#else
	.zk = {[LK_Q4_0] = -8, [LK_Q5_0] = -16, [LK_Q6_K] = -32},
#endif
	.wide = F(wide),
	.vec = {[LK_Q4_0] = F(vec_q4_0), [LK_AFF4] = F(vec_aff4), [LK_Q4_K] = F(vec_k), [LK_Q5_K] = F(vec_k), [LK_Q6_K] = F(vec_q6k)},
	.vecpair = {[LK_Q4_0] = F(vecpair_q4_0), [LK_AFF4] = F(vecpair_aff4), [LK_Q4_K] = F(vecpair_k), [LK_Q5_K] = F(vecpair_k), [LK_Q6_K] = F(vecpair_q6k)},
	.attention = F(attention),
	.silu_mul = F(silu_mul),
	.gelu_mul = F(gelu_mul),
};

#undef LOADU
#undef DISPATCH
#undef DISPATCHK
#undef INLINE
