package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// InstallPath is where `laya pull` and the app install e in the models directory dir.
func (e Entry) InstallPath(dir string) string { return filepath.Join(dir, e.ID) }

// RepoInstallPath is where a hub repository outside the catalog is installed in dir:
// "org--name", plus "--<file>" when a single GGUF file is installed, so two quantizations of one
// repository get two directories.
func RepoInstallPath(dir, repo string, files []string) string {
	base := strings.Replace(repo, "/", "--", 1)
	if len(files) == 1 && strings.HasSuffix(files[0], ".gguf") {
		base += "--" + strings.TrimSuffix(filepath.Base(files[0]), ".gguf")
	}
	return filepath.Join(dir, base)
}

// Locations are the directories discovery looks in. Empty fields are skipped.
type Locations struct {
	Bundled  string   // the model that ships with laya (Bundled), "" if none
	Laya     string   // Laya's models directory (config.toml's model_dir or its default)
	HFHub    string   // HuggingFace hub cache, holding models--org--name directories
	LMStudio []string // LM Studio model folders, holding publisher/repo directories
	Ollama   string   // Ollama's models directory, holding manifests/ and blobs/
}

// DefaultLocations returns where the HuggingFace libraries, LM Studio and Ollama keep models for
// the current user, following the environment variables each honors (HF_HUB_CACHE, HF_HOME,
// XDG_CACHE_HOME, OLLAMA_MODELS), with laya as Laya's own models directory.
func DefaultLocations(laya string) (Locations, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Locations{}, fmt.Errorf("models: %w", err)
	}
	return locationsFor(home, laya, os.Getenv), nil
}

func locationsFor(home, laya string, getenv func(string) string) Locations {
	l := Locations{
		Laya: laya,
		LMStudio: []string{
			filepath.Join(home, ".lmstudio", "models"),
			filepath.Join(home, ".cache", "lm-studio", "models"),
		},
		Ollama: filepath.Join(home, ".ollama", "models"),
	}
	switch {
	case getenv("HF_HUB_CACHE") != "":
		l.HFHub = getenv("HF_HUB_CACHE")
	case getenv("HF_HOME") != "":
		l.HFHub = filepath.Join(getenv("HF_HOME"), "hub")
	case getenv("XDG_CACHE_HOME") != "":
		l.HFHub = filepath.Join(getenv("XDG_CACHE_HOME"), "huggingface", "hub")
	default:
		l.HFHub = filepath.Join(home, ".cache", "huggingface", "hub")
	}
	if d := getenv("OLLAMA_MODELS"); d != "" {
		l.Ollama = d
	}
	return l
}
