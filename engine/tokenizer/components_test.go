package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

func preSplitStrings(p preTokenizer, s string) []string {
	var out []string
	for _, x := range p.preTokenize([]piece{{s: s, first: true, id: -1}}, nil) {
		out = append(out, x.s)
	}
	return out
}

// TestPreTokenizers checks splits against HF's documented examples (the SplitDelimiterBehavior
// docs use "the-final--countdown") and hand-worked cases.
func TestPreTokenizers(t *testing.T) {
	dash := pattern{lit: "-"}
	cases := []struct {
		name string
		p    preTokenizer
		in   string
		want []string
	}{
		{"removed", &preSplit{pat: dash, behavior: splitRemoved}, "the-final--countdown", []string{"the", "final", "countdown"}},
		{"isolated", &preSplit{pat: dash, behavior: splitIsolated}, "the-final--countdown", []string{"the", "-", "final", "-", "-", "countdown"}},
		{"prev", &preSplit{pat: dash, behavior: splitMergedWithPrevious}, "the-final--countdown", []string{"the-", "final-", "-", "countdown"}},
		{"next", &preSplit{pat: dash, behavior: splitMergedWithNext}, "the-final--countdown", []string{"the", "-final", "-", "-countdown"}},
		{"contiguous", &preSplit{pat: dash, behavior: splitContiguous}, "the-final--countdown", []string{"the", "-", "final", "--", "countdown"}},
		{"invert", &preSplit{pat: dash, invert: true, behavior: splitRemoved}, "a-b", []string{"-"}},
		{"digits", newDigits(false), "ab123c4", []string{"ab", "123", "c", "4"}},
		{"digits individual", newDigits(true), "ab123c4", []string{"ab", "1", "2", "3", "c", "4"}},
		{"punctuation", &preSplit{pat: pattern{pred: isPunctuation}, behavior: splitIsolated}, "a,b!!$", []string{"a", ",", "b", "!", "!", "$"}},
		{"whitespace", &preSplit{pat: pattern{re: whitespaceRegex}, invert: true, behavior: splitRemoved}, "Hey friend!     How are you?!?", []string{"Hey", "friend", "!", "How", "are", "you", "?!?"}},
		{"metaspace", &preMetaspace{replacement: "▁", prepend: "always", split: true}, "Hey   friend!", []string{"▁Hey", "▁", "▁", "▁friend!"}},
		{"metaspace nosplit", &preMetaspace{replacement: "▁", prepend: "never", split: false}, "a b", []string{"a▁b"}},
		{"bytelevel", &preByteLevel{addPrefixSpace: true, useRegex: true}, "Hello my friend", []string{"ĠHello", "Ġmy", "Ġfriend"}},
		{"sequence", newPreSequence(newDigits(true), &preByteLevel{useRegex: true}), "a12 b", []string{"a", "1", "2", "Ġb"}},
	}
	for _, c := range cases {
		if got := preSplitStrings(c.p, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q -> %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// letterTokenizer is a tokenizer.json with one token per letter and no merges, so expected ids
// can be worked out by hand: "▁" = 1, a..z = 2..27.
func letterTokenizer(t *testing.T, model, normalizer, pre, post, decoder string, added ...string) *Tokenizer {
	t.Helper()
	vocab := map[string]int{"<unk>": 0, "▁": 1}
	for c := 'a'; c <= 'z'; c++ {
		vocab[string(c)] = int(c-'a') + 2
	}
	vj, _ := json.Marshal(vocab)
	if model == "" {
		model = fmt.Sprintf(`{"type":"BPE","unk_token":"<unk>","vocab":%s,"merges":[]}`, vj)
	}
	doc := fmt.Sprintf(`{"version":"1.0","added_tokens":[%s],"normalizer":%s,"pre_tokenizer":%s,"post_processor":%s,"decoder":%s,"model":%s}`,
		strings.Join(added, ","), normalizer, pre, post, decoder, model)
	tk, err := FromJSON([]byte(doc))
	if err != nil {
		t.Fatalf("FromJSON: %v\n%s", err, doc)
	}
	return tk
}

// TestAddedTokenFlags works through HF's find_matches rules by hand.
func TestAddedTokenFlags(t *testing.T) {
	tk := letterTokenizer(t, "", "null",
		`{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`, "null",
		`{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`,
		`{"id":28,"content":"<mask>","lstrip":true,"special":true}`,
		`{"id":29,"content":"ok","single_word":true}`,
		`{"id":30,"content":"[X]","rstrip":true,"special":true}`,
		`{"id":31,"content":"<mask>x","special":true}`)
	cases := []struct {
		in   string
		want []int32
	}{
		// lstrip takes the space before <mask>; " b" is not at offset 0, but already starts
		// with ▁ after the space is replaced.
		{"a <mask> b", []int32{1, 2, 28, 1, 3}},
		// single_word: "ok" inside "okay" is skipped, the standalone one matches.
		{"okay ok", []int32{1, 16, 12, 2, 26, 1, 29}},
		// rstrip swallows the spaces; "c" is not at offset 0, so "first" prepends nothing.
		{"[X]  c", []int32{30, 4}},
		// Longest match first: <mask>x beats <mask>.
		{"<mask>xy", []int32{31, 26}},
		{"", nil},
	}
	for _, c := range cases {
		if got := tk.Encode(c.in, true); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	if got, want := tk.Decode([]int32{1, 2, 28, 1, 3}, false), "a<mask> b"; got != want {
		t.Errorf("Decode = %q, want %q", got, want)
	}
	if got, want := tk.Decode([]int32{1, 2, 28, 1, 3}, true), "a b"; got != want {
		t.Errorf("Decode(skip) = %q, want %q", got, want)
	}
}

// TestBPEOptions checks continuing_subword_prefix, unk fusing, Lowercase, and a BERT-style
// template, with merges worked by hand: h + ##e -> he (rank 0), ##l + ##l -> ##ll (1),
// he + ##ll -> hell (2), so "hello" = hell ##o.
func TestBPEOptions(t *testing.T) {
	for _, fuse := range []bool{true, false} {
		model := fmt.Sprintf(`{"type":"BPE","unk_token":"[UNK]","continuing_subword_prefix":"##","fuse_unk":%v,
			"vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"h":3,"##e":4,"##l":5,"##o":6,"he":7,"##ll":8,"hell":9},
			"merges":[["h","##e"],["##l","##l"],["he","##ll"]]}`, fuse)
		tk := letterTokenizer(t, model, `{"type":"Lowercase"}`, `{"type":"Whitespace"}`,
			`{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}}],
			  "special_tokens":{"[CLS]":{"id":"[CLS]","ids":[1],"tokens":["[CLS]"]},"[SEP]":{"id":"[SEP]","ids":[2],"tokens":["[SEP]"]}}}`,
			"null")
		unk := []int32{0}
		if !fuse {
			unk = []int32{0, 0, 0}
		}
		want := append(append([]int32{1, 9, 6}, unk...), 2)
		if got := tk.Encode("HELLO xyz", true); !slices.Equal(got, want) {
			t.Errorf("fuse %v: got %v, want %v", fuse, got, want)
		}
		if got := tk.Encode("HELLO xyz", false); !slices.Equal(got, want[1:len(want)-1]) {
			t.Errorf("fuse %v, no special: got %v", fuse, got)
		}
		if tk.BOS() != 1 || tk.EOS() != 2 {
			t.Errorf("BOS/EOS = %d/%d, want 1/2", tk.BOS(), tk.EOS())
		}
	}
}

func TestDecoders(t *testing.T) {
	toks := []string{"▁Hello", "<0xE2>", "<0x82>", "<0xAC>", "<0xFF>", "▁", "x▁"}
	d := decSequence{decReplace{pat: pattern{lit: "▁"}, content: " "}, decByteFallback{}, decFuse{}, decStrip{content: ' ', start: 1, stop: 1}}
	// Replace: " Hello", bytes E2 82 AC -> "€", then the run continues with FF, which makes the
	// whole run invalid: four U+FFFD. Fuse, then strip one leading and one trailing space.
	if got, want := strings.Join(d.decodeChain(toks), ""), "Hello\uFFFD\uFFFD\uFFFD\uFFFD x"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bl := decByteLevel{}
	// "Ġ" is the byte-level form of space; "é" is U+00E9 = the byte E9 alone, invalid UTF-8 here.
	if got, want := strings.Join(bl.decodeChain([]string{"ĠcafÃ", "©", "Ġé"}), ""), " café \uFFFD"; got != want {
		t.Errorf("byte level: got %q, want %q", got, want)
	}
	ms := decMetaspace{replacement: '▁', prepend: "always"}
	if got, want := strings.Join(ms.decodeChain([]string{"▁Hey", "▁friend", "▁"}), ""), "Hey friend "; got != want {
		t.Errorf("metaspace: got %q, want %q", got, want)
	}
}

// TestLoadErrors: unsupported or malformed files are errors, never a half-working tokenizer.
func TestLoadErrors(t *testing.T) {
	base := `{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}`
	bad := map[string]string{
		"not json":          `{`,
		"no model":          `{"version":"1.0"}`,
		"unigram":           `{"model":{"type":"Unigram","vocab":[]}}`,
		"bad merge":         `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a b"]}}`,
		"merge 3 parts":     `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a b c"]}}`,
		"unk missing":       `{"model":{"type":"BPE","unk_token":"<unk>","vocab":{"a":0},"merges":[]}}`,
		"negative id":       `{"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}}`,
		"sparse ids":        `{"model":{"type":"BPE","vocab":{"a":9999999},"merges":[]}}`,
		"dropout":           `{"model":{"type":"BPE","dropout":0.1,"vocab":{"a":0},"merges":[]}}`,
		"truncation":        `{"truncation":{"max_length":5},"model":` + base + `}`,
		"normalizer":        `{"normalizer":{"type":"Precompiled"},"model":` + base + `}`,
		"pre-tokenizer":     `{"pre_tokenizer":{"type":"UnicodeScripts"},"model":` + base + `}`,
		"bad regex":         `{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(?<=a)"},"behavior":"Isolated"},"model":` + base + `}`,
		"bad behavior":      `{"pre_tokenizer":{"type":"Split","pattern":{"String":"a"},"behavior":"Sideways"},"model":` + base + `}`,
		"decoder":           `{"decoder":{"type":"WordPiece"},"model":` + base + `}`,
		"post":              `{"post_processor":{"type":"Mystery"},"model":` + base + `}`,
		"template no A":     `{"post_processor":{"type":"TemplateProcessing","single":[],"special_tokens":{}},"model":` + base + `}`,
		"template unknown":  `{"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"x"}},{"Sequence":{"id":"A"}}],"special_tokens":{}},"model":` + base + `}`,
		"metaspace 2 chars": `{"pre_tokenizer":{"type":"Metaspace","replacement":"ab"},"model":` + base + `}`,
		"deep":              `{"normalizer":` + strings.Repeat(`{"type":"Sequence","normalizers":[`, 40) + strings.Repeat(`]}`, 40) + `,"model":` + base + `}`,
	}
	for name, doc := range bad {
		if _, err := FromJSON([]byte(doc)); err == nil {
			t.Errorf("%s: loaded without error", name)
		}
	}
	if _, err := FromJSON([]byte(`{"model":` + base + `}`)); err != nil {
		t.Errorf("minimal valid file: %v", err)
	}
}

// TestNormalizers uses Unicode's own examples: U+FB01 "ﬁ" is compatibility-equivalent to "fi",
// "é" is canonically e + U+0301, and İ lowercases to i + U+0307 (SpecialCasing.txt).
func TestNormalizers(t *testing.T) {
	re := mustCompile(`\s+`)
	cases := []struct {
		name string
		n    normalizer
		in   string
		want string
	}{
		{"nfc", normUnicode{norm.NFC}, "e\u0301", "é"},
		{"nfd", normUnicode{norm.NFD}, "é", "e\u0301"},
		{"nfkc", normUnicode{norm.NFKC}, "ﬁ²", "fi2"},
		{"nfkd", normUnicode{norm.NFKD}, "ﬁé", "fie\u0301"},
		{"lowercase", normLowercase{}, "İSTANBUL ΣΑΣ", "i\u0307stanbul σασ"},
		{"strip", normStrip{left: true, right: true}, " \t x y \n", "x y"},
		{"strip left", normStrip{left: true}, "  x ", "x "},
		{"accents", normStripAccents{}, "e\u0301a\u0308\u0903", "ea"},
		{"prepend", normPrepend{"▁"}, "x", "▁x"},
		{"prepend empty", normPrepend{"▁"}, "", ""},
		{"replace", normReplace{pat: pattern{lit: " "}, content: "▁"}, "a b  c", "a▁b▁▁c"},
		{"replace regex", normReplace{pat: pattern{re: re}, content: "_"}, "a b  \tc", "a_b_c"},
		{"bytelevel", normByteLevel{}, "a é", "aĠÃ©"},
		{"sequence", normSequence{normLowercase{}, normPrepend{"_"}}, "AB", "_ab"},
	}
	for _, c := range cases {
		if got, _ := c.n.normalize(c.in, 0); got != c.want {
			t.Errorf("%s: %q -> %q, want %q", c.name, c.in, got, c.want)
		}
	}
}
