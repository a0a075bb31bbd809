package tokenizer

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// GGUFVocab is the tokenizer a GGUF file carries in its tokenizer.ggml.* metadata, as plain data,
// so this package needs no GGUF parser.
type GGUFVocab struct {
	Model  string    // tokenizer.ggml.model: "llama" (SentencePiece BPE) or "gpt2" (byte-level BPE)
	Pre    string    // tokenizer.ggml.pre, e.g. "default", "llama3", "qwen2"
	Tokens []string  // tokenizer.ggml.tokens
	Scores []float32 // tokenizer.ggml.scores (may be nil for gpt2)
	Types  []int32   // tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
	Merges []string  // tokenizer.ggml.merges, "a b" per entry (gpt2)
	BOS    int       // -1 when absent
	EOS    int       // -1 when absent
	UNK    int       // -1 when absent
	PAD    int       // -1 when absent
	AddBOS bool      // tokenizer.ggml.add_bos_token
	AddEOS bool      // tokenizer.ggml.add_eos_token
	// NoSpacePrefix is tokenizer.ggml.add_space_prefix == false ("llama" models): text spans
	// then get no leading "▁". The zero value is llama.cpp's default, add_space_prefix true.
	NoSpacePrefix bool
}

// GGUF token types (tokenizer.ggml.token_type).
const (
	ggufUnknown     = 2
	ggufControl     = 3
	ggufUserDefined = 4
)

// Pre-tokenizer regexes of the tokenizer.json files that llama.cpp's tokenizer.ggml.pre names
// stand for.
const (
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Pattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen3.5's keeps combining marks (\p{M}) with the letters they follow.
	qwen35Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// FromGGUF builds a tokenizer from GGUF metadata. It reproduces what the tokenizer.json of the
// same vocabulary does: "llama" is SentencePiece BPE by scores with <0xXX> byte fallback (space
// becomes ▁ and every text span gets a leading ▁), "gpt2" is byte-level BPE with the merges and
// the pre-tokenizer that Pre names. Control, user-defined and unknown tokens are matched in the
// input text as added tokens, as llama.cpp does.
func FromGGUF(v *GGUFVocab) (*Tokenizer, error) {
	if v == nil || len(v.Tokens) == 0 {
		return nil, errors.New("tokenizer: gguf: no tokens")
	}
	n := len(v.Tokens)
	if n > maxVocab {
		return nil, fmt.Errorf("tokenizer: gguf: %d tokens is too many", n)
	}
	if len(v.Types) != 0 && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: gguf: %d token types for %d tokens", len(v.Types), n)
	}
	if len(v.Scores) != 0 && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: gguf: %d scores for %d tokens", len(v.Scores), n)
	}
	special := func(name string, id int) (int32, error) {
		if id < -1 || id >= n {
			return 0, fmt.Errorf("tokenizer: gguf: %s id %d out of range", name, id)
		}
		return int32(id), nil
	}
	bos, err := special("bos", v.BOS)
	if err != nil {
		return nil, err
	}
	eos, err := special("eos", v.EOS)
	if err != nil {
		return nil, err
	}
	unk, err := special("unk", v.UNK)
	if err != nil {
		return nil, err
	}
	vocab := make(map[string]int32, n)
	for i, s := range v.Tokens {
		vocab[s] = int32(i) // a repeated string maps to its last id, as in llama.cpp
	}
	t := &Tokenizer{vocab: vocab, bos: -1, eos: -1}
	switch v.Model {
	case "llama":
		if len(v.Scores) != n {
			return nil, errors.New("tokenizer: gguf: llama vocabulary without scores")
		}
		m := &spm{vocab: vocab, scores: v.Scores, unk: unk}
		for b := range m.byteIDs {
			id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]
			if !ok {
				id = -1
			}
			m.byteIDs[b] = id
		}
		m.chunks = metaChunks(vocab)
		t.model = m
		replace := normReplace{pat: pattern{lit: " "}, content: "▁"}
		t.normalizer = normSequence{normPrepend{"▁"}, replace}
		t.decoder = decSequence{
			decReplace{pat: pattern{lit: "▁"}, content: " "},
			decByteFallback{}, decFuse{}, decStrip{content: ' ', start: 1},
		}
		if v.NoSpacePrefix {
			t.normalizer = replace
			t.decoder = decSequence{decReplace{pat: pattern{lit: "▁"}, content: " "}, decByteFallback{}, decFuse{}}
		}
	case "gpt2":
		m := &bpe{vocab: vocab, unk: -1}
		for b := range m.byteIDs {
			m.byteIDs[b] = -1
		}
		merges := make([][2]string, len(v.Merges))
		for i, mg := range v.Merges {
			// llama.cpp splits at the first space after the first byte.
			k := -1
			if len(mg) > 1 {
				if j := strings.IndexByte(mg[1:], ' '); j >= 0 {
					k = j + 1
				}
			}
			if k < 0 {
				return nil, fmt.Errorf("tokenizer: gguf: merge %d %q is not two tokens", i, mg)
			}
			merges[i] = [2]string{mg[:k], mg[k+1:]}
		}
		if err := m.setMerges(merges); err != nil {
			return nil, fmt.Errorf("tokenizer: gguf: %w", err)
		}
		t.model = m
		t.decoder = decByteLevel{}
		byteLevel := &preByteLevel{}
		switch v.Pre {
		case "default", "gpt2", "gpt-2":
			byteLevel.useRegex = true
			t.pre = byteLevel
		case "llama3", "llama-v3", "llama-bpe", "lfm2":
			m.ignoreMerges = true
			t.pre = newPreSequence(&preSplit{pat: pattern{re: mustCompile(llama3Pattern)}, behavior: splitIsolated}, byteLevel)
		case "smaug-bpe": // SmolLM3's GGUF files: the Llama 3 split, merges always applied
			t.pre = newPreSequence(&preSplit{pat: pattern{re: mustCompile(llama3Pattern)}, behavior: splitIsolated}, byteLevel)
		case "qwen2":
			t.normalizer = normUnicode{norm.NFC}
			t.pre = newPreSequence(&preSplit{pat: pattern{re: mustCompile(qwen2Pattern)}, behavior: splitIsolated}, byteLevel)
		case "qwen35":
			t.normalizer = normUnicode{norm.NFC}
			t.pre = newPreSequence(&preSplit{pat: pattern{re: mustCompile(qwen35Pattern)}, behavior: splitIsolated}, byteLevel)
		case "smollm", "starcoder", "refact":
			byteLevel.useRegex = true
			t.pre = newPreSequence(newDigits(true), byteLevel)
		default:
			return nil, fmt.Errorf("tokenizer: gguf: pre-tokenizer %q is not supported", v.Pre)
		}
	default:
		return nil, fmt.Errorf("tokenizer: gguf: tokenizer model %q is not supported", v.Model)
	}
	var added []addedToken
	for i, typ := range v.Types {
		switch typ {
		case ggufUnknown, ggufControl, ggufUserDefined:
			if v.Tokens[i] == "" || vocab[v.Tokens[i]] != int32(i) {
				continue
			}
			added = append(added, addedToken{id: int32(i), content: v.Tokens[i], special: typ != ggufUserDefined})
		}
	}
	if err := t.setTokens(added); err != nil {
		return nil, err
	}
	t.pieces = t.streamPieces()
	post := &postTemplate{}
	if v.AddBOS && bos >= 0 {
		post.before = []int32{bos}
	}
	if v.AddEOS && eos >= 0 {
		post.after = []int32{eos}
	}
	t.post = post
	t.bos, t.eos = bos, eos
	return t, nil
}
