package weights

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/gguf"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/tokenizer"
)

// ggufShapes lists the test model's tensors under llama.cpp names, with Shape row-major.
func ggufShapes(tied, bias bool) map[string][]int {
	m := map[string][]int{"token_embd.weight": {tVocab, tDim}, "output_norm.weight": {tDim}}
	if !tied {
		m["output.weight"] = []int{tVocab, tDim}
	}
	for i := range tLayers {
		p := fmt.Sprintf("blk.%d.", i)
		m[p+"attn_norm.weight"] = []int{tDim}
		m[p+"ffn_norm.weight"] = []int{tDim}
		m[p+"attn_q.weight"] = []int{tHeads * tHeadDim, tDim}
		m[p+"attn_k.weight"] = []int{tKV * tHeadDim, tDim}
		m[p+"attn_v.weight"] = []int{tKV * tHeadDim, tDim}
		m[p+"attn_output.weight"] = []int{tDim, tHeads * tHeadDim}
		m[p+"ffn_gate.weight"] = []int{tFFN, tDim}
		m[p+"ffn_up.weight"] = []int{tFFN, tDim}
		m[p+"ffn_down.weight"] = []int{tDim, tFFN}
		if bias {
			m[p+"attn_q.bias"] = []int{tHeads * tHeadDim}
			m[p+"attn_k.bias"] = []int{tKV * tHeadDim}
			m[p+"attn_v.bias"] = []int{tKV * tHeadDim}
		}
	}
	return m
}

// ggufTensors makes random tensors: Q4_0 matrices, F32 vectors.
func ggufTensors(shapes map[string][]int) []tensor.Tensor {
	r := rand.New(rand.NewPCG(5, 6))
	var ts []tensor.Tensor
	for _, name := range sortedKeys(shapes) {
		s := shapes[name]
		t := tensor.Tensor{Name: name, DType: tensor.F32, Shape: s}
		if len(s) == 2 {
			t.DType = tensor.Q4_0
		}
		t.Data = randBytes(r, t.ByteSize())
		ts = append(ts, t)
	}
	return ts
}

func vocabMeta(model string) []gguf.KV {
	tokens := make([]string, tVocab)
	scores := make([]float32, tVocab)
	types := make([]int32, tVocab)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("tok%d", i)
		scores[i] = -float32(i)
		types[i] = 1
	}
	types[0], types[1], types[2] = 2, 3, 3
	meta := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: model},
		{Key: "tokenizer.ggml.tokens", Value: tokens},
		{Key: "tokenizer.ggml.token_type", Value: types},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(2)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(0)},
	}
	if model == "llama" {
		meta = append(meta, gguf.KV{Key: "tokenizer.ggml.scores", Value: scores})
	} else {
		meta = append(meta, gguf.KV{Key: "tokenizer.ggml.pre", Value: "qwen2"},
			gguf.KV{Key: "tokenizer.ggml.merges", Value: []string{"t o", "to k"}},
			gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: false},
			gguf.KV{Key: "tokenizer.ggml.eot_token_id", Value: uint32(3)})
	}
	return meta
}

func archMeta(arch string) []gguf.KV {
	return []gguf.KV{
		{Key: "general.architecture", Value: arch},
		{Key: "general.name", Value: "test"},
		{Key: arch + ".context_length", Value: uint32(2048)},
		{Key: arch + ".embedding_length", Value: uint32(tDim)},
		{Key: arch + ".block_count", Value: uint32(tLayers)},
		{Key: arch + ".feed_forward_length", Value: uint32(tFFN)},
		{Key: arch + ".attention.head_count", Value: uint32(tHeads)},
		{Key: arch + ".attention.head_count_kv", Value: uint32(tKV)},
		{Key: arch + ".rope.freq_base", Value: float32(500000)},
		{Key: arch + ".rope.dimension_count", Value: uint32(tHeadDim)},
		{Key: arch + ".attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
	}
}

func TestOpenGGUFLlama(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	ts := ggufTensors(ggufShapes(false, false))
	// llama3 scaling as llama.cpp stores it: a tensor of per-frequency divisors.
	factors := make([]byte, 4*tHeadDim/2)
	for i := range tHeadDim / 2 {
		binary.LittleEndian.PutUint32(factors[4*i:], math.Float32bits(float32(1+i)))
	}
	ts = append(ts, tensor.Tensor{Name: "rope_freqs.weight", DType: tensor.F32, Shape: []int{tHeadDim / 2}, Data: factors})
	writeGGUF(t, path, append(archMeta("llama"), vocabMeta("llama")...), ts)
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := Config{Arch: "llama", Vocab: 64, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
		FFN: 128, NormEps: 1e-5, RopeTheta: 500000, RopeStyle: backend.RopeInterleaved,
		MaxContext: 2048, BOS: 1, EOS: []int{2}, RopeFactors: []float32{1, 2, 3, 4, 5, 6, 7, 8}}
	if !reflect.DeepEqual(m.Config, want) {
		t.Errorf("config\n got %+v\nwant %+v", m.Config, want)
	}
	if m.Format != "gguf" || m.TokenizerJSON != nil {
		t.Errorf("format %q, tokenizer json %q", m.Format, m.TokenizerJSON)
	}
	v := m.GGUFVocab
	if v == nil || v.Model != "llama" || len(v.Tokens) != tVocab || v.Tokens[5] != "tok5" || v.Scores[5] != -5 ||
		v.Types[1] != 3 || v.BOS != 1 || v.EOS != 2 || v.UNK != 0 || v.PAD != -1 || !v.AddBOS || v.AddEOS {
		t.Errorf("vocab %+v", v)
	}
	byName := map[string]tensor.Tensor{}
	for _, tt := range ts {
		byName[tt.Name] = tt
	}
	// Spelled out, not derived from the code's table.
	pairs := map[string]string{
		"model.embed_tokens.weight":                      "token_embd.weight",
		"model.norm.weight":                              "output_norm.weight",
		"lm_head.weight":                                 "output.weight",
		"model.layers.1.input_layernorm.weight":          "blk.1.attn_norm.weight",
		"model.layers.1.self_attn.q_proj.weight":         "blk.1.attn_q.weight",
		"model.layers.1.self_attn.k_proj.weight":         "blk.1.attn_k.weight",
		"model.layers.1.self_attn.v_proj.weight":         "blk.1.attn_v.weight",
		"model.layers.1.self_attn.o_proj.weight":         "blk.1.attn_output.weight",
		"model.layers.1.post_attention_layernorm.weight": "blk.1.ffn_norm.weight",
		"model.layers.1.mlp.gate_proj.weight":            "blk.1.ffn_gate.weight",
		"model.layers.0.mlp.up_proj.weight":              "blk.0.ffn_up.weight",
		"model.layers.0.mlp.down_proj.weight":            "blk.0.ffn_down.weight",
	}
	for hf, g := range pairs {
		got, w := m.Tensors[hf], byName[g]
		if got == nil || got.Name != hf || got.DType != w.DType || !slices.Equal(got.Shape, w.Shape) || !bytes.Equal(got.Data, w.Data) {
			t.Errorf("%s (from %s) = %+v", hf, g, got)
		}
	}
	if len(m.Tensors) != 3+9*tLayers {
		t.Errorf("%d tensors", len(m.Tensors))
	}
	var total int64
	for _, tt := range ts {
		if tt.Name != "rope_freqs.weight" {
			total += int64(len(tt.Data))
		}
	}
	if m.WeightBytes() != total {
		t.Errorf("WeightBytes %d, want %d", m.WeightBytes(), total)
	}
}

func TestOpenGGUFQwen2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "qwen.bin") // found by its magic, not its name
	writeGGUF(t, path, append(archMeta("qwen2"), vocabMeta("gpt2")...), ggufTensors(ggufShapes(true, true)))
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config
	if c.Arch != "qwen2" || !c.QKVBias || !c.TiedEmbeddings || c.RopeStyle != backend.RopeHalf || !slices.Equal(c.EOS, []int{2, 3}) {
		t.Errorf("config %+v", c)
	}
	want := &tokenizer.GGUFVocab{Model: "gpt2", Pre: "qwen2", Tokens: m.GGUFVocab.Tokens, Types: m.GGUFVocab.Types,
		Merges: []string{"t o", "to k"}, BOS: 1, EOS: 2, UNK: 0, PAD: -1}
	if !reflect.DeepEqual(m.GGUFVocab, want) {
		t.Errorf("vocab\n got %+v\nwant %+v", m.GGUFVocab, want)
	}
	if b := m.Tensors["model.layers.0.self_attn.k_proj.bias"]; b == nil || !slices.Equal(b.Shape, []int{tKV * tHeadDim}) {
		t.Errorf("k bias %+v", b)
	}
}

func TestOpenGGUFErrors(t *testing.T) {
	without := func(meta []gguf.KV, key string) []gguf.KV {
		return slices.DeleteFunc(slices.Clone(meta), func(kv gguf.KV) bool { return kv.Key == key })
	}
	with := func(meta []gguf.KV, key string, v any) []gguf.KV {
		return append(without(meta, key), gguf.KV{Key: key, Value: v})
	}
	meta := append(archMeta("llama"), vocabMeta("llama")...)
	good := ggufShapes(false, false)
	cases := []struct {
		name   string
		meta   []gguf.KV
		shapes func(map[string][]int)
		msg    string
	}{
		{"unknown arch", append(archMeta("phi3"), vocabMeta("llama")...), nil, `"phi3"`},
		{"no tokens", without(meta, "tokenizer.ggml.tokens"), nil, "tokenizer.ggml.tokens"},
		{"no tokenizer model", without(meta, "tokenizer.ggml.model"), nil, "tokenizer.ggml.model"},
		{"short scores", with(meta, "tokenizer.ggml.scores", []float32{1}), nil, "scores"},
		{"bos out of range", with(meta, "tokenizer.ggml.bos_token_id", uint32(64)), nil, "bos_token_id"},
		{"no eps", without(meta, "llama.attention.layer_norm_rms_epsilon"), nil, "layer_norm_rms_epsilon"},
		{"no heads", without(meta, "llama.attention.head_count"), nil, "head_count"},
		{"string length", with(meta, "llama.embedding_length", "64"), nil, "embedding_length"},
		{"rope beyond the head", with(meta, "llama.rope.dimension_count", uint32(18)), nil, "rope over 18"},
		{"absurd layer count", with(meta, "llama.block_count", uint32(math.MaxInt32)), nil, "at most 4096 layers"},
		{"yarn", with(meta, "llama.rope.scaling.type", "yarn"), nil, "yarn"},
		{"missing tensor", meta, func(s map[string][]int) { delete(s, "blk.1.ffn_up.weight") }, `missing tensor "blk.1.ffn_up.weight"`},
		{"wrong shape", meta, func(s map[string][]int) { s["blk.0.attn_k.weight"] = []int{tDim, tDim} }, `"model.layers.0.self_attn.k_proj.weight": shape [64 64], want [32 64]`},
		{"embedding rows", meta, func(s map[string][]int) { s["token_embd.weight"] = []int{tVocab + 1, tDim} }, "token_embd.weight has 65 rows"},
	}
	for _, c := range cases {
		s := map[string][]int{}
		for k, v := range good {
			s[k] = v
		}
		if c.shapes != nil {
			c.shapes(s)
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		writeGGUF(t, path, c.meta, ggufTensors(s))
		m, err := Open(path)
		if err == nil {
			m.Close()
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not mention %q and the file", c.name, err, c.msg)
		}
	}
}

func TestOpenNotAModel(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "notes.txt")
	writeText(t, p, "hello")
	for _, path := range []string{p, filepath.Join(dir, "missing.gguf"), dir} {
		if m, err := Open(path); err == nil {
			m.Close()
			t.Errorf("%s: no error", path)
		}
	}
}

// BenchmarkOpenGGUF opens a TinyLlama-1.1B-shaped Q4_0 file (22 layers, hidden 2048, 32 heads of
// 64 with 4 KV heads, FFN 5632, vocab 32000): parsing and mapping only, the weights are not read.
func BenchmarkOpenGGUF(b *testing.B) {
	const vocab, dim, ffn, layers, heads, kv = 32000, 2048, 5632, 22, 32, 4
	hd := dim / heads
	meta := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "llama.context_length", Value: uint32(2048)},
		{Key: "llama.embedding_length", Value: uint32(dim)},
		{Key: "llama.block_count", Value: uint32(layers)},
		{Key: "llama.feed_forward_length", Value: uint32(ffn)},
		{Key: "llama.attention.head_count", Value: uint32(heads)},
		{Key: "llama.attention.head_count_kv", Value: uint32(kv)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
	}
	tokens := make([]string, vocab)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("<%d>", i)
	}
	meta = append(meta, gguf.KV{Key: "tokenizer.ggml.tokens", Value: tokens})
	// One random buffer backs every tensor: the file is large, generating it need not be slow.
	r := rand.New(rand.NewPCG(7, 8))
	pool := randBytes(r, vocab*dim/32*18)
	mk := func(name string, dt tensor.DType, shape ...int) tensor.Tensor {
		t := tensor.Tensor{Name: name, DType: dt, Shape: shape}
		t.Data = pool[:t.ByteSize()]
		return t
	}
	ts := []tensor.Tensor{mk("token_embd.weight", tensor.Q4_0, vocab, dim), mk("output_norm.weight", tensor.F32, dim),
		mk("output.weight", tensor.Q4_0, vocab, dim)}
	for i := range layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts, mk(p+"attn_norm.weight", tensor.F32, dim), mk(p+"ffn_norm.weight", tensor.F32, dim),
			mk(p+"attn_q.weight", tensor.Q4_0, dim, dim), mk(p+"attn_k.weight", tensor.Q4_0, kv*hd, dim),
			mk(p+"attn_v.weight", tensor.Q4_0, kv*hd, dim), mk(p+"attn_output.weight", tensor.Q4_0, dim, dim),
			mk(p+"ffn_gate.weight", tensor.Q4_0, ffn, dim), mk(p+"ffn_up.weight", tensor.Q4_0, ffn, dim),
			mk(p+"ffn_down.weight", tensor.Q4_0, dim, ffn))
	}
	path := filepath.Join(b.TempDir(), "tinyllama-q4_0.gguf")
	writeGGUF(b, path, meta, ts)
	b.ResetTimer()
	for b.Loop() {
		m, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(m.FileBytes)
		m.Close()
	}
}

// FuzzFromGGUF feeds mutated model files through the metadata and tensor checks.
func FuzzFromGGUF(f *testing.F) {
	for _, arch := range []string{"llama", "qwen2"} {
		var buf bytes.Buffer
		model := map[string]string{"llama": "llama", "qwen2": "gpt2"}[arch]
		if err := gguf.Write(&buf, append(archMeta(arch), vocabMeta(model)...), ggufTensors(ggufShapes(arch == "qwen2", arch == "qwen2"))); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := gguf.Parse(data)
		if err != nil {
			return
		}
		m, err := fromGGUF(g, "fuzz.gguf")
		if err != nil {
			return
		}
		for name, tt := range m.Tensors {
			if err := tt.Validate(); err != nil {
				t.Fatalf("tensor %q: %v", name, err)
			}
		}
	})
}

func TestGGUFNamesRoundTrip(t *testing.T) {
	c := Config{Vocab: 8, Dim: 8, Layers: 12, Heads: 2, KVHeads: 1, HeadDim: 4, FFN: 8, QKVBias: true}
	for _, w := range required(c) {
		g := ggufName(w.name, ggufLayerNames)
		if back, ok := hfName(g, ggufLayerNames); !ok || back != w.name || g == w.name {
			t.Errorf("%s -> %s -> %s", w.name, g, back)
		}
	}
	for _, bad := range []string{"blk.x.attn_q.weight", "blk.01.attn_q.weight", "blk.-1.attn_q.weight", "blk.0.attn_q.scale", "blk.0.attn_qq.weight", "rope_freqs.weight", "blk.0"} {
		if hf, ok := hfName(bad, ggufLayerNames); ok {
			t.Errorf("%s mapped to %s", bad, hf)
		}
	}
}

// TestOpenGGUFSpacePrefix: tokenizer.ggml.add_space_prefix = false reaches the vocabulary, and a
// non-bool value is an error.
func TestOpenGGUFSpacePrefix(t *testing.T) {
	for _, tc := range []struct {
		value   any
		want    bool
		wantErr bool
	}{{false, true, false}, {true, false, false}, {uint32(1), false, true}} {
		path := filepath.Join(t.TempDir(), "m.gguf")
		meta := append(archMeta("llama"), vocabMeta("llama")...)
		meta = append(meta, gguf.KV{Key: "tokenizer.ggml.add_space_prefix", Value: tc.value})
		writeGGUF(t, path, meta, ggufTensors(ggufShapes(false, false)))
		m, err := Open(path)
		if tc.wantErr {
			if err == nil {
				m.Close()
				t.Errorf("add_space_prefix=%v: no error", tc.value)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.GGUFVocab.NoSpacePrefix != tc.want {
			t.Errorf("add_space_prefix=%v: NoSpacePrefix %v", tc.value, m.GGUFVocab.NoSpacePrefix)
		}
		m.Close()
	}
}
