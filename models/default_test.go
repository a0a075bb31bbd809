package models

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefault(t *testing.T) {
	t.Setenv("LAYA_MODEL", "/some/model.gguf")
	if p, err := Default(); err != nil || p != "/some/model.gguf" {
		t.Errorf("with LAYA_MODEL: %q, %v", p, err)
	}
	t.Setenv("LAYA_MODEL", "")
	root := t.TempDir()
	dir := filepath.Join(root, "assets", "models", "laya-code")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	// Without config.json the folder is not a model; the search goes on to the executable's
	// directory (the test binary's, in a temporary directory outside any checkout).
	if p, err := Default(); err == nil && p == dir {
		t.Errorf("an empty laya-code folder taken for the model")
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Default(); err != nil || p != dir {
		t.Errorf("from %s: %q, %v, want %q", sub, p, err, dir)
	}
}
