#include <stdint.h>

// layaAsyncMain runs the Go function behind handle h on the main queue, later, in order.
void layaAsyncMain(uintptr_t h);
