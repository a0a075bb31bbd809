package main

import (
	"flag"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

func TestThreadsLimitGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	want := runtime.GOMAXPROCS(0) + 1 // differs from the current value whatever the machine
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef := addEngineFlags(fs, defaultBackendUsage)
	model := filepath.Join("..", "..", "assets", "models", "laya-code")
	if err := fs.Parse([]string{"--model", model, "--backend", "cpu", "--threads", strconv.Itoa(want)}); err != nil {
		t.Fatal(err)
	}
	m, err := ef.load(0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Errorf("--threads %d: GOMAXPROCS %d", want, got)
	}
}
