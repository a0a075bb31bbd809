package weights

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/layaapp/laya/engine/gguf"
	"github.com/layaapp/laya/engine/safetensors"
	"github.com/layaapp/laya/engine/tensor"
)

// shapes of the small test model: written independently of required().
const (
	tVocab, tDim, tFFN, tLayers, tHeads, tKV = 64, 64, 128, 2, 4, 2
	tHeadDim                                 = tDim / tHeads
)

// hfShapes lists every tensor of the test model under HuggingFace names.
func hfShapes(tied, bias bool) map[string][]int {
	m := map[string][]int{
		"model.embed_tokens.weight": {tVocab, tDim},
		"model.norm.weight":         {tDim},
	}
	if !tied {
		m["lm_head.weight"] = []int{tVocab, tDim}
	}
	for i := range tLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		m[p+"input_layernorm.weight"] = []int{tDim}
		m[p+"post_attention_layernorm.weight"] = []int{tDim}
		m[p+"self_attn.q_proj.weight"] = []int{tHeads * tHeadDim, tDim}
		m[p+"self_attn.k_proj.weight"] = []int{tKV * tHeadDim, tDim}
		m[p+"self_attn.v_proj.weight"] = []int{tKV * tHeadDim, tDim}
		m[p+"self_attn.o_proj.weight"] = []int{tDim, tHeads * tHeadDim}
		m[p+"mlp.gate_proj.weight"] = []int{tFFN, tDim}
		m[p+"mlp.up_proj.weight"] = []int{tFFN, tDim}
		m[p+"mlp.down_proj.weight"] = []int{tDim, tFFN}
		if bias {
			m[p+"self_attn.q_proj.bias"] = []int{tHeads * tHeadDim}
			m[p+"self_attn.k_proj.bias"] = []int{tKV * tHeadDim}
			m[p+"self_attn.v_proj.bias"] = []int{tKV * tHeadDim}
		}
	}
	return m
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

func writeSafetensors(t testing.TB, path string, ts []safetensors.WriteTensor) {
	t.Helper()
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeText(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeGGUF(t testing.TB, path string, meta []gguf.KV, ts []tensor.Tensor) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(f, meta, ts); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// hfDir writes a HuggingFace directory: config, tokenizer.json and one safetensors file holding
// shapes in dtype, and returns the tensors written by name.
func hfDir(t testing.TB, config string, shapes map[string][]int, dtype safetensors.DType) (string, map[string]safetensors.WriteTensor) {
	t.Helper()
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "config.json"), config)
	writeText(t, filepath.Join(dir, "tokenizer.json"), `{"model":{"type":"BPE"}}`)
	r := rand.New(rand.NewPCG(1, 2))
	written := map[string]safetensors.WriteTensor{}
	var ts []safetensors.WriteTensor
	for _, name := range sortedKeys(shapes) {
		s := shapes[name]
		w := safetensors.WriteTensor{Name: name, DType: dtype, Shape: s, Data: randBytes(r, prod(s)*dtype.Size())}
		ts = append(ts, w)
		written[name] = w
	}
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), ts)
	return dir, written
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
