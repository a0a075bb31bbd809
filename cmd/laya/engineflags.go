package main

import (
	"flag"
	"fmt"
	"log"
	"runtime"
	"strings"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/models"
)

// engineFlags are the flags of every subcommand that runs a model in this process.
type engineFlags struct {
	model, backend string
	threads        int
}

// maxThreads is the most --threads accepted: more is a typo, not a machine, and would size
// GOMAXPROCS and the worker pool before anything else could refuse it.
const maxThreads = 1024

// addEngineFlags defines --model, --backend and --threads on fs.
func addEngineFlags(fs *flag.FlagSet) *engineFlags {
	f := &engineFlags{}
	fs.StringVar(&f.model, "model", "", "model directory or .gguf file (default: $LAYA_MODEL or the bundled model)")
	fs.StringVar(&f.backend, "backend", "", backendUsage())
	fs.IntVar(&f.threads, "threads", 0, "CPU threads, and at most that many running Go code; 0 = physical cores")
	return f
}

// backendUsage describes --backend with the backends this build has (metal only on darwin).
func backendUsage() string {
	return strings.Join(engine.Backends(), ", ") + " (default: the best available; cpu-int8 is the CPU backend with plain int8 activations)"
}

// checkThreads validates --threads before anything is sized by it: a count above the CPUs
// only slows decoding (1000 threads on 2 CPUs: 0.5 tok/s), so it is capped with a warning.
func (f *engineFlags) checkThreads() error {
	switch n := runtime.NumCPU(); {
	case f.threads < 0 || f.threads > maxThreads:
		return fmt.Errorf("--threads %d: give 0 (physical cores) to %d (this machine has %d CPUs)", f.threads, maxThreads, n)
	case f.threads > n:
		log.Printf("--threads %d is more than the %d CPUs; using %d", f.threads, n, n)
		f.threads = n
	}
	return nil
}

// load opens the model with sessions of context positions; 0 is the engine's default.
//
// With --threads N the process also runs Go code on at most N threads: on a machine with more
// cores, the runtime's idle Ps cost decode about 10% (a 16-core Xeon, 2 threads, paired runs of
// GOMAXPROCS 2 against 16; pinning the pool's workers to OS threads did not recover it).
func (f *engineFlags) load(context int) (*engine.Model, error) {
	if err := f.checkThreads(); err != nil {
		return nil, err
	}
	if f.threads > 0 {
		runtime.GOMAXPROCS(f.threads)
	}
	path, err := f.modelPath()
	if err != nil {
		return nil, err
	}
	return engine.Load(path, engine.Options{Backend: f.backend, Threads: f.threads, Context: context})
}

// modelPath is --model, else $LAYA_MODEL or the bundled model.
func (f *engineFlags) modelPath() (string, error) {
	if f.model != "" {
		return f.model, nil
	}
	return models.Default()
}
