package cpu

import (
	"encoding/binary"
	"runtime"
	"syscall"
)

// physicalCores asks the kernel for hw.physicalcpu (a little-endian int32 that Sysctl returns
// as a string with trailing zero bytes trimmed). On Apple silicon that includes efficiency
// cores; matmul rows are split evenly, so the slower cores bound a step either way.
func physicalCores() int {
	s, err := syscall.Sysctl("hw.physicalcpu")
	if err != nil || len(s) == 0 || len(s) > 4 {
		return runtime.NumCPU()
	}
	b := append([]byte(s), 0, 0, 0, 0)
	if n := int(binary.LittleEndian.Uint32(b)); n > 0 && n <= runtime.NumCPU() {
		return n
	}
	return runtime.NumCPU()
}
