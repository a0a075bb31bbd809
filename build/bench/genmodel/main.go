// Command genmodel writes benchmark models with random weights: a Llama-shaped GGUF file in a
// ggml format (for laya and llama.cpp alike) and the same shape as an MLX 4-bit directory.
// Weights do not change speed, so random ones of a plausible scale stand in for a real model.
//
//	go run ./build/bench/genmodel -out DIR [-shape tinyllama]
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/layaapp/laya/engine/gguf"
	"github.com/layaapp/laya/engine/safetensors"
	"github.com/layaapp/laya/engine/tensor"
)

// shape is a Llama model's geometry.
type shape struct {
	Vocab, Dim, FFN, Layers, Heads, KVHeads, Context int
}

var shapes = map[string]shape{
	"tinyllama": {Vocab: 32000, Dim: 2048, FFN: 5632, Layers: 22, Heads: 32, KVHeads: 4, Context: 2048},
	// qwen0.5b has Qwen2.5-0.5B's matrix sizes (no attention biases, an untied output matrix of
	// the tied one's size: the same work per token), for `laya replay`'s latency on a model
	// of the size people pick for completion.
	"qwen0.5b": {Vocab: 151936, Dim: 896, FFN: 4864, Layers: 24, Heads: 14, KVHeads: 2, Context: 4096},
	// small is for a quick check of the script itself.
	"small": {Vocab: 512, Dim: 256, FFN: 512, Layers: 2, Heads: 4, KVHeads: 2, Context: 512},
}

func main() {
	out := flag.String("out", "", "directory to write model.gguf and mlx4/ into")
	name := flag.String("shape", "tinyllama", "model shape: tinyllama, qwen0.5b or small")
	flag.Parse()
	s, ok := shapes[*name]
	if *out == "" || !ok {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, s); err != nil {
		fmt.Fprintln(os.Stderr, "genmodel:", err)
		os.Exit(1)
	}
}

func run(out string, s shape) error {
	if err := os.MkdirAll(filepath.Join(out, "mlx4"), 0o755); err != nil {
		return err
	}
	r := &rng{0x9E3779B97F4A7C15}
	if err := writeGGUF(filepath.Join(out, "model.gguf"), s, r); err != nil {
		return err
	}
	return writeMLX(filepath.Join(out, "mlx4"), s, r)
}

// rng is xorshift64*: fast enough to fill a gigabyte of weights in about a second.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s ^= r.s >> 12
	r.s ^= r.s << 25
	r.s ^= r.s >> 27
	return r.s * 2685821657736338717
}

func (r *rng) fill(b []byte) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.next())
	}
	for ; i < len(b); i++ {
		b[i] = byte(r.next())
	}
}

// halfOf is the IEEE binary16 nearest to a positive normal float of moderate size.
func halfOf(f float32) uint16 {
	b := math.Float32bits(f)
	return uint16(b>>16&0x8000 | ((b>>23&0xff)-112)<<10 | b>>13&0x3ff)
}

// matrix names in HF (MLX) and GGUF spelling, with their [rows, cols].
type mat struct {
	hf, gg     string
	rows, cols int
}

func matrices(s shape) []mat {
	hd := s.Dim / s.Heads
	ms := []mat{{"model.embed_tokens.weight", "token_embd.weight", s.Vocab, s.Dim}}
	for l := range s.Layers {
		p, g := fmt.Sprintf("model.layers.%d.", l), fmt.Sprintf("blk.%d.", l)
		ms = append(ms,
			mat{p + "self_attn.q_proj.weight", g + "attn_q.weight", s.Dim, s.Dim},
			mat{p + "self_attn.k_proj.weight", g + "attn_k.weight", s.KVHeads * hd, s.Dim},
			mat{p + "self_attn.v_proj.weight", g + "attn_v.weight", s.KVHeads * hd, s.Dim},
			mat{p + "self_attn.o_proj.weight", g + "attn_output.weight", s.Dim, s.Dim},
			mat{p + "mlp.gate_proj.weight", g + "ffn_gate.weight", s.FFN, s.Dim},
			mat{p + "mlp.up_proj.weight", g + "ffn_up.weight", s.FFN, s.Dim},
			mat{p + "mlp.down_proj.weight", g + "ffn_down.weight", s.Dim, s.FFN},
		)
	}
	return append(ms, mat{"lm_head.weight", "output.weight", s.Vocab, s.Dim})
}

func norms(s shape) (hf, gg []string) {
	for l := range s.Layers {
		hf = append(hf, fmt.Sprintf("model.layers.%d.input_layernorm.weight", l), fmt.Sprintf("model.layers.%d.post_attention_layernorm.weight", l))
		gg = append(gg, fmt.Sprintf("blk.%d.attn_norm.weight", l), fmt.Sprintf("blk.%d.ffn_norm.weight", l))
	}
	return append(hf, "model.norm.weight"), append(gg, "output_norm.weight")
}

func ones(n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
	}
	return b
}

// vocab is a SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte tokens llama.cpp
// requires for byte fallback, then distinct filler pieces.
func vocab(n int) (tokens []string, scores []float32, types []int32) {
	tokens = []string{"<unk>", "<s>", "</s>"}
	types = []int32{2, 3, 3}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	for i := len(tokens); i < n; i++ {
		tokens = append(tokens, fmt.Sprintf("\u2581t%d", i))
		types = append(types, 1)
	}
	scores = make([]float32, n)
	for i := range scores {
		scores[i] = -float32(i)
	}
	return tokens[:n], scores, types[:n]
}

func writeGGUF(path string, s shape, r *rng) error {
	tokens, scores, types := vocab(s.Vocab)
	meta := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: "laya-bench-random"},
		{Key: "general.file_type", Value: uint32(2)}, // MOSTLY_Q4_0
		{Key: "llama.vocab_size", Value: uint32(s.Vocab)},
		{Key: "llama.context_length", Value: uint32(s.Context)},
		{Key: "llama.embedding_length", Value: uint32(s.Dim)},
		{Key: "llama.block_count", Value: uint32(s.Layers)},
		{Key: "llama.feed_forward_length", Value: uint32(s.FFN)},
		{Key: "llama.rope.dimension_count", Value: uint32(s.Dim / s.Heads)},
		{Key: "llama.attention.head_count", Value: uint32(s.Heads)},
		{Key: "llama.attention.head_count_kv", Value: uint32(s.KVHeads)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: "llama.rope.freq_base", Value: float32(10000)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.scores", Value: scores},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(0)},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(2)},
		{Key: "tokenizer.ggml.add_bos_token", Value: true},
	}
	// d ~ 0.002 keeps random weights near a trained model's spread (|w| <= 0.016).
	d := halfOf(0.002)
	var ts []tensor.Tensor
	_, gnorms := norms(s)
	for _, n := range gnorms {
		ts = append(ts, tensor.Tensor{Name: n, DType: tensor.F32, Shape: []int{s.Dim}, Data: ones(s.Dim)})
	}
	for _, m := range matrices(s) {
		data := make([]byte, m.rows*m.cols/32*18)
		r.fill(data)
		for b := 0; b < len(data); b += 18 {
			binary.LittleEndian.PutUint16(data[b:], d)
		}
		ts = append(ts, tensor.Tensor{Name: m.gg, DType: tensor.Q4_0, Shape: []int{m.rows, m.cols}, Data: data})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := gguf.Write(f, meta, ts); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeMLX(dir string, s shape, r *rng) error {
	const group = 64
	var ts []safetensors.WriteTensor
	hnorms, _ := norms(s)
	for _, n := range hnorms {
		ts = append(ts, safetensors.WriteTensor{Name: n, DType: safetensors.F32, Shape: []int{s.Dim}, Data: ones(s.Dim)})
	}
	// scale 0.002 with bias -8*scale spreads codes 0..15 over [-0.016, 0.014], like the GGUF.
	sc, bi := halfOf(0.002), halfOf(0.016)|0x8000
	for _, m := range matrices(s) {
		codes := make([]byte, m.rows*m.cols/2)
		r.fill(codes)
		ng := m.cols / group
		scales, biases := make([]byte, 2*m.rows*ng), make([]byte, 2*m.rows*ng)
		for i := range m.rows * ng {
			binary.LittleEndian.PutUint16(scales[2*i:], sc)
			binary.LittleEndian.PutUint16(biases[2*i:], bi)
		}
		base := m.hf[:len(m.hf)-len(".weight")]
		ts = append(ts,
			safetensors.WriteTensor{Name: m.hf, DType: safetensors.U32, Shape: []int{m.rows, m.cols / 8}, Data: codes},
			safetensors.WriteTensor{Name: base + ".scales", DType: safetensors.F16, Shape: []int{m.rows, ng}, Data: scales},
			safetensors.WriteTensor{Name: base + ".biases", DType: safetensors.F16, Shape: []int{m.rows, ng}, Data: biases},
		)
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return err
	}
	if err := safetensors.Write(f, ts, map[string]string{"format": "mlx"}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	cfg := map[string]any{
		"architectures":           []string{"LlamaForCausalLM"},
		"model_type":              "llama",
		"vocab_size":              s.Vocab,
		"hidden_size":             s.Dim,
		"intermediate_size":       s.FFN,
		"num_hidden_layers":       s.Layers,
		"num_attention_heads":     s.Heads,
		"num_key_value_heads":     s.KVHeads,
		"max_position_embeddings": s.Context,
		"rms_norm_eps":            1e-5,
		"rope_theta":              10000.0,
		"tie_word_embeddings":     false,
		"bos_token_id":            1,
		"eos_token_id":            2,
		"hidden_act":              "silu",
		"torch_dtype":             "float16",
		"quantization":            map[string]int{"group_size": group, "bits": 4},
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "tokenizer.json"), tokenizerJSON(s.Vocab))
}

// tokenizerJSON is a Llama-2-style HuggingFace tokenizer (BPE with byte fallback, no merges)
// over the same vocabulary as the GGUF.
func tokenizerJSON(n int) map[string]any {
	tokens, _, _ := vocab(n)
	v := make(map[string]int, n)
	for i, t := range tokens {
		v[t] = i
	}
	added := []map[string]any{}
	for i, t := range tokens[:3] {
		added = append(added, map[string]any{"id": i, "content": t, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	return map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "\u2581"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "\u2581"},
		}},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}}},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "\u2581"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": true, "byte_fallback": true, "vocab": v, "merges": []string{}},
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
