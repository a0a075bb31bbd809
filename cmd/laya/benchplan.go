package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/metal"
)

// planResult is what `laya bench --plan --json` prints: the Metal backend's plan for one decode
// step after a prompt, and for the prompt's prefill, counted by metal.Counter without a GPU.
// The decode step's counts are at the top level, the prefill's under "prefill".
type planResult struct {
	Model        string `json:"model"`
	Format       string `json:"format"`
	PromptTokens int    `json:"prompt_tokens"`
	// DecodePosition is the decode step's position: its attention reads that many cached
	// positions and its own.
	DecodePosition    int `json:"decode_position"`
	KVBytesPerElement int `json:"kv_bytes_per_element"`
	planPerToken
	Prefill planPerToken `json:"prefill"`
}

// planPerToken are metal.PlanCounts divided by the tokens of the step.
type planPerToken struct {
	Dispatches      float64 `json:"dispatches_per_token"`
	Barriers        float64 `json:"barriers_per_token"`
	Commits         float64 `json:"commits_per_token"`
	HostWaits       float64 `json:"host_waits_per_token"`
	WeightBytes     float64 `json:"weight_bytes_per_token"`
	KVBytes         float64 `json:"kv_bytes_per_token"`
	ActivationBytes float64 `json:"activation_bytes_per_token"`
	// Unmodelled are dispatches whose bytes the counts leave out (recurrent layers' kernels).
	Unmodelled float64 `json:"unmodelled_dispatches_per_token"`
}

func perToken(c metal.PlanCounts, tokens int) planPerToken {
	n := float64(tokens)
	return planPerToken{Dispatches: float64(c.Dispatches) / n, Barriers: float64(c.Barriers) / n,
		Commits: float64(c.Commits) / n, HostWaits: float64(c.HostWaits) / n,
		WeightBytes: float64(c.WeightBytes) / n, KVBytes: float64(c.KVBytes) / n,
		ActivationBytes: float64(c.ActivationBytes) / n, Unmodelled: float64(c.Unmodelled) / n}
}

// runBenchPlan records a prefill of promptTokens and one decode step of the model through the
// Metal backend on a counting device and reports what the GPU would be asked to do per token.
func runBenchPlan(ef *engineFlags, promptTokens int, asJSON bool, w io.Writer) error {
	counter := metal.NewCounter()
	var be *metal.Backend
	path, err := ef.modelPath()
	if err != nil {
		return err
	}
	m, err := engine.Load(path, engine.Options{Backend: "metal", Threads: 1, Context: promptTokens + 2,
		Open: func(engine.Options) (backend.Backend, error) {
			var err error
			be, err = metal.New(counter)
			return be, err
		}})
	if err != nil {
		return err
	}
	defer m.Close()
	info, cfg := m.Info(), m.Config()
	prompt := make([]int32, promptTokens)
	for i := range prompt {
		prompt[i] = int32(3 + i%(cfg.Vocab-3))
	}
	// Generating two tokens runs the prefill, which gives the first, then one decode step.
	var marks []metal.PlanCounts
	s := m.NewSession()
	defer s.Close()
	start := counter.Counts()
	_, err = s.Generate(context.Background(), prompt, engine.Sampling{MaxTokens: 2, IgnoreEOS: true}, func(engine.Token) error {
		marks = append(marks, counter.Counts())
		return nil
	})
	if err != nil {
		return err
	}
	if len(marks) != 2 {
		return fmt.Errorf("bench --plan: %d tokens generated, want 2", len(marks))
	}
	res := planResult{Model: info.Path, Format: info.Format, PromptTokens: promptTokens, DecodePosition: promptTokens,
		KVBytesPerElement: be.KVBytesPerElement(),
		planPerToken:      perToken(marks[1].Sub(marks[0]), 1), Prefill: perToken(marks[0].Sub(start), promptTokens)}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "model      %s (%s), Metal plan counted without a GPU; KV cache %d bytes per element\n", res.Model, res.Format, res.KVBytesPerElement)
	for _, p := range []struct {
		name string
		c    planPerToken
	}{{fmt.Sprintf("decode at position %d", res.DecodePosition), res.planPerToken}, {fmt.Sprintf("prefill of %d", res.PromptTokens), res.Prefill}} {
		fmt.Fprintf(w, "%-22s per token: %.1f dispatches, %.1f barriers, %.2f commits, %.2f host waits; %.2f MB weights, %.3f MB KV, %.3f MB activations\n",
			p.name, p.c.Dispatches, p.c.Barriers, p.c.Commits, p.c.HostWaits, p.c.WeightBytes/1e6, p.c.KVBytes/1e6, p.c.ActivationBytes/1e6)
	}
	return nil
}
