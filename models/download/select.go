package download

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// Files of a safetensors model directory besides the weights: config.json and tokenizer.json are
// required, the rest are taken when the repository has them.
var (
	requiredDirFiles = []string{"config.json", "tokenizer.json"}
	optionalDirFiles = map[string]bool{
		"tokenizer_config.json":        true,
		"special_tokens_map.json":      true,
		"generation_config.json":       true,
		"model.safetensors.index.json": true,
	}
)

// Select picks from l the files a model needs. With names, exactly those files (each must exist).
// Without, a safetensors directory (config.json, tokenizer files, every top-level *.safetensors
// and the index) or, when the repository holds no safetensors, its only .gguf file.
func Select(l *Listing, names []string) ([]File, error) {
	byName := make(map[string]File, len(l.Files))
	for _, f := range l.Files {
		byName[f.Name] = f
	}
	if len(names) > 0 {
		out := make([]File, 0, len(names))
		for _, n := range names {
			f, ok := byName[n]
			if !ok {
				return nil, fmt.Errorf("download: %s has no file %q: %w", l.Repo, n, ErrNotFound)
			}
			out = append(out, f)
		}
		return out, nil
	}
	var weights, ggufs []File
	for _, f := range l.Files {
		if strings.Contains(f.Name, "/") {
			continue
		}
		switch path.Ext(f.Name) {
		case ".safetensors":
			weights = append(weights, f)
		case ".gguf":
			ggufs = append(ggufs, f)
		}
	}
	if len(weights) == 0 {
		switch len(ggufs) {
		case 0:
			return nil, fmt.Errorf("download: %s has neither .safetensors nor .gguf files", l.Repo)
		case 1:
			return ggufs, nil
		default:
			names := make([]string, len(ggufs))
			for i, f := range ggufs {
				names[i] = f.Name
			}
			sort.Strings(names)
			return nil, fmt.Errorf("download: %s has %d .gguf files; pick one with --file: %s",
				l.Repo, len(ggufs), strings.Join(names, ", "))
		}
	}
	out := weights
	for _, n := range requiredDirFiles {
		f, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("download: %s has safetensors weights but no %s", l.Repo, n)
		}
		out = append(out, f)
	}
	for _, f := range l.Files {
		if optionalDirFiles[f.Name] {
			out = append(out, f)
		}
	}
	return out, nil
}
