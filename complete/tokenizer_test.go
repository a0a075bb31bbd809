package complete

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/layaapp/laya/engine/tokenizer"
)

func loadTokenizer(t *testing.T, name string) *tokenizer.Tokenizer {
	t.Helper()
	data, err := os.ReadFile("../testdata/tokenizer/" + name)
	if err != nil {
		t.Skip(err)
	}
	tok, err := tokenizer.FromJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// byteLevelBytes inverts GPT-2's byte-to-unicode table: printable Latin-1 bytes stand for
// themselves, the other 68 bytes for U+0100 onwards in byte order.
func byteLevelBytes(tok string) ([]byte, bool) {
	var table [512]int
	for i := range table {
		table[i] = -1
	}
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			table[b] = b
		} else {
			table[256+n] = b
			n++
		}
	}
	var out []byte
	for _, r := range tok {
		if r >= 512 || table[r] < 0 {
			return nil, false
		}
		out = append(out, byte(table[r]))
	}
	return out, true
}

// sentencePieceBytes reads a Llama-2 vocabulary entry: "▁" is a space, "<0xNN>" a byte.
func sentencePieceBytes(tok string) ([]byte, bool) {
	if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && tok[5] == '>' {
		b, err := strconv.ParseUint(tok[3:5], 16, 8)
		return []byte{byte(b)}, err == nil
	}
	return []byte(strings.ReplaceAll(tok, "▁", " ")), true
}

// The healer's token texts, found by decoding, must be what the vocabulary entries spell.
func TestHealerTexts(t *testing.T) {
	for _, tc := range []struct {
		file  string
		base  int // ids below are plain vocabulary entries
		bytes func(string) ([]byte, bool)
	}{
		{"qwen2.5-tokenizer.json", 151643, byteLevelBytes},
		{"llama2-tokenizer.json", 32000, sentencePieceBytes},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tok := loadTokenizer(t, tc.file)
			h := healer{v: tok}
			h.once.Do(h.init)
			bad := 0
			for id := range min(tc.base, tok.VocabSize()) {
				raw := tok.Token(int32(id))
				want := ""
				// Text with U+FFFD is left out, as the healer cannot tell it from a lossy decoding.
				if b, ok := tc.bytes(raw); ok && utf8.Valid(b) && !strings.ContainsRune(string(b), utf8.RuneError) && !tok.IsSpecial(int32(id)) {
					want = string(b)
				}
				if got := h.text[id]; got != want && bad < 10 {
					bad++
					t.Errorf("token %d %q: healer text %q, want %q", id, raw, got, want)
				}
			}
			// Candidates are exactly the tokens whose text extends the given one's.
			for _, word := range []string{"print", " the", "ing"} {
				id, ok := tok.TokenID(tokenSpelling(tc.file, word))
				if !ok {
					t.Fatalf("no token %q", word)
				}
				text, cands := h.candidates(id)
				var want []int32
				for j, s := range h.text {
					if s != "" && strings.HasPrefix(s, word) {
						want = append(want, int32(j))
					}
				}
				slices.Sort(cands)
				if text != word || !slices.Equal(cands, want) || len(want) < 2 {
					t.Errorf("candidates of %q: %q, %d ids; want %d", word, text, len(cands), len(want))
				}
			}
		})
	}
}

// tokenSpelling is how a vocabulary spells word.
func tokenSpelling(file, word string) string {
	if strings.HasPrefix(file, "qwen") {
		return strings.ReplaceAll(word, " ", "Ġ")
	}
	return strings.ReplaceAll(word, " ", "▁")
}

// With a real tokenizer the FIM prompt is the documented layout, encoded as one string, less
// the healed token.
func TestFIMPromptQwenTokenizer(t *testing.T) {
	tok := loadTokenizer(t, "qwen2.5-tokenizer.json")
	c := newCompleter(lm{vocab: tok, context: 4096}, Options{})
	if c.fim == nil {
		t.Fatal("Qwen FIM tokens not found")
	}
	const prefix, suffix = "def area(r):\n    return 3.14 * r", "\n\nprint(area(2))\n"
	p := c.buildPrompt(Request{Prefix: prefix, Suffix: suffix}, Profile{}, 4000)
	want := tok.Encode("<|fim_prefix|>"+prefix+"<|fim_suffix|>"+suffix+"<|fim_middle|>", false)
	n := len(tok.Encode(prefix, false))
	healedAt := n // index in want of the prefix's last token
	if p.healed == "" || !slices.Equal(p.ids, slices.Delete(slices.Clone(want), healedAt, healedAt+1)) {
		t.Fatalf("prompt %q (healed %q)\nwant %q less token %d", tok.Decode(p.ids, false), p.healed, tok.Decode(want, false), healedAt)
	}
	if got := tok.Decode(p.ids[1:healedAt], false) + p.healed; got != prefix {
		t.Errorf("prompt prefix + healed text = %q, want %q", got, prefix)
	}
	for _, s := range []string{"<|fim_pad|>", "<|file_sep|>", "<|endoftext|>", "<|repo_name|>"} {
		if id, _ := tok.TokenID(s); !slices.Contains(p.stopTokens, id) {
			t.Errorf("%s is not a stop token", s)
		}
	}
}
