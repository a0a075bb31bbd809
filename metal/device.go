// Package metal is Laya's GPU backend: one implementation of backend.Backend that records each
// forward step as a plan of kernel dispatches and submits it to a Device in a single call. Two
// devices exist: the Metal GPU on darwin/arm64 (device_darwin.go) and, for tests anywhere, the
// SIMT emulator in metal/emu, which runs the same kernels/*.metal sources compiled as C++.
package metal

//go:generate go run ./internal/genkernels

import (
	"fmt"
	"math"
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
	// WaitPrevious blocks until everything submitted before the last Submit has finished, while
	// the last plan may still run (the next step, queued behind the one the host waits for),
	// and returns the first error since the last wait.
	WaitPrevious() error
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
// or writes a buffer range that a dispatch since the last barrier wrote, or writes one that
// such a dispatch read (kernelWrites says which bindings a kernel writes). A binding covers the
// bytes bindingBytes knows from the kernel's parameters, else the rest of its buffer. The first
// dispatch has none; the device orders it after the plans submitted before. A replayed plan
// keeps its flags.
func (pl *plan) barriers() {
	if pl.final {
		return
	}
	pl.final = true
	var read, written rangeSet
	for i := range pl.ds {
		d := &pl.ds[i]
		w := ^uint32(0) // an unknown kernel is taken to write everything (and fails to run)
		if int(d.Kernel) < len(kernelWrites) {
			w = kernelWrites[d.Kernel]
		}
		n := int(min(d.NArgs, maxArgs))
		var rs [maxArgs]byteRange
		d.Barrier = 0
		if i > 0 && (!read.fits(n) || !written.fits(n)) {
			d.Barrier = 1
		}
		for j := range n {
			rs[j] = bindingRange(d, j)
			if written.overlaps(rs[j]) || w>>j&1 != 0 && read.overlaps(rs[j]) {
				d.Barrier = 1
			}
		}
		if d.Barrier == 1 {
			read.n, written.n = 0, 0
		}
		for j, r := range rs[:n] {
			if w>>j&1 != 0 {
				written.add(r)
			} else {
				read.add(r)
			}
		}
	}
}

// byteRange is the bytes [lo, hi) of a buffer that a binding covers.
type byteRange struct {
	buf    Buf
	lo, hi uint64
}

func bindingRange(d *Dispatch, i int) byteRange {
	a := d.Args[i]
	r := byteRange{a.Buf, a.Off, math.MaxUint64}
	if n := bindingBytes(d, i); n > 0 {
		r.hi = a.Off + n
	}
	return r
}

// bindingBytes is the size of binding i of d where the kernel's parameters tell it: the
// kernels that views of one buffer are bound to (a prefill's projections into parts of one
// scratch buffer, elementwise operations on them). The sizes are those the backend checks
// the buffers against, which the emulator's guard pages hold the kernels to. It is 0, unknown,
// for the rest.
func bindingBytes(d *Dispatch, i int) uint64 {
	switch d.Kernel {
	case kMatmul:
		p := params[mslMatMulParams](d)
		switch i {
		case 4: // x
			return 4 * uint64(p.rows) * uint64(p.w.cols)
		case 5: // out
			return 4 * uint64(p.rows) * uint64(p.w.rows)
		}
	case kSiluMul, kGeluMul, kAddInplace:
		return 4 * uint64(params[mslEltParams](d).n)
	case kScaleInplace:
		return 4 * uint64(params[mslScaleParams](d).n)
	}
	return 0
}

// rangeSet is a small set of buffer ranges, without allocation; a run of dispatches that would
// overflow it gets a barrier instead.
type rangeSet struct {
	n int
	r [64]byteRange
}

func (s *rangeSet) fits(n int) bool { return s.n+n <= len(s.r) }

func (s *rangeSet) overlaps(r byteRange) bool {
	for _, x := range s.r[:s.n] {
		if x.buf == r.buf && x.lo < r.hi && r.lo < x.hi {
			return true
		}
	}
	return false
}

func (s *rangeSet) add(r byteRange) {
	for _, x := range s.r[:s.n] {
		if x == r {
			return
		}
	}
	s.r[s.n] = r
	s.n++
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
