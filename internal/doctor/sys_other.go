//go:build !linux && !darwin

package doctor

import "runtime"

func osInfo() OSInfo { return OSInfo{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH} }

func cpuModel() string { return "" }
