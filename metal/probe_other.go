//go:build !(darwin && arm64)

package metal

// Probe describes the Metal GPU; there is none on this platform.
func Probe() GPUInfo {
	return GPUInfo{Error: "Metal runs on Apple-silicon Macs only"}
}
