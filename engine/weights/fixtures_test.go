package weights

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/internal/fixtures"
)

// hfFacts is what a fixture's hf/config.json says, read here without parseConfig.
type hfFacts struct {
	ModelType    string         `json:"model_type"`
	Hidden       int            `json:"hidden_size"`
	FFN          int            `json:"intermediate_size"`
	Layers       int            `json:"num_hidden_layers"`
	Heads        int            `json:"num_attention_heads"`
	KVHeads      int            `json:"num_key_value_heads"`
	HeadDim      int            `json:"head_dim"`
	Vocab        int            `json:"vocab_size"`
	Eps          float64        `json:"rms_norm_eps"`
	Theta        float64        `json:"rope_theta"`
	Tie          *bool          `json:"tie_word_embeddings"`
	RopeScaling  map[string]any `json:"rope_scaling"`
	RopeParams   map[string]any `json:"rope_parameters"`
	Quantization map[string]any `json:"quantization"`
	MaxPositions int            `json:"max_position_embeddings"`
	TorchDType   string         `json:"torch_dtype"`
	TextConfig   *hfFacts       `json:"text_config"`
}

// arch is the Config.Arch of the fixture's model type.
func (h *hfFacts) arch() string {
	if h.ModelType == "gemma3_text" {
		return "gemma3"
	}
	return h.ModelType
}

// tied is whether the embeddings are tied, by the key or the architecture's default.
func (h *hfFacts) tied() bool {
	if h.Tie == nil {
		return h.arch() == "gemma3"
	}
	return *h.Tie
}

// fixtureFamilies are the fixture directories whose config.json facts this test knows; the
// recurrent hybrids (lfm2, qwen3_5) carry facts of their own (hybrid_test.go).
var fixtureFamilies = []string{"llama", "llama3", "qwen2", "qwen3", "smollm3", "gemma3"}

func (h *hfFacts) theta() float64 {
	if h.Theta == 0 && h.RopeParams != nil {
		if v, ok := h.RopeParams["rope_theta"].(float64); ok {
			return v
		}
	}
	return h.Theta
}

func (h *hfFacts) scaling() map[string]any {
	for _, m := range []map[string]any{h.RopeScaling, h.RopeParams} {
		if m == nil {
			continue
		}
		typ, _ := m["rope_type"].(string)
		if typ == "" {
			typ, _ = m["type"].(string)
		}
		if typ == "llama3" {
			return m
		}
	}
	return nil
}

// llama3Factors computes the divisors llama3 scaling applies to each inverse frequency, from the
// formula in Meta's reference code.
func llama3Factors(h *hfFacts, hd int) []float64 {
	s := h.scaling()
	factor, low, high := s["factor"].(float64), s["low_freq_factor"].(float64), s["high_freq_factor"].(float64)
	orig := s["original_max_position_embeddings"].(float64)
	out := make([]float64, hd/2)
	for i := range out {
		freq := 1 / math.Pow(h.theta(), float64(2*i)/float64(hd))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < orig/high:
			out[i] = 1
		case wavelen > orig/low:
			out[i] = factor
		default:
			smooth := (orig/wavelen - low) / (high - low)
			out[i] = 1 / ((1-smooth)/factor + smooth)
		}
	}
	return out
}

// TestFixtures checks what Open reports for every format of the fixtureFamilies fixtures and of
// the bundled model against their config.json.
func TestFixtures(t *testing.T) {
	var dirs []string
	for _, name := range fixtureFamilies {
		dirs = append(dirs, fixtures.Model(t, name))
	}
	for _, dir := range append(dirs, fixtures.Bundled(t)) {
		ref := fixtures.Read(t, dir)
		// The parity models keep their unquantized original in hf/; a bundled model is its own
		// reference.
		facts := filepath.Join(dir, "hf", "config.json")
		if _, err := os.Stat(facts); err != nil {
			facts = filepath.Join(dir, "config.json")
		}
		var h hfFacts
		readJSON(t, facts, &h)
		if h.KVHeads == 0 {
			h.KVHeads = h.Heads
		}
		if h.HeadDim == 0 {
			h.HeadDim = h.Hidden / h.Heads
		}
		seen := map[string]bool{}
		for _, c := range ref.Cases {
			if seen[c.Path] {
				continue
			}
			seen[c.Path] = true
			facts := &h
			if c.Format == "hf-mm" {
				// The multimodal layout is a model of its own, described by its text_config.
				var mm hfFacts
				readJSON(t, filepath.Join(dir, c.Path, "config.json"), &mm)
				facts = mm.TextConfig
				facts.TorchDType = mm.TorchDType
			}
			t.Run(filepath.Base(dir)+"/"+c.Format, func(t *testing.T) {
				checkFixture(t, dir, c, facts)
			})
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func checkFixture(t *testing.T, dir string, rc fixtures.Case, h *hfFacts) {
	path := filepath.Join(dir, rc.Path)
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config
	isGGUF := strings.HasSuffix(rc.Path, ".gguf")
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Abs(b) }
	if c.Arch != h.arch() || c.Dim != h.Hidden || c.FFN != h.FFN || c.Layers != h.Layers || c.Heads != h.Heads ||
		c.KVHeads != h.KVHeads || c.HeadDim != h.HeadDim || c.Vocab != h.Vocab || !close(c.NormEps, h.Eps) ||
		!close(c.RopeTheta, h.theta()) || c.QKVBias != (h.ModelType == "qwen2") {
		t.Errorf("config %+v does not match hf/config.json %+v", c, *h)
	}
	if !isGGUF && c.TiedEmbeddings != h.tied() {
		t.Errorf("tied %v, config.json says %v", c.TiedEmbeddings, h.tied())
	}
	wantStyle := backend.RopeHalf
	if isGGUF && (h.ModelType == "llama" || h.ModelType == "smollm3") {
		wantStyle = backend.RopeInterleaved
	}
	if c.RopeStyle != wantStyle {
		t.Errorf("rope style %v, want %v", c.RopeStyle, wantStyle)
	}
	if h.scaling() != nil {
		if c.RopeScale.Type == "llama3" {
			s := h.scaling()
			if c.RopeScale.Factor != s["factor"].(float64) || c.RopeScale.OriginalMaxPositions != int(s["original_max_position_embeddings"].(float64)) {
				t.Errorf("rope scaling %+v, config.json %v", c.RopeScale, s)
			}
		} else {
			want := llama3Factors(h, c.HeadDim)
			if len(c.RopeFactors) != len(want) {
				t.Fatalf("no llama3 scaling: rope scale %+v, %d factors", c.RopeScale, len(c.RopeFactors))
			}
			for i, f := range c.RopeFactors {
				if math.Abs(float64(f)-want[i]) > 1e-5*want[i] {
					t.Errorf("rope factor %d = %g, want %g", i, f, want[i])
				}
			}
		}
	} else if c.RopeScale.Type == "linear" {
		if f, _ := h.RopeScaling["factor"].(float64); c.RopeScale.Factor != f {
			t.Errorf("linear rope scaling %+v, config.json %v", c.RopeScale, h.RopeScaling)
		}
	} else if c.RopeScale.Type != "" || c.RopeFactors != nil {
		t.Errorf("rope scaling %+v / %v on a model without it", c.RopeScale, c.RopeFactors)
	}

	qd, kvd := h.Heads*h.HeadDim, h.KVHeads*h.HeadDim
	shapes := map[string][]int{"model.embed_tokens.weight": {h.Vocab, h.Hidden}, "model.norm.weight": {h.Hidden}}
	if !c.TiedEmbeddings {
		shapes["lm_head.weight"] = []int{h.Vocab, h.Hidden}
	}
	for i := range h.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		for name, s := range map[string][]int{
			"input_layernorm.weight": {h.Hidden}, "post_attention_layernorm.weight": {h.Hidden},
			"self_attn.q_proj.weight": {qd, h.Hidden}, "self_attn.k_proj.weight": {kvd, h.Hidden},
			"self_attn.v_proj.weight": {kvd, h.Hidden}, "self_attn.o_proj.weight": {h.Hidden, qd},
			"mlp.gate_proj.weight": {h.FFN, h.Hidden}, "mlp.up_proj.weight": {h.FFN, h.Hidden},
			"mlp.down_proj.weight": {h.Hidden, h.FFN},
		} {
			shapes[p+name] = s
		}
		if h.ModelType == "qwen2" {
			shapes[p+"self_attn.q_proj.bias"] = []int{qd}
			shapes[p+"self_attn.k_proj.bias"] = []int{kvd}
			shapes[p+"self_attn.v_proj.bias"] = []int{kvd}
		}
		if h.ModelType == "qwen3" || h.arch() == "gemma3" {
			shapes[p+"self_attn.q_norm.weight"] = []int{h.HeadDim}
			shapes[p+"self_attn.k_norm.weight"] = []int{h.HeadDim}
		}
		if h.arch() == "gemma3" {
			shapes[p+"pre_feedforward_layernorm.weight"] = []int{h.Hidden}
			shapes[p+"post_feedforward_layernorm.weight"] = []int{h.Hidden}
		}
	}
	var quant map[string]any
	if strings.HasPrefix(rc.Format, "mlx") {
		var q hfFacts
		readJSON(t, filepath.Join(path, "config.json"), &q)
		quant = q.Quantization
		bits, group := 4.0, 64.0
		if rc.Format == "mlx8" {
			bits, group = 8, 32
		}
		if h.ModelType != "llama" && h.ModelType != "qwen2" {
			group = quant["group_size"].(float64) // the 2026 fixtures keep mlx-lm's default for both widths
		}
		if quant["bits"] != bits || quant["group_size"] != group {
			t.Errorf("quantization block %v, want %v bits group %v", quant, bits, group)
		}
		if _, ok := quant["lm_head"]; h.ModelType == "llama" && rc.Format == "mlx4" && !h.tied() && !ok {
			t.Error("llama mlx4 fixture lacks its lm_head override")
		}
	}
	if len(m.Tensors) != len(shapes) {
		t.Errorf("%d tensors, want %d", len(m.Tensors), len(shapes))
	}
	for name, s := range shapes {
		got := m.Tensors[name]
		if got == nil || !slices.Equal(got.Shape, s) {
			t.Errorf("tensor %q = %v, want shape %v", name, got, s)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Error(err)
		}
		if d := fixtureDType(rc.Format, name, len(s), quant, h.TorchDType); d != "" && fmt.Sprint(got.DType, got.Bits, got.GroupSize) != d {
			t.Errorf("tensor %q: %v %d-bit group %d, want %s", name, got.DType, got.Bits, got.GroupSize, d)
		}
	}
	if isGGUF {
		v := m.GGUFVocab
		// SentencePiece-style BPE (byte fallback) is GGUF's "llama" model, byte-level BPE "gpt2".
		var tj struct {
			Model struct {
				ByteFallback bool `json:"byte_fallback"`
			} `json:"model"`
		}
		readJSON(t, filepath.Join(dir, "hf", "tokenizer.json"), &tj)
		wantModel := "gpt2"
		if tj.Model.ByteFallback {
			wantModel = "llama"
		}
		if v == nil || v.Model != wantModel || len(v.Tokens) != h.Vocab {
			t.Errorf("gguf vocab: model %q with %d tokens, want %q with %d", v.Model, len(v.Tokens), wantModel, h.Vocab)
		}
	} else {
		want, err := os.ReadFile(filepath.Join(path, "tokenizer.json"))
		if err != nil || string(m.TokenizerJSON) != string(want) {
			t.Errorf("tokenizer.json not carried over (%v)", err)
		}
	}
}

// fixtureDType is the storage the brief says each fixture format uses for a tensor, as
// "DType bits group" (tensor.DType's name), or "" when it does not say. quant is an MLX
// directory's quantization block, with any per-module override; torch is the HF config's
// torch_dtype.
func fixtureDType(format, name string, dims int, quant map[string]any, torch string) string {
	plain := func(d tensor.DType) string { return fmt.Sprint(d, 0, 0) }
	switch format {
	case "hf", "hf-mm":
		return plain(map[string]tensor.DType{"float32": tensor.F32, "bfloat16": tensor.BF16, "float16": tensor.F16}[torch])
	case "mlx4", "mlx8":
		if dims == 1 {
			return ""
		}
		bits, group := quant["bits"], quant["group_size"]
		if o, ok := quant[strings.TrimSuffix(name, ".weight")].(map[string]any); ok {
			bits, group = o["bits"], o["group_size"]
		}
		return fmt.Sprint(tensor.Affine, bits, group)
	}
	if dims == 1 {
		return plain(tensor.F32)
	}
	switch format {
	case "f16":
		return plain(tensor.F16)
	case "q8_0":
		return plain(tensor.Q8_0)
	case "q4_0":
		return plain(tensor.Q4_0)
	case "q4_k":
		// As llama.cpp's Q4_K_M: Q6_K for attn_v, ffn_down and output.
		if strings.HasSuffix(name, "down_proj.weight") || strings.HasSuffix(name, "v_proj.weight") || name == "lm_head.weight" {
			return plain(tensor.Q6_K)
		}
		return plain(tensor.Q4_K)
	case "q4_k_m":
		// llama.cpp's own Q4_K_M of a tied model: the embedding (the output matrix too) in Q6_K,
		// attn_v and ffn_down in Q6_K in some layers only (its use_more_bits), the rest Q4_K.
		switch {
		case name == "model.embed_tokens.weight":
			return plain(tensor.Q6_K)
		case strings.HasSuffix(name, "down_proj.weight") || strings.HasSuffix(name, "v_proj.weight"):
			return ""
		}
		return plain(tensor.Q4_K)
	}
	return "unknown format " + format
}

// f16 decodes an IEEE half float by hand.
func f16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * frac / 1024 * math.Pow(2, -14)
	case 31:
		return math.NaN()
	}
	return sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
}

// floats decodes a plain F32/F16/BF16 tensor.
func floats(t *testing.T, tt *tensor.Tensor) []float64 {
	out := make([]float64, tt.Elems())
	for i := range out {
		switch tt.DType {
		case tensor.F32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(tt.Data[4*i:])))
		case tensor.F16:
			out[i] = f16(binary.LittleEndian.Uint16(tt.Data[2*i:]))
		case tensor.BF16:
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(tt.Data[2*i:])) << 16))
		default:
			t.Fatalf("tensor %q: %v is not a float type", tt.Name, tt.DType)
		}
	}
	return out
}

// dequantSpec decodes the two simplest quantized layouts straight from their definitions: MLX
// affine (codes packed from the low bits of little-endian uint32 words, w = scale*q + bias per
// group) and ggml Q8_0 (blocks of an f16 scale and 32 int8 codes).
func dequantSpec(t *testing.T, tt *tensor.Tensor) []float64 {
	out := make([]float64, tt.Elems())
	switch tt.DType {
	case tensor.Affine:
		scales, biases := floats(t, tt.Scales), floats(t, tt.Biases)
		perWord := 32 / tt.Bits
		for i := range out {
			word := binary.LittleEndian.Uint32(tt.Data[4*(i/perWord):])
			q := word >> (uint(i%perWord) * uint(tt.Bits)) & (1<<tt.Bits - 1)
			g := i / tt.GroupSize // groups never straddle rows
			out[i] = scales[g]*float64(q) + biases[g]
		}
	case tensor.Q8_0:
		for i := range out {
			block := tt.Data[34*(i/32):]
			out[i] = f16(binary.LittleEndian.Uint16(block)) * float64(int8(block[2+i%32]))
		}
	default:
		return floats(t, tt)
	}
	return out
}

// TestFixtureQuantizedWeights checks that quantized fixtures, decoded through what Open reports
// (bits, group size, companions, dtype), approximate the HuggingFace weights: a wrong bit order,
// group size or block layout would leave no resemblance.
func TestFixtureQuantizedWeights(t *testing.T) {
	for _, name := range fixtureFamilies {
		dir := fixtures.Model(t, name)
		hf, err := Open(filepath.Join(dir, "hf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			path     string
			maxError float64 // RMS error relative to the weights' RMS
		}{{"mlx4", 0.2}, {"mlx8", 0.02}, {"q8_0.gguf", 0.02}} {
			p := filepath.Join(dir, q.path)
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				continue // not every model has every format
			}
			m, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			// gate_proj and o_proj are not permuted in GGUF files; the embedding is quantized too.
			names := []string{"model.layers.1.mlp.gate_proj.weight", "model.layers.0.self_attn.o_proj.weight", "model.embed_tokens.weight"}
			if m.Tensors["lm_head.weight"] != nil && hf.Tensors["lm_head.weight"] != nil {
				names = append(names, "lm_head.weight") // llama's mlx4 override: 8 bits, group 32
			}
			for _, name := range names {
				want, got := floats(t, hf.Tensors[name]), dequantSpec(t, m.Tensors[name])
				var se, ss float64
				for i := range want {
					se += (got[i] - want[i]) * (got[i] - want[i])
					ss += want[i] * want[i]
				}
				if rel := math.Sqrt(se / ss); !(rel < q.maxError) {
					t.Errorf("%s/%s %s: relative RMS error %.4f, want < %g", filepath.Base(dir), q.path, name, rel, q.maxError)
				}
			}
			m.Close()
		}
		hf.Close()
	}
}
