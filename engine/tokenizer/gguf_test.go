package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// ggufFromJSON builds GGUF tokenizer metadata from a tokenizer.json the way llama.cpp's
// converter does: tokens in id order, token types from the added-token flags and <0xXX> byte
// pieces, SentencePiece scores = -rank of the merge that forms the piece (pieces no merge forms
// score lowest), and merges as "a b" strings.
func ggufFromJSON(t *testing.T, name, model, pre string) *GGUFVocab {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, name+"-tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Vocab  map[string]int  `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	n := len(f.Model.Vocab)
	for _, a := range f.AddedTokens {
		n = max(n, a.ID+1)
	}
	v := &GGUFVocab{Model: model, Pre: pre, Tokens: make([]string, n), Types: make([]int32, n), BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	byteRe := regexp.MustCompile(`^<0x[0-9A-F]{2}>$`)
	for s, id := range f.Model.Vocab {
		v.Tokens[id] = s
		v.Types[id] = 1
		if model == "llama" && byteRe.MatchString(s) {
			v.Types[id] = 6
		}
	}
	for _, a := range f.AddedTokens {
		v.Tokens[a.ID] = a.Content
		switch {
		case a.Content == "<unk>":
			v.Types[a.ID] = 2
			v.UNK = a.ID
		case a.Special:
			v.Types[a.ID] = 3
		default:
			v.Types[a.ID] = 4
		}
	}
	var merges []string
	if err := json.Unmarshal(f.Model.Merges, &merges); err != nil {
		merges = nil
		var pairs [][2]string
		if err := json.Unmarshal(f.Model.Merges, &pairs); err != nil {
			t.Fatal(err)
		}
		for _, p := range pairs {
			merges = append(merges, p[0]+" "+p[1])
		}
	}
	if model == "llama" {
		v.Scores = make([]float32, n)
		for i := range v.Scores {
			v.Scores[i] = -1e9
		}
		for rank := len(merges) - 1; rank >= 0; rank-- {
			a, b, _ := strings.Cut(merges[rank], " ")
			v.Scores[f.Model.Vocab[a+b]] = -float32(rank)
		}
		v.BOS, v.EOS, v.AddBOS = 1, 2, true
	} else {
		v.Merges = merges
		v.EOS = 151643
	}
	return v
}

// TestGGUFMatchesJSON checks that a GGUF vocabulary tokenizes like the tokenizer.json it was
// converted from, on the HF-verified vocabulary strings and on text with special tokens.
func TestGGUFMatchesJSON(t *testing.T) {
	extra := []string{
		"<s>Hello</s> world", "a<|im_start|>user\nhi<|im_end|>", " <unk> ", "   leading and trailing   ",
		"def f(x):\n\treturn x**2  # square\n", "naïve café 東京 🚀\u200d🌫️", "e\u0301 = é", "12345 67.89",
	}
	for _, tc := range []struct{ name, model, pre string }{{"llama2", "llama", ""}, {"qwen2.5", "gpt2", "qwen2"}} {
		t.Run(tc.name, func(t *testing.T) {
			js := loadTokenizer(t, tc.name)
			gg, err := FromGGUF(ggufFromJSON(t, tc.name, tc.model, tc.pre))
			if err != nil {
				t.Fatal(err)
			}
			texts := slices.Clone(extra)
			for _, c := range readCases(t, filepath.Join(testdata, tc.name+"-vocab-test.jsonl")) {
				texts = append(texts, c.Text)
				// The GGUF tokenizer must also match HF's own ids, not just our JSON tokenizer.
				if got := gg.Encode(c.Text, false); !slices.Equal(got, c.IDs) {
					t.Errorf("gguf Encode(%q)\n got %v\nwant %v", c.Text, got, c.IDs)
				}
			}
			for _, s := range texts {
				for _, add := range []bool{false, true} {
					want := js.Encode(s, add)
					got := gg.Encode(s, add)
					if !slices.Equal(got, want) {
						t.Errorf("Encode(%q, %v)\n gguf %v\n json %v", s, add, got, want)
					}
					if d, w := gg.Decode(want, false), js.Decode(want, false); d != w {
						t.Errorf("Decode(%v): gguf %q, json %q", want, d, w)
					}
				}
			}
			if gg.BOS() != js.BOS() || gg.EOS() != js.EOS() || gg.VocabSize() != js.VocabSize() {
				t.Errorf("BOS/EOS/VocabSize: gguf %d %d %d, json %d %d %d", gg.BOS(), gg.EOS(), gg.VocabSize(), js.BOS(), js.EOS(), js.VocabSize())
			}
		})
	}
}

// TestGGUFQwen35 checks tokenizer.ggml.pre "qwen35" against the tokenizer.json pipeline it
// stands for (qwen35Split, which TestAgainstHFNode compares with HuggingFace), on text where
// Qwen3.5's split and Qwen2's give different ids.
func TestGGUFQwen35(t *testing.T) {
	js, err := FromJSON(qwen35Split.build(t))
	if err != nil {
		t.Fatal(err)
	}
	gg, err := FromGGUF(ggufFromJSON(t, "qwen2.5", "gpt2", "qwen35"))
	if err != nil {
		t.Fatal(err)
	}
	q2, err := FromGGUF(ggufFromJSON(t, "qwen2.5", "gpt2", "qwen2"))
	if err != nil {
		t.Fatal(err)
	}
	texts := append(randomTexts(1000, 35), "हिन्दी भाषा", "ภาษาไทย", "q\u0301 z\u032d", "naïve e\u0301", "한국어")
	split := 0
	for _, s := range texts {
		want := js.Encode(s, false)
		if got := gg.Encode(s, false); !slices.Equal(got, want) {
			t.Errorf("Encode(%q)\n gguf %v\n json %v", s, got, want)
		}
		if !slices.Equal(q2.Encode(s, false), want) {
			split++
		}
	}
	// Without texts that the two splits tokenize differently, this test could not tell them apart.
	if split < 5 {
		t.Errorf("only %d of %d texts tokenize differently under Qwen2's split", split, len(texts))
	}
}

func TestGGUFErrors(t *testing.T) {
	good := func() *GGUFVocab {
		return &GGUFVocab{Model: "gpt2", Pre: "gpt2", Tokens: []string{"a", "b", "ab"}, Merges: []string{"a b"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	}
	if _, err := FromGGUF(good()); err != nil {
		t.Fatalf("valid vocabulary: %v", err)
	}
	bad := map[string]func(v *GGUFVocab){
		"nil tokens":    func(v *GGUFVocab) { v.Tokens = nil },
		"unknown model": func(v *GGUFVocab) { v.Model = "rwkv" },
		"unknown pre":   func(v *GGUFVocab) { v.Pre = "mystery" },
		"bad merge":     func(v *GGUFVocab) { v.Merges = []string{"ab"} },
		"merge oov":     func(v *GGUFVocab) { v.Merges = []string{"a c"} },
		"types length":  func(v *GGUFVocab) { v.Types = []int32{1} },
		"bos range":     func(v *GGUFVocab) { v.BOS = 3 },
		"llama scores":  func(v *GGUFVocab) { v.Model = "llama" },
	}
	names := make([]string, 0, len(bad))
	for k := range bad {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		v := good()
		bad[name](v)
		if _, err := FromGGUF(v); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := FromGGUF(nil); err == nil {
		t.Error("nil vocab: no error")
	}
}

// TestGGUFNoSpacePrefix: with add_space_prefix false a "llama" vocabulary behaves like the
// tokenizer.json whose normalizer only replaces spaces (and whose decoder strips nothing).
func TestGGUFNoSpacePrefix(t *testing.T) {
	v := ggufFromJSON(t, "llama2", "llama", "")
	v.NoSpacePrefix = true
	gg, err := FromGGUF(v)
	if err != nil {
		t.Fatal(err)
	}
	doc := variant{base: "llama2", set: map[string]string{
		"normalizer": `{"type":"Replace","pattern":{"String":" "},"content":"▁"}`,
		"decoder":    `{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]}`,
	}}.build(t)
	js, err := FromJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(randomTexts(200, 11), "Hello world", " leading", "<s>x</s> y") {
		want := js.Encode(s, true)
		if got := gg.Encode(s, true); !slices.Equal(got, want) {
			t.Errorf("Encode(%q)\n gguf %v\n json %v", s, got, want)
		}
		if got, want := gg.Decode(want, false), js.Decode(want, false); got != want {
			t.Errorf("Decode: gguf %q, json %q", got, want)
		}
	}
	if ids := gg.Encode("Hello", false); len(ids) == 0 || gg.Token(ids[0])[0] != 'H' {
		t.Errorf("Encode(Hello) = %v: first piece should not start with ▁", ids)
	}
}
