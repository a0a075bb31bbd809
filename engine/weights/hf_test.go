package weights

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/safetensors"
	"github.com/layaapp/laya/engine/tensor"
)

var llamaConfig = fmt.Sprintf(`{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": %d, "intermediate_size": %d, "num_hidden_layers": %d,
  "num_attention_heads": %d, "num_key_value_heads": %d, "vocab_size": %d,
  "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "max_position_embeddings": 512,
  "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
  "rope_scaling": null, "torch_dtype": "float32"
}`, tDim, tFFN, tLayers, tHeads, tKV, tVocab)

func TestOpenHFLlama(t *testing.T) {
	dir, written := hfDir(t, llamaConfig, hfShapes(false, false), safetensors.F32)
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := Config{Arch: "llama", Vocab: 64, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
		FFN: 128, NormEps: 1e-5, RopeTheta: 10000, RopeStyle: backend.RopeHalf, MaxContext: 512,
		BOS: 1, EOS: []int{2}}
	if !reflect.DeepEqual(m.Config, want) {
		t.Errorf("config\n got %+v\nwant %+v", m.Config, want)
	}
	if m.Format != "safetensors" || m.Path != dir || m.GGUFVocab != nil || string(m.TokenizerJSON) != `{"model":{"type":"BPE"}}` {
		t.Errorf("format %q path %q tokenizer %q", m.Format, m.Path, m.TokenizerJSON)
	}
	if len(m.Tensors) != len(written) {
		t.Errorf("%d tensors, want %d", len(m.Tensors), len(written))
	}
	var total int64
	for name, w := range written {
		got := m.Tensors[name]
		if got == nil || got.DType != tensor.F32 || !slices.Equal(got.Shape, w.Shape) || !bytes.Equal(got.Data, w.Data) || got.Name != name {
			t.Errorf("tensor %q = %+v", name, got)
		}
		total += int64(len(w.Data))
	}
	if m.WeightBytes() != total {
		t.Errorf("WeightBytes %d, want %d", m.WeightBytes(), total)
	}
	st, _ := os.Stat(filepath.Join(dir, "model.safetensors"))
	if m.FileBytes != st.Size() {
		t.Errorf("FileBytes %d, want %d", m.FileBytes, st.Size())
	}
	if err := m.Close(); err != nil {
		t.Error(err)
	}
}

func TestOpenHFQwen2TiedLists(t *testing.T) {
	// Qwen2: biases, tied through a missing lm_head, head_dim given, eos as a list, plus a
	// generation_config eos; rope_parameters in the newer transformers layout.
	cfg := fmt.Sprintf(`{"architectures":["Qwen2ForCausalLM"],"hidden_size":%d,"intermediate_size":%d,
	  "num_hidden_layers":%d,"num_attention_heads":%d,"num_key_value_heads":%d,"head_dim":%d,"vocab_size":%d,
	  "rms_norm_eps":1e-6,"rope_parameters":{"rope_type":"default","rope_theta":1000000.0},
	  "max_position_embeddings":4096,"bos_token_id":null,"eos_token_id":[60,61],"use_sliding_window":false}`,
		tDim, tFFN, tLayers, tHeads, tKV, tHeadDim, tVocab)
	dir, written := hfDir(t, cfg, hfShapes(true, true), safetensors.BF16)
	writeText(t, filepath.Join(dir, "generation_config.json"), `{"eos_token_id":[61,62]}`)
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config
	if c.Arch != "qwen2" || !c.QKVBias || !c.TiedEmbeddings || c.RopeTheta != 1e6 || c.BOS != -1 ||
		!slices.Equal(c.EOS, []int{60, 61, 62}) || c.HeadDim != 16 || c.NormEps != 1e-6 || c.MaxContext != 4096 {
		t.Errorf("config %+v", c)
	}
	if _, ok := m.Tensors["lm_head.weight"]; ok {
		t.Error("tied model has lm_head.weight")
	}
	for name := range written {
		if m.Tensors[name] == nil || m.Tensors[name].DType != tensor.BF16 {
			t.Errorf("tensor %q = %+v", name, m.Tensors[name])
		}
	}
}

func TestOpenHFLlama3Rope(t *testing.T) {
	cfg := strings.Replace(llamaConfig, `"rope_scaling": null`, `"rope_scaling": {"factor": 32.0,
	  "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192,
	  "rope_type": "llama3"}`, 1)
	cfg = strings.Replace(cfg, `"tie_word_embeddings": false`, `"tie_word_embeddings": true`, 1)
	cfg = strings.Replace(cfg, `"eos_token_id": 2`, `"eos_token_id": [2, 3]`, 1)
	// lm_head present but tie_word_embeddings wins, as in transformers.
	dir, _ := hfDir(t, cfg, hfShapes(false, false), safetensors.F16)
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192}
	if m.Config.RopeScale != want || !m.Config.TiedEmbeddings || !slices.Equal(m.Config.EOS, []int{2, 3}) {
		t.Errorf("config %+v", m.Config)
	}
	if _, ok := m.Tensors["lm_head.weight"]; ok {
		t.Error("tied model has lm_head.weight")
	}
}

func TestOpenHFSharded(t *testing.T) {
	dir, written := hfDir(t, llamaConfig, hfShapes(false, false), safetensors.F16)
	os.Remove(filepath.Join(dir, "model.safetensors"))
	var a, b []safetensors.WriteTensor
	index := map[string]string{}
	for i, name := range sortedKeys(written) {
		shard := "model-00001-of-00002.safetensors"
		if i%2 == 1 {
			shard = "model-00002-of-00002.safetensors"
			b = append(b, written[name])
		} else {
			a = append(a, written[name])
		}
		index[name] = shard
	}
	writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), a)
	writeSafetensors(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), b)
	var idx strings.Builder
	idx.WriteString(`{"metadata":{},"weight_map":{`)
	for i, name := range sortedKeys(index) {
		if i > 0 {
			idx.WriteByte(',')
		}
		fmt.Fprintf(&idx, "%q:%q", name, index[name])
	}
	idx.WriteString("}}")
	writeText(t, filepath.Join(dir, safetensors.IndexFile), idx.String())
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, w := range written {
		if got := m.Tensors[name]; got == nil || !bytes.Equal(got.Data, w.Data) {
			t.Errorf("tensor %q differs", name)
		}
	}
}

func TestOpenHFErrors(t *testing.T) {
	shapes := hfShapes(false, false)
	cases := []struct {
		name   string
		config string
		edit   func(dir string, shapes map[string][]int) // changes applied to the directory
		prep   func(shapes map[string][]int)             // changes to the shapes before writing
		msg    string
	}{
		{name: "unknown architecture", config: strings.Replace(llamaConfig, "LlamaForCausalLM", "MistralForCausalLM", 1), msg: "MistralForCausalLM"},
		{name: "unknown model type", config: `{"model_type":"gpt2","hidden_size":8}`, msg: "gpt2"},
		{name: "bad json", config: `{"hidden_size":`, msg: "config.json"},
		{name: "missing hidden_size", config: strings.Replace(llamaConfig, `"hidden_size"`, `"hidden"`, 1), msg: "hidden_size"},
		{name: "yarn", config: strings.Replace(llamaConfig, `"rope_scaling": null`, `"rope_scaling": {"type": "yarn", "factor": 4}`, 1), msg: "yarn"},
		{name: "bad llama3 block", config: strings.Replace(llamaConfig, `"rope_scaling": null`, `"rope_scaling": {"rope_type": "llama3", "factor": 8}`, 1), msg: "llama3"},
		{name: "gelu", config: strings.Replace(llamaConfig, `"silu"`, `"gelu"`, 1), msg: "gelu"},
		{name: "bad eos", config: strings.Replace(llamaConfig, `"eos_token_id": 2`, `"eos_token_id": "2"`, 1), msg: "eos_token_id"},
		{name: "eos out of range", config: strings.Replace(llamaConfig, `"eos_token_id": 2`, `"eos_token_id": 64`, 1), msg: "eos"},
		{name: "heads do not divide", config: strings.Replace(llamaConfig, `"num_key_value_heads": 2`, `"num_key_value_heads": 3`, 1), msg: "kv heads"},
		{name: "zero layers", config: strings.Replace(llamaConfig, `"num_hidden_layers": 2`, `"num_hidden_layers": 0`, 1), msg: "layers"},
		{name: "missing tensor", config: llamaConfig, prep: func(s map[string][]int) { delete(s, "model.layers.1.mlp.up_proj.weight") },
			msg: `missing tensor "model.layers.1.mlp.up_proj.weight"`},
		{name: "wrong shape", config: llamaConfig, prep: func(s map[string][]int) { s["model.layers.0.self_attn.k_proj.weight"] = []int{tDim, tDim} },
			msg: `model.safetensors: tensor "model.layers.0.self_attn.k_proj.weight": shape [64 64], want [32 64]`},
		{name: "missing tokenizer", config: llamaConfig, edit: func(dir string, _ map[string][]int) { os.Remove(filepath.Join(dir, "tokenizer.json")) }, msg: "tokenizer.json"},
		{name: "no weights", config: llamaConfig, edit: func(dir string, _ map[string][]int) { os.Remove(filepath.Join(dir, "model.safetensors")) }, msg: "safetensors"},
		{name: "truncated weights", config: llamaConfig, edit: func(dir string, _ map[string][]int) {
			p := filepath.Join(dir, "model.safetensors")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-1)
		}, msg: "run past"},
		{name: "scales without a quantization block", config: llamaConfig, prep: func(s map[string][]int) {
			s["model.layers.0.mlp.up_proj.scales"] = []int{tFFN, 1}
		}, msg: "quantization block"},
	}
	for _, c := range cases {
		s := map[string][]int{}
		for k, v := range shapes {
			s[k] = v
		}
		if c.prep != nil {
			c.prep(s)
		}
		dir, _ := hfDir(t, c.config, s, safetensors.F32)
		if c.edit != nil {
			c.edit(dir, s)
		}
		m, err := Open(dir)
		if err == nil {
			m.Close()
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.msg)
		}
	}
}

func TestOpenHFWrongDType(t *testing.T) {
	dir, _ := hfDir(t, llamaConfig, hfShapes(false, false), safetensors.I32)
	if m, err := Open(dir); err == nil {
		m.Close()
		t.Fatal("I32 weights: no error")
	} else if !strings.Contains(err.Error(), "dtype I32") {
		t.Errorf("error %q does not name the dtype", err)
	}
}

// mlxDir writes an MLX-quantized model: every matrix quantized at 4 bits, group 64, except
// lm_head at 8 bits, group 32 (a per-layer override); scales and biases F16. zeroScales makes
// every scale 0, which must load like any other value.
func mlxDir(t *testing.T, zeroScales bool) (string, map[string][]int) {
	cfg := strings.Replace(llamaConfig, `"torch_dtype": "float32"`,
		`"quantization": {"group_size": 64, "bits": 4, "lm_head": {"group_size": 32, "bits": 8}, "model.layers.0.input_layernorm": false},
		 "quantization_config": {"group_size": 64, "bits": 4}`, 1)
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "config.json"), cfg)
	writeText(t, filepath.Join(dir, "tokenizer.json"), `{}`)
	r := rand.New(rand.NewPCG(3, 4))
	var ts []safetensors.WriteTensor
	shapes := hfShapes(false, false)
	for _, name := range sortedKeys(shapes) {
		s := shapes[name]
		if len(s) == 1 {
			ts = append(ts, safetensors.WriteTensor{Name: name, DType: safetensors.F16, Shape: s, Data: randBytes(r, 2*s[0])})
			continue
		}
		bits, group := 4, 64
		if name == "lm_head.weight" {
			bits, group = 8, 32
		}
		module := strings.TrimSuffix(name, ".weight")
		packed := []int{s[0], s[1] * bits / 32}
		groups := []int{s[0], s[1] / group}
		scales := randBytes(r, 2*prod(groups))
		if zeroScales {
			scales = make([]byte, len(scales))
		}
		ts = append(ts,
			safetensors.WriteTensor{Name: name, DType: safetensors.U32, Shape: packed, Data: randBytes(r, 4*prod(packed))},
			safetensors.WriteTensor{Name: module + ".scales", DType: safetensors.F16, Shape: groups, Data: scales},
			safetensors.WriteTensor{Name: module + ".biases", DType: safetensors.F16, Shape: groups, Data: randBytes(r, 2*prod(groups))},
		)
	}
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), ts)
	return dir, shapes
}

func TestOpenMLX(t *testing.T) {
	for _, zero := range []bool{false, true} {
		dir, shapes := mlxDir(t, zero)
		m, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.Format != "mlx" {
			t.Errorf("format %q", m.Format)
		}
		var total int64
		for name, s := range shapes {
			got := m.Tensors[name]
			if got == nil || !slices.Equal(got.Shape, s) {
				t.Fatalf("tensor %q = %+v, want shape %v", name, got, s)
			}
			if len(s) == 1 {
				if got.DType != tensor.F16 {
					t.Errorf("tensor %q: dtype %v", name, got.DType)
				}
				total += int64(2 * s[0])
				continue
			}
			bits, group := 4, 64
			if name == "lm_head.weight" {
				bits, group = 8, 32
			}
			if got.DType != tensor.Affine || got.Bits != bits || got.GroupSize != group ||
				len(got.Data) != s[0]*s[1]*bits/8 || got.Scales == nil || got.Biases == nil ||
				!slices.Equal(got.Scales.Shape, []int{s[0], s[1] / group}) || got.Scales.DType != tensor.F16 {
				t.Errorf("tensor %q = %+v", name, got)
			}
			total += int64(s[0]*s[1]*bits/8 + 2*2*s[0]*s[1]/group)
		}
		if m.WeightBytes() != total {
			t.Errorf("WeightBytes %d, want %d", m.WeightBytes(), total)
		}
		m.Close()
	}
}

func TestOpenMLXErrors(t *testing.T) {
	dir, _ := mlxDir(t, false)
	edit := func(from, to string) {
		p := filepath.Join(dir, "config.json")
		b, _ := os.ReadFile(p)
		writeText(t, p, strings.Replace(string(b), from, to, 1))
	}
	check := func(name, msg string) {
		t.Helper()
		m, err := Open(dir)
		if err == nil {
			m.Close()
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %q does not mention %q", name, err, msg)
		}
	}
	// The override says 4 bits where the file holds 8: the logical shape comes out wrong.
	edit(`"lm_head": {"group_size": 32, "bits": 8}`, `"lm_head": {"group_size": 32, "bits": 4}`)
	check("override bits", `"lm_head.weight": shape`)
	edit(`"lm_head": {"group_size": 32, "bits": 4}`, `"lm_head": {"group_size": 64, "bits": 8}`)
	check("override group", "lm_head")
	edit(`"lm_head": {"group_size": 64, "bits": 8}`, `"lm_head": {"group_size": 32, "bits": 3}`)
	check("3 bits", "3-bit")
	edit(`"lm_head": {"group_size": 32, "bits": 3}`, `"lm_head": {"group_size": 32, "bits": 8}, "mode": "mxfp4"`)
	check("mode", "mxfp4")
	edit(`, "mode": "mxfp4"`, `, "quant_method": "gptq"`)
	check("gptq", "gptq")
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(llamaConfig))
	f.Add([]byte(`{"architectures":["Qwen2ForCausalLM"],"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"vocab_size":4,"eos_token_id":[1,2],"rope_scaling":{"rope_type":"llama3","factor":8}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _, err := parseConfig(data)
		if err != nil {
			return
		}
		if c.Arch != "llama" && c.Arch != "qwen2" {
			t.Fatalf("accepted architecture %q", c.Arch)
		}
		if CheckConfig(c) == nil && (c.Heads <= 0 || c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 || c.HeadDim <= 0) {
			t.Fatalf("checkConfig accepted %+v", c)
		}
	})
}
