package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/models/download"
)

func TestFormatProgress(t *testing.T) {
	for _, tc := range []struct {
		p    download.Progress
		want string
	}{
		{download.Progress{Done: 0, Total: 4 << 20}, "[>       ]   0%  0 B / 4.0 MiB    --  ETA --:--"},
		{download.Progress{Done: 1 << 20, Total: 4 << 20, Rate: 512 << 10, ETA: 6 * time.Second}, "[==>     ]  25%  1.0 MiB / 4.0 MiB  512.0 KiB/s  ETA 0:06"},
		{download.Progress{Done: 4 << 20, Total: 4 << 20, Rate: 1 << 20}, "[========] 100%  4.0 MiB / 4.0 MiB  1.0 MiB/s  ETA 0:00"},
	} {
		if got := formatProgress(tc.p, 8); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
	if got := formatETA(3*time.Hour + 2*time.Minute + 5*time.Second); got != "3:02:05" {
		t.Errorf("formatETA = %q", got)
	}
}

// TestPullCommand runs `laya pull org/model` against a local hub serving a one-file GGUF repo.
func TestPullCommand(t *testing.T) {
	gguf := []byte("GGUF\x03\x00\x00\x00 not really a model")
	sum := sha256.Sum256(gguf)
	commit := strings.Repeat("c", 40)
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/models/org/model/revision/main":
			json.NewEncoder(w).Encode(map[string]any{"id": "org/model", "sha": commit, "siblings": []any{
				map[string]any{"rfilename": "README.md", "size": 3, "blobId": strings.Repeat("0", 40)},
				map[string]any{"rfilename": "m-Q4_0.gguf", "size": len(gguf), "blobId": strings.Repeat("1", 40),
					"lfs": map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": len(gguf), "pointerSize": 130}},
			}})
		case "/org/model/resolve/" + commit + "/m-Q4_0.gguf":
			w.Write(gguf)
		default:
			http.NotFound(w, r)
		}
	}))
	defer hub.Close()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "XDG_DATA_HOME", "OLLAMA_MODELS", "XDG_CONFIG_HOME", "HF_TOKEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("HF_ENDPOINT", hub.URL)
	dir := filepath.Join(home, "models")
	if err := runPull([]string{"--dir", dir, "org/model"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "org--model", "m-Q4_0.gguf"))
	if err != nil || string(got) != string(gguf) {
		t.Fatalf("installed file: %q, %v", got, err)
	}
	// Pulling again finds the installed copy and does not fetch.
	hub.Close()
	if err := runPull([]string{"--dir", dir, "org/model"}); err != nil {
		t.Fatalf("second pull: %v", err)
	}
	if err := runPull([]string{"not-in-catalog"}); err == nil || !strings.Contains(err.Error(), "catalog") {
		t.Fatalf("unknown id: %v", err)
	}
}
