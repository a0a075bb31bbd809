package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/internal/fsutil"
)

// TestFilesReadWholeAreBounded: a tokenizer.json or config.json that never ends (/dev/zero)
// fails fast with ErrTooLarge instead of being read until memory runs out.
func TestFilesReadWholeAreBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	bundled := filepath.Join("..", "..", "assets", "models", "laya-code")
	modelWith := func(endless string) string {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
			src, err := filepath.Abs(filepath.Join(bundled, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == endless {
				src = "/dev/zero"
			}
			if err := os.Symlink(src, filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for name, run := range map[string]func() error{
		"tokenize --tokenizer /dev/zero": func() error {
			return runTokenize([]string{"--tokenizer", "/dev/zero", "--text", "x"}, strings.NewReader(""), &bytes.Buffer{})
		},
		"tokenize --model, tokenizer.json endless": func() error {
			return runTokenize([]string{"--model", modelWith("tokenizer.json"), "--text", "x"}, strings.NewReader(""), &bytes.Buffer{})
		},
		"generate --model, config.json endless": func() error {
			return runGenerate([]string{"--model", modelWith("config.json"), "--prompt", "x"}, &bytes.Buffer{}, &bytes.Buffer{})
		},
		"generate --model, tokenizer.json endless": func() error {
			return runGenerate([]string{"--model", modelWith("tokenizer.json"), "--prompt", "x"}, &bytes.Buffer{}, &bytes.Buffer{})
		},
	} {
		start := time.Now()
		err := run()
		if !errors.Is(err, fsutil.ErrTooLarge) {
			t.Errorf("%s: %v, want fsutil.ErrTooLarge", name, err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: took %v", name, d)
		}
	}
}
