package pin

// RLIMIT_MEMLOCK and RLIM_INFINITY from <sys/resource.h>; package syscall omits them on darwin.
const (
	rlimitMemlock = 6
	rlimInfinity  = 1<<63 - 1
)
