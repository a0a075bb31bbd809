//go:build darwin && arm64

package metal

import "fmt"

// Probe describes the system's default Metal GPU, compiling the kernels when they were not yet.
func Probe() GPUInfo {
	name, family := deviceName()
	if name == "" {
		return GPUInfo{Error: "no Metal device"}
	}
	g := GPUInfo{Available: true, Device: name, Kernels: "compiled"}
	if family > 0 {
		g.Family = fmt.Sprintf("apple%d", family)
	}
	d, err := OpenDevice()
	if err != nil {
		g.Kernels = err.Error()
		return g
	}
	d.Close()
	return g
}
