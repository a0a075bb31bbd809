package tokenizer

import (
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
