package emu_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/emu"
	"github.com/layaapp/laya/metal/internal/kerneltest"
)

// TestMain names the emulator's seed when a test fails, so the failing orders and fast-math
// errors can be repeated.
func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 {
		fmt.Printf("emulator seed %d (LAYA_EMU_SEED=%d repeats it)\n", emu.Seed(), emu.Seed())
	}
	os.Exit(code)
}

func TestKernels(t *testing.T) {
	kerneltest.Run(t, func(*testing.T) metal.Device { return emu.New() })
}
