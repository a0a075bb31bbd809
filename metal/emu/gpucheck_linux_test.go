package emu_test

import (
	"path/filepath"
	"testing"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/emu"
)

// skipping is an emulated GPU that leaves out one dispatch of every step: a kernel that never
// ran, as a driver fault or a pipeline the GPU cannot execute would leave it.
type skipping struct{ *emu.Device }

func (d skipping) Submit(plan []metal.Dispatch) error {
	if len(plan) > 2 {
		plan = append(plan[:len(plan)/2:len(plan)/2], plan[len(plan)/2+1:]...)
	}
	return d.Device.Submit(plan)
}

// TestGPUSelfTest runs the engine's self-test with the Metal backend on the emulator as the
// preferred backend: the kernels pass it (and a second load finds the verdict cached), and a
// device that skips a dispatch fails it, so the model runs on the CPU.
func TestGPUSelfTest(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path := filepath.Join("..", "..", "testdata", "models", "llama", "q4_0.gguf")
	faulty := false
	engine.RegisterBackend("metal", func(engine.Options) (backend.Backend, error) {
		if faulty {
			return metal.New(skipping{emu.New()})
		}
		return metal.New(emu.New())
	})
	load := func() engine.Info {
		t.Helper()
		m, err := engine.Load(path, engine.Options{Threads: 1, Context: 64})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if m.Info().SelfTest == nil {
			t.Fatal("no self-test ran")
		}
		return m.Info()
	}
	info := load()
	if st := info.SelfTest; info.Backend != "metal" || !st.Passed || st.Cached || st.Device != "metal-emu" || st.MaxDiff > 1e-2 {
		t.Fatalf("emulated kernels: backend %s, verdict %+v", info.Backend, st)
	}
	t.Logf("emulated kernels: max difference %.2g nats", info.SelfTest.MaxDiff)
	if info = load(); !info.SelfTest.Cached || info.Backend != "metal" {
		t.Errorf("second load: backend %s, verdict %+v", info.Backend, info.SelfTest)
	}

	faulty = true
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	info = load()
	if st := info.SelfTest; info.Backend != "cpu" || st.Passed || st.Reason == "" {
		t.Errorf("a skipped dispatch: backend %s, verdict %+v", info.Backend, st)
	}
	t.Logf("a skipped dispatch: %s", info.SelfTest.Reason)
}
