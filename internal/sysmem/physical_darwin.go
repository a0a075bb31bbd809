package sysmem

import "golang.org/x/sys/unix"

// Physical is the machine's RAM in bytes.
func Physical() (uint64, error) { return unix.SysctlUint64("hw.memsize") }
