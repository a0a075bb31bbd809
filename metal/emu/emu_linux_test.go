package emu_test

import (
	"testing"

	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/emu"
	"github.com/layaapp/laya/metal/internal/kerneltest"
)

func TestKernels(t *testing.T) {
	kerneltest.Run(t, func(*testing.T) metal.Device { return emu.New() })
}
