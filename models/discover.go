package models

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/layaapp/laya/internal/fsutil"
	"github.com/layaapp/laya/models/internal/hub"
)

// Sources of discovered models, in the order Discover lists them.
const (
	SourceBundled     = "bundled"
	SourceLaya        = "laya"
	SourceHuggingFace = "huggingface"
	SourceLMStudio    = "lmstudio"
	SourceOllama      = "ollama"
)

// Found is a model discovered on disk.
type Found struct {
	Name   string `json:"name"`   // "org/name" (with "/file.gguf" for a GGUF file), or Ollama's "name:tag"
	Repo   string `json:"repo"`   // the hub repository it came from, when the layout tells ("" for Ollama)
	Source string `json:"source"` // SourceBundled, SourceLaya, SourceHuggingFace, SourceLMStudio or SourceOllama
	Path   string `json:"path"`   // what the engine loads: a model directory or a GGUF file (an Ollama blob)
	Format string `json:"format"` // "mlx", "safetensors" or "gguf"
	Size   int64  `json:"size"`   // bytes on disk
	Arch   string `json:"arch"`   // set when the engine can open it
	// Runnable says whether the engine can run the model; Reason says why not.
	Runnable bool   `json:"runnable"`
	Reason   string `json:"reason,omitempty"`
}

// ProbeResult is what a Probe learns about a model the engine can open.
type ProbeResult struct {
	Format string
	Arch   string
}

// Probe decides whether the engine can run the model at path, returning the engine's own error
// (unsupported architecture, quantization or missing tensors) when it cannot. OpenProbe is the
// real one; it maps the files and reads no weights.
type Probe func(path string) (ProbeResult, error)

// Discover lists the models in loc, each checked with probe. Missing or unreadable directories
// are skipped: most users have only some of these tools.
func Discover(loc Locations, probe Probe) []Found {
	var out []Found
	add := func(f Found) {
		if f.Reason == "" {
			r, err := probe(f.Path)
			if err != nil {
				f.Reason = err.Error()
			} else {
				f.Runnable, f.Arch = true, r.Arch
				if r.Format != "" {
					f.Format = r.Format
				}
			}
		}
		out = append(out, f)
	}
	if loc.Bundled != "" {
		for _, f := range scanModelDir(loc.Bundled, 0) {
			f.Source, f.Name = SourceBundled, filepath.Base(loc.Bundled)
			add(f)
		}
	}
	if loc.Laya != "" {
		for _, d := range subdirs(loc.Laya) {
			var repo string
			if src, err := hub.ReadSource(d); err == nil {
				repo = src.Repo
			}
			for _, f := range scanModelDir(d, 1) {
				f.Source, f.Repo, f.Name = SourceLaya, repo, joinName(filepath.Base(d), f.Name)
				add(f)
			}
		}
	}
	if loc.HFHub != "" {
		for _, f := range discoverHF(loc.HFHub) {
			add(f)
		}
	}
	for _, root := range loc.LMStudio {
		for _, pub := range subdirs(root) {
			for _, d := range subdirs(pub) {
				repo := filepath.Base(pub) + "/" + filepath.Base(d)
				for _, f := range scanModelDir(d, 1) {
					f.Source, f.Name = SourceLMStudio, joinName(repo, f.Name)
					if hub.Repo(repo) == nil {
						f.Repo = repo
					}
					add(f)
				}
			}
		}
	}
	if loc.Ollama != "" {
		for _, f := range discoverOllama(loc.Ollama) {
			add(f)
		}
	}
	return out
}

// FindRepo returns a runnable model in found that holds repo (and, when files names one GGUF
// file, that file), so a pull can use it instead of downloading it again.
func FindRepo(found []Found, repo string, files []string) (Found, bool) {
	for _, f := range found {
		if !f.Runnable || !strings.EqualFold(f.Repo, repo) {
			continue
		}
		if len(files) == 1 && strings.HasSuffix(files[0], ".gguf") && filepath.Base(f.Path) != path.Base(files[0]) {
			continue
		}
		return f, true
	}
	return Found{}, false
}

// joinName appends a GGUF file's relative name to its directory's name.
func joinName(dir, rel string) string {
	if rel == "" {
		return dir
	}
	return dir + "/" + rel
}

// subdirs lists the directories in dir (following symlinks), skipping hidden ones such as
// the downloader's staging directories.
func subdirs(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// scanModelDir finds the models in dir: dir itself when it holds config.json and safetensors
// weights, and each GGUF file, looking depth levels of subdirectories further for GGUF files.
// Name is left as the GGUF file's path relative to dir, or "" for the directory model.
func scanModelDir(dir string, depth int) []Found {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Found
	var dirSize int64
	hasConfig, hasWeights := false, false
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		st, err := os.Stat(p) // follows the HF cache's symlinks into blobs/
		if err != nil || strings.HasPrefix(name, ".") {
			continue
		}
		if st.IsDir() {
			if depth > 0 {
				for _, f := range scanModelDir(p, depth-1) {
					if f.Format == "gguf" {
						f.Name = name + "/" + f.Name
						out = append(out, f)
					}
				}
			}
			continue
		}
		dirSize += st.Size()
		switch {
		case name == "config.json":
			hasConfig = true
		case strings.HasSuffix(name, ".safetensors"):
			hasWeights = true
		case strings.HasSuffix(strings.ToLower(name), ".gguf") && !strings.HasPrefix(strings.ToLower(name), "mmproj"):
			// mmproj files are vision projectors that go with a GGUF model, not models.
			out = append(out, Found{Name: name, Path: p, Format: "gguf", Size: st.Size()})
		}
	}
	if hasConfig && hasWeights {
		d := Found{Path: dir, Format: dirFormat(dir), Size: dirSize}
		out = append([]Found{d}, out...)
	}
	return out
}

// dirFormat tells an MLX-quantized directory (its config.json has a "quantization" block) from
// a plain safetensors one, reading only config.json.
func dirFormat(dir string) string {
	f, err := os.Open(filepath.Join(dir, "config.json"))
	if err != nil {
		return "safetensors"
	}
	defer f.Close()
	var cfg map[string]json.RawMessage
	if json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&cfg) == nil {
		if q, ok := cfg["quantization"]; ok && string(q) != "null" {
			return "mlx"
		}
	}
	return "safetensors"
}

// discoverHF lists models in a HuggingFace hub cache: models--org--name/snapshots/<commit>/,
// using the snapshot refs/main points at, else the newest one.
func discoverHF(hubDir string) []Found {
	var out []Found
	for _, d := range subdirs(hubDir) {
		org, name, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), "models--"), "--")
		if !strings.HasPrefix(filepath.Base(d), "models--") || !ok {
			continue // datasets--, spaces-- and anything else
		}
		repo := org + "/" + name
		if hub.Repo(repo) != nil {
			continue
		}
		snap := hfSnapshot(d)
		if snap == "" {
			continue
		}
		for _, f := range scanModelDir(snap, 1) {
			f.Source, f.Repo, f.Name = SourceHuggingFace, repo, joinName(repo, f.Name)
			out = append(out, f)
		}
	}
	return out
}

func hfSnapshot(repoDir string) string {
	snaps := filepath.Join(repoDir, "snapshots")
	if ref, err := os.ReadFile(filepath.Join(repoDir, "refs", "main")); err == nil {
		commit := strings.TrimSpace(string(ref))
		if p := filepath.Join(snaps, commit); hub.File(commit) && !strings.Contains(commit, "/") && isDir(p) {
			return p
		}
	}
	var newest string
	var newestTime int64
	for _, s := range subdirs(snaps) {
		if st, err := os.Stat(s); err == nil && (newest == "" || st.ModTime().UnixNano() > newestTime) {
			newest, newestTime = s, st.ModTime().UnixNano()
		}
	}
	return newest
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// ollamaManifest is the part of an Ollama manifest (a Docker image manifest) we read.
type ollamaManifest struct {
	Layers []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	} `json:"layers"`
}

const (
	ollamaModelLayer      = "application/vnd.ollama.image.model"
	ollamaDefaultRegistry = "registry.ollama.ai"
	maxManifest           = 1 << 20
)

// discoverOllama resolves each manifest (manifests/<host>/<namespace>/<model>/<tag>) to its
// model layer, a GGUF blob in blobs/sha256-<hex>.
func discoverOllama(root string) []Found {
	var out []Found
	for _, host := range subdirs(filepath.Join(root, "manifests")) {
		for _, ns := range subdirs(host) {
			for _, model := range subdirs(ns) {
				tags, err := os.ReadDir(model)
				if err != nil {
					continue
				}
				for _, tag := range tags {
					if tag.IsDir() || strings.HasPrefix(tag.Name(), ".") {
						continue
					}
					name := ollamaName(filepath.Base(host), filepath.Base(ns), filepath.Base(model), tag.Name())
					out = append(out, ollamaModel(root, filepath.Join(model, tag.Name()), name))
				}
			}
		}
	}
	return out
}

// ollamaName writes a model the way the ollama command does: "name:tag" for the default
// registry's library, with the namespace and registry host prepended otherwise.
func ollamaName(host, ns, model, tag string) string {
	n := model + ":" + tag
	if host != ollamaDefaultRegistry {
		return host + "/" + ns + "/" + n
	}
	if ns != "library" {
		return ns + "/" + n
	}
	return n
}

func ollamaModel(root, manifestPath, name string) Found {
	f := Found{Name: name, Source: SourceOllama, Format: "gguf", Path: manifestPath}
	data, err := fsutil.ReadFileLimit(manifestPath, maxManifest)
	if err != nil {
		f.Reason = fmt.Sprintf("manifest: %v", err)
		return f
	}
	var m ollamaManifest
	if err := json.Unmarshal(data, &m); err != nil {
		f.Reason = fmt.Sprintf("manifest: %v", err)
		return f
	}
	for _, l := range m.Layers {
		if l.MediaType != ollamaModelLayer {
			continue
		}
		hex, ok := strings.CutPrefix(l.Digest, "sha256:")
		if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
			f.Reason = fmt.Sprintf("manifest: bad model digest %q", l.Digest)
			return f
		}
		f.Path = filepath.Join(root, "blobs", "sha256-"+hex)
		st, err := os.Stat(f.Path)
		if err != nil {
			f.Reason = "model blob missing (incomplete ollama pull?)"
			f.Size = l.Size
			return f
		}
		f.Size = st.Size()
		return f
	}
	f.Reason = "manifest has no model layer"
	return f
}
