package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/safetensors"
)

// writeTinyModel writes a random 2-layer Llama with a 40-token vocabulary ("<s>", "</s>", then
// single letters and digits) as a HuggingFace directory.
func writeTinyModel(t *testing.T) string {
	t.Helper()
	const vocab, dim, ffn, layers = 40, 16, 32, 2
	dir := t.TempDir()
	seed := uint32(1)
	rnd := func(n int, center float32) []byte {
		b := make([]byte, 4*n)
		for i := range n {
			seed = seed*1664525 + 1013904223
			v := center + (float32(seed>>8)/(1<<24)-0.5)*0.8
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	ts := []safetensors.WriteTensor{
		{Name: "model.embed_tokens.weight", DType: safetensors.F32, Shape: []int{vocab, dim}, Data: rnd(vocab*dim, 0)},
		{Name: "model.norm.weight", DType: safetensors.F32, Shape: []int{dim}, Data: rnd(dim, 1)},
	}
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, w := range []struct {
			name     string
			rows, in int
		}{
			{"self_attn.q_proj", dim, dim}, {"self_attn.k_proj", dim / 2, dim}, {"self_attn.v_proj", dim / 2, dim},
			{"self_attn.o_proj", dim, dim}, {"mlp.gate_proj", ffn, dim}, {"mlp.up_proj", ffn, dim}, {"mlp.down_proj", dim, ffn},
		} {
			ts = append(ts, safetensors.WriteTensor{Name: p + w.name + ".weight", DType: safetensors.F32, Shape: []int{w.rows, w.in}, Data: rnd(w.rows*w.in, 0)})
		}
		for _, n := range []string{"input_layernorm", "post_attention_layernorm"} {
			ts = append(ts, safetensors.WriteTensor{Name: p + n + ".weight", DType: safetensors.F32, Shape: []int{dim}, Data: rnd(dim, 1)})
		}
	}
	var st bytes.Buffer
	if err := safetensors.Write(&st, ts, nil); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "hidden_size": dim, "intermediate_size": ffn,
		"num_hidden_layers": layers, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": vocab,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 64, "tie_word_embeddings": true,
		"bos_token_id": 0, "eos_token_id": 1,
	})
	v := map[string]int{"<s>": 0, "</s>": 1}
	for i, r := range "abcdefghijklmnopqrstuvwxyz0123456789 \n" {
		v[string(r)] = i + 2
	}
	tok, _ := json.Marshal(map[string]any{
		"model":        map[string]any{"type": "BPE", "vocab": v, "merges": []string{}},
		"added_tokens": []map[string]any{{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true}},
		"decoder":      map[string]any{"type": "Fuse"},
	})
	for name, data := range map[string][]byte{"model.safetensors": st.Bytes(), "config.json": cfg, "tokenizer.json": tok} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runGenerateCapture(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runGenerate(args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestGenerateJSON(t *testing.T) {
	dir := writeTinyModel(t)
	out, _, err := runGenerateCapture(t, "--model", dir, "--prompt-ids", "0, 5,9", "--max-tokens", "7", "--logprobs", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		IDs   []int32 `json:"ids"`
		Text  string  `json:"text"`
		Stop  string  `json:"stop"`
		Steps []struct {
			ID  int32        `json:"id"`
			Top [][2]float64 `json:"top"`
		} `json:"steps"`
		Timings map[string]float64 `json:"timings"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if len(r.IDs) == 0 || len(r.IDs) > 7 || len(r.Steps) != len(r.IDs) || (len(r.IDs) < 7 && r.Stop != "eos") {
		t.Fatalf("ids %v, %d steps, stop %q", r.IDs, len(r.Steps), r.Stop)
	}
	for i, s := range r.Steps {
		if s.ID != r.IDs[i] || len(s.Top) != 3 || s.Top[0][1] < s.Top[1][1] || s.Top[1][1] < s.Top[2][1] || s.Top[0][1] > 0 {
			t.Errorf("step %d: %+v (id %d)", i, s, r.IDs[i])
		}
		// Greedy: the chosen token is the most likely one.
		if int32(s.Top[0][0]) != s.ID {
			t.Errorf("step %d chose %d, most likely %v", i, s.ID, s.Top[0])
		}
	}
	for _, k := range []string{"load_ms", "tokenize_ms", "prefill_ms", "decode_ms", "detokenize_ms"} {
		if v, ok := r.Timings[k]; !ok || v < 0 {
			t.Errorf("timing %s = %v, %v", k, v, ok)
		}
	}
	if r.Timings["prompt_tokens"] != 3 || r.Timings["generated_tokens"] != float64(len(r.IDs)) {
		t.Errorf("timings %v", r.Timings)
	}

	// Plain output streams the same text, then the timing line goes to stderr.
	plain, stderr, err := runGenerateCapture(t, "--model", dir, "--prompt-ids", "0,5,9", "--max-tokens", "7")
	if err != nil {
		t.Fatal(err)
	}
	if plain != r.Text+"\n" {
		t.Errorf("plain output %q, json text %q", plain, r.Text)
	}
	line := regexp.MustCompile(`^prompt 3 tok \(reused 0\) in [0-9]+ ms, generated [0-9]+ tok in [0-9]+ ms, [0-9.]+ tok/s, load [0-9]+ ms\n$`)
	if !line.MatchString(stderr) {
		t.Errorf("timing line %q", stderr)
	}

	// A text prompt goes through the tokenizer: "fed" is three letter tokens.
	out, _, err = runGenerateCapture(t, "--model", dir, "--prompt", "fed", "--max-tokens", "2", "--json")
	if err != nil || !strings.Contains(out, `"prompt_tokens":3`) {
		t.Errorf("text prompt: %v, %s", err, out)
	}
}

func TestGenerateErrors(t *testing.T) {
	dir := writeTinyModel(t)
	for _, args := range [][]string{
		{"--model", filepath.Join(dir, "missing"), "--prompt", "x"},
		{"--model", dir},
		{"--model", dir, "--prompt", "x", "--prompt-ids", "1"},
		{"--model", dir, "--prompt-ids", "1,x"},
		{"--model", dir, "--prompt-ids", "1,99"},
		{"--model", dir, "--prompt", "x", "--backend", "tpu"},
		{"--model", dir, "--prompt", "x", "--top-p", "3"},
		{"--model", dir, "--prompt", "x", "extra"},
	} {
		if _, _, err := runGenerateCapture(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestEvalCommand(t *testing.T) {
	dir := writeTinyModel(t)
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte("abc def\nghi 0123 abc def\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runEval([]string{"--model", dir, "--text", text, "--window", "8", "--json"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Window, Tokens int
		NLL, PPL, Top1 float64
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	// 25 characters, one token each and no BOS from this tokenizer: 24 targets.
	if r.Window != 8 || r.Tokens != 24 || !(r.NLL > 0) || math.Abs(r.PPL-math.Exp(r.NLL)) > 1e-9*r.PPL || r.Top1 < 0 || r.Top1 > 1 {
		t.Errorf("eval %+v", r)
	}
	if err := runEval([]string{"--model", dir}, &out, &bytes.Buffer{}); err == nil {
		t.Error("eval without --text succeeded")
	}
}
