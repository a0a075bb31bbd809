// A DISPATCH_SOURCE_TYPE_MEMORYPRESSURE source is how macOS asks a process to give memory back
// before it starts compressing and swapping; Laya answers by releasing the model it can reload.
#include <dispatch/dispatch.h>

#include "pressure_darwin.h"

extern void layaMemoryPressure(void);

static dispatch_source_t source;

void layaObserveMemoryPressure(void) {
	if (source != NULL) {
		return;
	}
	source = dispatch_source_create(DISPATCH_SOURCE_TYPE_MEMORYPRESSURE, 0,
	                                DISPATCH_MEMORYPRESSURE_WARN | DISPATCH_MEMORYPRESSURE_CRITICAL,
	                                dispatch_get_main_queue());
	dispatch_source_set_event_handler(source, ^{
		layaMemoryPressure();
	});
	dispatch_resume(source);
}
