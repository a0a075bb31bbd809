package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/cpu"
)

func init() {
	register("bench", "measure prefill and decode speed, memory and bandwidth on a model", func(args []string) error {
		return runBench(args, os.Stdout)
	})
}

// benchResult is what `laya bench --json` prints; build/bench/run.sh reads it.
type benchResult struct {
	Model        string  `json:"model"`
	Format       string  `json:"format"`
	Backend      string  `json:"backend"`
	Threads      int     `json:"threads"`
	PromptTokens int     `json:"prompt_tokens"`
	GenTokens    int     `json:"gen_tokens"`
	PrefillTokS  float64 `json:"prefill_tok_s"`
	DecodeTokS   float64 `json:"decode_tok_s"`
	DecodeMsTok  float64 `json:"decode_ms_per_token"`
	PeakRSS      int64   `json:"peak_rss_bytes"`
	FileBytes    int64   `json:"file_bytes"`
	WeightBytes  int64   `json:"weight_bytes"`
	TokenBytes   int64   `json:"bytes_per_token"`
	// BandwidthGBs is the bandwidth sustained right after the fastest decode, over as long as
	// that decode took, reading the same weights; the floor and its ratio come from it.
	// PeakBandwidthGBs is the fastest single pass over the weights seen in any run.
	BandwidthGBs     float64 `json:"bandwidth_gb_s"`
	PeakBandwidthGBs float64 `json:"peak_bandwidth_gb_s"`
	FloorMsTok       float64 `json:"floor_ms_per_token"`
	FloorRatio       float64 `json:"decode_over_floor"`
	PeakFloorRatio   float64 `json:"decode_over_peak_floor"`
	RSSOverFile      float64 `json:"rss_over_file"`
	Runs             int     `json:"runs"`
	GoMaxProcs       int     `json:"gomaxprocs"`
}

func runBench(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	ef := addEngineFlags(fs)
	promptTokens := fs.Int("prompt-tokens", 128, "prompt length for the prefill measurement")
	genTokens := fs.Int("gen-tokens", 64, "tokens to generate for the decode measurement")
	runs := fs.Int("runs", 3, "measured runs; the fastest of each phase is reported (shared machines are noisy)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured runs to this file")
	planOnly := fs.Bool("plan", false, "count the Metal backend's work per token for a prefill of --prompt-tokens and one decode step, without a GPU")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *promptTokens < 1 || *genTokens < 2 || *runs < 1 {
		return errors.New("need --prompt-tokens >= 1, --gen-tokens >= 2, --runs >= 1")
	}
	if *planOnly {
		return runBenchPlan(ef, *promptTokens, *asJSON, w)
	}
	m, err := ef.load(*promptTokens + *genTokens)
	if err != nil {
		return err
	}
	defer m.Close()
	info, cfg := m.Info(), m.Config()
	nt := ef.threads
	if nt == 0 {
		nt = cpu.PhysicalCores()
	}
	// Random ids (past the specials) stand in for text: speed does not depend on content.
	r := rand.New(rand.NewPCG(1, 2))
	prompt := make([]int32, *promptTokens)
	for i := range prompt {
		prompt[i] = int32(3 + r.IntN(cfg.Vocab-3))
	}
	ctx := context.Background()
	gen := engine.Sampling{MaxTokens: *genTokens, IgnoreEOS: true}
	// The warm-up run faults the mapped weights in and sizes every buffer.
	if _, err := generateFresh(ctx, m, prompt[:min(len(prompt), 16)], engine.Sampling{MaxTokens: 2, IgnoreEOS: true}); err != nil {
		return err
	}
	res := benchResult{Model: info.Path, Format: info.Format, Backend: info.Backend, Threads: nt,
		PromptTokens: *promptTokens, GenTokens: *genTokens, Runs: *runs, FileBytes: info.WeightBytes,
		WeightBytes: info.WeightBytes, GoMaxProcs: runtime.GOMAXPROCS(0)}
	if fb, err := fileBytes(info.Path); err == nil {
		res.FileBytes = fb
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	weights := m.WeightData()
	for range *runs {
		out, err := generateFresh(ctx, m, prompt, gen)
		if err != nil {
			return err
		}
		if len(out.IDs) < 2 {
			return fmt.Errorf("bench: generation stopped after %d tokens (%s)", len(out.IDs), out.Stop)
		}
		res.PrefillTokS = max(res.PrefillTokS, float64(out.PromptTokens)/out.Prefill.Seconds())
		// On a shared machine the bandwidth a decode gets moves from second to second, so each
		// decode is paired with the bandwidth measured right after it, for as long as it ran.
		bw, peak := cpu.Bandwidth(weights, nt, out.Decode)
		res.PeakBandwidthGBs = max(res.PeakBandwidthGBs, peak)
		// Generating n tokens runs n-1 forward passes: the first comes from the prompt's logits.
		if tps := float64(len(out.IDs)-1) / out.Decode.Seconds(); tps > res.DecodeTokS {
			res.DecodeTokS, res.BandwidthGBs = tps, bw
		}
	}
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	res.DecodeMsTok = 1000 / res.DecodeTokS
	res.PeakRSS = peakRSS()
	// Each decode step streams every matrix once; of the embedding table it reads one row.
	for _, p := range weights {
		res.TokenBytes += int64(len(p))
	}
	res.FloorMsTok = float64(res.TokenBytes) / (res.BandwidthGBs * 1e9) * 1000
	res.FloorRatio = res.DecodeMsTok / res.FloorMsTok
	res.PeakFloorRatio = res.DecodeMsTok / (float64(res.TokenBytes) / (res.PeakBandwidthGBs * 1e9) * 1000)
	if res.FileBytes > 0 {
		res.RSSOverFile = float64(res.PeakRSS) / float64(res.FileBytes)
	}
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "model      %s (%s, %s backend, %d threads)\n", res.Model, res.Format, res.Backend, res.Threads)
	fmt.Fprintf(w, "prefill    %.1f tok/s (%d tokens)\n", res.PrefillTokS, res.PromptTokens)
	fmt.Fprintf(w, "decode     %.2f tok/s, %.2f ms/token (%d tokens)\n", res.DecodeTokS, res.DecodeMsTok, res.GenTokens)
	fmt.Fprintf(w, "memory     peak RSS %.1f MiB, file %.1f MiB (%.2fx), weights %.1f MiB\n",
		float64(res.PeakRSS)/(1<<20), float64(res.FileBytes)/(1<<20), res.RSSOverFile, float64(res.WeightBytes)/(1<<20))
	fmt.Fprintf(w, "bandwidth  %.1f GB/s after the fastest decode (fastest pass %.1f GB/s); floor %.2f ms/token for %.1f MiB per token; decode is %.2fx the floor (%.2fx at the fastest pass)\n",
		res.BandwidthGBs, res.PeakBandwidthGBs, res.FloorMsTok, float64(res.TokenBytes)/(1<<20), res.FloorRatio, res.PeakFloorRatio)
	return nil
}

// generateFresh runs one generation in a new session so no prompt tokens come from a cache.
func generateFresh(ctx context.Context, m *engine.Model, prompt []int32, p engine.Sampling) (engine.Result, error) {
	s := m.NewSession()
	defer s.Close()
	return s.Generate(ctx, prompt, p, nil)
}

func fileBytes(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if !st.IsDir() {
		return st.Size(), nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && !e.IsDir() && (hasSuffix(e.Name(), ".safetensors") || hasSuffix(e.Name(), ".gguf")) {
			n += fi.Size()
		}
	}
	return n, nil
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// peakRSS is the process's peak resident set size in bytes (getrusage reports KiB on Linux and
// bytes on macOS).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
