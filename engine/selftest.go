package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/internal/buildinfo"
	"github.com/layaapp/laya/internal/fsutil"
)

// preferredBackend is the backend Load tries first when Options.Backend is "", checked against
// referenceBackend on each model before it is trusted with it.
const (
	preferredBackend = "metal"
	referenceBackend = "cpu"
)

// SelfTest is the verdict of the check Load runs before it lets the preferred (GPU) backend run
// a model: the same prompt through that backend and through the CPU, logits compared.
type SelfTest struct {
	Backend string `json:"backend"`          // the backend checked
	Device  string `json:"device,omitempty"` // the device it runs on, e.g. the GPU's name
	Passed  bool   `json:"passed"`
	// Reason says why it failed: the backend's error, or at which step and how far the
	// log-probabilities were apart.
	Reason string `json:"reason,omitempty"`
	// MaxDiff is the largest difference of the compared log-probabilities, in nats.
	MaxDiff float64 `json:"max_diff"`
	// Cached says the verdict was found in the cache, from an earlier run of this build on the
	// same model file and device; Took is what computing it cost then.
	Cached bool          `json:"cached"`
	Took   time.Duration `json:"took_ns"`
}

const (
	// selfTestTol is how far apart (nats) the two backends' log-probabilities may be. Measured
	// with this self-test on every parity fixture (all nine families) and the bundled model:
	// the Metal kernels under the emulator, with its fast-math error and shuffled threadgroup
	// order, differ from the CPU backend by at most 1.5e-3, and the CPU's plain-int8 mode
	// (cpu-int8, llama.cpp's precision, whose output is acceptable) differs from its default
	// mode by up to 0.13 (LFM2 Q8_0; 0.11 the bundled model). Twice that leaves room for the
	// rounding a deep model accumulates; a faulty kernel (a skipped dispatch, a wrong tile, a
	// race) moves log-probabilities by whole nats (6.2 for one skipped dispatch).
	selfTestTol = 0.25
	// selfTestTop: the log-probabilities compared are those of the most likely tokens by either
	// backend, the tokens sampling can pick.
	selfTestTop = 16
	// selfTestDecode is the number of decode steps after the prefill; the second replays the
	// plan the first recorded, which a GPU backend does on every later token.
	selfTestDecode = 2
	// selfTestText is the prompt: source code, what Laya completes most.
	selfTestText = "func sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {"
	// failedVerdictTTL: a failed verdict is retried after this long, so a transient fault (the
	// GPU out of memory at launch) does not keep the GPU off for good; a passed one stands
	// while the model file, device and build are the same.
	failedVerdictTTL = 24 * time.Hour
)

// deviceNamer is implemented by backends that can name the device they run on (the Metal
// backend: the GPU's name). The self-test keys its cached verdicts by it.
type deviceNamer interface{ DeviceName() string }

// openChecked opens the preferred backend for m and checks it against the reference on this
// model (or finds the verdict cached). When the preferred backend fails to open, to take the
// weights, to run or to agree, m runs on the reference instead and the verdict says why.
// It sets m.be and m.act.
func (m *Model) openChecked(opt Options, open, openRef func(Options) (backend.Backend, error)) (*SelfTest, error) {
	st := &SelfTest{Backend: preferredBackend, Device: preferredBackend}
	start := time.Now()
	useRef := func(reason string, ref backend.Backend) (*SelfTest, error) {
		st.Passed, st.Reason = false, reason
		cached := ""
		if st.Cached {
			cached = " (verdict cached from an earlier run)"
		}
		log.Printf("%s backend not used for %s: %s%s; running on the %s", preferredBackend, m.w.Path, reason, cached, referenceBackend)
		if ref == nil {
			var err error
			if ref, err = m.prepared(opt, referenceBackend, openRef); err != nil {
				return nil, err
			}
		}
		if m.be != ref || m.act == nil {
			m.be, m.act = ref, newActivations(ref, m.cfg, maxRows)
		}
		return st, nil
	}
	be, err := open(opt)
	if err != nil {
		// Not cached: without a device there is no key, and opening is what failed.
		return useRef(fmt.Sprintf("opening: %v", err), nil)
	}
	if d, ok := be.(deviceNamer); ok {
		st.Device = d.DeviceName()
	}
	key, cacheable := verdictKey(m.w.Path, st.Backend, st.Device)
	if cacheable {
		if v, ok := loadVerdict(key); ok {
			v.Cached = true
			st = v
			if !v.Passed {
				be.Close()
				return useRef(v.Reason, nil)
			}
			if err := be.Prepare(m.tensors); err != nil {
				be.Close()
				return useRef(fmt.Sprintf("preparing weights: %v", err), nil)
			}
			m.be, m.act = be, newActivations(be, m.cfg, maxRows)
			return st, nil
		}
	}
	finish := func() {
		st.Took = time.Since(start)
		if cacheable {
			if err := storeVerdict(key, st); err != nil {
				log.Printf("self-test verdict not cached: %v", err)
			}
		}
	}
	if err := be.Prepare(m.tensors); err != nil {
		be.Close()
		finish()
		return useRef(fmt.Sprintf("preparing weights: %v", err), nil)
	}
	ref, err := m.prepared(opt, referenceBackend, openRef)
	if err != nil {
		be.Close()
		return nil, err
	}
	diff, reason, err := m.compareBackends(be, ref)
	if err != nil {
		be.Close()
		ref.Close()
		return nil, err
	}
	st.MaxDiff = diff
	if reason != "" {
		be.Close()
		st.Reason = reason
		finish()
		return useRef(reason, ref)
	}
	ref.Close()
	st.Passed = true
	finish()
	return st, nil
}

// prepared opens a backend and gives it the model's weights.
func (m *Model) prepared(opt Options, name string, open func(Options) (backend.Backend, error)) (backend.Backend, error) {
	be, err := open(opt)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	if err := be.Prepare(m.tensors); err != nil {
		be.Close()
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	return be, nil
}

// compareBackends runs a short prompt and selfTestDecode greedy steps through ref and then be,
// feeding both the reference's choices, and compares the logits of every step. reason is ""
// when they agree; otherwise it says why be is not to be trusted (including be's own errors).
// err reports only a failure of ref. It leaves m.be and m.act set to be's when they agree and to
// ref's when they do not.
func (m *Model) compareBackends(be, ref backend.Backend) (diff float64, reason string, err error) {
	ids := m.selfTestPrompt()
	next := make([]int32, selfTestDecode)
	want, refAct, err := m.trial(ref, ids, next, true)
	if err != nil {
		return 0, "", fmt.Errorf("self-test on the %s backend: %w", referenceBackend, err)
	}
	got, _, err := m.trial(be, ids, next, false)
	if err != nil {
		m.be, m.act = ref, refAct
		return 0, fmt.Sprintf("running the self-test: %v", err), nil
	}
	for i := range want {
		d, msg := compareLogits(got[i], want[i])
		diff = max(diff, d)
		if msg == "" && d > selfTestTol {
			msg = fmt.Sprintf("log-probabilities differ from the %s's by %.3g (tolerance %g)", referenceBackend, d, selfTestTol)
		}
		if msg != "" {
			m.be, m.act = ref, refAct
			step := "prefill"
			if i > 0 {
				step = fmt.Sprintf("decode step %d", i)
			}
			return diff, fmt.Sprintf("self-test %s: %s", step, msg), nil
		}
	}
	return diff, "", nil
}

// selfTestPrompt is the tokenized selfTestText, at least 2 tokens (a prefill of several rows
// runs other kernels than a decode step) and short enough for the model's context.
func (m *Model) selfTestPrompt() []int32 {
	ids := m.tok.Encode(selfTestText, true)
	for len(ids) < 2 {
		ids = append(ids, int32(len(ids))%int32(m.cfg.Vocab))
	}
	n := len(ids)
	if mc := m.cfg.MaxContext; mc > 0 {
		n = min(n, max(mc-selfTestDecode, 1))
	}
	return ids[:n]
}

// trial runs ids and then next as decode steps on be, with activations for maxRows rows (kept by
// whichever backend the model ends up on), and returns the logits after each. With pick, next is
// filled with each step's most likely token.
func (m *Model) trial(be backend.Backend, ids, next []int32, pick bool) ([][]float32, *activations, error) {
	c := m.cfg
	m.be, m.act = be, newActivations(be, c, maxRows)
	cache := m.newCache(len(ids) + len(next))
	out := make([][]float32, 1+len(next))
	for i := range out {
		out[i] = make([]float32, c.Vocab)
	}
	if err := m.forward(cache, ids, 0, out[0], nil); err != nil {
		return nil, nil, err
	}
	for i := range next {
		if pick {
			next[i] = int32(argmax(out[i]))
		}
		if err := m.forward(cache, next[i:i+1], len(ids)+i, out[i+1], nil); err != nil {
			return nil, nil, err
		}
	}
	return out, m.act, nil
}

// compareLogits returns the largest difference between the log-softmax of got and of want over
// the selfTestTop most likely tokens of each, or a message when got is not a valid output.
func compareLogits(got, want []float32) (float64, string) {
	for i, v := range got {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return math.Inf(1), fmt.Sprintf("logit %d is %v", i, v)
		}
	}
	lg, lw := logSoftmax(got), logSoftmax(want)
	var diff float64
	top := make([]TokenLogprob, min(selfTestTop, len(got)))
	for _, l := range [][]float32{got, want} {
		topLogprobs(top, l, 0)
		for _, t := range top {
			diff = max(diff, math.Abs(lg[t.ID]-lw[t.ID]))
		}
	}
	return diff, ""
}

func logSoftmax(l []float32) []float64 {
	lse := logSumExp(l)
	out := make([]float64, len(l))
	for i, v := range l {
		out[i] = float64(v) - lse
	}
	return out
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// The verdict cache: one small JSON file per (model files, backend, device, build) under the
// user's cache directory, named by a hash of that identity.

// maxVerdictBytes bounds what is read of a cached verdict; one is a few hundred bytes.
const maxVerdictBytes = 64 << 10

// maxIdentityFiles bounds the files of a model directory that its identity lists; a directory
// with more is not cached (models have a few dozen at most).
const maxIdentityFiles = 4096

type storedVerdict struct {
	Key     string    `json:"key"`
	At      time.Time `json:"at"`
	Verdict SelfTest  `json:"verdict"`
}

// verdictKey is the identity a verdict is cached under: the model's files (path, size and
// modification time of each), the backend and device, and this build. ok is false when the
// model's files cannot be listed, for a model that is not on disk.
func verdictKey(path, backendName, device string) (string, bool) {
	id, ok := modelIdentity(path)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("selftest 1\nmodel %s\nbackend %s\ndevice %s\nbuild %s\n", id, backendName, device, buildinfo.Key()), true
}

func modelIdentity(path string) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", false
	}
	if !st.IsDir() {
		return fmt.Sprintf("%s %d %d", abs, st.Size(), st.ModTime().UnixNano()), true
	}
	ents, err := os.ReadDir(abs)
	if err != nil || len(ents) > maxIdentityFiles {
		return "", false
	}
	id := abs
	for _, e := range ents {
		// Stat follows links: HuggingFace snapshots link each file to a blob.
		fi, err := os.Stat(filepath.Join(abs, e.Name()))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		id += fmt.Sprintf("\n%s %d %d", e.Name(), fi.Size(), fi.ModTime().UnixNano())
	}
	return id, true
}

// userCacheDir is where verdicts are kept, under laya/selftest; tests replace it.
var userCacheDir = os.UserCacheDir

func verdictPath(key string) (string, error) {
	dir, err := userCacheDir()
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(key))
	return filepath.Join(dir, "laya", "selftest", hex.EncodeToString(h[:16])+".json"), nil
}

// loadVerdict returns the cached verdict for key; anything unreadable, for another key or
// a failure older than failedVerdictTTL is no verdict.
func loadVerdict(key string) (*SelfTest, bool) {
	p, err := verdictPath(key)
	if err != nil {
		return nil, false
	}
	b, err := fsutil.ReadFileLimit(p, maxVerdictBytes)
	if err != nil {
		return nil, false
	}
	var sv storedVerdict
	if json.Unmarshal(b, &sv) != nil || sv.Key != key {
		return nil, false
	}
	if !sv.Verdict.Passed && time.Since(sv.At) > failedVerdictTTL {
		return nil, false
	}
	v := sv.Verdict
	return &v, true
}

// storeVerdict writes the verdict atomically, so a concurrent reader sees the old file or the
// whole new one.
func storeVerdict(key string, v *SelfTest) error {
	p, err := verdictPath(key)
	if err != nil {
		return err
	}
	b, err := json.Marshal(storedVerdict{Key: key, At: time.Now(), Verdict: *v})
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(p, b)
}
