package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplayBadArguments(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, make([]byte, maxReplayText+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{},
		{"--text", empty},
		{"--text", big},
		{"--text", filepath.Join(dir, "missing.txt")},
		{"--text", empty, "--mode", "sometimes"},
		{"--text", empty, "--limit", "-1"},
	} {
		if err := runReplay(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestReplayBundledModel runs the command end to end on the start of the bundled model's
// held-out text: every character is accounted for and the model saves some keystrokes.
func TestReplayBundledModel(t *testing.T) {
	const heldout = "../../assets/models/laya-code/heldout.txt"
	if _, err := os.Stat(heldout); err != nil {
		t.Skip(err)
	}
	out, err := captureStdout(t, func() error {
		return runReplay([]string{"--model", "../../assets/models/laya-code", "--text", heldout, "--limit", "300", "--json"})
	})
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Chars, Requests int
		Shown           int                             `json:"suggestions_shown"`
		Saved           float64                         `json:"keystrokes_saved"`
		Latency         struct{ P50, P95, Max float64 } `json:"latency_ms"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Chars != 300 || rep.Requests == 0 || rep.Shown == 0 || rep.Saved <= 0 || rep.Saved >= 1 ||
		!(rep.Latency.P50 > 0 && rep.Latency.P50 <= rep.Latency.P95 && rep.Latency.P95 <= rep.Latency.Max) {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(out, `"latency_ms"`) {
		t.Errorf("no latency_ms key in %s", out)
	}
}
