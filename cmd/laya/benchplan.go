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

// planResult is what `laya bench --plan --json` prints: the Metal backend's plans for decode
// steps after a prompt, and for the prompt's prefill, counted by metal.Counter without a GPU.
// The decode steps' counts per token are at the top level, the prefill's under "prefill".
type planResult struct {
	Model        string `json:"model"`
	Format       string `json:"format"`
	PromptTokens int    `json:"prompt_tokens"`
	// DecodePosition is the first measured decode step's position: its attention reads that
	// many cached positions and its own; DecodeSteps steps follow it, one position each.
	DecodePosition    int `json:"decode_position"`
	DecodeSteps       int `json:"decode_steps"`
	KVBytesPerElement int `json:"kv_bytes_per_element"`
	planPerToken
	Prefill planPerToken `json:"prefill"`
}

// planPerToken are metal.PlanCounts divided by the tokens of the step.
type planPerToken struct {
	Dispatches float64 `json:"dispatches_per_token"`
	Barriers   float64 `json:"barriers_per_token"`
	Commits    float64 `json:"commits_per_token"`
	HostWaits  float64 `json:"host_waits_per_token"`
	// QueuedBeforeWait are the host waits during which the next step was already committed,
	// so the GPU had it to run while the host took the token (greedy decoding picks the token
	// on the device and embeds it in the next step there).
	QueuedBeforeWait float64 `json:"queued_before_wait_per_token"`
	WeightBytes      float64 `json:"weight_bytes_per_token"`
	KVBytes          float64 `json:"kv_bytes_per_token"`
	ActivationBytes  float64 `json:"activation_bytes_per_token"`
	// Unmodelled are dispatches whose bytes the counts leave out (recurrent layers' kernels).
	Unmodelled float64 `json:"unmodelled_dispatches_per_token"`
}

func perToken(c metal.PlanCounts, tokens int) planPerToken {
	n := float64(tokens)
	return planPerToken{Dispatches: float64(c.Dispatches) / n, Barriers: float64(c.Barriers) / n,
		Commits: float64(c.Commits) / n, HostWaits: float64(c.HostWaits) / n, QueuedBeforeWait: float64(c.QueuedWaits) / n,
		WeightBytes: float64(c.WeightBytes) / n, KVBytes: float64(c.KVBytes) / n,
		ActivationBytes: float64(c.ActivationBytes) / n, Unmodelled: float64(c.Unmodelled) / n}
}

// decodeSteps is how many decode steps laya bench --plan measures.
const decodeSteps = 4

// runBenchPlan records a prefill of promptTokens and decode steps of the model through the
// Metal backend on a counting device and reports what the GPU would be asked to do per token.
func runBenchPlan(ef *engineFlags, promptTokens int, asJSON bool, w io.Writer) error {
	counter := metal.NewCounter()
	var be *metal.Backend
	path, err := ef.modelPath()
	if err != nil {
		return err
	}
	m, err := engine.Load(path, engine.Options{Backend: "metal", Threads: 1, Context: promptTokens + decodeSteps + 3,
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
	// The prefill gives the first token, decode step j the token j after it. When token j is
	// reported, step j+1 is committed already (queued ahead), so between the reports of
	// tokens 1 and 1+decodeSteps the steady state runs: steps 3 to 2+decodeSteps are committed
	// and the host waits once per token, each time with the next step queued. Two more tokens
	// keep the last of them from being the end.
	var marks []metal.PlanCounts
	s := m.NewSession()
	defer s.Close()
	start := counter.Counts()
	n := decodeSteps + 3
	_, err = s.Generate(context.Background(), prompt, engine.Sampling{MaxTokens: n, IgnoreEOS: true}, func(engine.Token) error {
		marks = append(marks, counter.Counts())
		return nil
	})
	if err != nil {
		return err
	}
	if len(marks) != n {
		return fmt.Errorf("bench --plan: %d tokens generated, want %d", len(marks), n)
	}
	res := planResult{Model: info.Path, Format: info.Format, PromptTokens: promptTokens, DecodePosition: promptTokens + 2,
		DecodeSteps: decodeSteps, KVBytesPerElement: be.KVBytesPerElement(),
		planPerToken: perToken(marks[1+decodeSteps].Sub(marks[1]), decodeSteps), Prefill: perToken(marks[0].Sub(start), promptTokens)}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "model      %s (%s), Metal plan counted without a GPU; KV cache %d bytes per element\n", res.Model, res.Format, res.KVBytesPerElement)
	for _, p := range []struct {
		name string
		c    planPerToken
	}{{fmt.Sprintf("decode at position %d+", res.DecodePosition), res.planPerToken}, {fmt.Sprintf("prefill of %d", res.PromptTokens), res.Prefill}} {
		fmt.Fprintf(w, "%-22s per token: %.1f dispatches, %.1f barriers, %.2f commits, %.2f host waits (%.2f with the next step queued); %.2f MB weights, %.3f MB KV, %.3f MB activations\n",
			p.name, p.c.Dispatches, p.c.Barriers, p.c.Commits, p.c.HostWaits, p.c.QueuedBeforeWait, p.c.WeightBytes/1e6, p.c.KVBytes/1e6, p.c.ActivationBytes/1e6)
	}
	return nil
}
