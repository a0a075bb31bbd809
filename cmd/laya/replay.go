package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/layaapp/laya/app/completion"
	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/internal/replay"
)

func init() {
	register("replay", "type a text through the app's completion path and report keystrokes saved and latency", runReplay)
}

// maxReplayText bounds --text: a replay types every character, so a bigger file is a mistake.
const maxReplayText = 4 << 20

func runReplay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: laya replay [flags] --text FILE")
		fs.PrintDefaults()
	}
	ef := addEngineFlags(fs)
	textPath := fs.String("text", "", "the text to type (required)")
	pause := fs.Int("pause-ms", 300, "the user's pause before a word, and the automatic mode's delay")
	cps := fs.Float64("cps", 8, "typing speed, characters per second")
	mode := fs.String("mode", "auto", "auto (a request after each pause) or hotkey (the hotkey where the user pauses)")
	limit := fs.Int("limit", 0, "type only the first N characters (0 = all)")
	maxTokens := fs.Int("max-tokens", 0, "most tokens per suggestion (0 = the app's default)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	gating := fs.Bool("gating", true, "confidence gating (false shows whatever the model says)")
	minFirst := fs.Float64("min-first-logprob", 0, "gating: least log-probability of the first token (0 = default)")
	minPath := fs.Float64("min-path-logprob", 0, "gating: least log-probability of the whole suggestion; it ends before it would drop below (0 = default)")
	minToken := fs.Float64("min-token-logprob", 0, "gating: least log-probability of a later token (0 = default)")
	minMean := fs.Float64("min-mean-logprob", 0, "gating: least mean log-probability (0 = default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *textPath == "" || fs.NArg() != 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	m := map[string]string{"auto": config.ModeAutomatic, "hotkey": config.ModeHotkey}[*mode]
	if m == "" {
		return fmt.Errorf("--mode %q: give auto or hotkey", *mode)
	}
	if *limit < 0 {
		return fmt.Errorf("--limit %d: must not be negative", *limit)
	}
	text, err := readBounded(*textPath, maxReplayText)
	if err != nil {
		return err
	}
	if *limit > 0 {
		if r := []rune(text); len(r) > *limit {
			text = string(r[:*limit])
		}
	}
	opt := complete.Options{MinFirstLogprob: *minFirst, MinPathLogprob: *minPath, MinTokenLogprob: *minToken, MinMeanLogprob: *minMean}
	if !*gating {
		inf := math.Inf(-1)
		opt.MinFirstLogprob, opt.MinPathLogprob, opt.MinTokenLogprob, opt.MinMeanLogprob = inf, inf, inf, inf
	}
	model, err := ef.load(0)
	if err != nil {
		return err
	}
	defer model.Close()
	comp := complete.New(model, opt)
	defer comp.Close()
	rep, err := replay.Run(context.Background(), replay.Options{
		Text: text, Engine: completerEngine{comp}, Mode: m, PauseMS: *pause, CPS: *cps, MaxTokens: *maxTokens,
	})
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Printf("%s\n", b)
		return err
	}
	printReplay(os.Stdout, rep)
	return nil
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return "", fmt.Errorf("%s: more than %d bytes", path, limit)
	}
	if len(b) == 0 {
		return "", errors.New(path + ": empty")
	}
	return string(b), nil
}

// completerEngine is controller.Engine on an in-process Completer, under the app's client
// name, as the app's engine host runs it.
type completerEngine struct{ c *complete.Completer }

func (e completerEngine) Complete(ctx context.Context, r controller.Request, onText func(string)) (string, error) {
	req, err := completion.Request(r)
	if err != nil {
		return "", err
	}
	s, err := e.c.Complete(ctx, completion.Client, req, onText)
	return s.Text, err
}

func printReplay(w io.Writer, r replay.Report) {
	fmt.Fprintf(w, "typed %d characters at %g/s, %s mode, %d ms pauses (%d)\n", r.Chars, r.CPS, r.Mode, r.PauseMS, r.Pauses)
	fmt.Fprintf(w, "requests            %d\n", r.Requests)
	fmt.Fprintf(w, "suggestions shown   %d (%d accepted, %d wrong = %.1f%%)\n", r.Shown, r.Accepted, r.Wrong, 100*r.WrongShare)
	fmt.Fprintf(w, "characters accepted %d with %d accept and %d Esc presses\n", r.CharsAccepted, r.AcceptKeys, r.EscKeys)
	fmt.Fprintf(w, "keystrokes saved    %.1f%%\n", 100*r.KeystrokesSaved)
	fmt.Fprintf(w, "pause→visible ms    p50 %.1f  p95 %.1f  max %.1f  (%d)\n", r.Latency.P50, r.Latency.P95, r.Latency.Max, r.Latency.N)
	fmt.Fprintf(w, "engine ms/request   p50 %.1f  p95 %.1f  max %.1f  mean %.1f\n", r.Engine.P50, r.Engine.P95, r.Engine.Max, r.Engine.Mean)
}
