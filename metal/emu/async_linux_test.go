package emu

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/layaapp/laya/engine/tensor"
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

// TestConcurrentViews checks projections into two parts of one buffer: the two mat-muls get no
// barrier between them (their ranges are disjoint) and the add that reads both gets one, and
// the plan gives the same bits as the same plan made serial.
func TestConcurrentViews(t *testing.T) {
	const rows, in, out = 5, 24, 40
	d := New()
	c := &capture{Device: d}
	be, err := metal.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	mat := func(n int) []byte {
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(2*rng.Float64()-1)))
		}
		return b
	}
	wg := &tensor.Tensor{Name: "gate", DType: tensor.F32, Shape: []int{out, in}, Data: mat(out * in)}
	wu := &tensor.Tensor{Name: "up", DType: tensor.F32, Shape: []int{out, in}, Data: mat(out * in)}
	tab := &tensor.Tensor{Name: "x", DType: tensor.F32, Shape: []int{rows, in}, Data: mat(rows * in)}
	if err := be.Prepare([]*tensor.Tensor{wg, wu, tab}); err != nil {
		t.Fatal(err)
	}
	x, s := be.NewBuffer(rows*in), be.NewBuffer(2*rows*out)
	g, u := be.View(s, 0, rows*out), be.View(s, rows*out, rows*out)
	be.Embed(x, tab, []int32{0, 1, 2, 3, 4})
	be.MatMul(g, x, wg, nil, rows)
	be.MatMul(u, x, wu, nil, rows)
	be.Add(g, u, rows*out)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	plan := append([]metal.Dispatch(nil), c.plan...)
	var flags []uint32
	for _, d := range plan {
		flags = append(flags, d.Barrier)
	}
	if len(plan) != 4 || flags[1] != 1 || flags[2] != 0 || flags[3] != 1 {
		t.Fatalf("embed, gate, up, add: barrier flags %v, want [0 1 0 1]", flags)
	}
	yArg := plan[3].Args[0]
	got, want := make([]byte, 4*rows*out), make([]byte, 4*rows*out)
	d.Read(got, yArg)
	for i := range plan[1:] {
		plan[1+i].Barrier = 1
	}
	d.Write(yArg, make([]byte, 4*rows*out))
	if err := d.Submit(plan); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	d.Read(want, yArg)
	if !bytes.Equal(got, want) {
		t.Error("the plan with concurrent projections differs from the serial one")
	}
}
