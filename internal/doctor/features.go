package doctor

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

// cpuFeatures lists the SIMD features the CPU kernels choose among, as the CPU reports them.
func cpuFeatures() []string {
	var fs []string
	add := func(has bool, name string) {
		if has {
			fs = append(fs, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64":
		x := cpu.X86
		add(x.HasAVX2, "avx2")
		add(x.HasFMA, "fma")
		add(x.HasF16C, "f16c")
		add(x.HasAVX512F, "avx512f")
		add(x.HasAVX512BW, "avx512bw")
		add(x.HasAVX512VNNI, "avx512vnni")
		add(x.HasAVXVNNI, "avxvnni")
		add(x.HasAMXTile, "amx-tile")
		add(x.HasAMXInt8, "amx-int8")
	case "arm64":
		a := cpu.ARM64
		add(a.HasASIMD, "asimd")
		add(a.HasASIMDDP, "asimddp")
		add(a.HasFPHP, "fphp")
		add(a.HasASIMDHP, "asimdhp")
		add(a.HasI8MM, "i8mm")
	}
	if fs == nil {
		fs = []string{}
	}
	return fs
}
