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
	"strconv"
	"strings"
	"time"

	"github.com/layaapp/laya/engine"
)

func init() {
	register("generate", "complete a prompt with a model", func(args []string) error {
		return runGenerate(args, os.Stdout, os.Stderr)
	})
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// setFlags reports which flags the command line gave, so that an empty value given is told
// from none.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// parseIDs reads a comma-separated list of token ids.
func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		id, err := strconv.ParseInt(f, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("bad token id %q in --prompt-ids", f)
		}
		ids = append(ids, int32(id))
	}
	return ids, nil
}

// generateJSON is the --json output of laya generate.
type generateJSON struct {
	IDs     []int32     `json:"ids"`
	Text    string      `json:"text"`
	Stop    string      `json:"stop"`
	Steps   []stepJSON  `json:"steps"`
	Timings timingsJSON `json:"timings"`
}

// stepJSON is one generated token; Top holds [id, logprob] pairs, most likely first.
type stepJSON struct {
	ID  int32    `json:"id"`
	Top [][2]any `json:"top"`
}

type timingsJSON struct {
	LoadMS          float64 `json:"load_ms"`
	TokenizeMS      float64 `json:"tokenize_ms"`
	PrefillMS       float64 `json:"prefill_ms"`
	DecodeMS        float64 `json:"decode_ms"`
	DetokenizeMS    float64 `json:"detokenize_ms"`
	PromptTokens    int     `json:"prompt_tokens"`
	ReusedTokens    int     `json:"reused_tokens"`
	GeneratedTokens int     `json:"generated_tokens"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runGenerate streams the completion (or, with --json, one object) to stdout and the timing line
// to stderr.
func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef := addEngineFlags(fs)
	prompt := fs.String("prompt", "", "prompt text; the model's BOS is added as HuggingFace does")
	promptIDs := fs.String("prompt-ids", "", "prompt as comma-separated token ids, fed as given")
	var p engine.Sampling
	fs.IntVar(&p.MaxTokens, "max-tokens", 64, "most tokens to generate")
	temp := fs.Float64("temperature", 0, "sampling temperature; 0 = greedy")
	fs.IntVar(&p.TopK, "top-k", 0, "keep the K most likely tokens; 0 = off")
	topP := fs.Float64("top-p", 0, "nucleus sampling mass; 0 = off")
	minP := fs.Float64("min-p", 0, "drop tokens below this fraction of the top probability; 0 = off")
	rep := fs.Float64("repeat-penalty", 0, "repetition penalty (HF semantics); 0 or 1 = off")
	fs.Uint64Var(&p.Seed, "seed", 0, "random seed; the same seed gives the same output")
	fs.IntVar(&p.Logprobs, "logprobs", 0, "report the K most likely tokens per step (with --json)")
	fs.Var((*stringList)(&p.StopStrings), "stop", "stop string (repeatable)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of streaming text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	p.Temperature, p.TopP, p.MinP, p.RepeatPenalty = float32(*temp), float32(*topP), float32(*minP), float32(*rep)
	set := setFlags(fs)
	switch {
	case set["prompt"] == set["prompt-ids"]:
		return errors.New("give exactly one of --prompt or --prompt-ids")
	case set["prompt"] && *prompt == "", set["prompt-ids"] && *promptIDs == "":
		return errors.New("the prompt is empty")
	case p.Logprobs != 0 && !*asJSON:
		return errors.New("--logprobs needs --json, which prints them")
	}

	start := time.Now()
	m, err := ef.load(0)
	if err != nil {
		return err
	}
	defer m.Close()
	loadTime := time.Since(start)

	start = time.Now()
	var ids []int32
	if *promptIDs != "" {
		if ids, err = parseIDs(*promptIDs); err != nil {
			return err
		}
	} else {
		ids = m.Tokenizer().Encode(*prompt, true)
	}
	tokenizeTime := time.Since(start)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	steps := []stepJSON{}
	emit := func(t engine.Token) error {
		if *asJSON {
			top := make([][2]any, len(t.Top))
			for i, e := range t.Top {
				top[i] = [2]any{e.ID, e.Logprob}
			}
			steps = append(steps, stepJSON{t.ID, top})
			return nil
		}
		_, err := io.WriteString(stdout, t.Text)
		return err
	}
	s := m.NewSession()
	defer s.Close()
	res, err := s.Generate(ctx, ids, p, emit)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	// An interrupt still prints what was generated, then reports the cancellation.
	canceled := err
	if res.IDs == nil {
		res.IDs = []int32{}
	}

	if *asJSON {
		out := generateJSON{IDs: res.IDs, Text: res.Text, Stop: res.Stop, Steps: steps, Timings: timingsJSON{
			LoadMS: ms(loadTime), TokenizeMS: ms(tokenizeTime), PrefillMS: ms(res.Prefill),
			DecodeMS: ms(res.Decode), DetokenizeMS: ms(res.Detokenize), PromptTokens: res.PromptTokens,
			ReusedTokens: res.ReusedTokens, GeneratedTokens: len(res.IDs),
		}}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
		return canceled
	}
	fmt.Fprintln(stdout)
	rate := 0.0
	if res.Decode > 0 {
		rate = float64(len(res.IDs)) / res.Decode.Seconds()
	}
	fmt.Fprintf(stderr, "prompt %d tok (reused %d) in %.0f ms, generated %d tok in %.0f ms, %.1f tok/s, load %.0f ms\n",
		res.PromptTokens, res.ReusedTokens, ms(res.Prefill), len(res.IDs), ms(res.Decode), rate, ms(loadTime))
	return canceled
}
