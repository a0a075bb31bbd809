package fsutil

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	want := bytes.Repeat([]byte("ab"), 50)
	if err := os.WriteFile(p, want, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFileLimit(p, 100); err != nil || !bytes.Equal(got, want) {
		t.Errorf("at the limit: %q, %v", got, err)
	}
	if _, err := ReadFileLimit(p, 99); !errors.Is(err, ErrTooLarge) {
		t.Errorf("one byte over: %v, want ErrTooLarge", err)
	}
	if _, err := ReadFileLimit(filepath.Join(dir, "none"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestReadFileLimitEndless: a device that never ends fails fast and within the bound.
func TestReadFileLimitEndless(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /dev/zero")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := ReadFileLimit("/dev/zero", 1<<20)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("/dev/zero: %v, want ErrTooLarge", err)
	}
	runtime.ReadMemStats(&after)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("allocated %d bytes for a 1 MiB limit", n)
	}
}
