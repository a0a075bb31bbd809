package pin

import "golang.org/x/sys/unix"

// physicalMemory is the machine's RAM in bytes.
func physicalMemory() (uint64, error) { return unix.SysctlUint64("hw.memsize") }
