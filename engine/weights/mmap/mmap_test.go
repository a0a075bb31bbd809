package mmap

import (
	"bytes"
	"os"
	"path/filepath"
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
