package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkEncode measures encoding throughput on English prose (target: >= 10 MB/s on one
// core). Run with -cpu 1.
func BenchmarkEncode(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(testdata, "english.txt"))
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	for _, name := range []string{"llama2", "qwen2.5", "laya-code"} {
		tk := loadTokenizer(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tk.Encode(text, true)
			}
		})
	}
}

// BenchmarkDecodeStream measures streaming detokenization of English prose; allocs/op counts
// the allocations of a whole stream of about 2,000 tokens (only byte runs and context-dependent
// tokens such as llama2's newline byte <0x0A> allocate).
func BenchmarkDecodeStream(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(testdata, "english.txt"))
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"llama2", "qwen2.5", "laya-code"} {
		tk := loadTokenizer(b, name)
		ids := tk.Encode(string(data[:8192]), false)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := tk.NewDecoder(false)
				for _, id := range ids {
					d.Next(id)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
		})
	}
}

func BenchmarkFromJSON(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(testdata, "qwen2.5-tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := FromJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}
