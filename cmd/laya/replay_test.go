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
		{"--text", empty, "--sweep", "off;bogus=1"},
		{"--text", empty, "--sweep", "chars=x"},
		{"--text", empty, "--sweep", "chars=-1"},
		{"--text", empty, "--sweep", "path=-1;path"},
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

// TestReplaySweep: a sweep reports each setting as a separate run would, and a second sweep
// on the saved memo reports the same.
func TestReplaySweep(t *testing.T) {
	const heldout = "../../assets/models/laya-code/heldout.txt"
	if _, err := os.Stat(heldout); err != nil {
		t.Skip(err)
	}
	memo := filepath.Join(t.TempDir(), "memo")
	sweep := func() []sweepResult {
		t.Helper()
		out, err := captureStdout(t, func() error {
			return runReplay([]string{"--model", "../../assets/models/laya-code", "--text", heldout, "--limit", "200",
				"--json", "--memo", memo, "--sweep", "off; chars=6,path=-0.5"})
		})
		if err != nil {
			t.Fatal(err)
		}
		var res []sweepResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return res
	}
	first := sweep()
	if len(first) != 2 || first[0].Gating != "off" || first[1].Gating != "chars=6,path=-0.5" {
		t.Fatalf("sweep %+v", first)
	}
	off, strict := first[0].Report, first[1].Report
	if off.Shown == 0 || strict.Shown >= off.Shown {
		t.Errorf("shown ungated %d, strictly gated %d: want fewer gated, and some", off.Shown, strict.Shown)
	}
	out, err := captureStdout(t, func() error {
		return runReplay([]string{"--model", "../../assets/models/laya-code", "--text", heldout, "--limit", "200",
			"--json", "--min-chars", "6", "--min-path-logprob", "-0.5"})
	})
	if err != nil {
		t.Fatal(err)
	}
	var alone sweepResult
	if err := json.Unmarshal([]byte(out), &alone.Report); err != nil {
		t.Fatal(err)
	}
	if a, b := alone.Report, strict; a.Requests != b.Requests || a.Shown != b.Shown || a.Wrong != b.Wrong ||
		a.CharsAccepted != b.CharsAccepted || a.AcceptKeys != b.AcceptKeys {
		t.Errorf("alone %+v, in the sweep %+v", a, b)
	}
	again := sweep()
	for i := range first {
		if a, b := first[i].Report, again[i].Report; a.Requests != b.Requests || a.Shown != b.Shown ||
			a.Wrong != b.Wrong || a.CharsAccepted != b.CharsAccepted {
			t.Errorf("%s: first %+v, from the memo %+v", first[i].Gating, a, b)
		}
	}
}
