package metal

import (
	"fmt"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine/backend"
)

// sentinel marks the recorded plan so a test can tell a replayed plan (mark kept) from a
// rebuilt one.
const sentinel = 0xdead

func mark(t *testing.T, b *Backend) {
	t.Helper()
	if len(b.pl.ds) == 0 {
		t.Fatal("no plan kept for replay")
	}
	b.pl.ds[0].Threads[2] = sentinel
}

func marked(b *Backend) bool       { return len(b.pl.ds) > 0 && b.pl.ds[0].Threads[2] == sentinel }
func planOf(b *Backend) []Dispatch { return slices.Clone(b.pl.ds) }

// TestReplay checks when a step replays the last plan and when it records afresh, and that a
// plan rebuilt after a divergence equals one recorded from scratch.
func TestReplay(t *testing.T) {
	m, dev := newStepModel(t, 2)
	b := m.be
	if err := m.step(0); err != nil {
		t.Fatal(err)
	}
	want := planOf(b)
	mark(t, b)
	for pos := 1; pos < 4; pos++ {
		if err := m.step(pos); err != nil {
			t.Fatal(err)
		}
		if !marked(b) {
			t.Fatalf("decode step at %d rebuilt the plan", pos)
		}
	}
	// Prefix reuse: the same cache, back to an earlier position.
	m.cache.Truncate(2)
	if err := m.step(2); err != nil {
		t.Fatal(err)
	}
	if !marked(b) {
		t.Fatal("decode step after Truncate rebuilt the plan")
	}
	got := planOf(b)
	got[0].Threads[2] = want[0].Threads[2]
	if !slices.Equal(got, want) {
		t.Fatal("replayed plan differs from the recorded one")
	}

	// Another cache (another session) must not reuse bindings of the first.
	other := b.NewKVCache(m.cache.Shape())
	first := m.cache
	m.cache = other
	if err := m.step(0); err != nil {
		t.Fatal(err)
	}
	if marked(b) {
		t.Fatal("a step on another cache replayed the first cache's plan")
	}
	m.cache = first

	// A step that differs in its last call: the matching calls are recorded again, giving the
	// plan a fresh recording gives.
	mark(t, b)
	m.ids = []int32{7}
	diverged := func() error {
		m.cache.Truncate(3)
		m.stepCalls(3)
		b.MatMul(m.logits, m.h, m.embed, nil, 1) // the tied head instead of m.head
		return b.Sync()
	}
	for range 2 {
		if err := diverged(); err != nil {
			t.Fatal(err)
		}
	}
	replayed := planOf(b)
	b.Add(m.x, m.h, 4) // a step of its own, so the next one records from scratch
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := diverged(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(replayed, planOf(b)) {
		t.Fatal("plan rebuilt after a divergence differs from a fresh recording")
	}

	// A step with more calls than the recorded one, and one with fewer.
	before := dev.dispatches
	if err := m.step(4); err != nil {
		t.Fatal(err)
	}
	if got := dev.dispatches - before; got != len(want) {
		t.Fatalf("%d dispatches after a divergence, want %d", got, len(want))
	}
	m.cache.Truncate(4)
	m.stepCalls(4)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := len(b.pl.ds); got != len(want)-1 {
		t.Fatalf("%d dispatches in a step without the head (and its folded final norm), want %d", got, len(want)-1)
	}
}

// TestReplayAfterError checks that a failed call during a replay drops the step and that the
// next step records afresh and runs.
func TestReplayAfterError(t *testing.T) {
	m, dev := newStepModel(t, 1)
	b := m.be
	for pos := range 2 {
		if err := m.step(pos); err != nil {
			t.Fatal(err)
		}
	}
	before := dev.dispatches
	b.Embed(m.x, m.embed, []int32{-1})
	m.stepCalls(2)
	if err := b.Sync(); err == nil {
		t.Fatal("no error from a bad token id")
	}
	if dev.dispatches != before {
		t.Fatal("the failed step ran")
	}
	m.cache.Truncate(2)
	if err := m.step(2); err != nil {
		t.Fatal(err)
	}
	if got := dev.dispatches - before; got != 6+2 {
		t.Fatalf("%d dispatches after the error, want %d", got, 6+2)
	}
}

// freeCheck is a nullDevice that fails a submitted plan binding a freed buffer.
type freeCheck struct {
	nullDevice
	freed map[Buf]bool
}

func (d *freeCheck) Free(b Buf) { d.freed[b] = true }

func (d *freeCheck) Submit(p []Dispatch) error {
	for _, ds := range p {
		for _, a := range ds.Args[:ds.NArgs] {
			if d.freed[a.Buf] {
				return fmt.Errorf("dispatch %d binds freed buffer %d", ds.Kernel, a.Buf)
			}
		}
	}
	return d.nullDevice.Submit(p)
}

// TestScratchGrowth grows a scratch buffer in a step whose first calls matched the kept plan
// (so they are recorded again on the old scratch): the old buffer must outlive that step's run,
// and no later step may bind it.
func TestScratchGrowth(t *testing.T) {
	dev := &freeCheck{freed: map[Buf]bool{}}
	m := newStepModelOn(t, dev, smallShape(1))
	b, sh := m.be, m.shape
	for pos := range 2 {
		if err := m.step(pos); err != nil {
			t.Fatal(err)
		}
	}
	x2 := b.NewBuffer(2 * sh.dim)
	out2 := []backend.Buffer{b.NewBuffer(2 * sh.heads * sh.headDim), b.NewBuffer(2 * sh.kvHeads * sh.headDim), b.NewBuffer(2 * sh.kvHeads * sh.headDim)}
	norm := backend.Norm{W: m.attnNorm[0], Eps: 1e-5}
	b.Embed(m.x, m.embed, m.ids)
	b.MatMuls(m.qkvOut, m.x, norm, m.qkv[0], nil, 1) // as the kept plan: replayed, then recorded again
	b.MatMuls(out2, x2, norm, m.qkv[0], nil, 2)      // grows the norm's scratch
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(dev.freed) == 0 {
		t.Fatal("the outgrown scratch was not freed")
	}
	for pos := 2; pos < 5; pos++ {
		m.cache.Truncate(pos)
		if err := m.step(pos); err != nil {
			t.Fatal(err)
		}
	}
}
