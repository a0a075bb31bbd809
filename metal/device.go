// Package metal is Laya's GPU backend: one implementation of backend.Backend that records each
// forward step as a plan of kernel dispatches and submits it to a Device in a single call. Two
// devices exist: the Metal GPU on darwin/arm64 (device_darwin.go) and, for tests anywhere, the
// SIMT emulator in metal/emu, which runs the same kernels/*.metal sources compiled as C++.
package metal

//go:generate go run ./internal/genkernels

import (
	"fmt"
	"unsafe"
)

// kernelID indexes kernelNames (generated from the kernel sources).
type kernelID uint32

// Buf is a device buffer handle; its meaning belongs to the Device.
type Buf uint64

// Arg is a buffer binding: a handle and a byte offset into it.
type Arg struct {
	Buf Buf
	Off uint64
}

// Limits of one dispatch, shared with the C side of both devices.
const (
	maxArgs   = 20
	maxParams = 32
)

// Dispatch is one kernel launch: Groups threadgroups of Threads threads, buffers Args[:NArgs] at
// [[buffer(0..NArgs-1)]] and the parameter words Params[:NParams] at [[buffer(NArgs)]]. Barrier
// is 1 when the dispatch must see the writes of every dispatch before it (a memory barrier
// precedes it) and 0 when it may run concurrently with those since the last barrier. Its
// layout is shared with C (emu.h, device_darwin.m): no Go pointers, fixed-size fields only.
type Dispatch struct {
	Kernel  kernelID
	NArgs   uint32
	Groups  [3]uint32
	Threads [3]uint32
	Args    [maxArgs]Arg
	NParams uint32
	Barrier uint32
	Params  [maxParams]uint32
}

// Device is what the backend needs from a GPU: shared-memory buffers and ordered, asynchronous
// execution of a step's dispatches.
type Device interface {
	// Name identifies the device in errors and Backend.Name.
	Name() string
	// NewBuffer returns a zeroed buffer of size bytes that the host can read and write.
	NewBuffer(size int) (Buf, error)
	// Wrap makes read-only weight bytes visible to kernels, in place when the device can.
	Wrap(data []byte) (Arg, error)
	// Free releases a buffer from NewBuffer.
	Free(b Buf)
	// Write copies src to the buffer at a byte offset; Read copies out of it. Neither waits: a
	// buffer that submitted work still reads or writes must not be touched before Wait.
	Write(dst Arg, src []byte)
	Read(dst []byte, src Arg)
	// Submit starts the dispatches and returns without waiting for them; the device has taken
	// what it needs from plan when it returns, so the caller may reuse it. Plans run in the
	// order submitted, each after the one before has finished. Within a plan a dispatch whose
	// Barrier is 1 sees the writes of every dispatch before it; one whose Barrier is 0 may run
	// concurrently with the dispatches since the last barrier. The error is one Submit can see
	// at once (an unknown kernel, a freed buffer); failures while running are reported by Wait.
	Submit(plan []Dispatch) error
	// Wait blocks until everything submitted has finished and returns the first error since
	// the last Wait.
	Wait() error
	// Close releases the device and every buffer.
	Close() error
}

// plan accumulates a step's dispatches; its slice is reused from step to step.
type plan struct {
	ds []Dispatch
	// final is set once barriers has set the flags of ds; appending clears it.
	final bool
}

func (pl *plan) next(k kernelID, groups, threads [3]uint32) *Dispatch {
	pl.ds = append(pl.ds, Dispatch{})
	pl.final = false
	d := &pl.ds[len(pl.ds)-1]
	d.Kernel, d.Groups, d.Threads = k, groups, threads
	return d
}

func (pl *plan) reset() { pl.ds, pl.final = pl.ds[:0], false }

// barriers sets each dispatch's Barrier flag: a dispatch needs a barrier only where it reads
// or writes a buffer that a dispatch since the last barrier wrote, or writes one that such a
// dispatch read (kernelWrites says which bindings a kernel writes). Buffers are compared by
// handle, whole: two views of one buffer conflict even where their ranges do not overlap. The
// first dispatch has none; the device orders it after the plans submitted before. A replayed
// plan keeps its flags.
func (pl *plan) barriers() {
	if pl.final {
		return
	}
	pl.final = true
	var read, written bufSet
	for i := range pl.ds {
		d := &pl.ds[i]
		w := ^uint32(0) // an unknown kernel is taken to write everything (and fails to run)
		if int(d.Kernel) < len(kernelWrites) {
			w = kernelWrites[d.Kernel]
		}
		args := d.Args[:min(d.NArgs, maxArgs)]
		d.Barrier = 0
		if i > 0 && (!read.fits(len(args)) || !written.fits(len(args))) {
			d.Barrier = 1
		}
		for j, a := range args {
			if written.has(a.Buf) || w>>j&1 != 0 && read.has(a.Buf) {
				d.Barrier = 1
			}
		}
		if d.Barrier == 1 {
			read.n, written.n = 0, 0
		}
		for j, a := range args {
			if w>>j&1 != 0 {
				written.add(a.Buf)
			} else {
				read.add(a.Buf)
			}
		}
	}
}

// bufSet is a small set of buffers, without allocation; a run of dispatches that would
// overflow it gets a barrier instead.
type bufSet struct {
	n int
	b [64]Buf
}

func (s *bufSet) fits(n int) bool { return s.n+n <= len(s.b) }

func (s *bufSet) has(b Buf) bool {
	for _, x := range s.b[:s.n] {
		if x == b {
			return true
		}
	}
	return false
}

func (s *bufSet) add(b Buf) {
	if !s.has(b) {
		s.b[s.n] = b
		s.n++
	}
}

// String names a kernel for error messages.
func (k kernelID) String() string {
	if int(k) < len(kernelNames) {
		return kernelNames[k]
	}
	return fmt.Sprintf("kernel(%d)", uint32(k))
}

// The C mirrors (emu.h, device_darwin.m) assert these same offsets.
var (
	_ [unsafe.Offsetof(Dispatch{}.Args) - 32]byte
	_ [32 - unsafe.Offsetof(Dispatch{}.Args)]byte
	_ [unsafe.Offsetof(Dispatch{}.Params) - 360]byte
	_ [360 - unsafe.Offsetof(Dispatch{}.Params)]byte
	_ [unsafe.Sizeof(Dispatch{}) - 488]byte
	_ [488 - unsafe.Sizeof(Dispatch{})]byte
)
