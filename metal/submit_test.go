package metal

import "testing"

// TestCommit checks that Commit submits the recorded step without a host wait, that the next
// Sync or Read waits for it (once, with nothing new to submit), and that a Commit of a step
// with a failed operation reports the error and submits nothing.
func TestCommit(t *testing.T) {
	dev := NewCounter()
	m := newStepModelOn(t, dev, smallShape(1))
	b := m.be
	m.stepCalls(0)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if c := dev.Counts(); c.Commits != 1 || c.HostWaits != 0 {
		t.Fatalf("after Commit: %d commits, %d host waits; want 1, 0", c.Commits, c.HostWaits)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if c := dev.Counts(); c.Commits != 1 || c.HostWaits != 1 {
		t.Fatalf("after Sync: %d commits, %d host waits; want 1, 1", c.Commits, c.HostWaits)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if c := dev.Counts(); c.HostWaits != 1 {
		t.Fatalf("a Sync with nothing submitted waited: %d host waits", c.HostWaits)
	}

	m.stepCalls(1)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 4)
	if err := b.Read(out, m.x); err != nil {
		t.Fatal(err)
	}
	if c := dev.Counts(); c.Commits != 2 || c.HostWaits != 2 {
		t.Fatalf("Commit, Read: %d commits, %d host waits; want 2, 2", c.Commits, c.HostWaits)
	}

	before := dev.Counts()
	b.Embed(m.x, m.embed, []int32{-1})
	m.stepCalls(2)
	if err := b.Commit(); err == nil {
		t.Fatal("Commit: no error from a bad token id")
	}
	if err := b.Sync(); err != nil {
		t.Fatalf("Sync after the failed Commit: %v", err)
	}
	if got := dev.Counts().Sub(before); got.Commits != 0 || got.HostWaits != 0 {
		t.Fatalf("the failed step was submitted: %+v", got)
	}
}

// TestBarriers checks the barrier flags computed for a plan: none before the first dispatch
// or between dispatches that only share what they read; one before a dispatch that reads or
// writes what one since the last barrier wrote (read after write, write after write) or
// writes what one read (write after read); views of one buffer conflict where their ranges
// overlap, a binding of unknown size covering the rest of its buffer; a kept plan keeps its
// flags until a dispatch is added.
func TestBarriers(t *testing.T) {
	const A, B, C, D, E, F, G, H, S Buf = 1, 2, 3, 4, 5, 6, 7, 8, 9
	var pl plan
	add := func(dst, x Arg) { pl.encAddInplace(groups1(1, 1), [3]uint32{1, 1, 1}, dst, x, &mslEltParams{n: 1}) }
	silu := func(gate, up, out Buf) {
		pl.encSiluMul(groups1(1, 1), [3]uint32{1, 1, 1}, Arg{Buf: gate}, Arg{Buf: up}, Arg{Buf: out}, &mslEltParams{n: 1})
	}
	// matmul writes 2 rows of 4 outputs (32 bytes) at out from 2 rows of 8 inputs (64 bytes) at x.
	matmul := func(x, out Arg) {
		pl.encMatmul(groups1(1, 1), [3]uint32{1, 1, 1}, Arg{Buf: 100}, Arg{Buf: 100}, Arg{Buf: 100}, Arg{Buf: 100}, x, out,
			&mslMatMulParams{w: mslWeight{rows: 4, cols: 8}, rows: 2})
	}
	norm := func(x, out Arg) {
		pl.encRmsnorm(groups1(1, 1), [3]uint32{1, 1, 1}, x, Arg{Buf: 100}, out, &mslRMSNormParams{n: 1})
	}
	add(Arg{Buf: A}, Arg{Buf: B})                  // first: 0
	add(Arg{Buf: C}, Arg{Buf: D})                  // independent: 0
	silu(B, D, E)                                  // reads what others read: 0
	add(Arg{Buf: F}, Arg{Buf: A})                  // reads A, written above: 1
	add(Arg{Buf: B}, Arg{Buf: G})                  // B was read before the last barrier only: 0
	add(Arg{Buf: G}, Arg{Buf: H})                  // writes G, read since the barrier: 1
	add(Arg{Buf: G}, Arg{Buf: C})                  // writes G again: 1
	add(Arg{Buf: H, Off: 64}, Arg{Buf: C})         // H was read before the last barrier: 0
	add(Arg{Buf: E, Off: 0}, Arg{Buf: F})          // 0
	add(Arg{Buf: E, Off: 4096}, Arg{Buf: D})       // another part of E: 0
	add(Arg{Buf: E, Off: 2}, Arg{Buf: D})          // overlaps E's bytes [0, 4): 1
	matmul(Arg{Buf: A}, Arg{Buf: S})               // S [0, 32): 0
	matmul(Arg{Buf: A}, Arg{Buf: S, Off: 32})      // S [32, 64): 0
	matmul(Arg{Buf: S, Off: 64}, Arg{Buf: B})      // reads S [64, 128): 0
	matmul(Arg{Buf: S, Off: 60}, Arg{Buf: C})      // reads S [60, 124): 1
	norm(Arg{Buf: D}, Arg{Buf: S, Off: 4096})      // writes S from 4096 on: 0
	norm(Arg{Buf: D}, Arg{Buf: H, Off: 8})         // 0
	matmul(Arg{Buf: A}, Arg{Buf: H, Off: 1 << 20}) // writes H within the rest of H the norm wrote: 1
	want := []uint32{0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1}
	pl.barriers()
	for i, d := range pl.ds {
		if d.Barrier != want[i] {
			t.Errorf("dispatch %d: barrier %d, want %d", i, d.Barrier, want[i])
		}
	}

	pl.ds[1].Barrier = 7
	pl.barriers()
	if pl.ds[1].Barrier != 7 {
		t.Error("a kept plan's flags were computed again")
	}
	add(Arg{Buf: H, Off: 1 << 20}, Arg{Buf: A}) // writes what the last dispatch wrote: 1
	pl.barriers()
	if pl.ds[1].Barrier != 0 || pl.ds[len(pl.ds)-1].Barrier != 1 {
		t.Error("a plan with a new dispatch kept its old flags")
	}

	// Independent dispatches beyond what the sets hold get a barrier instead of growing them.
	pl.reset()
	for i := range 100 {
		add(Arg{Buf: Buf(100 + 2*i)}, Arg{Buf: Buf(101 + 2*i)})
	}
	pl.barriers()
	n := 0
	for _, d := range pl.ds {
		n += int(d.Barrier)
	}
	if n == 0 || n > 3 {
		t.Errorf("%d barriers among 100 independent dispatches, want 1 to 3", n)
	}
}
