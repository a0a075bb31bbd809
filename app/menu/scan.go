package menu

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Scan lists the models in dir: subdirectories holding a config.json (HuggingFace or MLX
// layout) or a .gguf file, and .gguf files directly in dir. Hidden entries, such as downloads
// still in progress, are skipped. A missing dir has no models.
func Scan(dir string) ([]Installed, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Installed
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		if !e.IsDir() {
			if strings.HasSuffix(name, ".gguf") {
				out = append(out, Installed{Name: strings.TrimSuffix(name, ".gguf"), Path: path})
			}
			continue
		}
		if _, err := os.Stat(filepath.Join(path, "config.json")); err == nil {
			out = append(out, Installed{Name: name, Path: path})
			continue
		}
		ggufs, _ := filepath.Glob(filepath.Join(path, "*.gguf"))
		if len(ggufs) > 0 {
			sort.Strings(ggufs)
			out = append(out, Installed{Name: name, Path: ggufs[0]})
		}
	}
	return out, nil
}
