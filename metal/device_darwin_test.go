//go:build darwin && arm64

package metal_test

import (
	"testing"

	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/internal/kerneltest"
)

// TestKernelsOnGPU runs the kernel suite on the real Metal device (macOS CI), against the CPU
// backend, exactly as the emulator's tests do on Linux.
func TestKernelsOnGPU(t *testing.T) {
	kerneltest.Run(t, func(t *testing.T) metal.Device {
		d, err := metal.OpenDevice()
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}
