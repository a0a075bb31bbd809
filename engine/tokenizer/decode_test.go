package tokenizer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var roundTrip = []string{
	"Hello world", "def fibonacci(n):\n    if n < 2:\n        return n\n", "🚀 emoji 😶‍🌫️ zwj 👨‍👩‍👧",
	"日本語のテキスト、中文文本", "Ελληνικά και русский", "tabs\tand\r\nCRLF  ", "x = a**2 + b_c; // ok?",
}

// TestRoundTrip checks decode(encode(s)) == s, which both tokenizers guarantee for text without
// a leading space (Llama strips the ▁ it prepends) that is already NFC (Qwen normalizes).
func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"llama2", "qwen2.5"} {
		tk := loadTokenizer(t, name)
		for _, s := range roundTrip {
			for _, add := range []bool{false, true} {
				ids := tk.Encode(s, add)
				if got := tk.Decode(ids, true); got != s {
					t.Errorf("%s: Decode(Encode(%q, %v), skip) = %q", name, s, add, got)
				}
				if got := streamAll(t, tk, ids, true); got != s {
					t.Errorf("%s: stream decode of %q = %q", name, s, got)
				}
			}
		}
	}
}

// TestStreamRandom feeds random ids, byte tokens and special tokens included, through the
// stream decoder: every piece must be valid UTF-8 and the pieces must add up to Decode.
func TestStreamRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"llama2", "qwen2.5"} {
		tk := loadTokenizer(t, name)
		var pool []int32
		for id := int32(0); id < int32(tk.VocabSize()); id++ {
			s := tk.Token(id)
			// Bias towards the tokens that split characters: byte pieces and partial UTF-8.
			if strings.HasPrefix(s, "<0x") || tk.IsSpecial(id) || (len(s) <= 2 && id > 200) {
				pool = append(pool, id)
			}
		}
		for iter := 0; iter < 300; iter++ {
			ids := make([]int32, 1+rng.IntN(12))
			for i := range ids {
				if rng.IntN(2) == 0 {
					ids[i] = pool[rng.IntN(len(pool))]
				} else {
					ids[i] = rng.Int32N(int32(tk.VocabSize()))
				}
			}
			for _, skip := range []bool{false, true} {
				if got, want := streamAll(t, tk, ids, skip), tk.Decode(ids, skip); got != want {
					t.Fatalf("%s: ids %v skip %v: stream %q, Decode %q", name, ids, skip, got, want)
				}
			}
		}
	}
}

// TestStreamHoldsPartialCharacters checks by hand that a character split across byte tokens is
// not emitted early: "€" is E2 82 AC. With ByteFallback a run of byte tokens is only final when
// the run ends (a later bad byte would turn the whole run into U+FFFDs), so "€" comes out with
// the next token.
func TestStreamHoldsPartialCharacters(t *testing.T) {
	tk := loadTokenizer(t, "llama2")
	ids := []int32{}
	for _, b := range []string{"<0xE2>", "<0x82>", "<0xAC>"} {
		id, ok := tk.TokenID(b)
		if !ok {
			t.Fatalf("no token %s", b)
		}
		ids = append(ids, id)
	}
	a, ok := tk.TokenID("▁a")
	if !ok {
		t.Fatal("no token ▁a")
	}
	d := tk.NewDecoder(false)
	var got []string
	for _, id := range append(ids, a) {
		got = append(got, d.Next(id))
	}
	if want := []string{"", "", "", "€ a"}; !slices.Equal(got, want) {
		t.Fatalf("pieces %q, want %q", got, want)
	}
	// An unfinished character at the end comes out of Flush the way Decode renders it.
	d.Next(ids[0])
	if got, want := d.Flush(), tk.Decode(ids[:1], false); got != want || got != "\uFFFD" {
		t.Fatalf("Flush = %q, Decode = %q, want U+FFFD", got, want)
	}
}

func TestLossyUTF8(t *testing.T) {
	// Expected values follow the Unicode "maximal subpart" rule Rust implements (U+FFFD per
	// maximal invalid prefix): E2 82 is one truncated sequence, C0 and 80 are each invalid.
	cases := map[string]string{
		"a\xe2\x82b":       "a\uFFFDb",
		"\xc0\x80":         "\uFFFD\uFFFD",
		"\xed\xa0\x80":     "\uFFFD\uFFFD\uFFFD", // surrogate: ED then two stray continuations
		"\xf0\x9f\x98":     "\uFFFD",
		"ok\xff":           "ok\uFFFD",
		"\xf4\x90\x80\x80": "\uFFFD\uFFFD\uFFFD\uFFFD",
	}
	for in, want := range cases {
		if got := lossyUTF8(in); got != want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConcurrentEncode: one tokenizer serves many goroutines (shared cache and scratch pools).
func TestConcurrentEncode(t *testing.T) {
	tk := loadTokenizer(t, "qwen2.5")
	want := make([][]int32, len(roundTrip))
	for i, s := range roundTrip {
		want[i] = tk.Encode(s, false)
	}
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for iter := 0; iter < 50; iter++ {
				i := (iter + g) % len(roundTrip)
				if got := tk.Encode(roundTrip[i], false); !slices.Equal(got, want[i]) {
					done <- fmt.Errorf("goroutine %d: Encode(%q) = %v, want %v", g, roundTrip[i], got, want[i])
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestStreamNextAllocs: once a stream is under way, ordinary tokens (words, punctuation, code,
// indentation) come out of Next without allocating, and the pieces still add up to Decode.
func TestStreamNextAllocs(t *testing.T) {
	text := "The quick brown fox jumps over the lazy dog, then naps. def add(a, b): return a + b"
	for _, name := range []string{"llama2", "qwen2.5", "laya-code"} {
		tk := loadTokenizer(t, name)
		ids := tk.Encode(text, false)
		if got, want := streamAll(t, tk, ids, false), tk.Decode(ids, false); got != want {
			t.Fatalf("%s: stream %q, Decode %q", name, got, want)
		}
		d := tk.NewDecoder(false)
		d.Next(ids[0])
		// Each run continues the same stream, so the text keeps following a settled context.
		allocs := testing.AllocsPerRun(10, func() {
			for _, id := range ids[1:] {
				d.Next(id)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per %d tokens", name, allocs, len(ids)-1)
		}
	}
}

// TestStreamPieces checks the precomputed pieces by hand for tokens whose decoding is known
// from the decoders' definitions, and that the tokens that depend on context have none.
func TestStreamPieces(t *testing.T) {
	cases := []struct {
		name, tok, piece string
	}{
		{"llama2", "▁the", " the"}, // Replace ▁ -> space; the Strip only touches the stream start
		{"llama2", "ing", "ing"},
		{"llama2", "<0x0A>", ""}, // a byte: ByteFallback joins it with its run
		{"llama2", "▁", ""},      // alone it decodes to nothing, so it cannot be a context
		{"qwen2.5", "Ġthe", " the"},
		{"qwen2.5", "Ċ", "\n"},
		{"qwen2.5", "<|im_end|>", "<|im_end|>"},
		{"qwen2.5", "æ", ""}, // the lone byte E6: the start of a character
		{"laya-code", "▁▁▁▁", "    "},
	}
	for _, c := range cases {
		tk := loadTokenizer(t, c.name)
		id, ok := tk.TokenID(c.tok)
		if !ok {
			t.Fatalf("%s: no token %q", c.name, c.tok)
		}
		if got := tk.pieces[id]; got != c.piece {
			t.Errorf("%s: piece of %q = %q, want %q", c.name, c.tok, got, c.piece)
		}
	}
}

// TestStreamDecoderShapes streams random ids through tokenizers with each decoder shape the
// fast path reasons about (and shapes it must leave to the general path): the pieces must add up
// to Decode whatever mix of plain, byte and context-dependent tokens comes.
func TestStreamDecoderShapes(t *testing.T) {
	toks := []string{"<unk>", "▁", "▁▁", "a", "b", "▁a", "▁b", "a▁", " ", "  x", "x ", "<0xE2>", "<0x82>",
		"<0xAC>", "<0x41>", "€", "Ġ", "Ġx", "Ã", "©", "é", "\uFFFD"}
	vocab := map[string]int{}
	for i, s := range toks {
		vocab[s] = i
	}
	vj, _ := json.Marshal(vocab)
	model := fmt.Sprintf(`{"type":"BPE","unk_token":"<unk>","vocab":%s,"merges":[]}`, vj)
	llamaSeq := `{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":%d,"stop":%d}]}`
	shapes := []struct {
		decoder string
		fast    bool // whether some tokens get pieces
	}{
		{"null", true},
		{`{"type":"Fuse"}`, true},
		{fmt.Sprintf(llamaSeq, 1, 0), true},
		{fmt.Sprintf(llamaSeq, 2, 0), false},
		{fmt.Sprintf(llamaSeq, 1, 1), false},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"always"}`, true},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"never"}`, true},
		{`{"type":"ByteLevel"}`, true},
		{`{"type":"Sequence","decoders":[{"type":"ByteLevel"},{"type":"Strip","content":" ","start":1,"stop":0}]}`, true},
		{`{"type":"Sequence","decoders":[{"type":"ByteFallback"},{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}`, true},
		{`{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"Strip","content":" ","start":1,"stop":1},{"type":"Fuse"}]}`, true},
		{`{"type":"Sequence","decoders":[{"type":"Fuse"},{"type":"Replace","pattern":{"String":"▁"},"content":" "}]}`, false},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range shapes {
		doc := fmt.Sprintf(`{"version":"1.0","added_tokens":[{"content":"<unk>","special":true}],"decoder":%s,"model":%s}`, sh.decoder, model)
		tk, err := FromJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", sh.decoder, err)
		}
		plain := 0
		for _, p := range tk.pieces {
			if p != "" {
				plain++
			}
		}
		if (plain > 0) != sh.fast {
			t.Errorf("%s: %d plain tokens, want some: %v", sh.decoder, plain, sh.fast)
		}
		for iter := 0; iter < 400; iter++ {
			ids := make([]int32, 1+rng.IntN(8))
			for i := range ids {
				ids[i] = rng.Int32N(int32(len(toks)) + 1) // one past the end: an unknown id
			}
			for _, skip := range []bool{false, true} {
				if got, want := streamAll(t, tk, ids, skip), tk.Decode(ids, skip); got != want {
					t.Fatalf("%s: ids %v skip %v: stream %q, Decode %q", sh.decoder, ids, skip, got, want)
				}
			}
		}
	}
}
