package cpu

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestKernels checks the name against what the CPU reports: on Linux amd64, the kernels named
// need the flags /proc/cpuinfo lists.
func TestKernels(t *testing.T) {
	k := Kernels()
	if k == "" || strings.HasPrefix(k, "level ") {
		t.Fatalf("Kernels() = %q", k)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" || simdLevel < 1 {
		return
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	need := map[string][]string{"AVX2": {"avx2", "fma"}, "AVX-512 VNNI": {"avx512_vnni"}, "AMX": {"amx_int8"}}[k]
	if need == nil {
		t.Fatalf("level %d named %q", simdLevel, k)
	}
	for _, f := range need {
		if !strings.Contains(string(info), " "+f) {
			t.Errorf("kernels %q chosen but the CPU lacks %s", k, f)
		}
	}
}
