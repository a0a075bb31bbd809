package mmap

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	want := bytes.Repeat([]byte("laya weights "), 1000)
	p := filepath.Join(dir, "w.bin")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Data, want) {
		t.Fatalf("mapped %d bytes differ from the %d written", len(f.Data), len(want))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f.Data != nil {
		t.Error("Data still set after Close")
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenEmptyAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "empty")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Data) != 0 {
		t.Errorf("empty file mapped to %d bytes", len(f.Data))
	}
	f.Close()
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
	if _, err := Open(dir); err == nil {
		t.Error("directory: no error")
	}
}

func TestParse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, mm, err := Parse(path, func(b []byte) (int, error) { return len(b), nil })
	if err != nil || n != 3 || string(mm.Data) != "abc" {
		t.Fatalf("Parse: %d, %v", n, err)
	}
	if err := mm.Close(); err != nil {
		t.Fatal(err)
	}
	_, mm, err = Parse(path, func([]byte) (int, error) { return 0, errors.New("bad magic") })
	if err == nil || mm != nil || !strings.Contains(err.Error(), "bad magic") || !strings.Contains(err.Error(), path) {
		t.Fatalf("failed parse: %v, %v", mm, err)
	}
	if err := (*File)(nil).Close(); err != nil {
		t.Fatalf("nil Close: %v", err)
	}
}
