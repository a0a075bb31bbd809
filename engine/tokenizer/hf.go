//go:build hftokenizers

package tokenizer

import (
	"fmt"

	"github.com/daulet/tokenizers"
)

// HF is the HuggingFace tokenizers library itself (Rust, through github.com/daulet/tokenizers),
// available when built with -tags hftokenizers and linked against libtokenizers.a. It serves as
// the reference the pure-Go Tokenizer is compared with.
type HF struct {
	tk *tokenizers.Tokenizer
}

// FromJSONHF loads a tokenizer.json with the HuggingFace library.
func FromJSONHF(data []byte) (*HF, error) {
	tk, err := tokenizers.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: hf: %w", err)
	}
	return &HF{tk: tk}, nil
}

// Encode tokenizes text; addSpecial is add_special_tokens.
func (h *HF) Encode(text string, addSpecial bool) []int32 {
	ids, _ := h.tk.Encode(text, addSpecial)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// Decode turns ids back into text.
func (h *HF) Decode(ids []int32, skipSpecial bool) string {
	u := make([]uint32, len(ids))
	for i, id := range ids {
		u[i] = uint32(id)
	}
	return h.tk.Decode(u, skipSpecial)
}

// Close frees the library's tokenizer.
func (h *HF) Close() error { return h.tk.Close() }
