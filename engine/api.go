// Package engine runs a Llama-family or Qwen2 language model held warm in the process: it loads a
// model from the files users have (HuggingFace or MLX directories, GGUF files), runs forward passes
// on a backend (CPU everywhere, Metal on Apple silicon), and samples completions through Sessions
// that keep their KV cache between requests.
package engine

import (
	"time"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/tokenizer"
	"github.com/layaapp/laya/engine/weights"
)

// Options configures Load.
type Options struct {
	// Backend is "" for the best available, "cpu", "metal", or any name registered with
	// RegisterBackend. The best available is metal when it is registered, opens, takes the
	// model's weights and passes a self-test against the cpu backend on this model (see
	// SelfTest; the verdict is cached), else cpu. A backend named here runs unchecked.
	Backend string
	// Open, when not nil, opens the backend instead of the registry (Backend then only names
	// it): a backend of the caller's own, such as laya bench --plan's counting Metal device.
	Open func(Options) (backend.Backend, error)
	// Threads is the number of CPU threads; 0 = number of physical cores.
	Threads int
	// Context is the number of positions each session holds; 0 = min(model max context, 4096).
	Context int
}

// Info describes a loaded model.
type Info struct {
	Path    string
	Format  string // "safetensors", "mlx" or "gguf"
	Arch    string // "llama" or "qwen2"
	Backend string // name of the backend running it
	// Params is the number of logical weight elements; WeightBytes the bytes they take as stored.
	Params, WeightBytes int64
	// Context is the number of positions a session holds.
	Context int
	// SelfTest is the verdict on the preferred backend when Backend was "" and one is
	// registered: why the model runs on the cpu backend, or that the check passed. Nil when no
	// check ran.
	SelfTest *SelfTest
}

// EvalResult is the outcome of Model.Eval over Tokens predicted tokens.
type EvalResult struct {
	Tokens int
	// NLL is the mean negative log-likelihood (nats) of the targets, PPL = exp(NLL), Top1 the
	// fraction of targets that were the model's most likely token.
	NLL, PPL, Top1 float64
}

// Sampling says how Session.Generate picks tokens and when it stops.
type Sampling struct {
	// MaxTokens is the most tokens to generate; 0 only fills the cache with the prompt.
	MaxTokens   int
	Temperature float32 // 0 = greedy
	TopK        int     // 0 = off
	TopP, MinP  float32 // 0 = off
	// RepeatPenalty: 0 or 1 = off; HF semantics: positive logits of recent tokens are divided by
	// it, negative ones multiplied.
	RepeatPenalty float32
	RepeatWindow  int    // last N tokens (prompt and generated) considered; 0 = 64
	Seed          uint64 // same seed, same output
	// StopStrings end generation when the text contains one; it and what follows is not emitted.
	StopStrings []string
	StopTokens  []int32 // in addition to the model's EOS ids
	IgnoreEOS   bool
	// Logprobs is how many of the most likely tokens to report per step, from the log-softmax
	// of the raw logits (before penalties and filters).
	Logprobs int
	// FirstTokens, if non-empty, restricts the first generated token to these ids (token healing).
	FirstTokens []int32
}

// TokenLogprob is one token and its log-probability.
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// Token is one generated token as Generate emits it. Every sampled token is emitted once,
// including the one that ends generation (an EOS or stop token, or the token completing a stop
// string); its Text then holds only what precedes the stop.
type Token struct {
	ID int32
	// Text is the newly completed UTF-8 text this token adds; it may be "" while bytes are
	// pending or while text that could begin a stop string is held back.
	Text string
	// Logprob is the log-softmax of the raw logits at the chosen token.
	Logprob float32
	// Top holds the Sampling.Logprobs most likely tokens, most likely first. Its memory stays
	// valid after emit returns.
	Top []TokenLogprob
}

// Result is what Generate produced.
type Result struct {
	IDs  []int32 // every emitted token
	Text string  // the concatenated Text of every emitted token
	// Stop is why generation ended: "eos", "stop", "max_tokens", "context" or "canceled"
	// (also when emit returned an error).
	Stop         string
	PromptTokens int
	// ReusedTokens is how many prompt tokens were served from the session's cache (the longest
	// common prefix with what it held).
	ReusedTokens int
	Prefill      time.Duration
	Decode       time.Duration
	// Detokenize is the part of Decode spent turning ids into text.
	Detokenize time.Duration
}

// Load opens the model at path (a model directory or a .gguf file) and prepares it on the chosen
// backend. Callers choose the model to run when the user names none (models.Default).
func Load(path string, opt Options) (*Model, error) { return load(path, opt) }

// Info describes the model.
func (m *Model) Info() Info { return m.info }

// Config returns the model's hyperparameters.
func (m *Model) Config() weights.Config { return m.cfg }

// WeightData returns the bytes of every weight a decode step reads whole, quantization scales and
// biases included, each once: views of the model's mapped files, not copies, so that `laya
// bench` can time reading the very pages a decode step reads. The embedding table, of which a
// step reads one row, is left out unless it is also the output head.
func (m *Model) WeightData() [][]byte {
	var d [][]byte
	for _, t := range m.tensors {
		if t == m.embed && t != m.head {
			continue
		}
		d = append(d, t.Data)
		if t.DType == tensor.Affine {
			d = append(d, t.Scales.Data, t.Biases.Data)
		}
	}
	return d
}

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// RegisterBackend makes a backend selectable by name (the metal package registers "metal" on
// darwin; tests may register e.g. "metal-emu"). The cpu backend (engine/cpu) is built in.
// Registering a name again replaces the earlier one.
func RegisterBackend(name string, open func(Options) (backend.Backend, error)) {
	registerBackend(name, open)
}
