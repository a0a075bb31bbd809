// simt_linux.cpp runs Metal dispatches on the CPU: threadgroups one after another in a
// pseudo-random order (those of the dispatches between two barriers interleaved), the threads
// of a threadgroup as fibers on the calling OS thread. A fiber
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
  std::vector<uint32_t> order;  // fibers, shuffled every pass
  // work is the (launch, threadgroup) pairs of a run of concurrent dispatches, shuffled.
  std::vector<std::pair<uint32_t, uint32_t>> work;
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

// Launch is a checked dispatch: its kernel, its bindings and its geometry.
struct Launch {
  msl::Kernel fn;
  void* bufs[EMU_MAX_ARGS + 1];
  uint3 tg, ng;
  uint32_t threads, nsimd;
};

// prepare checks d and resolves its bindings into l.
const char* prepare(msl::Kernel fn, const emu_dispatch& d, Launch& l) {
  if (d.nargs > EMU_MAX_ARGS || d.nparams > EMU_MAX_PARAMS) return "emu: bad argument count";
  l.fn = fn;
  l.tg = uint3(d.threads[0], d.threads[1], d.threads[2]);
  l.ng = uint3(d.groups[0], d.groups[1], d.groups[2]);
  l.threads = l.tg.x * l.tg.y * l.tg.z;
  if (l.threads == 0 || l.threads > 1024) return "emu: threadgroup size must be 1..1024";
  if (uint64_t(l.ng.x) * l.ng.y * l.ng.z > (uint64_t(1) << 31)) return "emu: too many threadgroups";
  l.nsimd = (l.threads + 31) / 32;
  for (uint32_t i = 0; i < d.nargs; i++)
    l.bufs[i] = reinterpret_cast<char*>(static_cast<uintptr_t>(d.args[i].buf)) + d.args[i].off;
  // The params block binds at the index after the last buffer, as the generator requires.
  l.bufs[d.nargs] = const_cast<uint32_t*>(d.params);
  return nullptr;
}

// runGroupOf runs threadgroup lin (linear id) of launch l, reusing g's allocations.
bool runGroupOf(const Launch& l, uint32_t lin, msl::rt::Group& g) {
  using namespace msl::rt;
  while (stacks.size() < l.threads) stacks.push_back(static_cast<char*>(std::malloc(kStack)));
  g.fn = l.fn;
  g.bufs = l.bufs;
  g.threads = l.threads;
  g.fibers.resize(l.threads);
  g.simds.assign(l.nsimd, Simd{});
  for (uint32_t s = 0; s < l.nsimd; s++) g.simds[s].width = s + 1 < l.nsimd ? 32 : l.threads - 32 * s;
  const uint3 tg = l.tg, ng = l.ng;
  uint32_t gx = lin % ng.x, gy = lin / ng.x % ng.y, gz = lin / ng.x / ng.y;
  g.barArrivals = 0;
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
        id.sptg = l.nsimd;
        id.tpsg = 32;
      }
  return runGroup(g);
}

const char* const kDeadlock = "emu: deadlock: threads of a threadgroup disagree on barriers or simd collectives";

// runLaunches runs the threadgroups of every launch of ls interleaved in a fresh pseudo-random
// order, as a GPU promises no order: neither among the threadgroups of one dispatch, so a
// kernel in which one threadgroup reads what another writes gets wrong results here too, nor
// among the dispatches between two memory barriers of a concurrent encoder, so a barrier that
// is missing between a dispatch and one that reads its output does too.
const char* runLaunches(const std::vector<Launch>& ls, msl::rt::Group& g) {
  std::vector<std::pair<uint32_t, uint32_t>>& work = g.work;
  work.clear();
  for (uint32_t k = 0; k < ls.size(); k++) {
    uint32_t n = ls[k].ng.x * ls[k].ng.y * ls[k].ng.z;
    for (uint32_t lin = 0; lin < n; lin++) work.emplace_back(k, lin);
  }
  for (size_t i = work.size(); i > 1; i--) std::swap(work[i - 1], work[g.rng.next() % i]);
  for (const auto& w : work)
    if (!runGroupOf(ls[w.first], w.second, g)) return kDeadlock;
  return nullptr;
}

}  // namespace

extern "C" void emu_set_seed(uint64_t s) { msl::rt::seed.store(s, std::memory_order_relaxed); }

extern "C" const char* emu_run(const emu_dispatch* d, int n) {
  msl::rt::Group g;
  g.rng.reseed();
  std::vector<Launch> segment;
  for (int i = 0; i < n;) {
    // A segment is a dispatch and those after it up to the next barrier flag.
    segment.clear();
    do {
      if (d[i].kid >= emu_kernel_count) return "emu: unknown kernel";
      segment.emplace_back();
      if (const char* err = prepare(emu_kernels[d[i].kid], d[i], segment.back())) return err;
      i++;
    } while (i < n && !d[i].barrier);
    if (const char* err = runLaunches(segment, g)) return err;
  }
  return nullptr;
}

const char* emu_run_kernel(msl::Kernel fn, const emu_dispatch& d) {
  msl::rt::Group g;
  g.rng.reseed();
  std::vector<Launch> one(1);
  if (const char* err = prepare(fn, d, one[0])) return err;
  return runLaunches(one, g);
}
