package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/gguf"
	"github.com/layaapp/laya/engine/tensor"
)

// sparseWriter writes to a file, seeking over blocks of zeros so they take no disk space.
type sparseWriter struct {
	f *os.File
	n int64
}

func (s *sparseWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		chunk := p[:min(len(p), 1<<20)]
		var err error
		if allZero(chunk) {
			_, err = s.f.Seek(int64(len(chunk)), io.SeekCurrent)
		} else {
			_, err = s.f.Write(chunk)
		}
		if err != nil {
			return 0, err
		}
		s.n += int64(len(chunk))
		p = p[len(chunk):]
	}
	return n, nil
}

func allZero(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return true
}

// tinyLlamaShape is TinyLlama-1.1B's geometry.
const (
	tlVocab, tlDim, tlFFN, tlLayers = 32000, 2048, 5632, 22
	tlHeads, tlKVHeads, tlHeadDim   = 32, 4, 64
)

// writeTinyLlamaQ4 writes a GGUF file of TinyLlama-1.1B's shape in llama.cpp's Q4_0 mix (Q4_0
// matrices, a Q6_K output matrix, F32 norms), all weights zero, as a sparse file, and returns
// its path and the bytes of its matrices and norms.
func writeTinyLlamaQ4(t *testing.T) (string, map[string]int64) {
	t.Helper()
	zero := make([]byte, tlVocab*tlDim*210/256) // the largest tensor, the Q6_K output
	sizes := map[string]int64{}
	var ts []tensor.Tensor
	add := func(name string, dt tensor.DType, shape ...int) {
		tt := tensor.Tensor{Name: name, DType: dt, Shape: shape}
		tt.Data = zero[:tt.ByteSize()]
		sizes[name] = int64(tt.ByteSize())
		ts = append(ts, tt)
	}
	add("token_embd.weight", tensor.Q4_0, tlVocab, tlDim)
	add("output_norm.weight", tensor.F32, tlDim)
	add("output.weight", tensor.Q6_K, tlVocab, tlDim)
	for l := range tlLayers {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", tensor.F32, tlDim)
		add(p+"ffn_norm.weight", tensor.F32, tlDim)
		add(p+"attn_q.weight", tensor.Q4_0, tlHeads*tlHeadDim, tlDim)
		add(p+"attn_k.weight", tensor.Q4_0, tlKVHeads*tlHeadDim, tlDim)
		add(p+"attn_v.weight", tensor.Q4_0, tlKVHeads*tlHeadDim, tlDim)
		add(p+"attn_output.weight", tensor.Q4_0, tlDim, tlHeads*tlHeadDim)
		add(p+"ffn_gate.weight", tensor.Q4_0, tlFFN, tlDim)
		add(p+"ffn_up.weight", tensor.Q4_0, tlFFN, tlDim)
		add(p+"ffn_down.weight", tensor.Q4_0, tlDim, tlFFN)
	}
	tokens := make([]string, tlVocab)
	scores := make([]float32, tlVocab)
	types := make([]int32, tlVocab)
	for i := range tokens {
		tokens[i], types[i] = fmt.Sprintf("t%d", i), 1
	}
	types[0], types[1], types[2] = 2, 3, 3
	meta := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: "tinyllama-shape"},
		{Key: "llama.context_length", Value: uint32(2048)},
		{Key: "llama.embedding_length", Value: uint32(tlDim)},
		{Key: "llama.block_count", Value: uint32(tlLayers)},
		{Key: "llama.feed_forward_length", Value: uint32(tlFFN)},
		{Key: "llama.attention.head_count", Value: uint32(tlHeads)},
		{Key: "llama.attention.head_count_kv", Value: uint32(tlKVHeads)},
		{Key: "llama.rope.freq_base", Value: float32(10000)},
		{Key: "llama.rope.dimension_count", Value: uint32(tlHeadDim)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.scores", Value: scores},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(2)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(0)},
	}
	path := filepath.Join(t.TempDir(), "tinyllama-q4_0.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sw := &sparseWriter{f: f}
	if err := gguf.Write(sw, meta, ts); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(sw.n); err != nil {
		t.Fatal(err)
	}
	return path, sizes
}

// TestBenchPlanTinyLlama holds the Metal plan of a TinyLlama-shape Q4_0 model to its limits, so
// a change that adds dispatches, host waits or bytes fails here. The targets are at
// most 140 dispatches and 1 host wait per token and a 2-byte KV cache; the limits below are
// what the backend reaches now.
func TestBenchPlanTinyLlama(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 600 MB sparse file")
	}
	path, sizes := writeTinyLlamaQ4(t)
	var out bytes.Buffer
	if err := runBench([]string{"--plan", "--json", "--model", path, "--prompt-tokens", "128"}, &out); err != nil {
		t.Fatal(err)
	}
	var r planResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %s", err, out.Bytes())
	}
	t.Logf("%s", out.Bytes())
	const (
		maxDispatches = 140
		maxHostWaits  = 1
		kvElement     = 2
	)
	// The limit includes the token's pick on the device at the end of the step.
	if r.Dispatches > maxDispatches || r.HostWaits > maxHostWaits || r.Commits > 1 || r.KVBytesPerElement != kvElement {
		t.Errorf("decode: %v dispatches (at most %d), %v host waits (at most %d), %v commits, KV %d bytes per element (want %d)",
			r.Dispatches, maxDispatches, r.HostWaits, maxHostWaits, r.Commits, r.KVBytesPerElement, kvElement)
	}
	// Each wait has the next step queued behind it, so the GPU has work while the host takes
	// the token.
	if r.QueuedBeforeWait != r.HostWaits || r.DecodeSteps < 3 || r.Unmodelled != 0 {
		t.Errorf("decode over %d steps: %v of %v host waits per token with the next step queued, %v unmodelled dispatches",
			r.DecodeSteps, r.QueuedBeforeWait, r.HostWaits, r.Unmodelled)
	}
	// Barriers only where a dispatch uses what one since the last barrier wrote: the q, k and
	// v projections run together, as do the rotation of q and the cache write (and in the
	// prefill the gate and up projections).
	if maxBarriers, maxPrefill := 8*tlLayers+2, 11*tlLayers+2; r.Barriers > float64(maxBarriers) || r.Prefill.Barriers*128 > float64(maxPrefill) {
		t.Errorf("barriers: decode %v (at most %d), prefill %v per 128 tokens (at most %d)", r.Barriers, maxBarriers, r.Prefill.Barriers*128, maxPrefill)
	}
	// A decode step reads every matrix and norm once and one row of the embedding table.
	var want int64
	for name, n := range sizes {
		if name == "token_embd.weight" {
			n /= tlVocab
		}
		want += n
	}
	if r.WeightBytes != float64(want) {
		t.Errorf("decode reads %v weight bytes, want %d", r.WeightBytes, want)
	}
	// Per step at position p, keys and values of p+1 positions read, one position written, in
	// 22 layers.
	var positions int
	for p := r.DecodePosition; p < r.DecodePosition+r.DecodeSteps; p++ {
		positions += p + 1 + 1
	}
	if kv := float64(2*kvElement*tlLayers*tlKVHeads*tlHeadDim*positions) / float64(r.DecodeSteps); r.DecodePosition != 130 || r.KVBytes != kv {
		t.Errorf("decode from position %d moves %v KV bytes per token, want %v from position 130", r.DecodePosition, r.KVBytes, kv)
	}
	// The prefill runs as one plan and reads each matrix once for all 128 rows.
	if r.Prefill.HostWaits*128 != 1 || r.Prefill.WeightBytes*128 < float64(want) || r.Prefill.WeightBytes*128 > 1.1*float64(want) {
		t.Errorf("prefill: %v host waits per token, %v weight bytes per token", r.Prefill.HostWaits, r.Prefill.WeightBytes)
	}
	out.Reset()
	if err := runBench([]string{"--plan", "--model", path, "--prompt-tokens", "16"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "dispatches") || !strings.Contains(out.String(), "position 18") {
		t.Errorf("text report:\n%s", out.String())
	}
}
