// simt_linux.cpp runs a Metal dispatch on the CPU: threadgroups one after another in a
// pseudo-random order, the threads of a threadgroup as fibers on the calling OS thread. A fiber
// runs until it reaches a simd collective or a threadgroup barrier, then yields; the scheduler
// resumes it once every thread it waits for has arrived, so collectives and barriers have
// exactly the GPU's semantics. A pass in which no fiber can move is a divergent barrier or
// collective, reported as an error.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "emu.h"
#include "msl.h"

// Fiber switching. On x86-64 a switch saves the callee-saved registers on the old stack and
// swaps stack pointers (about as cheap as a function call); ucontext, the portable alternative,
// makes two signal-mask system calls per switch, which dominated the emulator's run time.
#if defined(__x86_64__)
extern "C" void laya_emu_switch(void** save_sp, void* new_sp);
asm(R"(
.text
.globl laya_emu_switch
.type laya_emu_switch,@function
laya_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size laya_emu_switch, .-laya_emu_switch
.section .note.GNU-stack,"",@progbits
.text
)");

struct Context {
  void* sp;
};

// makeContext prepares a stack whose first switch-in "returns" into fn as if it had been
// called: six zeroed callee-saved registers, then fn's address, then a null return address.
inline void makeContext(Context& c, char* stack, size_t size, void (*fn)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top);
  *--sp = nullptr;
  *--sp = reinterpret_cast<void*>(fn);
  for (int i = 0; i < 6; i++) *--sp = nullptr;
  c.sp = sp;
}

inline void switchContext(Context& from, Context& to) { laya_emu_switch(&from.sp, to.sp); }
#else
#include <ucontext.h>

struct Context {
  ucontext_t uc;
};

inline void makeContext(Context& c, char* stack, size_t size, void (*fn)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, fn, 0);
}

inline void switchContext(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

namespace msl {
namespace rt {
namespace {

constexpr size_t kStack = 64 << 10;

enum Wait { kRunnable, kSimd, kBarrier, kDone };

struct Group;

struct Fiber {
  Context ctx;
  Group* g;
  Ids ids;
  Wait wait;
  uint64_t target;
  uint32_t parity;
  uint64_t simdSeq, barSeq;
};

struct Simd {
  uint64_t arrivals[2];
  uint64_t slots[2][32];
  uint32_t width;
};

// The emulator's seed (emu_set_seed) and the number of runs so far, from which each run's
// random orders derive: a given seed and sequence of runs repeats exactly.
std::atomic<uint64_t> seed{0x9e3779b97f4a7c15ull};
std::atomic<uint64_t> runs{0};

// Rng is xorshift64*, seeded per run (emu_run) from the emulator's seed.
struct Rng {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  void reseed() {
    uint64_t z = seed.load(std::memory_order_relaxed) + 0x9e3779b97f4a7c15ull * (runs.fetch_add(1) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64: unrelated states for close inputs
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    s = (z ^ (z >> 31)) | 1;  // xorshift needs a nonzero state
  }
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dull;
  }
};

struct Group {
  Context sched;
  Rng rng;
  std::vector<uint32_t> order;   // fibers, shuffled every pass
  std::vector<uint32_t> groups;  // threadgroups of a dispatch, shuffled every dispatch
  std::vector<Fiber> fibers;
  std::vector<Simd> simds;
  uint64_t barArrivals;
  uint32_t threads;
  Kernel fn;
  void* const* bufs;
};

thread_local Fiber* cur;
thread_local std::vector<char*> stacks;

// entry runs one thread's kernel and never returns: a finished fiber switches to the scheduler,
// which does not resume it again.
void entry() {
  Fiber* f = cur;
  f->g->fn(f->g->bufs, f->ids);
  f->wait = kDone;
  switchContext(f->ctx, f->g->sched);
  std::abort();
}

void yield(Fiber* f) { switchContext(f->ctx, f->g->sched); }

bool ready(const Fiber& f) {
  switch (f.wait) {
    case kRunnable:
      return true;
    case kSimd:
      return f.g->simds[f.ids.sgitg].arrivals[f.parity] >= f.target;
    case kBarrier:
      return f.g->barArrivals >= f.target;
    case kDone:
      return false;
  }
  return false;
}

// runGroup runs one threadgroup to completion; it returns false on a deadlock.
bool runGroup(Group& g) {
  for (size_t i = 0; i < g.fibers.size(); i++) makeContext(g.fibers[i].ctx, stacks[i], kStack, entry);
  // Each pass resumes the fibers in a fresh pseudo-random order: a kernel whose result depends
  // on the order of threads between barriers (a missing barrier on the GPU) then gets wrong
  // results here too, instead of the benign order of thread ids.
  std::vector<uint32_t>& order = g.order;
  order.resize(g.fibers.size());
  for (uint32_t i = 0; i < order.size(); i++) order[i] = i;
  size_t done = 0;
  while (done < g.fibers.size()) {
    bool moved = false;
    for (size_t i = order.size(); i > 1; i--) std::swap(order[i - 1], order[g.rng.next() % i]);
    for (uint32_t idx : order) {
      Fiber& f = g.fibers[idx];
      if (!ready(f)) continue;
      f.wait = kRunnable;
      cur = &f;
      switchContext(g.sched, f.ctx);
      moved = true;
      if (f.wait == kDone) done++;
    }
    if (!moved) return false;
  }
  return true;
}

}  // namespace

uint64_t Seed() { return seed.load(std::memory_order_relaxed); }

const uint64_t* Exchange(uint64_t v) {
  Fiber* f = cur;
  Simd& s = f->g->simds[f->ids.sgitg];
  uint64_t seq = f->simdSeq++;
  f->parity = seq & 1;
  s.slots[f->parity][f->ids.tiisg] = v;
  s.arrivals[f->parity]++;
  // Slots of this parity are rewritten only at collective seq+2, which no lane reaches before
  // every lane has passed seq+1, i.e. after it has read these.
  f->target = (seq / 2 + 1) * s.width;
  f->wait = kSimd;
  yield(f);
  return s.slots[f->parity];
}

uint32_t Width() { return cur->g->simds[cur->ids.sgitg].width; }

uint32_t Lane() { return cur->ids.tiisg; }

void Barrier() {
  Fiber* f = cur;
  f->barSeq++;
  f->g->barArrivals++;
  f->target = f->barSeq * f->g->threads;
  f->wait = kBarrier;
  yield(f);
}

}  // namespace rt
}  // namespace msl

namespace {

// runKernel runs one dispatch of fn (d.kid is ignored), reusing g's allocations.
const char* runKernel(msl::Kernel fn, const emu_dispatch& d, msl::rt::Group& g) {
  using namespace msl::rt;
  if (d.nargs > EMU_MAX_ARGS || d.nparams > EMU_MAX_PARAMS) return "emu: bad argument count";
  uint3 tg(d.threads[0], d.threads[1], d.threads[2]);
  uint3 ng(d.groups[0], d.groups[1], d.groups[2]);
  uint32_t threads = tg.x * tg.y * tg.z;
  if (threads == 0 || threads > 1024) return "emu: threadgroup size must be 1..1024";
  while (stacks.size() < threads) stacks.push_back(static_cast<char*>(std::malloc(kStack)));

  void* bufs[EMU_MAX_ARGS + 1];
  for (uint32_t i = 0; i < d.nargs; i++)
    bufs[i] = reinterpret_cast<char*>(static_cast<uintptr_t>(d.args[i].buf)) + d.args[i].off;
  // The params block binds at the index after the last buffer, as the generator requires.
  bufs[d.nargs] = const_cast<uint32_t*>(d.params);

  uint32_t nsimd = (threads + 31) / 32;
  g.fn = fn;
  g.bufs = bufs;
  g.threads = threads;
  g.fibers.assign(threads, Fiber{});
  g.simds.assign(nsimd, Simd{});
  for (uint32_t s = 0; s < nsimd; s++) g.simds[s].width = s + 1 < nsimd ? 32 : threads - 32 * s;

  // Threadgroups run in a fresh pseudo-random order each dispatch, as a GPU promises no order:
  // a kernel in which one threadgroup reads what another writes then gets wrong results here
  // too, instead of the benign order of threadgroup ids.
  uint64_t ngroups = uint64_t(ng.x) * ng.y * ng.z;
  if (ngroups > (uint64_t(1) << 31)) return "emu: too many threadgroups";
  g.groups.resize(ngroups);
  for (uint32_t i = 0; i < ngroups; i++) g.groups[i] = i;
  for (size_t i = g.groups.size(); i > 1; i--) std::swap(g.groups[i - 1], g.groups[g.rng.next() % i]);
  for (uint32_t lin : g.groups) {
    uint32_t gx = lin % ng.x, gy = lin / ng.x % ng.y, gz = lin / ng.x / ng.y;
    g.barArrivals = 0;
    for (Simd& s : g.simds) s.arrivals[0] = s.arrivals[1] = 0;
    uint32_t i = 0;
    for (uint32_t z = 0; z < tg.z; z++)
      for (uint32_t y = 0; y < tg.y; y++)
        for (uint32_t x = 0; x < tg.x; x++, i++) {
          Fiber& f = g.fibers[i];
          f = Fiber{};
          f.g = &g;
          msl::Ids& id = f.ids;
          id.tgpig = uint3(gx, gy, gz);
          id.tpitg = uint3(x, y, z);
          id.tptg = tg;
          id.tgpg = ng;
          id.tpig = uint3(gx * tg.x + x, gy * tg.y + y, gz * tg.z + z);
          id.tiitg = i;
          id.tiisg = i % 32;
          id.sgitg = i / 32;
          id.sptg = nsimd;
          id.tpsg = 32;
        }
    if (!runGroup(g)) return "emu: deadlock: threads of a threadgroup disagree on barriers or simd collectives";
  }
  return nullptr;
}

}  // namespace

extern "C" void emu_set_seed(uint64_t s) { msl::rt::seed.store(s, std::memory_order_relaxed); }

extern "C" const char* emu_run(const emu_dispatch* d, int n) {
  msl::rt::Group g;
  g.rng.reseed();
  for (int i = 0; i < n; i++) {
    if (d[i].kid >= emu_kernel_count) return "emu: unknown kernel";
    if (const char* err = runKernel(emu_kernels[d[i].kid], d[i], g)) return err;
  }
  return nullptr;
}

const char* emu_run_kernel(msl::Kernel fn, const emu_dispatch& d) {
  msl::rt::Group g;
  g.rng.reseed();
  return runKernel(fn, d, g);
}
