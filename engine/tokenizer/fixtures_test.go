package tokenizer_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/tokenizer"
	"github.com/layaapp/laya/engine/weights"
	"github.com/layaapp/laya/internal/fixtures"
)

// fixtureCases maps each parity-fixture model to the HF reference cases of its tokenizer.
var fixtureCases = map[string]string{"llama": "tiny-llama", "llama3": "tiny-llama3", "qwen2": "tiny-qwen2",
	"qwen3": "tiny-qwen3", "qwen3_5": "tiny-qwen3_5", "gemma3": "tiny-gemma3", "smollm3": "tiny-smollm3", "lfm2": "tiny-lfm2"}

func openTokenizer(t *testing.T, path string) *tokenizer.Tokenizer {
	t.Helper()
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		data, err := os.ReadFile(filepath.Join(path, "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		tk, err := tokenizer.FromJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return tk
	}
	m, err := weights.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer m.Close()
	var tk *tokenizer.Tokenizer
	if m.GGUFVocab != nil {
		tk, err = tokenizer.FromGGUF(m.GGUFVocab)
	} else {
		tk, err = tokenizer.FromJSON(m.TokenizerJSON)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tk
}

// TestFixtureTokenizers checks every format of the parity fixtures (GGUF files written by
// llama.cpp's converter included) against HuggingFace: the prompt ids in reference.json, and
// all hf-cases of the model's tokenizer.
func TestFixtureTokenizers(t *testing.T) {
	for _, model := range fixtures.Models {
		t.Run(model, func(t *testing.T) {
			casesName, ok := fixtureCases[model]
			if !ok {
				t.Fatalf("no HF tokenizer cases named for the %s fixture", model)
			}
			dir := fixtures.Model(t, model)
			ref := fixtures.Read(t, dir)
			tks := map[string]*tokenizer.Tokenizer{}
			for _, c := range ref.Cases {
				tk, ok := tks[c.Path]
				if !ok {
					tk = openTokenizer(t, filepath.Join(dir, c.Path))
					tks[c.Path] = tk
				}
				if c.Prompt != nil {
					if got := tk.Encode(*c.Prompt, true); !slices.Equal(got, c.PromptIDs) {
						t.Errorf("%s: Encode(%q)\n got %v\nwant %v", c.Path, *c.Prompt, got, c.PromptIDs)
					}
				}
			}
			cases := readHFCases(t, fixtures.Path(t, "testdata/tokenizer/hf-cases-"+casesName+".jsonl"))
			for path, tk := range tks {
				bad := 0
				for _, c := range cases {
					if got := tk.Encode(c.Text, c.AddSpecial); !slices.Equal(got, c.IDs) {
						if bad++; bad <= 5 {
							t.Errorf("%s: Encode(%q, %v)\n got %v\nwant %v", path, c.Text, c.AddSpecial, got, c.IDs)
						}
					} else if d := tk.Decode(c.IDs, false); d != c.Decoded {
						if bad++; bad <= 5 {
							t.Errorf("%s: Decode(%v) = %q, want %q", path, c.IDs, d, c.Decoded)
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d cases differ", path, bad, len(cases))
				}
			}
		})
	}
}

type hfCase struct {
	Text       string  `json:"text"`
	AddSpecial bool    `json:"add_special"`
	IDs        []int32 `json:"ids"`
	Decoded    string  `json:"decoded"`
}

func readHFCases(t *testing.T, path string) []hfCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []hfCase
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c hfCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}
