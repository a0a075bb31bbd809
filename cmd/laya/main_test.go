package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// runCaptured runs a command line as main does, with os.Stderr captured too (the flag
// package and some commands write there).
func runCaptured(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	os.Stderr = saved
	w.Close()
	return code, out.String(), errOut.String() + <-done
}

func TestExitCodesAndMessages(t *testing.T) {
	register("test-interrupted", "", func([]string) error { return context.Canceled })
	defer delete(commands, "test-interrupted")

	code, out, _ := runCaptured(t, "--help")
	if code != 0 || !strings.Contains(out, "generate") {
		t.Errorf("laya --help: exit %d, stdout %q", code, out)
	}
	if code, _, errOut := runCaptured(t); code != 2 || !strings.Contains(errOut, "usage") {
		t.Errorf("laya: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCaptured(t, "generate", "-h"); code != 0 || !strings.Contains(errOut, "-prompt") {
		t.Errorf("laya generate -h: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut := runCaptured(t, "generate", "--no-such-flag")
	if n := strings.Count(errOut, "no-such-flag"); code != 2 || n != 1 {
		t.Errorf("a wrong flag: exit %d, named %d times in %q", code, n, errOut)
	}
	if code, _, errOut := runCaptured(t, "test-interrupted"); code != 130 || errOut != "" {
		t.Errorf("an interrupt: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCaptured(t, "generate", "--prompt", ""); code != 1 || !strings.Contains(errOut, "prompt is empty") {
		t.Errorf("--prompt '': exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCaptured(t, "generate", "--prompt", "x", "--logprobs", "3"); code != 1 || !strings.Contains(errOut, "--logprobs needs --json") {
		t.Errorf("--logprobs without --json: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCaptured(t, "tokenize", "--tokenizer", "../../testdata/tokenizer/llama2-tokenizer.json"); code != 1 || !strings.Contains(errOut, "--text") {
		t.Errorf("tokenize without --text or --jsonl: exit %d, stderr %q", code, errOut)
	}
}

// TestHelpDescribesThisOS: --socket's help gives this OS's default only.
func TestHelpDescribesThisOS(t *testing.T) {
	_, _, errOut := runCaptured(t, "complete", "-h")
	mac := strings.Contains(errOut, "Library/Application Support")
	xdg := strings.Contains(errOut, "XDG_RUNTIME_DIR")
	if mac == xdg {
		t.Errorf("complete -h describes the socket as %q", errOut)
	}
}
