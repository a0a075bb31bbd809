package tokenizer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// ggufKinds says how each reference tokenizer is written as GGUF metadata.
var ggufKinds = map[string][2]string{
	"llama2":       {"llama", ""},
	"tiny-llama":   {"llama", ""},
	"qwen2.5":      {"gpt2", "qwen2"},
	"tiny-qwen2":   {"gpt2", "qwen2"},
	"tiny-llama3":  {"gpt2", "llama3"},
	"tiny-qwen3":   {"gpt2", "qwen2"},
	"tiny-qwen3_5": {"gpt2", "qwen35"},
	"tiny-smollm3": {"gpt2", "smaug-bpe"},
	"tiny-lfm2":    {"gpt2", "lfm2"},
}

// TestHFCases runs every testdata/tokenizer/hf-cases-<name>.jsonl (ids and decoded text from
// HuggingFace tokenizers) against <name>-tokenizer.json, and against the GGUF form of the same
// vocabulary where one exists. Every mismatch fails.
func TestHFCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdata, "hf-cases-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Log("no hf-cases files yet")
	}
	for _, file := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "hf-cases-"), ".jsonl")
		t.Run(name, func(t *testing.T) {
			cases := readCases(t, file)
			js := loadTokenizer(t, name)
			tks := map[string]*Tokenizer{"json": js}
			if kind, ok := ggufKinds[name]; ok {
				v := ggufFromJSON(t, name, kind[0], kind[1])
				v.BOS, v.EOS = int(js.BOS()), int(js.EOS())
				v.AddBOS = js.BOS() >= 0 && len(js.Encode("a", true)) > len(js.Encode("a", false))
				gg, err := FromGGUF(v)
				if err != nil {
					t.Fatal(err)
				}
				tks["gguf"] = gg
			}
			for kind, tk := range tks {
				bad := 0
				for _, c := range cases {
					add := c.AddSpecial == nil || *c.AddSpecial
					got := tk.Encode(c.Text, add)
					if !slices.Equal(got, c.IDs) {
						if bad++; bad <= 10 {
							t.Errorf("%s: Encode(%q, %v)\n got %v\nwant %v", kind, c.Text, add, got, c.IDs)
						}
						continue
					}
					dec := tk.Decode(c.IDs, false)
					if c.Decoded != nil && dec != *c.Decoded {
						if bad++; bad <= 10 {
							t.Errorf("%s: Decode(%v) = %q, want %q", kind, c.IDs, dec, *c.Decoded)
						}
					}
					if s := streamAll(t, tk, c.IDs, false); s != dec {
						if bad++; bad <= 10 {
							t.Errorf("%s: stream decode of %v = %q, Decode = %q", kind, c.IDs, s, dec)
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d cases mismatch", kind, bad, len(cases))
				}
			}
		})
	}
}

// streamAll decodes ids one at a time and checks that every piece is valid UTF-8.
func streamAll(t testing.TB, tk *Tokenizer, ids []int32, skipSpecial bool) string {
	t.Helper()
	d := tk.NewDecoder(skipSpecial)
	var b strings.Builder
	for i, id := range ids {
		s := d.Next(id)
		if !utf8.ValidString(s) {
			t.Errorf("stream piece %d of %v is not valid UTF-8: %q", i, ids, s)
		}
		b.WriteString(s)
	}
	b.WriteString(d.Flush())
	return b.String()
}
