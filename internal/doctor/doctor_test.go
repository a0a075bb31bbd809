package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/cpu"
	"github.com/layaapp/laya/server"
)

// fixture is a small model of the parity fixtures.
var fixture, _ = filepath.Abs(filepath.Join("..", "..", "testdata", "models", "llama", "q8_0.gguf"))

// env points every location the report reads into a temporary home and returns it.
func env(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(fixture); err != nil {
		t.Skip("no fixture model:", err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	for k, v := range map[string]string{
		"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "XDG_CACHE_HOME": "cache",
		"HF_HUB_CACHE": "hf", "LAYA_SOCKET": "laya.sock",
	} {
		t.Setenv(k, filepath.Join(home, v))
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("HF_HOME", "")
	t.Setenv("OLLAMA_MODELS", "")
	t.Setenv("LAYA_MODEL", fixture)
	return home
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// refusing is a completer the server must never call: the probe asks nothing of the model.
type refusing struct{ t *testing.T }

func (r refusing) Complete(context.Context, string, complete.Request, func(string)) (complete.Suggestion, error) {
	r.t.Error("the server probe ran a completion")
	return complete.Suggestion{}, nil
}

func TestCollect(t *testing.T) {
	home := env(t)
	// A config file Laya rejects.
	write(t, filepath.Join(home, "config", "laya", "config.toml"), "enabled = \"very\"\n")
	// Two models in Laya's models directory: one runs, one is of an architecture it lacks.
	models := filepath.Join(home, "data", "laya", "models")
	if err := os.MkdirAll(filepath.Join(models, "tiny"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fixture, filepath.Join(models, "tiny", "tiny.gguf")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(models, "odd", "config.json"), `{"architectures":["OddForCausalLM"],"model_type":"odd"}`)
	write(t, filepath.Join(models, "odd", "model.safetensors"), "")
	// A live server on the socket.
	l, err := server.Listen(filepath.Join(home, "laya.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(refusing{t}, server.Options{})
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	r := Collect(context.Background(), Options{})

	if r.Laya.Go != runtime.Version() || r.OS.GOOS != runtime.GOOS || r.OS.GOARCH != runtime.GOARCH {
		t.Errorf("build and OS: %+v %+v", r.Laya, r.OS)
	}
	if r.CPU.Logical != runtime.NumCPU() || r.CPU.Physical != cpu.PhysicalCores() || r.CPU.Kernels != cpu.Kernels() {
		t.Errorf("cpu: %+v", r.CPU)
	}
	if !slices.Equal(r.Backends, engine.Backends()) || !slices.Contains(r.Backends, "cpu") {
		t.Errorf("backends %v, engine has %v", r.Backends, engine.Backends())
	}
	if runtime.GOOS == "linux" && (r.GPU.Available || r.GPU.Error == "") {
		t.Errorf("gpu on linux: %+v", r.GPU)
	}
	if !r.Server.Answers || r.Server.Socket != filepath.Join(home, "laya.sock") {
		t.Errorf("server: %+v", r.Server)
	}
	if c := r.Config; !c.Exists || c.Valid || !strings.Contains(c.Error, "enabled") || c.Path != filepath.Join(home, "config", "laya", "config.toml") {
		t.Errorf("config: %+v", c)
	}
	m := r.Model
	if m.Path != fixture || m.Source != "default" || m.Error != "" || m.Format != "gguf" || m.Arch != "llama" || m.Backend != "cpu" || m.SelfTest != nil {
		t.Errorf("model: %+v", m)
	}
	if len(m.Timings) != 1 || m.Timings[0].Backend != "cpu" || !(m.Timings[0].MSPerToken > 0) || m.Timings[0].Tokens != timingTokens {
		t.Fatalf("timings: %+v", m.Timings)
	}
	found := map[string]bool{}
	for _, f := range r.Models.Found {
		found[filepath.Base(f.Path)] = f.Runnable
		if !f.Runnable && f.Reason == "" {
			t.Errorf("%s does not run, and no reason given", f.Name)
		}
	}
	if run, ok := found["tiny.gguf"]; !ok || !run {
		t.Errorf("models: %+v", r.Models)
	}
	if run, ok := found["odd"]; !ok || run {
		t.Errorf("models: %+v", r.Models)
	}
	if len(r.Problems) != 0 {
		t.Errorf("problems: %v", r.Problems)
	}

	// Every field is in the JSON, also those with nothing to say (no GPU self-test, no app).
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"laya", "os", "cpu", "backends", "gpu", "model", "app", "server", "config", "models", "problems"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if !bytes.Contains(fields["model"], []byte(`"self_test":null`)) {
		t.Errorf("model JSON: %s", fields["model"])
	}

	checkText(t, r, "INVALID, defaults in use", ": answers", "GPU self-test not run", "tiny.gguf", "does not run:", "Problems none",
		fmt.Sprintf("cpu %.2f ms/token", m.Timings[0].MSPerToken))
}

// checkText requires each of want in the text report, with runs of spaces as one.
func checkText(t *testing.T, r *Report, want ...string) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(b.String()), " ")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, b.String())
		}
	}
}

func TestCollectNoServerBrokenModel(t *testing.T) {
	home := env(t)
	write(t, filepath.Join(home, "broken", "config.json"), `{"architectures":["LlamaForCausalLM"],"model_type":"llama"}`)
	r := Collect(context.Background(), Options{Model: filepath.Join(home, "broken"), NoTiming: true})
	if r.Server.Answers || r.Server.Error == "" {
		t.Errorf("server with nothing listening: %+v", r.Server)
	}
	if c := r.Config; c.Exists || !c.Valid {
		t.Errorf("no config file: %+v", c)
	}
	if r.Model.Source != "flag" || r.Model.Error == "" || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "does not load") {
		t.Errorf("broken model: %+v, problems %v", r.Model, r.Problems)
	}
}

func TestCollectFromApp(t *testing.T) {
	env(t)
	loaded := &engine.Info{Path: "/models/x", Format: "mlx", Arch: "qwen2", Backend: "cpu",
		SelfTest: &engine.SelfTest{Backend: "metal", Device: "Apple M9", Reason: "self-test prefill: differ", MaxDiff: 3, Took: time.Second}}
	r := Collect(context.Background(), Options{AppModel: loaded, App: &AppState{AccessibilityTrusted: true}})
	if m := r.Model; m.Source != "app" || m.Path != "/models/x" || m.SelfTest != loaded.SelfTest || len(m.Timings) != 0 || len(r.Problems) != 0 {
		t.Errorf("the app's model: %+v", m)
	}
	checkText(t, r, "FAILED: self-test prefill: differ on Apple M9", "Accessibility granted, event tap NOT installed")

	// No model loaded: none is loaded for the report either.
	r = Collect(context.Background(), Options{App: &AppState{}})
	if m := r.Model; m.Source != "app" || m.Path != "" || m.Error != "" || len(r.Problems) != 0 {
		t.Errorf("the app without a model: %+v", m)
	}
	checkText(t, r, "Model none loaded (app)")
	r = Collect(context.Background(), Options{App: &AppState{}, AppModelError: "no such file"})
	if len(r.Problems) != 1 {
		t.Errorf("the app's model failed: problems %v", r.Problems)
	}
}
