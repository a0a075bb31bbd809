package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/layaapp/laya/internal/doctor"
)

// TestDoctor runs `laya doctor --json` against a model that loads and one that does not: the
// report parses either way, and only the second is an error (Laya cannot work).
func TestDoctor(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("LAYA_SOCKET", filepath.Join(home, "none.sock"))
	model := filepath.Join("..", "..", "testdata", "models", "llama", "q8_0.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		model string
		fails bool
	}{{model, false}, {filepath.Join(home, "missing"), true}} {
		var out bytes.Buffer
		err := runDoctor([]string{"--json", "--no-timing", "--model", c.model}, &out)
		if (err != nil) != c.fails {
			t.Errorf("%s: err %v", c.model, err)
		}
		var r doctor.Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v\n%s", c.model, err, out.String())
		}
		if r.OS.GOOS != runtime.GOOS || r.Model.Path != c.model || (len(r.Problems) > 0) != c.fails {
			t.Errorf("%s: report %+v", c.model, r)
		}
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := runVersion(nil, &out); err != nil || !strings.HasPrefix(out.String(), "laya ") || !strings.Contains(out.String(), runtime.Version()) {
		t.Errorf("%q, %v", out.String(), err)
	}
	out.Reset()
	var v struct{ Version, Go string }
	if err := runVersion([]string{"--json"}, &out); err != nil || json.Unmarshal(out.Bytes(), &v) != nil || v.Go != runtime.Version() || v.Version == "" {
		t.Errorf("--json: %q, %v", out.String(), err)
	}
}
