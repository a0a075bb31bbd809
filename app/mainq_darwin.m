// Asynchronous hops onto the main queue. macdriver's core.Dispatch blocks when called twice
// from the main thread before the queue drains, which the event-tap callback would do.
// Each hop gets its own autorelease pool: the Go function may make AppKit calls that
// autorelease objects, and the pool drains as soon as it returns instead of whenever the main
// queue's owner gets round to it.
#import <Foundation/Foundation.h>
#include <dispatch/dispatch.h>
#include <stdint.h>

#include "mainq_darwin.h"

extern void layaRunMain(uintptr_t h);

static void trampoline(void *p) {
	@autoreleasepool {
		layaRunMain((uintptr_t)p);
	}
}

void layaAsyncMain(uintptr_t h) { dispatch_async_f(dispatch_get_main_queue(), (void *)h, trampoline); }
