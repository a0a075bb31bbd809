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
