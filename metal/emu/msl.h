// msl.h makes Metal Shading Language kernels compile as C++17 with g++ and run under the SIMT
// emulator in simt_linux.cpp. It covers exactly the subset of MSL that metal/kernels uses: address-space
// qualifiers, scalar and small vector types, IEEE half with round-to-nearest-even, metal:: math,
// simd and quad collectives, threadgroup memory and barriers, and simdgroup_matrix.
//
// Every emulated GPU thread is a fiber, so collectives and barriers really wait for the other
// threads of the simdgroup or threadgroup. Threadgroup variables become static thread_local: one
// copy per OS thread, shared by the fibers of the threadgroup that thread is running. Because of
// that, a kernel must only declare threadgroup arrays (never a threadgroup variable with an
// initializer) and must not pass threadgroup pointers to helper functions.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;

// Address spaces are plain memory here; [[attributes]] are ignored by g++ (-Wno-attributes) and
// read by the binding generator instead.
//
// MSL_STRICT is the build of make check-metal (metal/internal/checkmetal), which only
// type-checks the kernels with clang: device, constant and threadgroup become distinct clang
// address spaces and thread the default one, so a pointer or reference that crosses address
// spaces, which Metal rejects, does not compile; constant is also const, as Metal's constant
// memory is read-only. MSL_AS_COPY(T) declares what Metal allows and C++ would not: copying a
// plain struct T out of any address space into a thread value (declared only: the strict build
// is never linked). checkmetal adds it to the kernels' plain structs, the header's own value
// types carry it here.
#define kernel
#define thread
#ifdef MSL_STRICT
#define MSL_AS_DEVICE __attribute__((address_space(1)))
#define MSL_AS_CONSTANT __attribute__((address_space(2)))
#define MSL_AS_THREADGROUP __attribute__((address_space(3)))
#define device MSL_AS_DEVICE
#define constant const MSL_AS_CONSTANT
#define threadgroup static MSL_AS_THREADGROUP
#define MSL_AS_COPY(T)                                                                     \
  T(const T&) = default;                                                                   \
  T& operator=(const T&) = default;                                                        \
  T(const MSL_AS_DEVICE T&);                                                               \
  T(const MSL_AS_CONSTANT T&);                                                             \
  T(const MSL_AS_THREADGROUP T&);                                                          \
  T& operator=(const MSL_AS_DEVICE T&);                                                    \
  T& operator=(const MSL_AS_CONSTANT T&);                                                  \
  T& operator=(const MSL_AS_THREADGROUP T&);
#else
#define device
#define constant
#define threadgroup static thread_local
#define MSL_AS_COPY(T)
#endif

namespace msl {
namespace rt {

// Exchange publishes v to the calling thread's simdgroup, waits until every thread of the
// simdgroup has published, and returns the 32 lane slots (valid for lanes below Width()).
const uint64_t* Exchange(uint64_t v);
// Width is the number of threads in the calling thread's simdgroup.
uint32_t Width();
// Lane is the calling thread's index in its simdgroup.
uint32_t Lane();
// Barrier waits until every thread of the threadgroup reaches a barrier.
void Barrier();

template <class T>
uint64_t Pack(T v) {
  static_assert(sizeof(T) <= 8, "simd value too large");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}

template <class T>
T Unpack(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

// Pow2 is 2^e (C++14 has no hexadecimal float literals).
constexpr float Pow2(int e) {
  float r = 1;
  for (; e > 0; e--) r *= 2;
  for (; e < 0; e++) r /= 2;
  return r;
}

// Seed is the emulator's seed (emu.Seed in Go), from which fast-math errors derive.
uint64_t Seed();

// Noise is a value in [-1, 1) fixed by the function fn, its argument x and the seed: a GPU's
// approximation is a fixed function of its input, so equal arguments give equal results.
inline float Noise(uint32_t fn, float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint64_t h = (Seed() ^ (uint64_t(fn) << 32 | bits)) + 0x9e3779b97f4a7c15ull;  // splitmix64
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return float(int32_t(uint32_t(h >> 32))) * Pow2(-31);
}

// WithinUlps moves r, the precise value of fn(x), by up to bound-1 units in the last place (the
// precise value is itself up to one off), never past infinity or through zero.
inline float WithinUlps(uint32_t fn, float x, float r, float bound) {
  long k = std::lround(Noise(fn, x) * (std::floor(bound) - 1));
  if (!std::isfinite(r) || r == 0 || k == 0) return r;
  uint32_t u;
  std::memcpy(&u, &r, 4);
  int64_t mag = int64_t(u & 0x7fffffffu) + k;
  if (mag <= 0 || mag >= 0x7f800000) return r;
  u = (u & 0x80000000u) | uint32_t(mag);
  std::memcpy(&r, &u, 4);
  return r;
}

// WithinAbs moves r, the precise value of fn(x), by less than bound, leaving room for the
// rounding of the sum and the precise value's own error.
inline float WithinAbs(uint32_t fn, float x, float r, float bound) {
  if (!std::isfinite(r)) return r;
  float ulp = std::nextafter(std::fabs(r), INFINITY) - std::fabs(r);
  return r + Noise(fn, x) * std::fmax(bound - 2 * ulp, 0.0f);
}

}  // namespace rt
}  // namespace msl

// half is IEEE binary16. Conversions round to nearest even (GCC's _Float16); arithmetic between
// halves rounds each result to half as the GPU does, mixed arithmetic promotes to float. The
// strict check uses clang's _Float16 itself, a scalar type like Metal's half, which converts
// out of any address space.
#ifdef MSL_STRICT
typedef _Float16 half;
#else
struct half {
  _Float16 v;
  half() = default;
  template <class T, class = std::enable_if_t<std::is_arithmetic<T>::value>>
  explicit half(T f) : v(static_cast<_Float16>(static_cast<float>(f))) {}
  operator float() const { return static_cast<float>(v); }
  friend half operator+(half a, half b) { return half(float(a) + float(b)); }
  friend half operator-(half a, half b) { return half(float(a) - float(b)); }
  friend half operator*(half a, half b) { return half(float(a) * float(b)); }
  friend half operator/(half a, half b) { return half(float(a) / float(b)); }
  half operator-() const { return half(-float(*this)); }
  half& operator+=(half b) { return *this = *this + b; }
  half& operator*=(half b) { return *this = *this * b; }
};
#endif

// bfloat keeps the top 16 bits of a float, rounding to nearest even.
struct bfloat {
  uint16_t bits;
  bfloat() = default;
  MSL_AS_COPY(bfloat)
  template <class T, class = std::enable_if_t<std::is_arithmetic<T>::value>>
  explicit bfloat(T x) {
    float f = static_cast<float>(x);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40);
    } else {
      bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
    }
  }
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// vec is MSL's vector types, with the component names and elementwise operators kernels use.
template <class T, int N>
struct vec;

#define MSL_VEC_OPS(N)                                                              \
  T& operator[](int i) { return (&x)[i]; }                                         \
  const T& operator[](int i) const { return (&x)[i]; }                             \
  friend vec operator+(vec a, vec b) {                                             \
    for (int i = 0; i < N; i++) a[i] += b[i];                                      \
    return a;                                                                      \
  }                                                                                \
  friend vec operator-(vec a, vec b) {                                             \
    for (int i = 0; i < N; i++) a[i] -= b[i];                                      \
    return a;                                                                      \
  }                                                                                \
  friend vec operator*(vec a, vec b) {                                             \
    for (int i = 0; i < N; i++) a[i] *= b[i];                                      \
    return a;                                                                      \
  }                                                                                \
  friend vec operator*(vec a, T s) {                                               \
    for (int i = 0; i < N; i++) a[i] *= s;                                         \
    return a;                                                                      \
  }                                                                                \
  vec& operator+=(vec b) { return *this = *this + b; }                             \
  template <class U>                                                               \
  explicit vec(const vec<U, N>& o) {                                               \
    for (int i = 0; i < N; i++) (*this)[i] = static_cast<T>(o[i]);                 \
  }

template <class T>
struct vec<T, 2> {
  T x, y;
  vec() = default;
  MSL_AS_COPY(vec)
  explicit vec(T s) : x(s), y(s) {}
  vec(T a, T b) : x(a), y(b) {}
  MSL_VEC_OPS(2)
};

template <class T>
struct vec<T, 3> {
  T x, y, z;
  vec() = default;
  MSL_AS_COPY(vec)
  explicit vec(T s) : x(s), y(s), z(s) {}
  vec(T a, T b, T c) : x(a), y(b), z(c) {}
  MSL_VEC_OPS(3)
};

template <class T>
struct vec<T, 4> {
  T x, y, z, w;
  vec() = default;
  MSL_AS_COPY(vec)
  explicit vec(T s) : x(s), y(s), z(s), w(s) {}
  vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
  MSL_VEC_OPS(4)
};
#undef MSL_VEC_OPS

#define MSL_VEC_TYPES(T, name) \
  typedef vec<T, 2> name##2;   \
  typedef vec<T, 3> name##3;   \
  typedef vec<T, 4> name##4;
MSL_VEC_TYPES(float, float)
MSL_VEC_TYPES(half, half)
MSL_VEC_TYPES(int, int)
MSL_VEC_TYPES(uint, uint)
MSL_VEC_TYPES(ushort, ushort)
MSL_VEC_TYPES(uchar, uchar)
MSL_VEC_TYPES(ulong, ulong)
#undef MSL_VEC_TYPES

namespace metal {

// mem_flags are accepted for source compatibility; every barrier orders all memory here.
enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2 };

template <class T, class U>
T as_type(U u) {
  static_assert(sizeof(T) == sizeof(U), "as_type needs equal sizes");
  T t;
  std::memcpy(&t, &u, sizeof(T));
  return t;
}

inline float abs(float x) { return std::fabs(x); }
inline float fabs(float x) { return std::fabs(x); }
inline float floor(float x) { return std::floor(x); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline bool isnan(float x) { return std::isnan(x); }
inline bool isinf(float x) { return std::isinf(x); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float fmax(float a, float b) { return std::fmax(a, b); }
inline float fmin(float a, float b) { return std::fmin(a, b); }
inline int max(int a, int b) { return a > b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline uint max(uint a, uint b) { return a > b ? a : b; }
inline uint min(uint a, uint b) { return a < b ? a : b; }
inline float clamp(float x, float lo, float hi) { return min(max(x, lo), hi); }
inline int clamp(int x, int lo, int hi) { return min(max(x, lo), hi); }
inline uint clamp(uint x, uint lo, uint hi) { return min(max(x, lo), hi); }
template <class T>
T select(T a, T b, bool c) {
  return c ? b : a;
}

namespace precise {
inline float exp(float x) { return std::exp(x); }
inline float exp2(float x) { return std::exp2(x); }
inline float log(float x) { return std::log(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline float rsqrt(float x) { return float(1 / std::sqrt(double(x))); }
inline float cos(float x) { return std::cos(x); }
inline float sin(float x) { return std::sin(x); }
inline float tanh(float x) { return std::tanh(x); }
inline float divide(float a, float b) { return a / b; }
}  // namespace precise

// fast:: returns what Metal's fast math may: the precise value moved by a pseudo-random error up
// to the bound of the Metal Shading Language specification (version 4, section 8.4, Table 8.2,
// "Accuracy of single-precision operations and functions with fast math enabled"):
//   exp(x), exp2(x)  <= 3 + floor(fabs(2 * x)) ulp
//   log(x)           absolute error <= 2^-21 for x in [0.5, 2], otherwise <= 3 ulp for x > 0
//   rsqrt            <= 2 ulp
//   sqrt(x)          implemented as x * rsqrt(x), special cases handled correctly
//   sin(x), cos(x)   absolute error <= 2^-13 for x in [-pi, pi], "larger otherwise"; outside we
//                    assume 2^-13 + |x| * 2^-22 (an argument reduction good to a few ulp of x)
//   x / y (divide)   <= 2.5 ulp for |y| in [2^-126, 2^126]
//   tanh(x)          implemented as (t - 1) / (t + 1), t = exp(2 * x)
// Fast math is Metal's default and the device does not turn it off, so the plain metal:: names
// are these, and kernel tolerances must hold with errors this large. Not imitated: the operator
// / (also <= 2.5 ulp under fast math) stays correctly rounded here, and the Metal compiler's
// reassociation and contraction of float expressions.
namespace fast {
enum : uint32_t { kExp = 1, kExp2, kLog, kRsqrt, kSin, kCos, kDivide };

inline float exp(float x) { return msl::rt::WithinUlps(kExp, x, std::exp(x), 3 + std::floor(std::fabs(2 * x))); }
inline float exp2(float x) { return msl::rt::WithinUlps(kExp2, x, std::exp2(x), 3 + std::floor(std::fabs(2 * x))); }
inline float log(float x) {
  if (x >= 0.5f && x <= 2) return msl::rt::WithinAbs(kLog, x, std::log(x), msl::rt::Pow2(-21));
  return x > 0 ? msl::rt::WithinUlps(kLog, x, std::log(x), 3) : std::log(x);
}
inline float rsqrt(float x) { return msl::rt::WithinUlps(kRsqrt, x, precise::rsqrt(x), 2); }
inline float sqrt(float x) { return x > 0 && std::isfinite(x) ? x * rsqrt(x) : std::sqrt(x); }
inline float trig_bound(float x) {
  using msl::rt::Pow2;
  return std::fabs(x) <= 3.14159265f ? Pow2(-13) : Pow2(-13) + std::fabs(x) * Pow2(-22);
}
inline float sin(float x) { return msl::rt::WithinAbs(kSin, x, std::sin(x), trig_bound(x)); }
inline float cos(float x) { return msl::rt::WithinAbs(kCos, x, std::cos(x), trig_bound(x)); }
inline float divide(float a, float b) {
  float q = a / b, m = std::fabs(b);
  // The error is fixed by the quotient here, as the noise takes one argument.
  return m >= msl::rt::Pow2(-126) && m <= msl::rt::Pow2(126) ? msl::rt::WithinUlps(kDivide, q, q, 2.5f) : q;
}
inline float tanh(float x) {
  float t = exp(2 * x);
  return std::isinf(t) ? 1.0f : (t - 1) / (t + 1);
}
}  // namespace fast

using fast::cos;
using fast::divide;
using fast::exp;
using fast::exp2;
using fast::log;
using fast::rsqrt;
using fast::sin;
using fast::sqrt;
using fast::tanh;

inline void threadgroup_barrier(mem_flags) { msl::rt::Barrier(); }
inline void simdgroup_barrier(mem_flags) { msl::rt::Exchange(0); }

// Simd collectives: every thread of the simdgroup must call them (no divergent calls; the
// emulator reports a deadlock otherwise). Reductions run in lane order, so they are
// deterministic.
template <class T>
T simd_sum(T v) {
  const uint64_t* s = msl::rt::Exchange(msl::rt::Pack(v));
  T r = msl::rt::Unpack<T>(s[0]);
  for (uint32_t i = 1; i < msl::rt::Width(); i++) r += msl::rt::Unpack<T>(s[i]);
  return r;
}

template <class T>
T simd_max(T v) {
  const uint64_t* s = msl::rt::Exchange(msl::rt::Pack(v));
  T r = msl::rt::Unpack<T>(s[0]);
  for (uint32_t i = 1; i < msl::rt::Width(); i++) r = max(r, msl::rt::Unpack<T>(s[i]));
  return r;
}

template <class T>
T simd_min(T v) {
  const uint64_t* s = msl::rt::Exchange(msl::rt::Pack(v));
  T r = msl::rt::Unpack<T>(s[0]);
  for (uint32_t i = 1; i < msl::rt::Width(); i++) r = min(r, msl::rt::Unpack<T>(s[i]));
  return r;
}

// lane_value returns lane src's value, or the caller's own when src is outside the simdgroup
// (what the hardware leaves in place for out-of-range shuffles).
template <class T>
T lane_value(T v, uint32_t src) {
  const uint64_t* s = msl::rt::Exchange(msl::rt::Pack(v));
  return src < msl::rt::Width() ? msl::rt::Unpack<T>(s[src]) : v;
}

template <class T>
T simd_shuffle(T v, ushort lane) {
  return lane_value(v, lane);
}
template <class T>
T simd_broadcast(T v, ushort lane) {
  return lane_value(v, lane);
}
template <class T>
T simd_shuffle_down(T v, ushort delta) {
  return lane_value(v, msl::rt::Lane() + delta);
}
template <class T>
T simd_shuffle_up(T v, ushort delta) {
  uint32_t l = msl::rt::Lane();
  return lane_value(v, l >= delta ? l - delta : 32u);
}
template <class T>
T simd_shuffle_xor(T v, ushort mask) {
  return lane_value(v, msl::rt::Lane() ^ mask);
}

// Quad collectives act on lanes 4k..4k+3 of the simdgroup.
template <class T>
T quad_sum(T v) {
  const uint64_t* s = msl::rt::Exchange(msl::rt::Pack(v));
  uint32_t base = msl::rt::Lane() & ~3u;
  T r = msl::rt::Unpack<T>(s[base]);
  for (uint32_t i = base + 1; i < base + 4 && i < msl::rt::Width(); i++) r += msl::rt::Unpack<T>(s[i]);
  return r;
}
template <class T>
T quad_shuffle(T v, ushort lane) {
  return lane_value(v, (msl::rt::Lane() & ~3u) + (lane & 3u));
}
template <class T>
T quad_shuffle_xor(T v, ushort mask) {
  return lane_value(v, msl::rt::Lane() ^ (mask & 3u));
}

// simdgroup_matrix: each emulated thread holds the whole tile. The operations are uniform over
// the simdgroup, so every thread computes the same tile the hardware spreads across its lanes.
// They need no synchronization of their own: as on the GPU, the memory they read or write is
// ordered only by the kernel's barriers.
template <class T, int R, int C>
struct simdgroup_matrix {
  T e[R][C];
  simdgroup_matrix() = default;
  explicit simdgroup_matrix(T v) {
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) e[r][c] = v;
  }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;

template <class T, int R, int C>
simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T v) {
  return simdgroup_matrix<T, R, C>(v);
}

// simdgroup_load reads the tile whose top-left element is src[origin.y*elements_per_row +
// origin.x]; transpose reads the transposed tile of that same source region.
template <class T, class S, int R, int C>
void simdgroup_load(simdgroup_matrix<T, R, C>& m, const S* src, ulong elements_per_row = C,
                    ulong2 origin = ulong2(0), bool transpose = false) {
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      ulong row = transpose ? c : r, col = transpose ? r : c;
      m.e[r][c] = T(src[(origin.y + row) * elements_per_row + origin.x + col]);
    }
}

template <class T, class D, int R, int C>
void simdgroup_store(const simdgroup_matrix<T, R, C>& m, D* dst, ulong elements_per_row = C,
                     ulong2 origin = ulong2(0)) {
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) dst[(origin.y + r) * elements_per_row + origin.x + c] = D(m.e[r][c]);
}

// simdgroup_multiply_accumulate sets d = a*b + c, accumulating in float.
template <class T, int M, int K, int N>
void simdgroup_multiply_accumulate(simdgroup_matrix<T, M, N>& d, const simdgroup_matrix<T, M, K>& a,
                                   const simdgroup_matrix<T, K, N>& b, const simdgroup_matrix<T, M, N>& c) {
  // Row by row with j innermost, so the compiler vectorizes what every lane repeats.
  simdgroup_matrix<T, M, N> out;
  for (int i = 0; i < M; i++) {
    float s[N];
    for (int j = 0; j < N; j++) s[j] = float(c.e[i][j]);
    for (int k = 0; k < K; k++) {
      float aik = float(a.e[i][k]);
      for (int j = 0; j < N; j++) s[j] += aik * float(b.e[k][j]);
    }
    for (int j = 0; j < N; j++) out.e[i][j] = T(s[j]);
  }
  d = out;
}

}  // namespace metal

// The attribute values a kernel parameter may ask for, converted to its declared type.
namespace msl {
struct Ids {
  uint3 tpig, tgpig, tpitg, tptg, tgpg;
  uint tiitg, tiisg, sgitg, sptg, tpsg;
};

template <class T>
T Attr(uint3 v);
template <>
inline uint Attr<uint>(uint3 v) { return v.x; }
template <>
inline ushort Attr<ushort>(uint3 v) { return static_cast<ushort>(v.x); }
template <>
inline uint2 Attr<uint2>(uint3 v) { return uint2(v.x, v.y); }
template <>
inline uint3 Attr<uint3>(uint3 v) { return v; }
template <>
inline ushort2 Attr<ushort2>(uint3 v) { return ushort2(ushort(v.x), ushort(v.y)); }
template <>
inline ushort3 Attr<ushort3>(uint3 v) { return ushort3(ushort(v.x), ushort(v.y), ushort(v.z)); }

// Scalar attributes (indices) read the same way as one-component grid attributes.
template <class T>
T Attr(uint v) {
  return static_cast<T>(v);
}

// Kernel is the generated trampoline type: it unpacks bound buffers and attributes and calls one
// kernel function for the current thread.
typedef void (*Kernel)(void* const* bufs, const Ids& ids);
}  // namespace msl

using namespace metal;
