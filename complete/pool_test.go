package complete

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A new client takes over the least recently used idle session's memory when a new session
// would not fit the budget, and the pool never holds more than the budget.
func TestPoolReusesIdleSessions(t *testing.T) {
	m := &fakeModel{v: newFakeVocab(nil, nil, false), say: say("!"), bytes: 1000, reserve: true}
	c := newCompleter(m.lm(512), Options{CacheBudget: 2500})
	defer c.Close()
	for _, client := range []string{"a", "b", "a", "c", "d"} {
		if _, err := c.Complete(context.Background(), client, Request{Prefix: "hello " + client}, nil); err != nil {
			t.Fatal(err)
		}
		if n, bytes := c.Sessions(); n > 2 || bytes > 2500 {
			t.Fatalf("after %s: %d sessions holding %d bytes, budget 2500", client, n, bytes)
		}
	}
	// a, b were new; c took over b (a had been used since), d took over a.
	if len(m.sessions) != 2 {
		t.Fatalf("%d sessions allocated, want 2 reused", len(m.sessions))
	}
	for i, s := range m.sessions {
		if s.closed || s.resets != 1 {
			t.Errorf("session %d: closed %v, reset %d times; want open, reset once", i, s.closed, s.resets)
		}
	}
	// A reused session starts empty: nothing of the previous client's text is reused.
	if sug, err := c.Complete(context.Background(), "c", Request{Prefix: "hello c again"}, nil); err != nil || sug.Reused != len("hello c") {
		t.Errorf("c's second request reused %d tokens (%v), want %d", sug.Reused, err, len("hello c"))
	}
}

// When every session is busy and the budget is spent, a new client waits for one to go idle,
// and gives up with ErrBusy after MaxWait.
func TestPoolQueuesThenRefuses(t *testing.T) {
	m := &fakeModel{v: newFakeVocab(nil, nil, false), say: say(strings.Repeat("x", 40)), bytes: 1000,
		reserve: true, delay: 5 * time.Millisecond}
	c := newCompleter(m.lm(512), Options{CacheBudget: 1000, MaxWait: 50 * time.Millisecond, MaxTokens: 40,
		Profiles: map[string]Profile{"": {Lines: 100}}, MinMeanLogprob: -100, MinFirstLogprob: -100, MinTokenLogprob: -100, MinPathLogprob: -100,
		MinChars: 1})
	defer c.Close()
	started := make(chan struct{})
	var once sync.Once
	errc := make(chan error, 1)
	go func() {
		// 40 tokens of 5 ms: busy for 200 ms, longer than MaxWait.
		_, err := c.Complete(context.Background(), "busy", Request{Prefix: "a"}, func(string) { once.Do(func() { close(started) }) })
		errc <- err
	}()
	<-started
	if _, err := c.Complete(context.Background(), "late", Request{Prefix: "b", MaxTokens: 1}, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("a new client with the pool busy: %v, want ErrBusy", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Waiting less than MaxWait: the request runs once the busy session is done.
	c.opt.MaxWait = 10 * time.Second
	started = make(chan struct{})
	once = sync.Once{}
	go func() {
		_, err := c.Complete(context.Background(), "busy", Request{Prefix: "a"}, func(string) { once.Do(func() { close(started) }) })
		errc <- err
	}()
	<-started
	if sug, err := c.Complete(context.Background(), "late", Request{Prefix: "b", MaxTokens: 1}, nil); err != nil || sug.Text != "x" {
		t.Errorf("queued request: %q, %v", sug.Text, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(m.sessions) != 1 {
		t.Errorf("%d sessions allocated under a budget of one", len(m.sessions))
	}
}

// Many clients at once share a pool of budget/size sessions; each gets its answer.
func TestPoolManyClients(t *testing.T) {
	m := &fakeModel{v: newFakeVocab(nil, nil, false), say: say("ok"), bytes: 1000, reserve: true, delay: time.Millisecond}
	c := newCompleter(m.lm(512), Options{CacheBudget: 4000, MaxWait: time.Minute, MinChars: 1})
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 150)
	for i := range 150 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sug, err := c.Complete(context.Background(), fmt.Sprint("client", i), Request{Prefix: "go"}, nil)
			if err == nil && sug.Text != "ok" {
				err = fmt.Errorf("client %d got %q", i, sug.Text)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(m.sessions) != 4 {
		t.Errorf("%d sessions allocated for 150 clients, want the budget's 4", len(m.sessions))
	}
	if n, bytes := c.Sessions(); n != 4 || bytes != 4000 {
		t.Errorf("%d sessions holding %d bytes, want 4 holding 4000", n, bytes)
	}
}

// Sessions that grow after they are placed (recurrent-state snapshots) are counted as they
// report it: idle ones are closed until the pool fits the budget again.
func TestPoolTrimsGrownSessions(t *testing.T) {
	m := &fakeModel{v: newFakeVocab(nil, nil, false), say: say("!"), bytes: 1000, reserve: true}
	c := newCompleter(m.lm(512), Options{CacheBudget: 3000})
	defer c.Close()
	for _, client := range []string{"a", "b", "c"} {
		if _, err := c.Complete(context.Background(), client, Request{Prefix: "hi"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	m.bytes = 1400 // every session now reports more after its next request
	if _, err := c.Complete(context.Background(), "c", Request{Prefix: "hi there"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), "b", Request{Prefix: "hi there"}, nil); err != nil {
		t.Fatal(err)
	}
	// a (1000) + b (1400) + c (1400) is over 3000: a, least recently used, is closed.
	if n, bytes := c.Sessions(); n != 2 || bytes != 2800 || !m.sessions[0].closed {
		t.Errorf("%d sessions holding %d bytes (a closed: %v), want 2 holding 2800 with a closed", n, bytes, m.sessions[0].closed)
	}
}

// rssBudgetMiB is the cache budget of TestPoolBoundsRSS and rssOverheadMiB what it allows
// besides the model file and the budget: the Go runtime and test binary, the tokenizer and
// its healing tables, the backend's activation buffers, per-session logits and sampler
// buffers, 150 goroutines and the garbage between collections.
const (
	rssBudgetMiB   = 32
	rssOverheadMiB = 48
)

// TestPoolBoundsRSS runs 150 concurrent clients of the bundled model in a child process (so
// the measurement has no other test's memory in it) and checks its peak resident memory
// (VmHWM) against the model file, the cache budget and a stated overhead.
func TestPoolBoundsRSS(t *testing.T) {
	if os.Getenv("LAYA_POOL_RSS_CHILD") == "1" {
		poolRSSChild(t)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	const model = "../assets/models/laya-code/model.safetensors"
	fi, err := os.Stat(model)
	if err != nil {
		t.Fatalf("bundled model: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPoolBoundsRSS$", "-test.v")
	cmd.Env = append(os.Environ(), "LAYA_POOL_RSS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var hwm, base int64 = -1, -1
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "pool-rss:" {
			base, _ = strconv.ParseInt(f[1], 10, 64)
			hwm, _ = strconv.ParseInt(f[2], 10, 64)
		}
	}
	if hwm < 0 {
		t.Fatalf("child reported no RSS:\n%s", out)
	}
	limit := base + fi.Size() + (rssBudgetMiB+rssOverheadMiB)<<20
	t.Logf("peak RSS %d MiB: before loading %d MiB + model %d MiB + budget %d MiB + overhead at most %d MiB",
		hwm>>20, base>>20, fi.Size()>>20, rssBudgetMiB, rssOverheadMiB)
	if hwm > limit {
		t.Errorf("peak RSS %d MiB exceeds %d MiB", hwm>>20, limit>>20)
	}
}

func poolRSSChild(t *testing.T) {
	base := procStatus(t, "VmRSS")
	m := loadModel(t, "../assets/models/laya-code")
	opt := everything
	opt.CacheBudget = rssBudgetMiB << 20
	opt.MaxWait = 5 * time.Minute
	c := New(m, opt)
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 150)
	for i := range 150 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// About 70 distinct tokens per client, so each session touches its own cache pages.
			var b strings.Builder
			for j := range 6 {
				fmt.Fprintf(&b, "value%d_%d := compute(%d, %d)\n", i, j, i*j, j)
			}
			if _, err := c.Complete(context.Background(), fmt.Sprint("client", i), Request{Prefix: b.String(), MaxTokens: 4}, nil); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, bytes := c.Sessions(); bytes > opt.CacheBudget {
		t.Errorf("%d sessions hold %d bytes, over the budget of %d", n, bytes, opt.CacheBudget)
	}
	fmt.Printf("pool-rss: %d %d\n", base, procStatus(t, "VmHWM"))
}

// procStatus reads a memory field of /proc/self/status in bytes.
func procStatus(t *testing.T, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			break
		}
		return kb << 10
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
