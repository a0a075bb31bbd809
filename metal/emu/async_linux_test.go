package emu

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/layaapp/laya/metal"
)

// capture is an emulated device that keeps a copy of the last plan submitted to it.
type capture struct {
	*Device
	plan []metal.Dispatch
}

func (c *capture) Submit(plan []metal.Dispatch) error {
	c.plan = append(c.plan[:0], plan...)
	return c.Device.Submit(plan)
}

func floats(v float32, n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// TestSubmitIsAsynchronous checks that the emulator runs a submitted plan while the host goes
// on, as the GPU does: a host write after Submit and before Wait to a buffer the plan reads is
// seen by the kernel (the race a host must avoid is real here), and Wait reports a plan's
// failure once.
func TestSubmitIsAsynchronous(t *testing.T) {
	const n = 300
	d := New()
	c := &capture{Device: d}
	be, err := metal.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	acc, x := be.NewBuffer(n), be.NewBuffer(n)
	be.Add(acc, x, n)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	plan := c.plan
	if len(plan) != 1 || plan[0].NArgs < 2 {
		t.Fatalf("plan of Add: %+v", plan)
	}
	accArg, xArg := plan[0].Args[0], plan[0].Args[1]
	d.Write(xArg, floats(1, n))

	// The plan is held back until the host has written 2s to x: the kernel adds those.
	hold := make(chan struct{})
	d.hold = hold
	if err := d.Submit(plan); err != nil {
		t.Fatal(err)
	}
	d.Write(xArg, floats(2, n))
	close(hold)
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4*n)
	d.Read(got, accArg)
	for i := range n {
		if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); v != 2 {
			t.Fatalf("acc[%d] = %v after a write to x while the plan was in flight, want 2 (the new value)", i, v)
		}
	}

	// Submit copies the plan: changing it afterwards changes nothing that runs.
	bad := append([]metal.Dispatch(nil), plan...)
	bad[0].Kernel = 1 << 20
	if err := d.Submit(bad); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(plan); err != nil {
		t.Fatal(err)
	}
	bad[0] = plan[0]
	if err := d.Wait(); err == nil {
		t.Error("Wait: no error from an unknown kernel")
	}
	if err := d.Wait(); err != nil {
		t.Errorf("a second Wait reported %v again", err)
	}
	d.Read(got, accArg)
	if v := math.Float32frombits(binary.LittleEndian.Uint32(got)); v != 4 {
		t.Errorf("acc[0] = %v after the failed plan and one more add of 2, want 4", v)
	}
}

// TestMissingBarrierCaught checks that the emulator runs the dispatches between two barriers in
// an arbitrary order, as a concurrent encoder may: a plan whose second dispatch reads what the
// first writes gets a barrier and gives the right sums run after run, and the same plan with
// that barrier flag cleared gives wrong ones.
func TestMissingBarrierCaught(t *testing.T) {
	const n = 256 * 32 // 32 threadgroups per dispatch
	d := New()
	c := &capture{Device: d}
	be, err := metal.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	a, x, y := be.NewBuffer(n), be.NewBuffer(n), be.NewBuffer(n)
	be.Add(a, x, n)
	be.Add(y, a, n)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	plan := append([]metal.Dispatch(nil), c.plan...)
	if len(plan) != 2 || plan[1].Barrier != 1 {
		t.Fatalf("y += a after a += x: %d dispatches, second barrier flag %d; want 2, 1", len(plan), plan[len(plan)-1].Barrier)
	}
	aArg, xArg, yArg := plan[0].Args[0], plan[0].Args[1], plan[1].Args[0]
	zero, one := floats(0, n), floats(1, n)
	got := make([]byte, 4*n)
	// run reports whether every y is 1 after a = 0, x = 1, y = 0 and the plan.
	run := func() bool {
		d.Write(aArg, zero)
		d.Write(xArg, one)
		d.Write(yArg, zero)
		if err := d.Submit(plan); err != nil {
			t.Fatal(err)
		}
		if err := d.Wait(); err != nil {
			t.Fatal(err)
		}
		d.Read(got, yArg)
		for i := range n {
			if math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])) != 1 {
				return false
			}
		}
		return true
	}
	for range 5 {
		if !run() {
			t.Fatal("wrong sums with the barrier")
		}
	}
	plan[1].Barrier = 0
	for range 5 {
		if run() {
			t.Fatalf("right sums without the barrier (seed %d): the emulator ran the dispatches in order", Seed())
		}
	}
}
