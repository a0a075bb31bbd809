//go:build darwin || linux

package pin

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

func TestWeightFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"model.safetensors", "q4.gguf", "config.json", "tokenizer.json"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
	}
	got, err := WeightFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if len(got) != 2 || filepath.Base(got[0]) != "model.safetensors" || filepath.Base(got[1]) != "q4.gguf" {
		t.Errorf("weight files %v", got)
	}
	f := filepath.Join(dir, "q4.gguf")
	if got, _ := WeightFiles(f); len(got) != 1 || got[0] != f {
		t.Errorf("file path: %v", got)
	}
	if _, err := WeightFiles(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing path accepted")
	}
}

func TestFilesWithinLimit(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(rlimitMemlock, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < 64<<10 {
		t.Skipf("memlock limit %d too small", lim.Cur)
	}
	path := filepath.Join(t.TempDir(), "w.gguf")
	data := make([]byte, 16<<10)
	for i := range data {
		data[i] = byte(i)
	}
	os.WriteFile(path, data, 0o644)
	p, err := Files([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if p.Bytes != int64(len(data)) || p.maps[0][12345] != data[12345] {
		t.Errorf("pinned %d bytes; mapping does not show the file", p.Bytes)
	}
	p.Release()
	p.Release() // idempotent
}

func TestFilesOverLimit(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(rlimitMemlock, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur == rlimInfinity || lim.Cur > 1<<30 {
		t.Skip("memlock limit too large to exceed with a sparse test file")
	}
	path := filepath.Join(t.TempDir(), "big.gguf")
	f, _ := os.Create(path)
	f.Truncate(int64(lim.Cur) + 4096) // sparse: costs no disk
	f.Close()
	if _, err := Files([]string{path}); err == nil || !strings.Contains(err.Error(), "memlock limit") {
		t.Errorf("over-limit error = %v", err)
	}
}

func TestFilesOverMemoryShare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.gguf")
	os.WriteFile(path, make([]byte, 8<<10), 0o644)
	if _, err := files([]string{path}, 4<<10); err == nil || !strings.Contains(err.Error(), "physical memory") {
		t.Errorf("weights over the memory share: %v", err)
	}
}
