package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// nodePathEnv names a node_modules directory holding the npm package "tokenizers" (HuggingFace's
// Rust tokenizers); when set, TestAgainstHFNode compares with it.
const nodePathEnv = "LAYA_TOKENIZERS_NODE_PATH"

// tricky are fragments that exercise every stage: whitespace runs, contractions, digits, CJK,
// emoji with joiners, combining marks (NFD text), compatibility characters, byte-level edge
// characters, special-token text and SentencePiece's own "▁".
var tricky = []string{
	" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2028",
	"Hello", "world", "HELLO", "'s", "'S", "'ll", "'LL", "n't", "don't", "I'M", "it's",
	"0", "7", "42", "1234567", "3.14", "٣٤", "Ⅻ", "½", "²",
	"日本語", "中文", "한국어", "ไทย", "ក្ខ", "Ελληνικά", "русский", "עברית", "العربية",
	"🦙", "🚀", "😶‍🌫️", "👨‍👩‍👧", "🏳️‍🌈", "✅", "\u200d", "\ufe0f",
	"e\u0301", "a\u0308", "é", "ﬁ", "Å", "ǅ", "İ", "ß", "ﬀ",
	"def", "(", ")", "{", "}", "=>", "->", "::", "//", "/*", "*/", "#", "$x", "@@", "...", "!!!", "?!", "\"", "`",
	"<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|fim_prefix|>", "<think>",
	"▁", "▁▁", "Ġ", "Ċ", "<0x0A>", "\u0000", "\u007f", "\ufffd",
}

// runeRanges are blocks random characters are drawn from.
var runeRanges = [][2]rune{
	{0x20, 0x7e}, {0x20, 0x7e}, {0x20, 0x7e}, {0x09, 0x0d}, {0xa0, 0x17f}, {0x300, 0x36f}, {0x370, 0x3ff},
	{0x400, 0x4ff}, {0x600, 0x6ff}, {0x900, 0x97f}, {0x1780, 0x17ff}, {0x2000, 0x206f}, {0x2100, 0x218f},
	{0x2580, 0x259f}, {0x3000, 0x30ff}, {0x4e00, 0x4f00}, {0xac00, 0xac80}, {0xfb00, 0xfb06}, {0xff00, 0xff60},
	{0x1f300, 0x1f6ff}, {0x1f900, 0x1f9ff}, {0xe0000, 0xe007f},
}

// randomTexts mixes tricky fragments with random characters from many scripts.
func randomTexts(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for k := 1 + rng.IntN(10); k > 0; k-- {
			switch rng.IntN(3) {
			case 0:
				r := runeRanges[rng.IntN(len(runeRanges))]
				for j := 1 + rng.IntN(4); j > 0; j-- {
					b.WriteRune(r[0] + rng.Int32N(r[1]-r[0]+1))
				}
			default:
				b.WriteString(tricky[rng.IntN(len(tricky))])
			}
			if rng.IntN(3) == 0 {
				b.WriteString(" ")
			}
		}
		out = append(out, b.String())
	}
	return out
}

type nodeResult struct {
	IDs         []int32 `json:"ids"`
	Decoded     string  `json:"decoded"`
	DecodedSkip string  `json:"decoded_skip"`
}

// TestAgainstHFNode compares Encode and Decode with HuggingFace tokenizers itself on thousands
// of generated strings, for every tokenizer.json in testdata. It needs node and the npm package
// (npm install tokenizers@0.23.2) and is skipped unless LAYA_TOKENIZERS_NODE_PATH is set.
func TestAgainstHFNode(t *testing.T) {
	nodePath := os.Getenv(nodePathEnv)
	if nodePath == "" {
		t.Skipf("%s not set", nodePathEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is not installed: %v", nodePathEnv, err)
	}
	files, err := filepath.Glob(filepath.Join(testdata, "*-tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	texts := randomTexts(3000, 7)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), "-tokenizer.json")
		t.Run(name, func(t *testing.T) {
			compareWithNode(t, node, nodePath, file, loadTokenizer(t, name), texts)
		})
	}
	// Synthetic pipelines on the real vocabularies cover the components the shipped files do
	// not use.
	small := texts[:800]
	for _, v := range syntheticVariants {
		t.Run(v.name, func(t *testing.T) {
			data := v.build(t)
			file := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			tk, err := FromJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			compareWithNode(t, node, nodePath, file, tk, small)
		})
	}
}

func compareWithNode(t *testing.T, node, nodePath, file string, tk *Tokenizer, texts []string) {
	var in bytes.Buffer
	for _, s := range texts {
		for _, add := range []bool{false, true} {
			line, _ := json.Marshal(map[string]any{"text": s, "add_special": add})
			in.Write(append(line, '\n'))
		}
	}
	cmd := exec.Command(node, filepath.Join(testdata, "hf-reference.js"), file)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	bad, i := 0, 0
	for sc.Scan() {
		var want nodeResult
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		s, add := texts[i/2], i%2 == 1
		i++
		got := tk.Encode(s, add)
		if !slices.Equal(got, want.IDs) {
			if bad++; bad <= 15 {
				t.Errorf("Encode(%q, %v)\n got %v\nwant %v", s, add, got, want.IDs)
			}
			continue
		}
		if d := tk.Decode(got, false); d != want.Decoded {
			if bad++; bad <= 15 {
				t.Errorf("Decode(%v) = %q, want %q", got, d, want.Decoded)
			}
		}
		if d := tk.Decode(got, true); d != want.DecodedSkip {
			if bad++; bad <= 15 {
				t.Errorf("Decode(%v, skip) = %q, want %q", got, d, want.DecodedSkip)
			}
		}
		if d := streamAll(t, tk, got, false); d != want.Decoded {
			if bad++; bad <= 15 {
				t.Errorf("stream decode of %v = %q, want %q", got, d, want.Decoded)
			}
		}
	}
	if i != len(texts)*2 {
		t.Fatalf("node answered %d of %d cases", i, len(texts)*2)
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ", bad, i)
	}
}

// variant is a tokenizer.json made from a testdata file with its pipeline replaced.
type variant struct {
	name, base string
	set        map[string]string // top-level key -> JSON
	model      map[string]string // model key -> JSON
	added      []string          // extra added_tokens entries
}

func (v variant) build(t *testing.T) []byte {
	data, err := os.ReadFile(filepath.Join(testdata, v.base+"-tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for k, js := range v.set {
		doc[k] = json.RawMessage(js)
	}
	if len(v.model) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(doc["model"], &m); err != nil {
			t.Fatal(err)
		}
		for k, js := range v.model {
			m[k] = json.RawMessage(js)
		}
		doc["model"], _ = json.Marshal(m)
	}
	if len(v.added) > 0 {
		var added []json.RawMessage
		if err := json.Unmarshal(doc["added_tokens"], &added); err != nil {
			t.Fatal(err)
		}
		for _, a := range v.added {
			added = append(added, json.RawMessage(a))
		}
		doc["added_tokens"], _ = json.Marshal(added)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var syntheticVariants = []variant{
	{name: "metaspace-first", base: "llama2", set: map[string]string{
		"normalizer":     `{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"},{"type":"Strip","strip_left":true,"strip_right":true},{"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "}]}`,
		"pre_tokenizer":  `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`,
		"decoder":        `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`,
		"post_processor": `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"</s>","type_id":0}}],"pair":[{"Sequence":{"id":"A","type_id":0}},{"Sequence":{"id":"B","type_id":1}}],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]},"</s>":{"id":"</s>","ids":[2],"tokens":["</s>"]}}}`,
	}, added: []string{
		`{"id":32000,"content":"<mask>","single_word":false,"lstrip":true,"rstrip":true,"normalized":false,"special":true}`,
		`{"id":32001,"content":"hello","single_word":true,"lstrip":false,"rstrip":false,"normalized":true,"special":false}`,
		`{"id":32002,"content":"<|im_start|>","single_word":false,"lstrip":false,"rstrip":true,"normalized":false,"special":false}`,
	}},
	{name: "metaspace-split-off", base: "llama2", set: map[string]string{
		"normalizer":    `{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"}]}`,
		"pre_tokenizer": `{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Punctuation","behavior":"Contiguous"},{"type":"Digits","individual_digits":false},{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":false}]}`,
		"decoder":       `{"type":"Sequence","decoders":[{"type":"Metaspace","replacement":"▁","prepend_scheme":"always"},{"type":"ByteFallback"},{"type":"Fuse"}]}`,
	}, model: map[string]string{"fuse_unk": "false", "byte_fallback": "false"}},
	{name: "splits", base: "llama2", set: map[string]string{
		"normalizer":    `{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}`,
		"pre_tokenizer": `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"String":"▁"},"behavior":"MergedWithNext","invert":false},{"type":"Split","pattern":{"Regex":"\\p{N}+|[.,!?]"},"behavior":"MergedWithPrevious","invert":false},{"type":"Split","pattern":{"Regex":"[aeiou]"},"behavior":"Removed","invert":true}]}`,
	}},
	{name: "whitespace-bert", base: "llama2", set: map[string]string{
		"pre_tokenizer":  `{"type":"Sequence","pretokenizers":[{"type":"Whitespace"},{"type":"BertPreTokenizer"},{"type":"Digits","individual_digits":true}]}`,
		"post_processor": `{"type":"BertProcessing","sep":["</s>",2],"cls":["<s>",1]}`,
		"decoder":        "null",
	}},
	{name: "bytelevel-prefix", base: "qwen2.5", set: map[string]string{
		"normalizer":     `{"type":"NFKD"}`,
		"pre_tokenizer":  `{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`,
		"post_processor": `{"type":"RobertaProcessing","sep":["<|im_end|>",151645],"cls":["<|im_start|>",151644],"trim_offsets":true,"add_prefix_space":true}`,
	}},
	{name: "llama3-style", base: "qwen2.5", set: map[string]string{
		"normalizer":     "null",
		"pre_tokenizer":  `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]}`,
		"post_processor": `{"type":"Sequence","processors":[{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true},{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|endoftext|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<|endoftext|>":{"id":"<|endoftext|>","ids":[151643],"tokens":["<|endoftext|>"]}}}]}`,
	}, model: map[string]string{"ignore_merges": "true"}},
	qwen35Split,
	{name: "gpt2-digits", base: "qwen2.5", set: map[string]string{
		"normalizer":    `{"type":"Sequence","normalizers":[{"type":"Lowercase"},{"type":"NFC"}]}`,
		"pre_tokenizer": `{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]}`,
		"decoder":       `{"type":"Sequence","decoders":[{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},{"type":"Strip","content":" ","start":2,"stop":0},{"type":"Replace","pattern":{"Regex":"o+"},"content":"0"}]}`,
	}},
}

// qwen35Split is Qwen3.5's pipeline (NFC, its split that keeps combining marks with the letters
// before them, byte level) on the Qwen2.5 vocabulary, whose merges join letters and marks of
// many scripts: Qwen3.5's own vocabulary is not in testdata.
var qwen35Split = variant{name: "qwen35-split", base: "qwen2.5", set: map[string]string{
	"normalizer":    `{"type":"NFC"}`,
	"pre_tokenizer": `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]}`,
}}
