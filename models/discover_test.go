package models

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tree writes files (path -> content) under root; content "->target" makes a symlink.
func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(filepath.FromSlash(target), full)
		} else {
			err = os.WriteFile(full, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// fakeProbe stands in for the engine: it refuses paths mentioning phi, as the engine refuses
// architectures it lacks, and records what it was asked.
type fakeProbe struct{ asked []string }

func (p *fakeProbe) probe(path string) (ProbeResult, error) {
	p.asked = append(p.asked, path)
	if strings.Contains(strings.ToLower(path), "phi") {
		return ProbeResult{}, errors.New(`weights: unsupported architecture "phi3"`)
	}
	return ProbeResult{Arch: "llama"}, nil
}

const (
	mlxConfig   = `{"model_type": "llama", "quantization": {"group_size": 64, "bits": 4}}`
	plainConfig = `{"model_type": "qwen2", "quantization_config": null}`
	sha1        = "1111111111111111111111111111111111111111111111111111111111111111"
	sha2        = "2222222222222222222222222222222222222222222222222222222222222222"
	sha3        = "3333333333333333333333333333333333333333333333333333333333333333"
)

func ollamaManifestJSON(modelDigest string, size int) string {
	return `{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
"config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:` + sha3 + `","size":485},
"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:` + modelDigest + `","size":` + strconv.Itoa(size) + `},
{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:` + sha3 + `","size":1482},
{"mediaType":"application/vnd.ollama.image.license","digest":"sha256:` + sha3 + `","size":11343}]}`
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	laya := filepath.Join(root, "laya")
	hub := filepath.Join(root, "hf", "hub")
	lms := filepath.Join(root, "lmstudio")
	lmsOld := filepath.Join(root, "lm-studio-cache")
	oll := filepath.Join(root, "ollama")

	tree(t, laya, map[string]string{
		"mlx-community--Qwen2.5-0.5B-Instruct-4bit/config.json":       mlxConfig,    // 75 bytes
		"mlx-community--Qwen2.5-0.5B-Instruct-4bit/model.safetensors": "0123456789", // 10
		"mlx-community--Qwen2.5-0.5B-Instruct-4bit/tokenizer.json":    "{}",         // 2
		"qwen2.5-0.5b-instruct-4bit/.laya-source.json":                `{"repo":"mlx-community/Qwen2.5-0.5B-Instruct-4bit","commit":"c"}`,
		"qwen2.5-0.5b-instruct-4bit/config.json":                      mlxConfig,
		"qwen2.5-0.5b-instruct-4bit/model.safetensors":                "0123456789",
		"qwen2.5-0.5b-instruct-4bit/tokenizer.json":                   "{}",
		"bartowski--Qwen-GGUF--Qwen-Q4_K_M/.laya-source.json":         `{"repo":"bartowski/Qwen-GGUF","commit":"c"}`,
		".org--half.partial/config.json":                              mlxConfig,
		".org--half.partial/model.safetensors.partial":                "01",
		"bartowski--Qwen-GGUF--Qwen-Q4_K_M/Qwen-Q4_K_M.gguf":          "GGUFxxxx",
		"notes/readme.txt": "not a model",
	})
	commit := "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2"
	old := "0000000000000000000000000000000000000000"
	tree(t, hub, map[string]string{
		"models--Qwen--Qwen2.5-0.5B/blobs/aaa":                                  plainConfig,
		"models--Qwen--Qwen2.5-0.5B/blobs/bbb":                                  "weights-weights",
		"models--Qwen--Qwen2.5-0.5B/refs/main":                                  commit + "\n",
		"models--Qwen--Qwen2.5-0.5B/snapshots/" + commit + "/config.json":       "->../../blobs/aaa",
		"models--Qwen--Qwen2.5-0.5B/snapshots/" + commit + "/model.safetensors": "->../../blobs/bbb",
		"models--Qwen--Qwen2.5-0.5B/snapshots/" + old + "/config.json":          "->../../blobs/aaa",
		"models--Qwen--Qwen2.5-0.5B/snapshots/" + old + "/model.safetensors":    "->../../blobs/aaa",
		"models--TheBloke--phi-GGUF/snapshots/" + old + "/phi-2.Q4_0.gguf":      "GGUF",
		"models--TheBloke--phi-GGUF/snapshots/" + old + "/phi-2.Q8_0.gguf":      "GGUFGGUF",
		"models--TheBloke--phi-GGUF/snapshots/" + old + "/mmproj-f16.gguf":      "GGUF",
		"models--org--tokenizer-only/snapshots/" + old + "/tokenizer.json":      "{}",
		"datasets--org--data/snapshots/" + old + "/config.json":                 "{}",
		"datasets--org--data/snapshots/" + old + "/x.safetensors":               "{}",
	})
	tree(t, lms, map[string]string{
		"lmstudio-community/Qwen2.5-Coder-1.5B-Instruct-GGUF/Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf": "GGUF1234",
		"mlx-community/Llama-3.2-1B-Instruct-4bit/config.json":                                        mlxConfig,
		"mlx-community/Llama-3.2-1B-Instruct-4bit/model.safetensors":                                  "w",
		"mlx-community/Llama-3.2-1B-Instruct-4bit/tokenizer.json":                                     "{}",
	})
	tree(t, lmsOld, map[string]string{
		"someone/Some-GGUF/quants/Some-Q2_K.gguf": "GGUF",
	})
	tree(t, oll, map[string]string{
		"manifests/registry.ollama.ai/library/qwen2.5-coder/1.5b": ollamaManifestJSON(sha1, 12),
		"manifests/registry.ollama.ai/someuser/mymodel/latest":    ollamaManifestJSON(sha2, 99),
		"manifests/registry.ollama.ai/library/gone/latest":        ollamaManifestJSON(sha3, 77),
		"manifests/registry.ollama.ai/library/broken/latest":      `{"layers": [`,
		"blobs/sha256-" + sha1:                                    "GGUF12345678",
		"blobs/sha256-" + sha2:                                    "GGUF",
	})
	// Make the stale HF snapshot older, though refs/main must win anyway.
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(hub, "models--Qwen--Qwen2.5-0.5B", "snapshots", old), past, past)

	p := &fakeProbe{}
	got := Discover(Locations{Laya: laya, HFHub: hub, LMStudio: []string{lms, lmsOld, filepath.Join(root, "missing")}, Ollama: oll}, p.probe)

	const phiReason = `weights: unsupported architecture "phi3"`
	want := []Found{
		{Name: "bartowski--Qwen-GGUF--Qwen-Q4_K_M/Qwen-Q4_K_M.gguf", Repo: "bartowski/Qwen-GGUF", Source: SourceLaya,
			Path: laya + "/bartowski--Qwen-GGUF--Qwen-Q4_K_M/Qwen-Q4_K_M.gguf", Format: "gguf", Size: 8, Arch: "llama", Runnable: true},
		{Name: "mlx-community--Qwen2.5-0.5B-Instruct-4bit", Source: SourceLaya, // made by hand: no source file
			Path: laya + "/mlx-community--Qwen2.5-0.5B-Instruct-4bit", Format: "mlx", Size: int64(len(mlxConfig)) + 12, Arch: "llama", Runnable: true},
		{Name: "qwen2.5-0.5b-instruct-4bit", Repo: "mlx-community/Qwen2.5-0.5B-Instruct-4bit", Source: SourceLaya,
			Path: laya + "/qwen2.5-0.5b-instruct-4bit", Format: "mlx", Size: int64(len(mlxConfig)) + 12, Arch: "llama", Runnable: true},
		{Name: "Qwen/Qwen2.5-0.5B", Repo: "Qwen/Qwen2.5-0.5B", Source: SourceHuggingFace,
			Path: hub + "/models--Qwen--Qwen2.5-0.5B/snapshots/" + commit, Format: "safetensors", Size: int64(len(plainConfig)) + 15, Arch: "llama", Runnable: true},
		{Name: "TheBloke/phi-GGUF/phi-2.Q4_0.gguf", Repo: "TheBloke/phi-GGUF", Source: SourceHuggingFace,
			Path: hub + "/models--TheBloke--phi-GGUF/snapshots/" + old + "/phi-2.Q4_0.gguf", Format: "gguf", Size: 4, Reason: phiReason},
		{Name: "TheBloke/phi-GGUF/phi-2.Q8_0.gguf", Repo: "TheBloke/phi-GGUF", Source: SourceHuggingFace,
			Path: hub + "/models--TheBloke--phi-GGUF/snapshots/" + old + "/phi-2.Q8_0.gguf", Format: "gguf", Size: 8, Reason: phiReason},
		{Name: "lmstudio-community/Qwen2.5-Coder-1.5B-Instruct-GGUF/Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf",
			Repo: "lmstudio-community/Qwen2.5-Coder-1.5B-Instruct-GGUF", Source: SourceLMStudio,
			Path:   lms + "/lmstudio-community/Qwen2.5-Coder-1.5B-Instruct-GGUF/Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf",
			Format: "gguf", Size: 8, Arch: "llama", Runnable: true},
		{Name: "mlx-community/Llama-3.2-1B-Instruct-4bit", Repo: "mlx-community/Llama-3.2-1B-Instruct-4bit", Source: SourceLMStudio,
			Path: lms + "/mlx-community/Llama-3.2-1B-Instruct-4bit", Format: "mlx", Size: int64(len(mlxConfig)) + 3, Arch: "llama", Runnable: true},
		{Name: "someone/Some-GGUF/quants/Some-Q2_K.gguf", Repo: "someone/Some-GGUF", Source: SourceLMStudio,
			Path: lmsOld + "/someone/Some-GGUF/quants/Some-Q2_K.gguf", Format: "gguf", Size: 4, Arch: "llama", Runnable: true},
		{Name: "broken:latest", Source: SourceOllama, Path: oll + "/manifests/registry.ollama.ai/library/broken/latest",
			Format: "gguf", Reason: "manifest: unexpected end of JSON input"},
		{Name: "gone:latest", Source: SourceOllama, Path: oll + "/blobs/sha256-" + sha3, Format: "gguf", Size: 77,
			Reason: "model blob missing (incomplete ollama pull?)"},
		{Name: "qwen2.5-coder:1.5b", Source: SourceOllama, Path: oll + "/blobs/sha256-" + sha1, Format: "gguf", Size: 12, Arch: "llama", Runnable: true},
		{Name: "someuser/mymodel:latest", Source: SourceOllama, Path: oll + "/blobs/sha256-" + sha2, Format: "gguf", Size: 4, Arch: "llama", Runnable: true},
	}
	for i := range want {
		want[i].Path = filepath.FromSlash(want[i].Path)
	}
	if len(got) != len(want) {
		for _, f := range got {
			t.Logf("got %+v", f)
		}
		t.Fatalf("found %d models, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("model %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
	// Models already known to be broken are not handed to the engine.
	for _, a := range p.asked {
		if strings.Contains(a, sha3) || strings.Contains(a, "broken") {
			t.Errorf("probed %s", a)
		}
	}
}

func TestDiscoverHFWithoutRefs(t *testing.T) {
	hub := t.TempDir()
	a, b := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	tree(t, hub, map[string]string{
		"models--o--m/snapshots/" + a + "/config.json":       "{}",
		"models--o--m/snapshots/" + a + "/model.safetensors": "x",
		"models--o--m/snapshots/" + b + "/config.json":       "{}",
		"models--o--m/snapshots/" + b + "/model.safetensors": "x",
	})
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(hub, "models--o--m", "snapshots", a), past, past)
	got := Discover(Locations{HFHub: hub}, (&fakeProbe{}).probe)
	if len(got) != 1 || filepath.Base(got[0].Path) != b {
		t.Fatalf("got %+v, want only the newest snapshot %s", got, b)
	}
}

func TestDiscoverNothing(t *testing.T) {
	root := t.TempDir()
	got := Discover(Locations{Laya: filepath.Join(root, "a"), HFHub: filepath.Join(root, "b"),
		LMStudio: []string{filepath.Join(root, "c")}, Ollama: filepath.Join(root, "d")}, (&fakeProbe{}).probe)
	if len(got) != 0 {
		t.Fatalf("found %+v in empty locations", got)
	}
}

func TestOpenProbeReportsEngineError(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, map[string]string{"org--m/m.gguf": "GGUF\x03\x00\x00\x00truncated"})
	got := Discover(Locations{Laya: dir}, OpenProbe)
	if len(got) != 1 || got[0].Runnable || !strings.HasPrefix(got[0].Reason, "weights:") {
		t.Fatalf("got %+v, want one model the engine refuses, with its error as the reason", got)
	}
}

// The parity fixtures and the bundled model are real models the engine runs.
func TestOpenProbeFixtures(t *testing.T) {
	root := "../testdata/models"
	ggufs, _ := filepath.Glob(root + "/*/*.gguf")
	if len(ggufs) == 0 {
		t.Fatal("no parity fixtures in testdata/models")
	}
	archOf := map[string]string{"llama": "llama", "llama3": "llama", "qwen2": "qwen2", "qwen3": "qwen3",
		"qwen3_5": "qwen3_5", "gemma3": "gemma3", "smollm3": "smollm3", "lfm2": "lfm2"}
	found := Discover(Locations{Laya: root}, OpenProbe)
	if len(found) != len(ggufs) {
		t.Errorf("discovered %d models, want the %d GGUF fixtures", len(found), len(ggufs))
	}
	for _, f := range found {
		model := strings.Split(f.Name, "/")[0]
		if !f.Runnable || f.Format != "gguf" || f.Arch != archOf[model] {
			t.Errorf("%s: %+v, want a runnable %s gguf", f.Name, f, archOf[model])
		}
	}
	dirs, _ := filepath.Glob(root + "/*/hf")
	mlx, _ := filepath.Glob(root + "/*/mlx[48]")
	dirs = append(dirs, mlx...)
	if isDir("../assets/models/laya-code") {
		dirs = append(dirs, "../assets/models/laya-code")
	}
	for _, d := range dirs {
		want := "mlx"
		if filepath.Base(d) == "hf" {
			want = "safetensors"
		}
		if got := dirFormat(d); got != want {
			t.Errorf("%s: dirFormat %q, want %q", d, got, want)
		}
		r, err := OpenProbe(d)
		if err != nil {
			t.Errorf("%s: %v", d, err)
		} else if r.Format != want {
			t.Errorf("%s: engine says format %q, want %q", d, r.Format, want)
		}
	}
}

func TestLocations(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name       string
		env        func(string) string
		hf, ollama string
	}{
		{"defaults", env(), "/h/.cache/huggingface/hub", "/h/.ollama/models"},
		{"xdg cache", env("XDG_CACHE_HOME", "/x/cache"), "/x/cache/huggingface/hub", "/h/.ollama/models"},
		{"hf home", env("HF_HOME", "/hf", "XDG_CACHE_HOME", "/x/cache"), "/hf/hub", "/h/.ollama/models"},
		{"hf hub cache wins", env("HF_HOME", "/hf", "HF_HUB_CACHE", "/cache/hub"), "/cache/hub", "/h/.ollama/models"},
		{"ollama models", env("OLLAMA_MODELS", "/o"), "/h/.cache/huggingface/hub", "/o"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := locationsFor("/h", "/laya", tc.env)
			if l.Laya != "/laya" || l.HFHub != tc.hf || l.Ollama != tc.ollama {
				t.Errorf("got laya %q hf %q ollama %q", l.Laya, l.HFHub, l.Ollama)
			}
			if !slices.Equal(l.LMStudio, []string{"/h/.lmstudio/models", "/h/.cache/lm-studio/models"}) {
				t.Errorf("lm studio %v", l.LMStudio)
			}
		})
	}
}

func TestInstallPaths(t *testing.T) {
	if p := (Entry{ID: "qwen2.5-coder-1.5b-4bit"}).InstallPath("/m"); p != filepath.FromSlash("/m/qwen2.5-coder-1.5b-4bit") {
		t.Errorf("catalog entry: %s", p)
	}
	for _, tc := range []struct {
		repo  string
		files []string
		base  string
	}{
		{"mlx-community/Qwen2.5-Coder-1.5B-4bit", nil, "mlx-community--Qwen2.5-Coder-1.5B-4bit"},
		{"bartowski/Qwen2.5-Coder-1.5B-Instruct-GGUF", []string{"Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf"},
			"bartowski--Qwen2.5-Coder-1.5B-Instruct-GGUF--Qwen2.5-Coder-1.5B-Instruct-Q4_K_M"},
	} {
		if p := RepoInstallPath("/m", tc.repo, tc.files); p != filepath.Join("/m", tc.base) {
			t.Errorf("RepoInstallPath(%s) = %s, want /m/%s", tc.repo, p, tc.base)
		}
	}
}

func TestFindRepo(t *testing.T) {
	found := []Found{
		{Repo: "o/broken", Path: "/a", Runnable: false},
		{Repo: "o/gguf", Path: "/b/m-Q8_0.gguf", Runnable: true},
		{Repo: "O/Dir", Path: "/c", Runnable: true},
	}
	if f, ok := FindRepo(found, "o/dir", nil); !ok || f.Path != "/c" {
		t.Errorf("case-insensitive repo: %+v %v", f, ok)
	}
	if _, ok := FindRepo(found, "o/broken", nil); ok {
		t.Error("found a model the engine cannot run")
	}
	if _, ok := FindRepo(found, "o/gguf", []string{"m-Q4_K_M.gguf"}); ok {
		t.Error("another quantization of a GGUF repo counted as the one asked for")
	}
	if f, ok := FindRepo(found, "o/gguf", []string{"m-Q8_0.gguf"}); !ok || f.Path != "/b/m-Q8_0.gguf" {
		t.Errorf("gguf file: %+v %v", f, ok)
	}
}
