package engine

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/cpu"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/tokenizer"
	"github.com/layaapp/laya/engine/weights"
	"github.com/layaapp/laya/internal/fsutil"
)

// defaultContext caps the positions of a session when Options.Context is 0, so a model trained
// for 128k positions does not reserve a cache that large by default.
const defaultContext = 4096

var (
	backendsMu sync.Mutex
	backends   = map[string]func(Options) (backend.Backend, error){
		"cpu": func(o Options) (backend.Backend, error) { return cpu.New(o.Threads) },
		// The CPU backend with plain int8 activations (llama.cpp's precision), for comparing
		// precision modes; never chosen by default.
		"cpu-int8": func(o Options) (backend.Backend, error) { return cpu.NewInt8(o.Threads) },
	}
)

func registerBackend(name string, open func(Options) (backend.Backend, error)) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	backends[name] = open
}

// openBackend opens the named backend ("" is the reference backend) and prepares the weights on
// it. It runs no self-test: Options.Backend "" with the preferred backend registered goes
// through Model.openChecked instead.
func openBackend(opt Options, weights []*tensor.Tensor) (backend.Backend, error) {
	name := cmp.Or(opt.Backend, referenceBackend)
	backendsMu.Lock()
	open, ok := backends[name]
	names := slices.Sorted(maps.Keys(backends))
	backendsMu.Unlock()
	if opt.Open != nil {
		open, ok = opt.Open, true
	}
	if !ok {
		return nil, fmt.Errorf("unknown backend %q (have %v)", opt.Backend, names)
	}
	be, err := open(opt)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	if err := be.Prepare(weights); err != nil {
		be.Close()
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	return be, nil
}

// Backends lists the names of the registered backends, sorted.
func Backends() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	return slices.Sorted(maps.Keys(backends))
}

// openModelBackend puts m on the backend opt asks for: by default the preferred one when it is
// registered, checked against the reference (openChecked), else the reference. It sets m.be
// and m.act and returns the self-test's verdict, nil when none ran.
func (m *Model) openModelBackend(opt Options) (*SelfTest, error) {
	backendsMu.Lock()
	preferred, hasPreferred := backends[preferredBackend]
	ref := backends[referenceBackend]
	backendsMu.Unlock()
	if opt.Backend == "" && opt.Open == nil && hasPreferred {
		return m.openChecked(opt, preferred, ref)
	}
	be, err := openBackend(opt, m.tensors)
	if err != nil {
		return nil, err
	}
	if err := m.canRun(be); err != nil {
		be.Close()
		return nil, err
	}
	m.be, m.act = be, newActivations(be, m.cfg, maxRows)
	return nil, nil
}

func load(path string, opt Options) (*Model, error) {
	if opt.Threads < 0 || opt.Context < 0 {
		return nil, fmt.Errorf("engine: bad options: threads %d, context %d", opt.Threads, opt.Context)
	}
	if path == "" {
		return nil, errors.New("engine: no model path given")
	}
	w, err := weights.Open(path)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	m, err := newModel(w, opt)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("engine: %s: %w", path, err)
	}
	return m, nil
}

func newModel(w *weights.Model, opt Options) (*Model, error) {
	cfg := w.Config
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	ctx := opt.Context
	if ctx == 0 {
		ctx = defaultContext
		if cfg.MaxContext > 0 {
			ctx = min(ctx, cfg.MaxContext)
		}
	} else if cfg.MaxContext > 0 && ctx > cfg.MaxContext {
		return nil, fmt.Errorf("context %d exceeds the model's %d positions", ctx, cfg.MaxContext)
	}
	tok, err := openTokenizer(w)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() > cfg.Vocab {
		return nil, fmt.Errorf("tokenizer has %d tokens, model only %d", tok.VocabSize(), cfg.Vocab)
	}
	m := &Model{w: w, cfg: cfg, tok: tok, ctxLen: ctx, rope: newRope(cfg, cfg.RopeTheta, cfg.RopeScale, cfg.RopeFactors)}
	if cfg.LocalRopeTheta > 0 {
		m.localRope = newRope(cfg, cfg.LocalRopeTheta, weights.RopeScaling{}, nil)
	}
	if err := m.bindWeights(); err != nil {
		return nil, err
	}
	check, err := m.openModelBackend(opt)
	if err != nil {
		return nil, err
	}
	m.eos = make(map[int32]bool, len(cfg.EOS))
	for _, id := range cfg.EOS {
		m.eos[int32(id)] = true
	}
	if len(m.eos) == 0 && tok.EOS() >= 0 {
		m.eos[tok.EOS()] = true
	}
	var params, bytes int64
	for _, t := range m.tensors {
		params += int64(t.Elems())
		bytes += int64(len(t.Data))
		if t.DType == tensor.Affine {
			bytes += int64(len(t.Scales.Data) + len(t.Biases.Data))
		}
	}
	m.info = Info{Path: w.Path, Format: w.Format, Arch: cfg.Arch, Backend: m.be.Name(),
		Params: params, WeightBytes: bytes, Context: ctx, SelfTest: check}
	return m, nil
}

// checkConfig rejects hyperparameters the forward pass cannot run, before any tensor is touched.
func checkConfig(c weights.Config) error {
	switch c.Arch {
	case "llama", "qwen2", "qwen3", "smollm3", "gemma3", "lfm2", "qwen3_5":
	default:
		return fmt.Errorf("unsupported architecture %q (want llama, qwen2, qwen3, smollm3, gemma3, lfm2 or qwen3_5)", c.Arch)
	}
	return weights.CheckConfig(c)
}

func openTokenizer(w *weights.Model) (*tokenizer.Tokenizer, error) {
	var (
		t   *tokenizer.Tokenizer
		err error
	)
	switch {
	case w.TokenizerJSON != nil:
		t, err = tokenizer.FromJSON(w.TokenizerJSON)
	case w.GGUFVocab != nil:
		t, err = tokenizer.FromGGUF(w.GGUFVocab)
	default:
		return nil, errors.New("model has no tokenizer")
	}
	if err != nil {
		return nil, err
	}
	// HF keeps the BOS and EOS tokens' names in tokenizer_config.json beside tokenizer.json.
	if w.TokenizerJSON != nil {
		if b, err := fsutil.ReadFileLimit(filepath.Join(w.Path, "tokenizer_config.json"), tokenizer.MaxJSONBytes); err == nil {
			if err := t.ApplyConfig(b); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// Close releases the backend and unmaps the weights. Sessions of a closed model return errors.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	return errors.Join(m.be.Close(), m.w.Close())
}
