package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall installs into a temporary PREFIX and runs the installed laya from a directory
// outside the checkout, with no LAYA_MODEL: it must find the bundled model it was installed
// with, and list it.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds laya")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	prefix, build, home := filepath.Join(tmp, "prefix"), filepath.Join(tmp, "build"), filepath.Join(tmp, "home")
	for _, d := range []string{build, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	make := exec.Command("make", "-C", root, "install", "PREFIX="+prefix, "BIN="+filepath.Join(build, "laya"))
	if out, err := make.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(prefix, "share", "laya", "laya.zsh")); err != nil {
		t.Errorf("zsh widget not installed: %v", err)
	}

	laya := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(prefix, "bin", "laya"), args...)
		cmd.Dir = home
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("laya %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	wantModel := filepath.Join(prefix, "share", "laya", "models", "laya-code")
	var gen struct {
		IDs []int32 `json:"ids"`
	}
	if out := laya("generate", "--prompt", "import numpy as", "--max-tokens", "2", "--json"); json.Unmarshal([]byte(out), &gen) != nil || len(gen.IDs) == 0 {
		t.Errorf("installed laya generate: %q", out)
	}
	var found []struct {
		Source, Path string
		Runnable     bool
	}
	out := laya("models", "--json")
	if err := json.Unmarshal([]byte(out), &found); err != nil {
		t.Fatalf("laya models --json: %v\n%s", err, out)
	}
	if len(found) == 0 || found[0].Source != "bundled" || found[0].Path != wantModel || !found[0].Runnable {
		t.Errorf("laya models on a fresh home: %s\nwant the bundled model at %s", out, wantModel)
	}
}
