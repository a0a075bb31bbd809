package weights

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/safetensors"
)

// allocatedBy reports the bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestAbsurdCountsFailFast opens models whose files claim counts no model has (two billion
// layers, a hidden size of 2^40): each must fail with an error naming the count, having
// allocated almost nothing. Listing the tensors such a config implies took gigabytes.
func TestAbsurdCountsFailFast(t *testing.T) {
	const budget = 4 << 20
	base := map[string]any{"hidden_size": tDim, "intermediate_size": tFFN, "num_hidden_layers": tLayers,
		"num_attention_heads": tHeads, "num_key_value_heads": tKV, "vocab_size": tVocab}
	for _, c := range []struct{ key, msg string }{
		{"num_hidden_layers", "2000000000 layers"},
		{"hidden_size", "hidden 2000000000"},
		{"intermediate_size", "intermediate 2000000000"},
		{"vocab_size", "vocab 2000000000"},
		{"num_attention_heads", "2000000000 attention heads"},
	} {
		cfg := `{"architectures":["LlamaForCausalLM"]`
		for k, v := range base {
			if k == c.key {
				v = 2000000000
			}
			cfg += fmt.Sprintf(",%q:%d", k, v)
		}
		dir, _ := hfDir(t, cfg+"}", hfShapes(false, false), safetensors.F32)
		var err error
		n := allocatedBy(func() {
			var m *Model
			if m, err = Open(dir); err == nil {
				m.Close()
			}
		})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want one mentioning %q", c.key, err, c.msg)
		}
		if n > budget {
			t.Errorf("%s: opening allocated %d bytes", c.key, n)
		}
	}

	meta := append(archMeta("llama"), vocabMeta("llama")...)
	for i, kv := range meta {
		if kv.Key == "llama.block_count" {
			meta[i].Value = uint32(math.MaxInt32)
		}
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	writeGGUF(t, path, meta, ggufTensors(ggufShapes(false, false)))
	var err error
	n := allocatedBy(func() {
		var m *Model
		if m, err = Open(path); err == nil {
			m.Close()
		}
	})
	if err == nil || !strings.Contains(err.Error(), "block_count 2147483647") {
		t.Errorf("gguf: error %v, want one mentioning block_count 2147483647", err)
	}
	if n > budget {
		t.Errorf("gguf: opening allocated %d bytes", n)
	}
}
