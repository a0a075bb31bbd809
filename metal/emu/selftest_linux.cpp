// selftest_linux.cpp checks the parts of msl.h and the emulator that the production kernels do
// not all use (every collective, quad ops, attributes of 2-D threadgroups, barriers, deadlock
// detection, half and bfloat rounding, transposed simdgroup loads, the random threadgroup order
// and the fast-math error bounds) against expectations written out in plain C++. emu_selftest is
// called by the package's tests.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "emu.h"

namespace {

constexpr int kOps = 12;

// collectives writes, per thread, the result of every simd and quad operation on v = tid + 1.
kernel void collectives(device float* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]]) {
  float v = float(tid + 1);
  device float* o = out + tid * kOps;
  o[0] = simd_sum(v);
  o[1] = simd_max(v);
  o[2] = simd_min(v);
  o[3] = simd_shuffle_down(v, 1);
  o[4] = simd_shuffle_up(v, 3);
  o[5] = simd_shuffle_xor(v, 5);
  o[6] = simd_broadcast(v, 2);
  o[7] = simd_shuffle(v, ushort((lane * 7) % 32));
  o[8] = quad_sum(v);
  o[9] = quad_shuffle(v, 1);
  o[10] = quad_shuffle_xor(v, 2);
  o[11] = float(simd_sum(int(tid)));
}

// reverse reverses each threadgroup's slice of in through threadgroup memory and records the
// thread attributes of a 2-D grid.
kernel void reverse(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                    device uint* attrs [[buffer(2)]], uint2 tpig [[thread_position_in_grid]],
                    uint2 tgpig [[threadgroup_position_in_grid]], uint2 tpitg [[thread_position_in_threadgroup]],
                    uint tiitg [[thread_index_in_threadgroup]], uint2 tgpg [[threadgroups_per_grid]]) {
  threadgroup float tmp[64];
  uint group = tgpig.y * tgpg.x + tgpig.x;
  tmp[tiitg] = in[group * 64 + tiitg];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[group * 64 + tiitg] = tmp[63 - tiitg];
  device uint* a = attrs + (group * 64 + tiitg) * 4;
  a[0] = tpig.x;
  a[1] = tpig.y;
  a[2] = tpitg.x + 8 * tpitg.y;
  a[3] = group;
}

// divergent lets lane 0 leave before a collective the other lanes wait in.
kernel void divergent(device float* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
  if (lane == 0) return;
  out[lane] = simd_sum(1.0f);
}

kernel void matrix(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                   device float* out [[buffer(2)]]) {
  simdgroup_float8x8 ma, mb, mbt, mc = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  simdgroup_load(ma, a, 8);
  simdgroup_load(mb, b, 8);
  simdgroup_load(mbt, b, 8, ulong2(0), true);
  simdgroup_multiply_accumulate(mc, ma, mb, mc);
  simdgroup_store(mc, out, 8);
  simdgroup_multiply_accumulate(mc, ma, mbt, make_filled_simdgroup_matrix<float, 8, 8>(0.0f));
  simdgroup_store(mc, out + 64, 8);
}

// order records the order in which threadgroups run: thread 0 of each takes a ticket.
kernel void order(device uint* out, device uint* counter, uint g [[threadgroup_position_in_grid]],
                  uint tid [[thread_index_in_threadgroup]]) {
  if (tid == 0) out[g] = counter[0]++;
}

void kOrder(void* const* b, const msl::Ids& id) {
  order(static_cast<uint*>(b[0]), static_cast<uint*>(b[1]), id.tgpig.x, id.tiitg);
}

void kCollectives(void* const* b, const msl::Ids& id) {
  collectives(static_cast<float*>(b[0]), id.tiitg, id.tiisg);
}
void kReverse(void* const* b, const msl::Ids& id) {
  reverse(static_cast<const float*>(b[0]), static_cast<float*>(b[1]), static_cast<uint*>(b[2]),
          msl::Attr<uint2>(id.tpig), msl::Attr<uint2>(id.tgpig), msl::Attr<uint2>(id.tpitg), id.tiitg,
          msl::Attr<uint2>(id.tgpg));
}
void kDivergent(void* const* b, const msl::Ids& id) { divergent(static_cast<float*>(b[0]), id.tiisg); }
void kMatrix(void* const* b, const msl::Ids&) {
  matrix(static_cast<const float*>(b[0]), static_cast<const float*>(b[1]), static_cast<float*>(b[2]));
}

emu_dispatch dispatch(std::vector<void*> bufs, uint32_t gx, uint32_t gy, uint32_t tx, uint32_t ty) {
  emu_dispatch d{};
  d.nargs = static_cast<uint32_t>(bufs.size());
  for (size_t i = 0; i < bufs.size(); i++) d.args[i].buf = reinterpret_cast<uintptr_t>(bufs[i]);
  d.groups[0] = gx, d.groups[1] = gy, d.groups[2] = 1;
  d.threads[0] = tx, d.threads[1] = ty, d.threads[2] = 1;
  return d;
}

char msg[256];

const char* fail(const char* what, int i, double got, double want) {
  std::snprintf(msg, sizeof msg, "selftest: %s [%d]: got %g, want %g", what, i, got, want);
  return msg;
}

const char* checkCollectives() {
  const int n = 40;  // one full simdgroup and one of 8 lanes
  std::vector<float> out(n * kOps);
  if (const char* e = emu_run_kernel(kCollectives, dispatch({out.data()}, 1, 1, n, 1))) return e;
  for (int t = 0; t < n; t++) {
    int base = t / 32 * 32, lane = t % 32, w = t < 32 ? 32 : n - 32;
    auto v = [&](int l) { return l >= 0 && l < w ? float(base + l + 1) : float(t + 1); };
    float sum = 0, qsum = 0, isum = 0;
    for (int l = 0; l < w; l++) sum += base + l + 1, isum += base + l;
    for (int l = lane & ~3; l < (lane & ~3) + 4; l++) qsum += v(l);
    float want[kOps] = {sum, float(base + w), float(base + 1), v(lane + 1), lane >= 3 ? v(lane - 3) : v(lane),
                        v(lane ^ 5), v(2), v((lane * 7) % 32), qsum, v((lane & ~3) + 1), v(lane ^ 2), isum};
    for (int j = 0; j < kOps; j++)
      if (out[t * kOps + j] != want[j]) return fail("collective", t * kOps + j, out[t * kOps + j], want[j]);
  }
  return nullptr;
}

const char* checkReverse() {
  const int groups = 6, per = 64;
  std::vector<float> in(groups * per), out(groups * per);
  std::vector<uint> attrs(groups * per * 4);
  for (size_t i = 0; i < in.size(); i++) in[i] = float(i);
  if (const char* e = emu_run_kernel(kReverse, dispatch({in.data(), out.data(), attrs.data()}, 3, 2, 8, 8))) return e;
  for (int g = 0; g < groups; g++)
    for (int i = 0; i < per; i++) {
      int k = g * per + i;
      if (out[k] != in[g * per + 63 - i]) return fail("reverse", k, out[k], in[g * per + 63 - i]);
      uint gx = g % 3, gy = g / 3, lx = i % 8, ly = i / 8;
      uint want[4] = {gx * 8 + lx, gy * 8 + ly, uint(i), uint(g)};
      for (int j = 0; j < 4; j++)
        if (attrs[k * 4 + j] != want[j]) return fail("attribute", k * 4 + j, attrs[k * 4 + j], want[j]);
    }
  return nullptr;
}

const char* checkDivergent() {
  std::vector<float> out(32);
  const char* e = emu_run_kernel(kDivergent, dispatch({out.data()}, 1, 1, 32, 1));
  if (e == nullptr || std::string(e).find("deadlock") == std::string::npos) return "selftest: divergent collective not reported";
  return nullptr;
}

const char* checkMatrix() {
  std::vector<float> a(64), b(64), out(128);
  for (int i = 0; i < 64; i++) a[i] = float(i % 7) - 3, b[i] = float(i % 5) * 0.5f;
  if (const char* e = emu_run_kernel(kMatrix, dispatch({a.data(), b.data(), out.data()}, 1, 1, 32, 1))) return e;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) {
      float s = 1, st = 0;
      for (int k = 0; k < 8; k++) s += a[i * 8 + k] * b[k * 8 + j], st += a[i * 8 + k] * b[j * 8 + k];
      if (out[i * 8 + j] != s) return fail("multiply_accumulate", i * 8 + j, out[i * 8 + j], s);
      if (out[64 + i * 8 + j] != st) return fail("transposed load", i * 8 + j, out[64 + i * 8 + j], st);
    }
  return nullptr;
}

const char* checkRounding() {
  struct {
    float in, want;
  } halves[] = {
      {1 + 0x1p-11f, 1},             // tie: to even (down)
      {1 + 3 * 0x1p-11f, 1 + 0x1p-9f},  // tie: to even (up)
      {65504, 65504},                // largest finite
      {65520, INFINITY},             // tie at the top: to even, which overflows
      {0x1p-25f, 0},                 // subnormal tie: to even (zero)
      {3 * 0x1p-25f, 0x1p-23f},      // subnormal tie: to even (up)
      {-0.1f, -0.0999755859375f},    // nearest
  };
  for (int i = 0; i < int(sizeof halves / sizeof halves[0]); i++) {
    float got = float(half(halves[i].in));
    if (got != halves[i].want) return fail("half", i, got, halves[i].want);
  }
  float sum = float(half(1.0f) + half(0x1p-11f));  // half arithmetic rounds to half
  if (sum != 1.0f) return fail("half add", 0, sum, 1);
  struct {
    float in, want;
  } bf[] = {{1 + 0x1p-8f, 1}, {1 + 3 * 0x1p-8f, 1 + 0x1p-6f}, {-2.5f, -2.5f}};
  for (int i = 0; i < int(sizeof bf / sizeof bf[0]); i++) {
    float got = float(bfloat(bf[i].in));
    if (got != bf[i].want) return fail("bfloat", i, got, bf[i].want);
  }
  if (!std::isnan(float(bfloat(NAN)))) return "selftest: bfloat(NaN) is not NaN";
  return nullptr;
}

// checkOrder runs 64 threadgroups twice: each run must take every group once, not in id order,
// and the two runs must differ.
const char* checkOrder() {
  const int n = 64;
  std::vector<uint> first;
  for (int run = 0; run < 2; run++) {
    std::vector<uint> out(n), counter(1), seen(n);
    if (const char* e = emu_run_kernel(kOrder, dispatch({out.data(), counter.data()}, n, 1, 32, 1))) return e;
    bool inOrder = true;
    for (int g = 0; g < n; g++) {
      if (out[g] >= uint(n) || seen[out[g]]++) return fail("threadgroup order: ticket", g, out[g], -1);
      inOrder = inOrder && out[g] == uint(g);
    }
    if (inOrder) return "selftest: threadgroups ran in id order";
    if (run == 1 && out == first) return "selftest: two runs ran threadgroups in the same order";
    first = out;
  }
  return nullptr;
}

// ulps is |got - want| in units in the last place of want as a float.
double ulps(float got, double want) {
  float w = std::fabs(float(want));
  return std::fabs(got - want) / (std::nextafter(w, INFINITY) - w);
}

// checkFastMath checks that fast:: (and so metal::) functions stay within the bounds msl.h cites
// from Metal's specification, return the same value for the same argument, and do differ from
// the precise value often: otherwise the kernel tests would not see fast math's errors.
const char* checkFastMath() {
  int n = 0, moved = 0;
  auto count = [&](float got, float precise) {
    n++;
    moved += got != precise;
  };
  for (float x = -40; x < 20; x += 0.0371f) {
    float got = metal::exp(x);
    if (got != fast::exp(x)) return fail("metal::exp is not fast::exp", 0, got, fast::exp(x));
    if (ulps(got, std::exp(double(x))) > 3 + std::floor(std::fabs(2 * x))) return fail("fast::exp", int(x * 100), got, std::exp(double(x)));
    count(got, precise::exp(x));
    got = fast::exp2(x);
    if (ulps(got, std::exp2(double(x))) > 3 + std::floor(std::fabs(2 * x))) return fail("fast::exp2", int(x * 100), got, std::exp2(double(x)));
  }
  for (float x = -600; x < 600; x += 0.173f) {
    double bound = std::fabs(x) <= 3.14159265 ? 0x1p-13 : 0x1p-13 + std::fabs(x) * 0x1p-22;
    float s = metal::sin(x), c = metal::cos(x);
    if (std::fabs(s - std::sin(double(x))) > bound) return fail("fast::sin", int(x * 100), s, std::sin(double(x)));
    if (std::fabs(c - std::cos(double(x))) > bound) return fail("fast::cos", int(x * 100), c, std::cos(double(x)));
    if (s != metal::sin(x)) return "selftest: fast::sin returned two values for one argument";
    count(s, precise::sin(x));
  }
  for (float x = 1e-30f; x < 1e30f; x *= 1.37f) {
    float r = metal::rsqrt(x), l = metal::log(x);
    if (ulps(r, 1 / std::sqrt(double(x))) > 2) return fail("fast::rsqrt", 0, r, 1 / std::sqrt(double(x)));
    double wl = std::log(double(x));
    bool near1 = x >= 0.5f && x <= 2;
    if (near1 ? std::fabs(l - wl) > 0x1p-21 : ulps(l, wl) > 3) return fail("fast::log", 0, l, wl);
    float q = fast::divide(1.7f, x);
    if (x <= 0x1p126f && ulps(q, 1.7 / double(x)) > 2.5) return fail("fast::divide", 0, q, 1.7 / double(x));
    count(r, precise::rsqrt(x));
  }
  if (moved * 4 < n) return fail("fast math: results moved off the precise value", 0, moved, n);
  return nullptr;
}

}  // namespace

extern "C" const char* emu_selftest() {
  for (auto check : {checkCollectives, checkReverse, checkDivergent, checkMatrix, checkRounding, checkOrder, checkFastMath}) {
    if (const char* e = check()) return e;
  }
  return nullptr;
}
