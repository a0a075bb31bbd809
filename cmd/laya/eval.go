package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/layaapp/laya/internal/fsutil"
)

func init() {
	register("eval", "score a model on a text: perplexity and next-token accuracy", func(args []string) error {
		return runEval(args, os.Stdout, os.Stderr)
	})
}

// maxEvalText bounds the text laya eval scores (the bundled held-out text is 51 KB).
const maxEvalText = 256 << 20

// runEval prints the model's scores on a text file to stdout.
func runEval(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef := addEngineFlags(fs)
	textFile := fs.String("text", "", "text file to score")
	window := fs.Int("window", 512, "tokens per window; each window starts from an empty cache")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *textFile == "" {
		return errors.New("--text FILE is required")
	}
	text, err := fsutil.ReadFileLimit(*textFile, maxEvalText)
	if err != nil {
		return err
	}
	m, err := ef.load(*window)
	if err != nil {
		return err
	}
	defer m.Close()
	ids := m.Tokenizer().Encode(string(text), true)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := m.Eval(ctx, ids, *window)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{
			"window": *window, "tokens": r.Tokens, "nll": r.NLL, "ppl": r.PPL, "top1": r.Top1,
		})
	}
	fmt.Fprintf(stdout, "tokens %d  nll %.4f  ppl %.3f  top1 %.4f\n", r.Tokens, r.NLL, r.PPL, r.Top1)
	return nil
}
