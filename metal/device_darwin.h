// device_darwin.h is the C interface of device_darwin.m. mtl_dispatch mirrors metal.Dispatch
// field for field (same size and offsets as emu.h's emu_dispatch, asserted in device.go).
#ifndef LAYA_METAL_DARWIN_H
#define LAYA_METAL_DARWIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t buf;  // handle from mtl_new_buffer or mtl_wrap
  uint64_t off;  // byte offset
} mtl_arg;

typedef struct {
  uint32_t kid;
  uint32_t nargs;
  uint32_t groups[3];
  uint32_t threads[3];
  mtl_arg args[20];
  uint32_t nparams;
  uint32_t barrier;  // 1: a memory barrier precedes the dispatch
  uint32_t params[32];
} mtl_dispatch;

_Static_assert(sizeof(mtl_dispatch) == 488, "mtl_dispatch layout");
_Static_assert(offsetof(mtl_dispatch, args) == 32, "mtl_dispatch layout");
_Static_assert(offsetof(mtl_dispatch, params) == 360, "mtl_dispatch layout");

// mtl_init opens the default GPU, compiles src once per process and makes a pipeline for each
// of the n kernel names (ids are their indices). It returns NULL or an error to free().
char* mtl_init(const char* src, const char** names, int n);
// mtl_new_buffer returns a zeroed shared buffer, 0 on failure.
uint64_t mtl_new_buffer(size_t size);
// mtl_wrap_nocopy makes a buffer of the size bytes that start off bytes before p, in place:
// p-off is page-aligned and size a multiple of the page size (metal.noCopyRange decides). The
// caller keeps the memory mapped and unchanged. It returns 0 when Metal refuses the range.
uint64_t mtl_wrap_nocopy(const void* p, uint64_t off, size_t size);
// mtl_wrap_copy makes a buffer holding a copy of the n bytes at p, 0 on failure.
uint64_t mtl_wrap_copy(const void* p, size_t n);
// mtl_device_name returns the default GPU's name, to free(), and sets *family to the highest
// Apple GPU family it supports (7 for M1, 8 for M2, 9 for M3 and M4; 0 for none); NULL
// without a Metal device.
char* mtl_device_name(int* family);
void mtl_free(uint64_t h);
void mtl_write(uint64_t h, uint64_t off, const void* src, size_t n);
void mtl_read(uint64_t h, uint64_t off, void* dst, size_t n);
// mtl_stream_new returns a device's submission state, to release with mtl_stream_free after
// mtl_wait.
void* mtl_stream_new(void);
void mtl_stream_free(void* stream);
// mtl_submit encodes the n dispatches in command buffers of a concurrent encoder, a memory
// barrier before each dispatch whose barrier flag is set, and commits them without waiting.
// It returns NULL or an error to free(); command buffers committed before an error still run.
char* mtl_submit(void* stream, const mtl_dispatch* d, int n);
// mtl_wait waits for every command buffer the stream committed since the last mtl_wait. It
// returns NULL or the first one's error, to free().
char* mtl_wait(void* stream);
// mtl_wait_previous waits likewise for all but the command buffers of the last mtl_submit.
char* mtl_wait_previous(void* stream);

#endif
