package main

import (
	"flag"
	"runtime"

	"github.com/layaapp/laya/engine"
)

// engineFlags are the flags of every subcommand that runs a model in this process.
type engineFlags struct {
	model, backend string
	threads        int
}

// defaultBackendUsage describes --backend for subcommands that offer the registered backends.
const defaultBackendUsage = "cpu or metal (default: the best available)"

// addEngineFlags defines --model, --backend (described by backendUsage) and --threads on fs.
func addEngineFlags(fs *flag.FlagSet, backendUsage string) *engineFlags {
	f := &engineFlags{}
	fs.StringVar(&f.model, "model", "", "model directory or .gguf file (default: $LAYA_MODEL or the bundled model)")
	fs.StringVar(&f.backend, "backend", "", backendUsage)
	fs.IntVar(&f.threads, "threads", 0, "CPU threads, and at most that many running Go code; 0 = physical cores")
	return f
}

// load opens the model with sessions of context positions; 0 is the engine's default.
//
// With --threads N the process also runs Go code on at most N threads: on a machine with more
// cores, the runtime's idle Ps cost decode about 10% (a 16-core Xeon, 2 threads, paired runs of
// GOMAXPROCS 2 against 16; pinning the pool's workers to OS threads did not recover it).
func (f *engineFlags) load(context int) (*engine.Model, error) {
	if f.threads > 0 {
		runtime.GOMAXPROCS(f.threads)
	}
	return engine.Load(f.model, engine.Options{Backend: f.backend, Threads: f.threads, Context: context})
}
