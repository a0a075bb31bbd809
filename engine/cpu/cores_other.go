//go:build !linux && !darwin

package cpu

import "runtime"

func physicalCores() int { return runtime.NumCPU() }
