// Package doctor gathers what a bug report about Laya needs into one report a user can paste:
// the build, the machine, the backends and the GPU self-test, the model and its speed, the
// app's permissions, the completion server, the config file and the models on disk. `laya
// doctor` prints it; the app's "Copy Diagnostics" puts the same report on the pasteboard.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/cpu"
	"github.com/layaapp/laya/internal/buildinfo"
	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/models"
	"github.com/layaapp/laya/server"
)

// Options says what Collect checks beyond the machine.
type Options struct {
	// Model is the model to load and time; "" is the one the app would load (config.toml's
	// model, else $LAYA_MODEL or the bundled model).
	Model string
	// NoTiming skips loading the model on each backend to time decoding; the model is still
	// loaded once, for the backend choice and its self-test.
	NoTiming bool
	// App is the app's own state. Only the app knows it; nil from the CLI. With App set,
	// Collect loads no model: it reports the app's, AppModel (nil when none is loaded), and
	// AppModelError, why the app's model failed to load.
	App           *AppState
	AppModel      *engine.Info
	AppModelError string
}

// AppState is what only the running app can report: macOS ties the Accessibility permission to
// the app's signature, so another process cannot ask for it.
type AppState struct {
	AccessibilityTrusted bool `json:"accessibility_trusted"`
	// EventTap says whether the keyboard event tap (the Tab and Esc keys for suggestions) is
	// installed.
	EventTap bool `json:"event_tap"`
}

// Report is the whole diagnosis. Every field is filled on every platform; what does not apply
// says so.
type Report struct {
	Laya     buildinfo.Info `json:"laya"`
	OS       OSInfo         `json:"os"`
	CPU      CPUInfo        `json:"cpu"`
	Backends []string       `json:"backends"` // registered engine backends
	GPU      metal.GPUInfo  `json:"gpu"`
	Model    ModelReport    `json:"model"`
	App      *AppState      `json:"app"` // null when not reported by the app
	Server   ServerReport   `json:"server"`
	Config   ConfigReport   `json:"config"`
	Models   ModelsReport   `json:"models"`
	// Problems lists what keeps Laya from working at all; empty when it can work.
	Problems []string `json:"problems"`
	// Took is how long collecting the report took.
	TookMS float64 `json:"took_ms"`
}

// OSInfo is the operating system.
type OSInfo struct {
	GOOS    string `json:"goos"`
	GOARCH  string `json:"goarch"`
	Release string `json:"release,omitempty"` // macOS product version, or the Linux kernel's
	MemoryB int64  `json:"memory_bytes,omitempty"`
}

// CPUInfo is the processor and the kernels chosen for it.
type CPUInfo struct {
	Model    string   `json:"model,omitempty"`
	Logical  int      `json:"logical_cores"`
	Physical int      `json:"physical_cores"`
	Features []string `json:"features"` // the SIMD features the kernels can use
	// Kernels is the kernel level in use (cpu.Kernels): "Go" in a build without cgo.
	Kernels string `json:"kernels"`
}

// ModelReport is the model Laya would run, as loaded with the default backend choice.
type ModelReport struct {
	Path   string `json:"path"`
	Source string `json:"source"` // "flag", "config", "default" or "app" (the app's warm model, if any)
	Format string `json:"format,omitempty"`
	Arch   string `json:"arch,omitempty"`
	// Backend is the backend the default choice runs it on; SelfTest the verdict on the GPU
	// backend (null when none was checked).
	Backend  string           `json:"backend,omitempty"`
	SelfTest *engine.SelfTest `json:"self_test"`
	Error    string           `json:"error,omitempty"`
	Timings  []Timing         `json:"timings"`
}

// Timing is one backend's speed on the model.
type Timing struct {
	Backend      string  `json:"backend"`
	PrefillMS    float64 `json:"prefill_ms,omitempty"`
	PromptTokens int     `json:"prompt_tokens,omitempty"`
	MSPerToken   float64 `json:"ms_per_token,omitempty"`
	Tokens       int     `json:"tokens,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// ServerReport is the completion server's socket.
type ServerReport struct {
	Socket  string `json:"socket"`
	Answers bool   `json:"answers"`
	Error   string `json:"error,omitempty"`
}

// ConfigReport is config.toml.
type ConfigReport struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	// Valid is false when the file exists and Laya rejects it (then the defaults are in use).
	Valid     bool   `json:"valid"`
	Error     string `json:"error,omitempty"`
	Model     string `json:"model,omitempty"`
	ModelsDir string `json:"models_dir,omitempty"`
}

// ModelsReport lists the models found on disk.
type ModelsReport struct {
	Found []models.Found `json:"found"`
	Error string         `json:"error,omitempty"`
}

// timingText is the prompt of the timing runs: source code, what Laya completes most.
const timingText = "// Package fib computes Fibonacci numbers.\npackage fib\n\n// Fib returns the n-th Fibonacci number.\nfunc Fib(n int) int {\n"

// timingTokens is how many tokens each timing run generates.
const timingTokens = 24

// timingContext is the context the timing runs load models with: enough for the prompt and the
// tokens, without the KV cache of the model's full context.
const timingContext = 256

// Collect gathers the report. It never fails: what it could not learn is reported as an error
// in its field.
func Collect(ctx context.Context, opt Options) *Report {
	start := time.Now()
	r := &Report{
		Laya:     buildinfo.Read(),
		OS:       osInfo(),
		CPU:      cpuInfo(),
		Backends: engine.Backends(),
		GPU:      metal.Probe(),
		App:      opt.App,
	}
	var cfg config.Config
	r.Config, cfg = configReport()
	r.Server = serverReport(ctx)
	r.Models = modelsReport(cfg)
	r.Model = modelReport(ctx, opt, cfg)
	if r.Model.Error != "" {
		r.Problems = append(r.Problems, fmt.Sprintf("the model %s does not load: %s", orNone(r.Model.Path, "of the app"), r.Model.Error))
	}
	if r.Problems == nil {
		r.Problems = []string{}
	}
	r.TookMS = msSince(start)
	return r
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func cpuInfo() CPUInfo {
	return CPUInfo{Model: cpuModel(), Logical: runtime.NumCPU(), Physical: cpu.PhysicalCores(),
		Features: cpuFeatures(), Kernels: cpu.Kernels()}
}

func configReport() (ConfigReport, config.Config) {
	var r ConfigReport
	path, err := config.Path()
	if err != nil {
		r.Error = err.Error()
		return r, config.Default()
	}
	r.Path = path
	_, err = os.Stat(path)
	r.Exists = err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Error = err.Error()
	}
	cfg, err := config.NewStore(path).Load()
	r.Valid = err == nil
	if err != nil {
		r.Error = err.Error()
	}
	r.Model = cfg.Model
	if dir, err := cfg.ModelsDir(); err == nil {
		r.ModelsDir = dir
	}
	return r, cfg
}

// serverTimeout bounds the wait for the server's answer.
const serverTimeout = 2 * time.Second

// serverReport asks the server at the socket for a request it must refuse (negative
// max_tokens): any final frame proves a Laya server answers, and no model runs for it.
func serverReport(ctx context.Context) ServerReport {
	var r ServerReport
	path, err := config.SocketPath()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Socket = path
	ctx, cancel := context.WithTimeout(ctx, serverTimeout)
	defer cancel()
	c, err := server.Dial(ctx, path)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer c.Close()
	f, err := c.Complete(ctx, server.Request{Prefix: "", MaxTokens: -1}, nil)
	switch {
	case f.Done:
		r.Answers = true
	case err != nil:
		r.Error = err.Error()
	default:
		r.Error = "no final frame"
	}
	return r
}

func modelsReport(cfg config.Config) ModelsReport {
	r := ModelsReport{Found: []models.Found{}}
	dir, err := cfg.ModelsDir()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	loc, err := models.DefaultLocations(dir)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if f := models.Discover(loc, models.OpenProbe); f != nil {
		r.Found = f
	}
	return r
}

func modelReport(ctx context.Context, opt Options, cfg config.Config) ModelReport {
	r := ModelReport{Timings: []Timing{}}
	if opt.App != nil {
		r.Source, r.Error = "app", opt.AppModelError
		if i := opt.AppModel; i != nil {
			r.Path, r.Format, r.Arch, r.Backend, r.SelfTest = i.Path, i.Format, i.Arch, i.Backend, i.SelfTest
		}
		return r
	}
	switch {
	case opt.Model != "":
		r.Path, r.Source = opt.Model, "flag"
	case cfg.Model != "":
		r.Path, r.Source = cfg.Model, "config"
	default:
		r.Source = "default"
		p, err := models.Default()
		if err != nil {
			r.Error = err.Error()
			return r
		}
		r.Path = p
	}
	// The default choice: the backend Laya runs the model on, and the self-test's verdict.
	m, err := load(r.Path, "")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	info := m.Info()
	r.Format, r.Arch, r.Backend, r.SelfTest = info.Format, info.Arch, info.Backend, info.SelfTest
	if opt.NoTiming {
		m.Close()
		return r
	}
	r.Timings = append(r.Timings, timing(ctx, m, info.Backend))
	m.Close()
	// The other backends a user could choose, each forced (unchecked).
	for _, name := range []string{"cpu", "metal"} {
		if name == info.Backend || !slices.Contains(engine.Backends(), name) {
			continue
		}
		m, err := load(r.Path, name)
		if err != nil {
			r.Timings = append(r.Timings, Timing{Backend: name, Error: err.Error()})
			continue
		}
		r.Timings = append(r.Timings, timing(ctx, m, name))
		m.Close()
	}
	return r
}

// load opens the model with a context enough for the timing runs, or the model's own when that
// is shorter.
func load(path, backend string) (*engine.Model, error) {
	m, err := engine.Load(path, engine.Options{Backend: backend, Context: timingContext})
	if err != nil && strings.Contains(err.Error(), "exceeds the model's") {
		m, err = engine.Load(path, engine.Options{Backend: backend})
	}
	return m, err
}

// timing generates timingTokens greedily after a short prompt, after a warm-up run that faults
// the weights in and sizes the buffers.
func timing(ctx context.Context, m *engine.Model, name string) Timing {
	t := Timing{Backend: name}
	ids := m.Tokenizer().Encode(timingText, true)
	if len(ids) == 0 {
		ids = []int32{0}
	}
	ids = ids[:max(1, min(len(ids), m.Info().Context-timingTokens-1))]
	run := func(p []int32, n int) (engine.Result, error) {
		s := m.NewSession()
		defer s.Close()
		return s.Generate(ctx, p, engine.Sampling{MaxTokens: n, IgnoreEOS: true}, nil)
	}
	if _, err := run(ids[:min(len(ids), 4)], 2); err != nil {
		t.Error = err.Error()
		return t
	}
	res, err := run(ids, timingTokens)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.PromptTokens, t.Tokens = res.PromptTokens, len(res.IDs)
	t.PrefillMS = float64(res.Prefill.Microseconds()) / 1000
	// n tokens take n-1 decode steps: the first comes from the prompt's logits.
	if len(res.IDs) > 1 {
		t.MSPerToken = float64(res.Decode.Microseconds()) / 1000 / float64(len(res.IDs)-1)
	}
	return t
}

// WriteText writes the report for people: one section a line, details indented.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }
	p("Laya\t%s, %s", r.Laya, r.Laya.Go)
	sys := fmt.Sprintf("%s/%s", r.OS.GOOS, r.OS.GOARCH)
	if r.OS.Release != "" {
		sys += " " + r.OS.Release
	}
	if r.OS.MemoryB > 0 {
		sys += fmt.Sprintf(", %.1f GiB memory", float64(r.OS.MemoryB)/(1<<30))
	}
	p("OS\t%s", sys)
	p("CPU\t%s, %d cores (%d physical); kernels %s; features %s", orNone(r.CPU.Model, "unknown model"),
		r.CPU.Logical, r.CPU.Physical, r.CPU.Kernels, orNone(strings.Join(r.CPU.Features, " "), "none detected"))
	p("Backends\t%s", strings.Join(r.Backends, ", "))
	if r.GPU.Available {
		p("GPU\t%s (%s), kernels: %s", r.GPU.Device, orNone(r.GPU.Family, "family unknown"), r.GPU.Kernels)
	} else {
		p("GPU\tnone: %s", r.GPU.Error)
	}
	m := r.Model
	switch {
	case m.Error != "":
		p("Model\t%s (%s): does not load: %s", orNone(m.Path, "none"), m.Source, m.Error)
	case m.Path == "":
		p("Model\tnone loaded (%s)", m.Source)
	default:
		p("Model\t%s (%s; %s, %s): runs on %s", m.Path, m.Source, m.Format, m.Arch, m.Backend)
	}
	if st := m.SelfTest; st != nil {
		verdict := "passed"
		if !st.Passed {
			verdict = "FAILED: " + st.Reason
		}
		cached := ""
		if st.Cached {
			cached = ", cached"
		}
		p("  GPU self-test\t%s on %s (max difference %.3g nats, %.0f ms%s)", verdict, st.Device, st.MaxDiff,
			float64(st.Took.Microseconds())/1000, cached)
	} else if m.Error == "" && m.Path != "" {
		p("  GPU self-test\tnot run (no GPU backend)")
	}
	for _, t := range m.Timings {
		if t.Error != "" {
			p("  %s\terror: %s", t.Backend, t.Error)
			continue
		}
		p("  %s\t%.2f ms/token (%d tokens), prefill %.1f ms (%d tokens)", t.Backend, t.MSPerToken, t.Tokens, t.PrefillMS, t.PromptTokens)
	}
	if r.App == nil {
		p("App\tnot reported (the app's menu has Copy Diagnostics)")
	} else {
		p("App\tAccessibility %s, event tap %s", yesNo(r.App.AccessibilityTrusted, "granted", "NOT granted"),
			yesNo(r.App.EventTap, "installed", "NOT installed"))
	}
	if r.Server.Answers {
		p("Server\t%s: answers", r.Server.Socket)
	} else {
		p("Server\t%s: no answer (%s)", orNone(r.Server.Socket, "no socket path"), r.Server.Error)
	}
	c := r.Config
	switch {
	case !c.Exists && c.Error == "":
		p("Config\t%s: none (defaults)", c.Path)
	case !c.Valid:
		p("Config\t%s: INVALID, defaults in use: %s", c.Path, c.Error)
	default:
		p("Config\t%s: valid", c.Path)
	}
	if r.Models.Error != "" {
		p("Models\tnot listed: %s", r.Models.Error)
	} else {
		p("Models\t%d found", len(r.Models.Found))
	}
	for _, f := range r.Models.Found {
		runs := "runs (" + f.Arch + ")"
		if !f.Runnable {
			runs = "does not run: " + f.Reason
		}
		p("  %s\t%s, %s: %s", f.Name, f.Source, f.Format, runs)
	}
	if len(r.Problems) == 0 {
		p("Problems\tnone")
	}
	for _, pr := range r.Problems {
		p("Problem\t%s", pr)
	}
	return tw.Flush()
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}
