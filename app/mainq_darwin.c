// Asynchronous hops onto the main queue. macdriver's core.Dispatch blocks when called twice
// from the main thread before the queue drains, which the event-tap callback would do.
#include <dispatch/dispatch.h>
#include <stdint.h>

#include "mainq_darwin.h"

extern void layaRunMain(uintptr_t h);

static void trampoline(void *p) { layaRunMain((uintptr_t)p); }

void layaAsyncMain(uintptr_t h) { dispatch_async_f(dispatch_get_main_queue(), (void *)h, trampoline); }
