package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

const testdata = "../../testdata/tokenizer"

var loaded sync.Map // file name -> *Tokenizer

// loadTokenizer loads testdata/tokenizer/<name>-tokenizer.json once per test binary.
func loadTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	if v, ok := loaded.Load(name); ok {
		return v.(*Tokenizer)
	}
	data, err := os.ReadFile(filepath.Join(testdata, name+"-tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := FromJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	loaded.Store(name, tk)
	return tk
}

// refCase is one line of a reference file produced by HuggingFace tokenizers.
type refCase struct {
	Text       string  `json:"text"`
	AddSpecial *bool   `json:"add_special"`
	IDs        []int32 `json:"ids"`
	Decoded    *string `json:"decoded"`
}

func readCases(t testing.TB, path string) []refCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []refCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var c refCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVocabReference checks llama.cpp's 42 vocabulary test strings against the ids
// HuggingFace gives (add_special_tokens=False).
func TestVocabReference(t *testing.T) {
	for _, name := range []string{"llama2", "qwen2.5"} {
		t.Run(name, func(t *testing.T) {
			tk := loadTokenizer(t, name)
			cases := readCases(t, filepath.Join(testdata, name+"-vocab-test.jsonl"))
			if len(cases) != 42 {
				t.Fatalf("%d cases, want 42", len(cases))
			}
			for _, c := range cases {
				got := tk.Encode(c.Text, false)
				if !slices.Equal(got, c.IDs) {
					t.Errorf("Encode(%q)\n got %v\nwant %v", c.Text, got, c.IDs)
				}
			}
		})
	}
}

// TestLookups checks the id/string API against the HF vocabulary files and
// tokenizer_config.json (Qwen2.5: bos_token null, eos_token <|im_end|> = 151645).
func TestLookups(t *testing.T) {
	l := loadTokenizer(t, "llama2")
	if id, ok := l.TokenID("▁Hello"); !ok || id != 15043 || l.Token(15043) != "▁Hello" {
		t.Errorf("▁Hello: id %d %v, Token(15043) = %q", id, ok, l.Token(15043))
	}
	if id, ok := l.TokenID("<s>"); !ok || id != 1 || l.Token(1) != "<s>" || !l.IsSpecial(1) || l.IsSpecial(15043) {
		t.Errorf("<s>: id %d %v", id, ok)
	}
	if _, ok := l.TokenID("no such token"); ok || l.Token(-1) != "" || l.Token(32000) != "" || l.VocabSize() != 32000 {
		t.Errorf("unknown lookups / VocabSize %d", l.VocabSize())
	}
	data, err := os.ReadFile(filepath.Join(testdata, "qwen2.5-tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := FromJSON(mustRead(t, filepath.Join(testdata, "qwen2.5-tokenizer.json")))
	if err != nil {
		t.Fatal(err)
	}
	if q.BOS() != -1 || q.EOS() != 151643 {
		t.Errorf("qwen2.5 before config: BOS %d EOS %d, want -1 151643", q.BOS(), q.EOS())
	}
	if err := q.ApplyConfig(data); err != nil {
		t.Fatal(err)
	}
	if q.BOS() != -1 || q.EOS() != 151645 {
		t.Errorf("qwen2.5 after config: BOS %d EOS %d, want -1 151645", q.BOS(), q.EOS())
	}
	for _, bad := range []string{`{`, `{"eos_token":"<nope>"}`, `{"bos_token":42}`} {
		if err := q.ApplyConfig([]byte(bad)); err == nil {
			t.Errorf("ApplyConfig(%s): no error", bad)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
