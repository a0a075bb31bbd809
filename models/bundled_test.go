package models

import (
	"path/filepath"
	"testing"
)

// TestDiscoverBundled: the bundled model is listed first, as runnable, on a machine that has
// no other model.
func TestDiscoverBundled(t *testing.T) {
	bundled, err := filepath.Abs(filepath.Join("..", "assets", "models", "laya-code"))
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	found := Discover(Locations{Bundled: bundled, Laya: empty, HFHub: empty, Ollama: empty}, OpenProbe)
	if len(found) != 1 {
		t.Fatalf("found %+v, want the bundled model alone", found)
	}
	f := found[0]
	if f.Source != SourceBundled || f.Name != "laya-code" || f.Path != bundled || f.Format != "mlx" || !f.Runnable || f.Size < 17<<20 {
		t.Errorf("bundled model listed as %+v", f)
	}
}
