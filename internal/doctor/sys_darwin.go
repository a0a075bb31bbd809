package doctor

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/layaapp/laya/internal/sysmem"
)

func osInfo() OSInfo {
	i := OSInfo{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	if v, err := unix.Sysctl("kern.osproductversion"); err == nil {
		i.Release = "macOS " + v
	}
	if n, err := sysmem.Physical(); err == nil {
		i.MemoryB = int64(n)
	}
	return i
}

func cpuModel() string {
	m, _ := unix.Sysctl("machdep.cpu.brand_string")
	return m
}
