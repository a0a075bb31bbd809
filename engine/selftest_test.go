package engine

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/weights"
)

// fakeGPU stands in for the preferred backend: the cpu backend under another name and device,
// optionally with wrong logits or a failing step. steps counts the logits it handed out.
type fakeGPU struct {
	backend.Backend
	device string
	fault  string // "", "wrong" or "error"
	steps  *int
}

func (f fakeGPU) Name() string       { return preferredBackend }
func (f fakeGPU) DeviceName() string { return f.device }

func (f fakeGPU) Read(dst []float32, src backend.Buffer) error {
	*f.steps++
	switch f.fault {
	case "error":
		return errors.New("command buffer: GPU fault (fake)")
	case "wrong":
		if err := f.Backend.Read(dst, src); err != nil {
			return err
		}
		// A kernel that gets one output tile wrong.
		for i := 0; i < len(dst); i += 2 {
			dst[i] += 1.5
		}
		return nil
	}
	return f.Backend.Read(dst, src)
}

// selfTestEnv registers a fake preferred backend, keeps verdicts in a temporary directory and
// gives the model a file on disk, whose identity the verdicts are cached by.
type selfTestEnv struct {
	t      *testing.T
	gpu    fakeGPU
	opened int
	path   string
}

func newSelfTestEnv(t *testing.T, device, fault string) *selfTestEnv {
	e := &selfTestEnv{t: t, gpu: fakeGPU{device: device, fault: fault, steps: new(int)}}
	dir := t.TempDir()
	e.path = filepath.Join(dir, "model.gguf")
	if err := os.WriteFile(e.path, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	old := userCacheDir
	userCacheDir = func() (string, error) { return cache, nil }
	RegisterBackend(preferredBackend, func(o Options) (backend.Backend, error) {
		e.opened++
		b, err := backends[referenceBackend](o)
		if err != nil {
			return nil, err
		}
		g := e.gpu
		g.Backend = b
		return g, nil
	})
	t.Cleanup(func() {
		userCacheDir = old
		backendsMu.Lock()
		delete(backends, preferredBackend)
		backendsMu.Unlock()
	})
	return e
}

// load loads the test model with the default backend choice and returns the verdict and how
// many logits the fake produced.
func (e *selfTestEnv) load() (Info, int) {
	e.t.Helper()
	ts, _ := randModel(testConfig(), 3)
	*e.gpu.steps = 0
	m, err := newModel(&weights.Model{Path: e.path, Format: "gguf", Config: testConfig(), Tensors: ts,
		TokenizerJSON: testTokenizerJSON(64)}, Options{Threads: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	defer m.Close()
	if m.Info().SelfTest == nil {
		e.t.Fatal("no self-test verdict")
	}
	// The model must run on whichever backend it chose.
	s := m.NewSession()
	defer s.Close()
	if _, err := s.Generate(e.t.Context(), []int32{0, 5, 9}, Sampling{MaxTokens: 2}, nil); err != nil {
		e.t.Fatalf("generating on %s: %v", m.Info().Backend, err)
	}
	return m.Info(), *e.gpu.steps
}

func TestSelfTestPasses(t *testing.T) {
	e := newSelfTestEnv(t, "Fake GPU 1", "")
	info, steps := e.load()
	st := info.SelfTest
	if info.Backend != preferredBackend || !st.Passed || st.Cached || st.Device != "Fake GPU 1" || st.Reason != "" {
		t.Fatalf("a correct backend: backend %s, verdict %+v", info.Backend, st)
	}
	// The prefill and each decode step, then the two tokens generated above.
	if steps != 1+selfTestDecode+2 || st.MaxDiff != 0 {
		t.Errorf("%d logits read, max diff %g", steps, st.MaxDiff)
	}

	// A later load finds the verdict and runs nothing but the generation.
	info, steps = e.load()
	if info.Backend != preferredBackend || !info.SelfTest.Cached || !info.SelfTest.Passed || steps != 2 {
		t.Errorf("second load: backend %s, verdict %+v, %d logits read", info.Backend, info.SelfTest, steps)
	}

	// A changed model file or another device means a new check.
	if err := os.Chtimes(e.path, time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if info, steps = e.load(); info.SelfTest.Cached || steps != 1+selfTestDecode+2 {
		t.Errorf("after the model changed: verdict %+v, %d logits read", info.SelfTest, steps)
	}
	e.gpu.device = "Fake GPU 2"
	if info, _ = e.load(); info.SelfTest.Cached || info.SelfTest.Device != "Fake GPU 2" {
		t.Errorf("on another device: verdict %+v", info.SelfTest)
	}
}

func TestSelfTestWrongLogitsFallBack(t *testing.T) {
	e := newSelfTestEnv(t, "Fake GPU", "wrong")
	info, _ := e.load()
	st := info.SelfTest
	if info.Backend != referenceBackend || st.Passed || st.MaxDiff <= selfTestTol || !strings.Contains(st.Reason, "prefill") {
		t.Fatalf("wrong logits: backend %s, verdict %+v", info.Backend, st)
	}
	// The failure is cached: the next load falls back without running the fake.
	info, steps := e.load()
	if info.Backend != referenceBackend || !info.SelfTest.Cached || info.SelfTest.Passed || steps != 0 || info.SelfTest.Reason != st.Reason {
		t.Errorf("second load: backend %s, verdict %+v, %d logits from the fake", info.Backend, info.SelfTest, steps)
	}
}

func TestSelfTestErrorFallsBack(t *testing.T) {
	e := newSelfTestEnv(t, "Fake GPU", "error")
	info, _ := e.load()
	st := info.SelfTest
	if info.Backend != referenceBackend || st.Passed || !strings.Contains(st.Reason, "GPU fault (fake)") {
		t.Fatalf("failing backend: backend %s, verdict %+v", info.Backend, st)
	}
}

func TestSelfTestOpenErrorFallsBack(t *testing.T) {
	e := newSelfTestEnv(t, "Fake GPU", "")
	RegisterBackend(preferredBackend, func(Options) (backend.Backend, error) {
		e.opened++
		return nil, errors.New("compiling kernels: syntax error (fake)")
	})
	for range 2 {
		info, _ := e.load()
		if st := info.SelfTest; info.Backend != referenceBackend || st.Passed || st.Cached || !strings.Contains(st.Reason, "syntax error (fake)") {
			t.Fatalf("backend %s, verdict %+v", info.Backend, st)
		}
	}
	if e.opened != 2 {
		t.Errorf("opened %d times in two loads; an open error must not be cached", e.opened)
	}
}

func TestSelfTestExplicitBackendUnchecked(t *testing.T) {
	e := newSelfTestEnv(t, "Fake GPU", "wrong")
	ts, _ := randModel(testConfig(), 3)
	m, err := newModel(&weights.Model{Path: e.path, Config: testConfig(), Tensors: ts, TokenizerJSON: testTokenizerJSON(64)},
		Options{Backend: preferredBackend, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Info().SelfTest != nil || m.Info().Backend != preferredBackend || *e.gpu.steps != 0 {
		t.Errorf("explicit backend: %+v, %d logits read", m.Info(), *e.gpu.steps)
	}
}

func TestCompareLogits(t *testing.T) {
	want := []float32{3, 1, 0.5, -2, 7}
	if d, msg := compareLogits([]float32{4, 2, 1.5, -1, 8}, want); d > 1e-9 || msg != "" {
		t.Errorf("a uniform shift: diff %g, %q", d, msg)
	}
	// A token only the checked backend ranks high still counts.
	if d, _ := compareLogits([]float32{3, 1, 0.5, 9, 7}, want); d < 5 {
		t.Errorf("a spurious winner: diff %g", d)
	}
	if _, msg := compareLogits([]float32{3, float32(math.NaN()), 0.5, -2, 7}, want); !strings.Contains(msg, "NaN") {
		t.Errorf("NaN logit: %q", msg)
	}
}

func TestVerdictCacheRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	old := userCacheDir
	userCacheDir = func() (string, error) { return dir, nil }
	t.Cleanup(func() { userCacheDir = old })
	if err := storeVerdict("k1", &SelfTest{Backend: "metal", Passed: true}); err != nil {
		t.Fatal(err)
	}
	if v, ok := loadVerdict("k1"); !ok || !v.Passed {
		t.Fatalf("stored verdict: %+v %v", v, ok)
	}
	p, _ := verdictPath("k1")
	for name, data := range map[string]string{
		"truncated":   `{"key":"k1","verdict":{"pass`,
		"other key":   `{"key":"k2","verdict":{"passed":true}}`,
		"too large":   `{"key":"k1","verdict":{"passed":true},"pad":"` + strings.Repeat("x", maxVerdictBytes) + `"}`,
		"old failure": `{"key":"k1","at":"2001-01-01T00:00:00Z","verdict":{"passed":false}}`,
	} {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if v, ok := loadVerdict("k1"); ok {
			t.Errorf("%s: verdict %+v", name, v)
		}
	}
}
