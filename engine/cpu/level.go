package cpu

import (
	"fmt"
	"runtime"
)

// Kernels names the matrix kernels this process runs, chosen at startup for this CPU: "AMX",
// "AVX-512 VNNI" or "AVX2" on amd64, "NEON dotprod" or "NEON" on arm64, "portable C" where
// none of those apply, and "Go" in builds without cgo.
func Kernels() string { return kernelName(runtime.GOARCH, simdLevel) }

func kernelName(arch string, level int) string {
	switch {
	case level < 0:
		return "Go"
	case level == 0:
		return "portable C"
	case arch == "amd64" && level <= 3:
		return [...]string{1: "AVX2", 2: "AVX-512 VNNI", 3: "AMX"}[level]
	case arch == "arm64" && level <= 2:
		return [...]string{1: "NEON", 2: "NEON dotprod"}[level]
	}
	return fmt.Sprintf("level %d", level)
}
