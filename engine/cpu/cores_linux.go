package cpu

import (
	"os"
	"path/filepath"
	"runtime"
)

// physicalCores counts distinct cores (SMT siblings share one) from sysfs topology, because
// matmul threads on hyperthread siblings compete for the same execution units.
func physicalCores() int {
	lists, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list")
	seen := map[string]bool{}
	for _, f := range lists {
		b, err := os.ReadFile(f)
		if err == nil {
			seen[string(b)] = true
		}
	}
	n := len(seen)
	if n == 0 || n > runtime.NumCPU() {
		return runtime.NumCPU()
	}
	return n
}
