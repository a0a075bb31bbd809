package menu

import (
	"os"
	"path/filepath"
	"testing"
)

func TestScan(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	mk("mlx-model/config.json")
	mk("gguf-model/model-q4_k.gguf")
	mk("loose.gguf")
	mk(".qwen.partial/config.json")
	mk("empty-dir/readme.txt")
	mk("notes.txt")
	got, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Installed{
		{Name: "gguf-model", Path: filepath.Join(dir, "gguf-model/model-q4_k.gguf")},
		{Name: "loose", Path: filepath.Join(dir, "loose.gguf")},
		{Name: "mlx-model", Path: filepath.Join(dir, "mlx-model")},
	}
	if len(got) != len(want) {
		t.Fatalf("Scan = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := Scan(filepath.Join(dir, "missing")); err != nil || len(got) != 0 {
		t.Errorf("missing dir: %v, %v", got, err)
	}
}
