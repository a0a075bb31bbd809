//go:build hftokenizers

package tokenizer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAgainstHF compares the pure-Go tokenizer with the HuggingFace library on the reference
// strings, random mixtures of their characters, and decoding.
func TestAgainstHF(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdata, "*-tokenizer.json"))
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), "-tokenizer.json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			hf, err := FromJSONHF(data)
			if err != nil {
				t.Fatal(err)
			}
			defer hf.Close()
			tk := loadTokenizer(t, name)
			var texts []string
			for _, n := range []string{"llama2", "qwen2.5"} {
				for _, c := range readCases(t, filepath.Join(testdata, n+"-vocab-test.jsonl")) {
					texts = append(texts, c.Text)
				}
			}
			alphabet := []rune(strings.Join(texts, "") + "<s></s><|im_start|>\u0301\u200d  \t\n")
			rng := rand.New(rand.NewPCG(5, 6))
			for i := 0; i < 2000; i++ {
				var b strings.Builder
				for n := rng.IntN(40); n > 0; n-- {
					b.WriteRune(alphabet[rng.IntN(len(alphabet))])
				}
				texts = append(texts, b.String())
			}
			for _, s := range texts {
				for _, add := range []bool{false, true} {
					want := hf.Encode(s, add)
					if got := tk.Encode(s, add); !slices.Equal(got, want) {
						t.Errorf("Encode(%q, %v)\n got %v\nwant %v", s, add, got, want)
						continue
					}
					for _, skip := range []bool{false, true} {
						if got, want := tk.Decode(want, skip), hf.Decode(want, skip); got != want {
							t.Errorf("Decode(%v, %v) = %q, want %q", want, skip, got, want)
						}
					}
				}
			}
		})
	}
}
