package tokenizer

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
}
