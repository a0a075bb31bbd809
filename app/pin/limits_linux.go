package pin

// RLIMIT_MEMLOCK and RLIM_INFINITY from <sys/resource.h>; package syscall omits the former.
const (
	rlimitMemlock = 8
	rlimInfinity  = ^uint64(0)
)
