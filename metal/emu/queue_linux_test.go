package emu_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/safetensors"
	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/emu"
)

// lagging is an emulated device whose GPU starts a plan only when the next plan is submitted or
// the host waits for it: a step committed ahead then always runs after the host has recorded
// the next step and written that step's token ids and positions, the widest window for a
// step to read values meant for the one after it.
type lagging struct {
	*emu.Device
	held []metal.Dispatch
	has  bool
}

func (l *lagging) Submit(plan []metal.Dispatch) error {
	err := l.release()
	l.held, l.has = append(l.held[:0], plan...), true
	return err
}

func (l *lagging) release() error {
	if !l.has {
		return nil
	}
	l.has = false
	return l.Device.Submit(l.held)
}

func (l *lagging) Wait() error {
	if err := l.release(); err != nil {
		return err
	}
	return l.Device.Wait()
}

// WaitPrevious waits for what was released: everything but the plan held back.
func (l *lagging) WaitPrevious() error { return l.Device.Wait() }

// hostOnly hides the backend's device picks, so the engine samples on the host.
type hostOnly struct{ backend.Backend }

// doubting counts the device's picks and, unless trusting, reports some as unsure or as
// another token, so the engine's check falls back to the host for them.
type doubting struct {
	*metal.Backend
	n        int
	trusting bool
}

// doubted counts the picks doubting saw.
var doubted atomic.Int64

func (d *doubting) Picked(p *backend.Pick) error {
	doubted.Add(1)
	err := d.Backend.Picked(p)
	if d.trusting {
		return err
	}
	switch d.n++; d.n % 3 {
	case 1:
		p.Unsure = true
	case 2:
		p.ID = p.IDs[len(p.IDs)-1] ^ 1
	}
	return err
}

func init() {
	engine.RegisterBackend("metal-emu-lag", func(engine.Options) (backend.Backend, error) {
		return metal.New(&lagging{Device: emu.New()})
	})
	engine.RegisterBackend("metal-emu-host", func(engine.Options) (backend.Backend, error) {
		be, err := metal.New(emu.New())
		return hostOnly{be}, err
	})
	engine.RegisterBackend("metal-emu-doubt", func(engine.Options) (backend.Backend, error) {
		be, err := metal.New(emu.New())
		return &doubting{Backend: be}, err
	})
	engine.RegisterBackend("metal-emu-count", func(engine.Options) (backend.Backend, error) {
		be, err := metal.New(emu.New())
		return &doubting{Backend: be, trusting: true}, err
	})
}

// outcome is what one Generate of a scenario produced and left in the session.
type outcome struct {
	ids          []int32
	logprobs     []float32
	top          [][]engine.TokenLogprob
	stop         string
	err          bool
	reused, held int
}

// scenario runs Generates in one session that stop in every way the decode loop can stop,
// and then reuse the cache: max tokens, a stop token and a stop string mid-stream, emit
// failing, the context's end, a prompt extending what the session holds, and the same prompt
// again. stopTok and stopStr come from the host path's first run.
func scenario(t *testing.T, dir, be string, p engine.Sampling, stopTok int32, stopStr string) []outcome {
	t.Helper()
	m, err := engine.Load(dir, engine.Options{Backend: be, Threads: 1, Context: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	defer s.Close()
	prompt := []int32{0, 17, 42, 5, 99, 63, 2, 30, 71}
	var outs []outcome
	gen := func(prompt []int32, p engine.Sampling, failAt int) {
		var o outcome
		res, err := s.Generate(context.Background(), prompt, p, func(tok engine.Token) error {
			o.ids = append(o.ids, tok.ID)
			o.logprobs = append(o.logprobs, tok.Logprob)
			o.top = append(o.top, tok.Top)
			if len(o.ids) == failAt {
				return errors.New("enough")
			}
			return nil
		})
		o.stop, o.err, o.reused, o.held = res.Stop, err != nil, res.ReusedTokens, s.Len()
		outs = append(outs, o)
	}
	p.MaxTokens, p.IgnoreEOS = 8, true
	gen(prompt, p, 0)
	first := outs[0].ids
	gen(append(slices.Clip(prompt), first[:3]...), p, 0)
	q := p
	q.StopTokens = []int32{stopTok}
	gen(prompt, q, 0)
	q = p
	q.StopStrings = []string{stopStr}
	gen(prompt, q, 0)
	gen(prompt, p, 3)
	long := make([]int32, 36)
	for i := range long {
		long[i] = int32(2 + i*7%97)
	}
	q = p
	q.MaxTokens = 20
	gen(long, q, 0) // 5 tokens fit: "context"
	gen(append(slices.Clip(prompt), first[:5]...), p, 0)
	gen(append(slices.Clip(prompt), first[:5]...), p, 0)
	return outs
}

// TestQueueAhead: Generate with the device's picks and the next step queued before each wait
// gives, on the emulated backend, exactly the host path's tokens, stops, reused prefixes and
// session lengths, and its logprobs up to the device's float32 log-sum-exp; also on a device
// that starts each step only after the next one was recorded (so a step that read the next
// step's per-step values would go wrong), and when the engine's check rejects picks and falls
// back to the host.
func TestQueueAhead(t *testing.T) {
	dir := tinyModel(t, "llama", safetensors.F32, 5)
	for _, p := range []engine.Sampling{
		{Logprobs: 3},
		{Temperature: 0.9, TopK: 10, Seed: 7, Logprobs: 2},
		{Temperature: 1.7, TopK: 63, Seed: 3},
	} {
		ref := scenario(t, dir, "metal-emu-host", p, 0, "")
		// Stop at the host path's third token of the first run, by id and by its text.
		stopTok := ref[0].ids[2]
		m, err := engine.Load(dir, engine.Options{Backend: "cpu", Threads: 1, Context: 40})
		if err != nil {
			t.Fatal(err)
		}
		stopStr := m.Tokenizer().Decode(ref[0].ids[3:4], true)
		m.Close()
		want := scenario(t, dir, "metal-emu-host", p, stopTok, stopStr)
		if want[2].stop != "stop" || len(want[2].ids) > 3 || want[3].stop != "stop" || want[5].stop != "context" || want[4].stop != "canceled" {
			t.Fatalf("%+v: the host path's scenario does not stop as intended: %+v", p, want)
		}
		before := doubted.Load()
		for _, be := range []string{"metal-emu", "metal-emu-lag", "metal-emu-doubt"} {
			got := scenario(t, dir, be, p, stopTok, stopStr)
			for i := range want {
				g, w := got[i], want[i]
				if !slices.Equal(g.ids, w.ids) || g.stop != w.stop || g.err != w.err || g.reused != w.reused || g.held != w.held {
					t.Fatalf("%s %+v generate %d: ids %v stop %q err %v reused %d held %d; host path: %v %q %v %d %d",
						be, p, i, g.ids, g.stop, g.err, g.reused, g.held, w.ids, w.stop, w.err, w.reused, w.held)
				}
				for j := range w.ids {
					if math.Abs(float64(g.logprobs[j]-w.logprobs[j])) > 1e-4 || len(g.top[j]) != len(w.top[j]) {
						t.Fatalf("%s %+v generate %d token %d: logprob %v top %v, host path %v %v", be, p, i, j, g.logprobs[j], g.top[j], w.logprobs[j], w.top[j])
					}
					for k := range w.top[j] {
						if g.top[j][k].ID != w.top[j][k].ID || math.Abs(float64(g.top[j][k].Logprob-w.top[j][k].Logprob)) > 1e-4 {
							t.Fatalf("%s %+v generate %d token %d: top %v, host path %v", be, p, i, j, g.top[j], w.top[j])
						}
					}
				}
			}
		}
		if doubted.Load() == before {
			t.Fatalf("%+v: the engine made no device pick", p)
		}
	}
}

// TestQueueAheadAllocs: with device picks, Generate's allocations do not grow with the number of
// tokens, and each token's wait has the next step queued behind it. On a counting device, which
// runs nothing (the picks read back as token 0), as the asynchronous emulator allocates when
// its worker goroutine starts after an idle moment.
func TestQueueAheadAllocs(t *testing.T) {
	dir := tinyModel(t, "llama", safetensors.F32, 5)
	counter := metal.NewCounter()
	m, err := engine.Load(dir, engine.Options{Backend: "metal", Threads: 1, Context: 40,
		Open: func(engine.Options) (backend.Backend, error) { return metal.New(counter) }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	prompt := []int32{0, 17, 42, 5, 99, 63, 2, 30, 71}
	allocs := func(n int) float64 {
		p := engine.Sampling{MaxTokens: n, IgnoreEOS: true, Logprobs: 2}
		return testing.AllocsPerRun(3, func() {
			if res, err := s.Generate(context.Background(), prompt, p, nil); err != nil || len(res.IDs) != n {
				t.Fatalf("Generate: %d tokens, %v", len(res.IDs), err)
			}
		})
	}
	short := allocs(4)
	before := counter.Counts()
	long := allocs(16)
	if long != short {
		t.Errorf("Generate allocates %v times for 4 tokens but %v for 16", short, long)
	}
	// Per Generate of 16: one wait for the prefill, then one per token after the first, all
	// but the last with the next step queued.
	c := counter.Counts().Sub(before)
	runs := c.HostWaits / 16
	if c.HostWaits != 16*runs || c.QueuedWaits != 14*runs || runs < 3 {
		t.Errorf("%d Generates of 16 tokens: %d host waits, %d with the next step queued", runs, c.HostWaits, c.QueuedWaits)
	}
}
