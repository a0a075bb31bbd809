package menu

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/layaapp/laya/models"
)

func TestScan(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("mlx-model/config.json")
	mk("mlx-model/model.safetensors")
	mk("gguf-model/model-q4_k.gguf")
	mk("unsupported/config.json")
	mk("unsupported/model.safetensors")
	mk(".qwen.partial/config.json") // a download in progress
	mk(".qwen.partial/model.safetensors")
	mk("empty-dir/readme.txt")
	mk("notes.txt")
	probe := func(path string) (models.ProbeResult, error) {
		if filepath.Base(path) == "unsupported" {
			return models.ProbeResult{}, errors.New("architecture gemma is not supported")
		}
		return models.ProbeResult{Arch: "llama"}, nil
	}
	got := Scan(dir, probe)
	want := []Installed{
		{Name: "gguf-model/model-q4_k.gguf", Path: filepath.Join(dir, "gguf-model", "model-q4_k.gguf")},
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
	if got := Scan(filepath.Join(dir, "missing"), probe); len(got) != 0 {
		t.Errorf("missing dir: %+v", got)
	}
}
