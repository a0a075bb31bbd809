// emu.h is the C interface between the Go emulator device and the SIMT emulator. emu_dispatch
// mirrors metal.Dispatch field for field (checked by static asserts here and a Go test there).
#ifndef LAYA_EMU_H
#define LAYA_EMU_H

#include <stddef.h>
#include <stdint.h>

#define EMU_MAX_ARGS 20
#define EMU_MAX_PARAMS 32

typedef struct {
  uint64_t buf;  // base address of the buffer
  uint64_t off;  // byte offset into it
} emu_arg;

typedef struct {
  uint32_t kid;  // kernel: index into the generated kernel table
  uint32_t nargs;   // buffers bound at [[buffer(0..nargs-1)]]
  uint32_t groups[3];
  uint32_t threads[3];
  emu_arg args[EMU_MAX_ARGS];
  uint32_t nparams;  // 32-bit words of the params block bound at [[buffer(nargs)]]
  uint32_t barrier;  // 1: a memory barrier precedes the dispatch
  uint32_t params[EMU_MAX_PARAMS];
} emu_dispatch;

#ifdef __cplusplus
#define EMU_ASSERT static_assert
#else
#define EMU_ASSERT _Static_assert
#endif
EMU_ASSERT(sizeof(emu_dispatch) == 488, "emu_dispatch layout");
EMU_ASSERT(offsetof(emu_dispatch, args) == 32, "emu_dispatch layout");
EMU_ASSERT(offsetof(emu_dispatch, params) == 360, "emu_dispatch layout");

#ifdef __cplusplus
extern "C" {
#endif
// emu_set_seed sets the seed of the threadgroup and thread orders and of the fast-math errors.
void emu_set_seed(uint64_t seed);
// emu_run executes n dispatches in order; it returns NULL or a static error message.
const char* emu_run(const emu_dispatch* d, int n);
// emu_selftest checks the compatibility header and the emulator; NULL or a failure message.
const char* emu_selftest(void);
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
#include "msl.h"
// The generated table of kernel trampolines, in the order of the Go kernel ids.
extern const msl::Kernel emu_kernels[];
extern const uint32_t emu_kernel_count;
// emu_run_kernel runs one dispatch of a kernel outside the table (d.kid is ignored).
const char* emu_run_kernel(msl::Kernel fn, const emu_dispatch& d);
#endif

#endif
