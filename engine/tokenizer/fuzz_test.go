package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func addVocabSeeds(f *testing.F) {
	for _, name := range []string{"llama2", "qwen2.5"} {
		for _, c := range readCases(f, filepath.Join(testdata, name+"-vocab-test.jsonl")) {
			f.Add(c.Text)
		}
	}
	f.Add("<s>x</s><|im_start|>\u0338 ▁\xff\xe2\x82")
}

// FuzzEncode: any string encodes without panicking, decodes back to itself where the tokenizer
// promises that, and streams to the same text as Decode.
func FuzzEncode(f *testing.F) {
	addVocabSeeds(f)
	llama := loadTokenizer(f, "llama2")
	qwen := loadTokenizer(f, "qwen2.5")
	f.Fuzz(func(t *testing.T, s string) {
		for _, tk := range []*Tokenizer{llama, qwen} {
			for _, add := range []bool{false, true} {
				ids := tk.Encode(s, add)
				for _, id := range ids {
					if id < 0 || int(id) >= tk.VocabSize() {
						t.Fatalf("Encode(%q): id %d out of range", s, id)
					}
				}
				if got, want := streamAll(t, tk, ids, false), tk.Decode(ids, false); got != want {
					t.Fatalf("Encode(%q): stream %q, Decode %q", s, got, want)
				}
			}
		}
		if !utf8.ValidString(s) {
			return
		}
		// Llama: "▁" and added-token text do not survive; everything else does.
		if !strings.Contains(s, "▁") && !strings.Contains(s, "<s>") && !strings.Contains(s, "</s>") && !strings.Contains(s, "<unk>") {
			if got := llama.Decode(llama.Encode(s, false), false); got != s {
				t.Fatalf("llama2 round trip of %q gave %q", s, got)
			}
		}
		// Qwen: lossless for NFC text without added tokens.
		if !strings.Contains(s, "<") && norm.NFC.IsNormalString(s) {
			if got := qwen.Decode(qwen.Encode(s, false), false); got != s {
				t.Fatalf("qwen2.5 round trip of %q gave %q", s, got)
			}
		}
	})
}

// FuzzFromJSON: malformed tokenizer.json files are errors, never panics, and whatever loads can
// encode and decode.
func FuzzFromJSON(f *testing.F) {
	base := `{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,"vocab":{"<unk>":0,"a":1,"b":2,"ab":3,"<0x61>":4,"▁":5},"merges":["a b"]}`
	for _, doc := range []string{
		`{"model":` + base + `}`,
		`{"added_tokens":[{"id":6,"content":"<x>","lstrip":true,"rstrip":true,"single_word":true,"normalized":true,"special":true}],"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"},{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"Regex":"\\s+"},"content":"▁"}]},"model":` + base + `}`,
		`{"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s)|\\p{L}+|\\s+(?!\\S)|\\s+"},"behavior":"MergedWithNext","invert":true},{"type":"ByteLevel"},{"type":"Digits","individual_digits":true}]},"decoder":{"type":"Sequence","decoders":[{"type":"ByteLevel"},{"type":"Strip","content":" ","start":1,"stop":1}]},"model":` + base + `}`,
		`{"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"},"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<unk>"}},{"Sequence":{"id":"A"}}],"special_tokens":{"<unk>":{"ids":[0]}}},"decoder":{"type":"Metaspace","replacement":"▁"},"model":` + base + `}`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := FromJSON(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "ab a<x>b", " aab  ba\n", "ÅB12 ▁"} {
			ids := tk.Encode(s, true)
			tk.Decode(ids, false)
			streamAll(t, tk, ids, true)
		}
	})
}

// FuzzRegex: any pattern either fails to compile or matches without panicking, with matches in
// order and in bounds.
func FuzzRegex(f *testing.F) {
	for _, p := range []string{gpt2Pattern, llama3Pattern, qwen2Pattern, `[^\s\p{L}]+?x{2,3}|(?=a)b|$`, `(?i:[a-fé]+)\x{41}\u00e9`} {
		f.Add(p, "Hello  world's 123 ÉÉ\n\n  x")
	}
	f.Fuzz(func(t *testing.T, pat, s string) {
		re, err := compileRegex(pat)
		if err != nil {
			return
		}
		last := 0
		re.findAll(s, func(a, b int) {
			if a < last || b < a || b > len(s) {
				t.Fatalf("%q on %q: bad match [%d,%d) after %d", pat, s, a, b, last)
			}
			last = b
		})
	})
}

// FuzzFromGGUF: arbitrary GGUF vocabularies load or fail cleanly, and encode without panics.
func FuzzFromGGUF(f *testing.F) {
	f.Add("▁|a|b|▁a|ab|<0x61>|<s>", "a b|▁ a", "llama", "", "▁ab  ba<s>")
	f.Add("a|b|ab|Ġ|Ġa|<|x|>", "a b|Ġ a", "gpt2", "qwen2", "ab a<|x|>b\n\n 12")
	f.Fuzz(func(t *testing.T, tokens, merges, model, pre, text string) {
		v := &GGUFVocab{Model: model, Pre: pre, Tokens: strings.Split(tokens, "|"), BOS: 0, EOS: -1, UNK: -1, PAD: -1, AddBOS: true}
		if merges != "" {
			v.Merges = strings.Split(merges, "|")
		}
		v.Scores = make([]float32, len(v.Tokens))
		v.Types = make([]int32, len(v.Tokens))
		for i := range v.Tokens {
			v.Scores[i] = float32(len(v.Tokens[i]) * (i%3 - 1))
			v.Types[i] = int32(1 + i%6)
		}
		tk, err := FromGGUF(v)
		if err != nil {
			return
		}
		ids := tk.Encode(text, true)
		streamAll(t, tk, ids, false)
	})
}
