package main

import (
	"bytes"
	"flag"
	"io"
	"log"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestThreadsLimitGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	want := runtime.NumCPU() // differs from the current value, 1, on any machine of 2 CPUs or more
	if want < 2 {
		t.Skip("one CPU")
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef := addEngineFlags(fs)
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

// TestThreadsChecked: --threads above the CPUs is capped with a warning; an absurd or negative
// count fails at once, before GOMAXPROCS or the model are touched.
func TestThreadsChecked(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer log.SetOutput(log.Writer())
	var logged bytes.Buffer
	log.SetOutput(&logged)
	n := runtime.NumCPU()
	for _, c := range []struct {
		threads, want int
		warns         bool
	}{{0, 0, false}, {n, n, false}, {n + 1, n, true}, {1000, n, true}} {
		logged.Reset()
		ef := &engineFlags{threads: c.threads}
		if err := ef.checkThreads(); err != nil || ef.threads != c.want {
			t.Errorf("--threads %d: %d, %v; want %d", c.threads, ef.threads, err, c.want)
		}
		if warned := strings.Contains(logged.String(), "more than the"); warned != c.warns {
			t.Errorf("--threads %d: warning %q", c.threads, logged.String())
		}
	}
	before := runtime.GOMAXPROCS(0)
	for _, threads := range []string{"20000", "-1"} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		ef := addEngineFlags(fs)
		if err := fs.Parse([]string{"--model", "/nonexistent", "--threads", threads}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := ef.load(0)
		if err == nil || !strings.Contains(err.Error(), "--threads "+threads) {
			t.Errorf("--threads %s: %v", threads, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("--threads %s: refused after %v", threads, d)
		}
		if got := runtime.GOMAXPROCS(0); got != before {
			t.Errorf("--threads %s: GOMAXPROCS %d before refusing", threads, got)
		}
	}
}

// TestBackendUsage: --backend's help names exactly the backends this build has.
func TestBackendUsage(t *testing.T) {
	u := backendUsage()
	for _, b := range []string{"cpu", "cpu-int8"} {
		if !strings.Contains(u, b+",") && !strings.Contains(u, b+" ") {
			t.Errorf("usage %q lacks %s", u, b)
		}
	}
	if hasMetal := strings.Contains(u, "metal"); hasMetal != (runtime.GOOS == "darwin") {
		t.Errorf("on %s: %q", runtime.GOOS, u)
	}
}
