package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/layaapp/laya/app/completion"
	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/engine"
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
	minWord := fs.Float64("min-word-logprob", 0, "gating: least log-probability of the tokens through the first word (0 = default)")
	minChars := fs.Int("min-chars", 0, "gating: fewest characters of a suggestion unless --min-short-logprob passes it (0 = default)")
	minShort := fs.Float64("min-short-logprob", 0, "gating: least log-probability of a suggestion shorter than --min-chars (0 = default)")
	minToken := fs.Float64("min-token-logprob", 0, "gating: least log-probability of a later token (0 = default)")
	minMean := fs.Float64("min-mean-logprob", 0, "gating: least mean log-probability (0 = default)")
	sweep := fs.String("sweep", "", "replay once per gating setting, each computing only the prompts the ones before did not: "+
		"settings separated by ';', each 'off' or key=value pairs separated by ',' with keys "+strings.Join(slices.Sorted(maps.Keys(sweepKeys)), ", ")+
		" (as the flags; the gating flags are ignored)")
	memoPath := fs.String("memo", "", "with --sweep: a file of the model's output per prompt, read if it exists and written after each setting, so a later sweep of the same model and text computes only new prompts")
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
	opt := complete.Options{MinFirstLogprob: *minFirst, MinPathLogprob: *minPath, MinWordLogprob: *minWord,
		MinChars: *minChars, MinShortLogprob: *minShort, MinTokenLogprob: *minToken, MinMeanLogprob: *minMean}
	if !*gating {
		opt = ungated()
	}
	var settings []string
	if *sweep != "" {
		settings = strings.Split(*sweep, ";")
		for _, s := range settings {
			if _, err := parseGating(s); err != nil {
				return err
			}
		}
	}
	model, err := ef.load(0)
	if err != nil {
		return err
	}
	defer model.Close()
	ro := replay.Options{Text: text, Mode: m, PauseMS: *pause, CPS: *cps, MaxTokens: *maxTokens}
	if settings != nil {
		return runSweep(model, ro, settings, *memoPath, *asJSON)
	}
	comp := complete.New(model, opt)
	defer comp.Close()
	ro.Engine = completerEngine{comp}
	rep, err := replay.Run(context.Background(), ro)
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

// ungated is the completer's options with every gating rule off.
func ungated() complete.Options {
	inf := math.Inf(-1)
	return complete.Options{MinFirstLogprob: inf, MinPathLogprob: inf, MinWordLogprob: inf, MinChars: 1,
		MinTokenLogprob: inf, MinMeanLogprob: inf}
}

// sweepKeys are the keys of a --sweep setting and the options they set.
var sweepKeys = map[string]func(*complete.Options, float64){
	"first": func(o *complete.Options, v float64) { o.MinFirstLogprob = v },
	"path":  func(o *complete.Options, v float64) { o.MinPathLogprob = v },
	"word":  func(o *complete.Options, v float64) { o.MinWordLogprob = v },
	"chars": func(o *complete.Options, v float64) { o.MinChars = int(v) },
	"short": func(o *complete.Options, v float64) { o.MinShortLogprob = v },
	"token": func(o *complete.Options, v float64) { o.MinTokenLogprob = v },
	"mean":  func(o *complete.Options, v float64) { o.MinMeanLogprob = v },
}

// parseGating reads one --sweep setting: "off", "default", or key=value pairs.
func parseGating(s string) (complete.Options, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "off":
		return ungated(), nil
	case "default", "":
		return complete.Options{}, nil
	}
	var o complete.Options
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		set := sweepKeys[k]
		if !ok || set == nil {
			return o, fmt.Errorf("--sweep %q: %q is not key=value with a key of %s", s, kv, strings.Join(slices.Sorted(maps.Keys(sweepKeys)), ", "))
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || (k == "chars" && (f < 0 || f != math.Trunc(f) || f > 1000)) {
			return o, fmt.Errorf("--sweep %q: %s=%s is not a valid value", s, k, v)
		}
		set(&o, f)
	}
	return o, nil
}

// sweepResult is one setting's report in --sweep --json output.
type sweepResult struct {
	Gating string        `json:"gating"`
	Report replay.Report `json:"report"`
}

// runSweep replays ro once per gating setting through one memo of the model's output. The
// counts are those of separate runs; the latency of all but the first run is not the
// engine's (a remembered prompt takes no time) and is not printed.
func runSweep(model *engine.Model, ro replay.Options, settings []string, memoPath string, asJSON bool) error {
	memo := complete.NewMemo(model)
	if memoPath != "" {
		if f, err := os.Open(memoPath); err == nil {
			err = memo.Load(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("--memo %s: %w", memoPath, err)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	var out []sweepResult
	for _, s := range settings {
		opt, err := parseGating(s)
		if err != nil {
			return err
		}
		comp := memo.Completer(opt)
		ro.Engine = completerEngine{comp}
		rep, err := replay.Run(context.Background(), ro)
		comp.Close()
		if err != nil {
			return fmt.Errorf("--sweep %q: %w", s, err)
		}
		out = append(out, sweepResult{Gating: strings.TrimSpace(s), Report: rep})
		if memoPath != "" {
			if err := saveMemo(memo, memoPath); err != nil {
				return err
			}
		}
		if !asJSON {
			fmt.Printf("%-40s requests %5d  shown %5d  wrong %5d (%4.1f%%)  accepted %5d chars / %4d presses  saved %5.2f%%  (%d prompts computed)\n",
				strings.TrimSpace(s), rep.Requests, rep.Shown, rep.Wrong, 100*rep.WrongShare, rep.CharsAccepted,
				rep.AcceptKeys+rep.EscKeys, 100*rep.KeystrokesSaved, memo.Prompts())
		}
	}
	if asJSON {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Printf("%s\n", b)
		return err
	}
	return nil
}

// saveMemo writes memo to path through a temporary file, so an interrupted write leaves the
// old file.
func saveMemo(memo *complete.Memo, path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := memo.Save(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
