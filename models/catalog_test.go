package models

import (
	"strings"
	"testing"
)

func TestDefaultCatalog(t *testing.T) {
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	// The brief's list: every one of these families must be offered.
	for _, want := range []string{
		"mlx-community/TinyLlama-1.1B-Chat-v1.0-4bit",
		"mlx-community/Qwen2.5-0.5B-Instruct-4bit",
		"mlx-community/Qwen2.5-1.5B-Instruct-4bit",
		"mlx-community/Qwen2.5-Coder-0.5B-Instruct-4bit",
		"mlx-community/Qwen2.5-Coder-1.5B-4bit",
		"mlx-community/SmolLM2-360M-Instruct",
		"mlx-community/Llama-3.2-1B-Instruct-4bit",
	} {
		if _, ok := c.Lookup(want); !ok {
			t.Errorf("catalog lacks %s", want)
		}
	}
	for _, e := range c.Models {
		if e.Revision != "main" {
			t.Errorf("%s: revision %q, want the default main", e.ID, e.Revision)
		}
		if strings.Contains(strings.ToLower(e.Repo), "coder") != e.FIM {
			t.Errorf("%s: fim = %v, but only the Qwen coders have FIM tokens", e.ID, e.FIM)
		}
		for _, s := range e.Speed {
			if s.Measured {
				t.Errorf("%s: speed on %s claims measured; nothing has been measured on a Mac yet", e.ID, s.Mac)
			}
		}
	}
	e, ok := c.Lookup("QWEN2.5-CODER-1.5B-4BIT")
	if !ok || e.Repo != "mlx-community/Qwen2.5-Coder-1.5B-4bit" {
		t.Errorf("case-insensitive lookup by id: got %+v, %v", e, ok)
	}
	if _, ok := c.Lookup("nope"); ok {
		t.Error("lookup of an unknown id succeeded")
	}
}

// The 2026 families' base models, sized for 8, 16 and 32 GB Macs (issue 21): each is offered
// under the engine's architecture name, and one small base model is the recommended prose model.
func TestCatalogBaseModels(t *testing.T) {
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"qwen3.5-0.8b-base-4bit": "qwen3_5", "qwen3.5-2b-base-4bit": "qwen3_5",
		"qwen3-0.6b-base-4bit": "qwen3", "qwen3-1.7b-base-4bit": "qwen3",
		"gemma-3-270m-4bit": "gemma3", "gemma-3-1b-base-4bit": "gemma3",
		"lfm2.5-1.2b-base-q4km": "lfm2", "smollm3-3b-base-8bit": "smollm3",
	}
	for id, arch := range want {
		e, ok := c.Lookup(id)
		if !ok {
			t.Errorf("catalog lacks %s", id)
			continue
		}
		if e.Arch != arch {
			t.Errorf("%s: arch %q, want %q", id, e.Arch, arch)
		}
		if !strings.Contains(strings.ToLower(e.Name), "base") || strings.Contains(strings.ToLower(e.Repo), "instruct") ||
			strings.Contains(strings.ToLower(e.Repo), "-it-") {
			t.Errorf("%s: %s (%s) is not named as a base model", id, e.Name, e.Repo)
		}
	}
	r, ok := c.Recommended()
	if !ok {
		t.Fatal("no recommended prose model")
	}
	if _, ok := want[r.ID]; !ok || r.FIM || r.SizeMB > 1000 {
		t.Errorf("recommended %s (%d MB, fim %v): want one of the small base models for prose", r.ID, r.SizeMB, r.FIM)
	}
}

const goodEntry = `
[[model]]
id = "x"
name = "X"
repo = "org/x"
format = "mlx"
size_mb = 10
license = "mit"
good_for = "tests"
`

func TestParseCatalogErrors(t *testing.T) {
	cases := []struct{ name, toml, want string }{
		{"syntax", "[[model]\nid = 1", "catalog"},
		{"empty", "", "no [[model]] entries"},
		{"unknown key", goodEntry + "colour = \"red\"\n", "unknown keys model.colour"},
		{"wrong type", strings.Replace(goodEntry, "size_mb = 10", `size_mb = "ten"`, 1), "catalog"},
		{"duplicate", goodEntry + goodEntry, `duplicate id "x"`},
		{"bad format", strings.Replace(goodEntry, `"mlx"`, `"onnx"`, 1), `format "onnx"`},
		{"bad repo", strings.Replace(goodEntry, `"org/x"`, `"../x"`, 1), "org/name"},
		{"repo no slash", strings.Replace(goodEntry, `"org/x"`, `"x"`, 1), "org/name"},
		{"missing license", strings.Replace(goodEntry, `license = "mit"`, "", 1), "missing license"},
		{"gguf without file", strings.Replace(goodEntry, `"mlx"`, `"gguf"`, 1), "exactly one .gguf"},
		{"escaping file", goodEntry + `files = ["../../etc/passwd"]` + "\n", "plain relative path"},
		{"bad speed", goodEntry + "[[model.speed]]\nmac = \"M1\"\ntokens_per_sec = 0\n", "positive tokens_per_sec"},
		{"two recommended", goodEntry + "recommended = true\n" + strings.Replace(goodEntry, `id = "x"`, `id = "y"`, 1) + "recommended = true\n",
			`both "x" and "y" are recommended`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCatalog([]byte(tc.toml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := ParseCatalog([]byte(goodEntry)); err != nil {
		t.Fatalf("valid entry rejected: %v", err)
	}
}

func TestSpeedString(t *testing.T) {
	got := Speed{Mac: "M1", TokensPerSec: 42}.String()
	if got != "M1: ~42 tokens/s (estimate, not measured)" {
		t.Errorf("got %q", got)
	}
}
