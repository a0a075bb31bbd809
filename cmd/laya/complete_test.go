package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/server"
)

// upper is a stand-in completer: it suggests the prefix in upper case, and the suffix it got.
type upper struct{}

func (upper) Complete(_ context.Context, client string, r complete.Request, onText func(string)) (complete.Suggestion, error) {
	text := strings.ToUpper(r.Prefix) + "|" + r.Suffix + "|" + client + "|" + r.App
	return complete.Suggestion{Text: text, Tokens: 2, Stop: "eos"}, nil
}

// captureStdout runs f with stdout going to a pipe and returns what it wrote.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	errc := make(chan error, 1)
	go func() { errc <- f(); w.Close() }()
	out, _ := io.ReadAll(r)
	os.Stdout = old
	return string(out), <-errc
}

func TestCompleteUsesServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "laya.sock")
	l, err := server.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(upper{}, server.Options{})
	go s.Serve(l)
	defer s.Close()

	out, err := captureStdout(t, func() error {
		return runComplete([]string{"--socket", path, "--suffix", "after", "--app", "zsh", "--client", "me", "ab c"}, strings.NewReader(""))
	})
	if err != nil || out != "AB C|after|client:me|zsh\n" {
		t.Errorf("plain: %q, %v", out, err)
	}
	out, err = captureStdout(t, func() error {
		return runComplete([]string{"--socket", path, "--json", "x"}, strings.NewReader(""))
	})
	var f server.Frame
	if err != nil || json.Unmarshal([]byte(out), &f) != nil || !f.Done || f.Text != "X||client:cli|" || f.Tokens != 2 {
		t.Errorf("json: %q, %v", out, err)
	}
}

func TestCompleteWithoutServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.sock")
	out, err := captureStdout(t, func() error {
		return runComplete([]string{"--socket", path, "--fallback=false", "x"}, strings.NewReader(""))
	})
	if err == nil || out != "" {
		t.Errorf("no server, no fallback: printed %q, err %v", out, err)
	}
	if err := runComplete([]string{"--socket", path}, strings.NewReader("")); err == nil {
		t.Error("no PREFIX accepted")
	}
}

func TestCompleteInProcess(t *testing.T) {
	model := filepath.Join("..", "..", "assets", "models", "laya-code")
	if _, err := os.Stat(model); err != nil {
		t.Skip(err)
	}
	path := filepath.Join(t.TempDir(), "none.sock")
	out, err := captureStdout(t, func() error {
		return runComplete([]string{"--socket", path, "--model", model, "import numpy as "}, strings.NewReader(""))
	})
	if err != nil || out != "np\n" {
		t.Errorf("in-process: %q, %v", out, err)
	}
}

// TestCompletePrefixArgs: "-" is a prefix like any other (a shell line of just "-"), --stdin
// reads the prefix, and --timeout bounds waiting for stdin.
func TestCompletePrefixArgs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "laya.sock")
	l, err := server.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(upper{}, server.Options{})
	go s.Serve(l)
	defer s.Close()

	out, err := captureStdout(t, func() error {
		return runComplete([]string{"--socket", path, "--", "-"}, strings.NewReader("from stdin"))
	})
	if err != nil || out != "-||client:cli|\n" {
		t.Errorf(`prefix "-": %q, %v`, out, err)
	}
	out, err = captureStdout(t, func() error {
		return runComplete([]string{"--socket", path, "--stdin"}, strings.NewReader("from stdin"))
	})
	if err != nil || out != "FROM STDIN||client:cli|\n" {
		t.Errorf("--stdin: %q, %v", out, err)
	}
	if err := runComplete([]string{"--socket", path, "--stdin", "x"}, strings.NewReader("")); err == nil {
		t.Error("--stdin with a PREFIX too accepted")
	}

	// A stdin that never ends: --timeout must still end the command.
	r, w := io.Pipe()
	defer w.Close()
	start := time.Now()
	_, err = captureStdout(t, func() error {
		return runComplete([]string{"--socket", path, "--timeout", "100ms", "--stdin"}, r)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stdin held open: %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("--timeout 100ms with stdin held open took %v", d)
	}
}
