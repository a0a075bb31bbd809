package emu

/*
#cgo CXXFLAGS: -std=c++17 -O3 -Wall -Wno-attributes -Wno-unused-variable -fno-strict-aliasing
#include <string.h>
#include "emu.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/layaapp/laya/metal"
)

// The C mirror of metal.Dispatch must have the same size (field offsets are asserted in emu.h
// and device.go against the same constants).
var _ [unsafe.Sizeof(metal.Dispatch{}) - C.sizeof_emu_dispatch]byte
var _ [C.sizeof_emu_dispatch - unsafe.Sizeof(metal.Dispatch{})]byte

// seed is the emulator's seed; seedErr a LAYA_EMU_SEED that did not parse, reported by every Run.
var seed, seedErr = func() (uint64, error) {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("LAYA_EMU_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			return 0, fmt.Errorf("emu: LAYA_EMU_SEED=%q is not an unsigned integer", v)
		}
	}
	C.emu_set_seed(C.uint64_t(s))
	return s, nil
}()

// Seed returns the seed of this process's emulator: the order in which threadgroups and threads
// run and the errors fast math adds derive from it, so that a failure under one order shows.
// It is random per process unless LAYA_EMU_SEED sets it; that seed and the same sequence of
// runs repeat a run exactly.
func Seed() uint64 { return seed }

// Device is the emulated GPU. Buffer handles are the addresses of the memory they name.
//
// Like the GPU, it runs submitted plans asynchronously, one after another on a worker
// goroutine, so a host that writes a buffer a submitted plan still reads (instead of waiting
// first) races with the kernels here too and can see them read the new value.
//
// Every buffer ends (rounded up to 16 bytes) at an inaccessible guard page, so a kernel that
// reads or writes past the end of a buffer faults instead of silently touching a neighbour.
// For the same reason Wrap copies weights into such a buffer and makes it read-only, unlike the
// real device, which maps weights in place.
type Device struct {
	mu     sync.Mutex
	maps   map[metal.Buf]mapping
	closed bool

	// qmu guards the queue of submitted plans; idle is signalled when the worker drains it.
	qmu  sync.Mutex
	idle sync.Cond
	// queue holds copies of the plans not yet run, spare the copies' slices for reuse.
	queue, spare [][]metal.Dispatch
	// running is set while a worker goroutine drains the queue.
	running bool
	// err is the first error since the last Wait.
	err error
	// hold, when set (tests), is received from before each plan runs, so a test can act
	// while a plan is certainly in flight.
	hold chan struct{}
}

// mapping is the memory behind a handle: the whole mapped region and where the buffer starts.
type mapping struct {
	m     []byte
	start int
}

// New returns an emulated device.
func New() *Device {
	d := &Device{maps: map[metal.Buf]mapping{}}
	d.idle.L = &d.qmu
	return d
}

// guarded maps a zeroed region whose last 16-byte-rounded size bytes end at a guard page.
func (d *Device) guarded(size int) (metal.Buf, []byte, error) {
	page := os.Getpagesize()
	n := max((size+15)&^15, 16)
	span := (n + page - 1) / page * page
	m, err := syscall.Mmap(-1, 0, span+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return 0, nil, fmt.Errorf("emu: mapping %d bytes: %w", size, err)
	}
	if err := syscall.Mprotect(m[span:], syscall.PROT_NONE); err != nil {
		syscall.Munmap(m)
		return 0, nil, fmt.Errorf("emu: guard page: %w", err)
	}
	data := m[span-n : span-n+size : span-n+size]
	h := metal.Buf(uintptr(unsafe.Pointer(&m[span-n])))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.maps[h] = mapping{m, span - n}
	return h, data, nil
}

// Name is "metal-emu".
func (d *Device) Name() string { return "metal-emu" }

// NewBuffer returns a zeroed guarded buffer.
func (d *Device) NewBuffer(size int) (metal.Buf, error) {
	if size < 0 {
		return 0, fmt.Errorf("emu: buffer of %d bytes", size)
	}
	h, _, err := d.guarded(size)
	return h, err
}

// Wrap copies data into a guarded, read-only buffer.
func (d *Device) Wrap(data []byte) (metal.Arg, error) {
	if len(data) == 0 {
		return metal.Arg{}, errors.New("emu: wrap of empty data")
	}
	h, buf, err := d.guarded(len(data))
	if err != nil {
		return metal.Arg{}, err
	}
	copy(buf, data)
	d.mu.Lock()
	m := d.maps[h].m
	d.mu.Unlock()
	if err := syscall.Mprotect(m[:len(m)-os.Getpagesize()], syscall.PROT_READ); err != nil {
		return metal.Arg{}, fmt.Errorf("emu: protecting weights: %w", err)
	}
	return metal.Arg{Buf: h}, nil
}

// Free unmaps a buffer.
func (d *Device) Free(b metal.Buf) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if mp, ok := d.maps[b]; ok {
		syscall.Munmap(mp.m)
		delete(d.maps, b)
	}
}

// ptr is the host address of a binding.
func (d *Device) ptr(a metal.Arg) unsafe.Pointer {
	d.mu.Lock()
	defer d.mu.Unlock()
	mp := d.maps[a.Buf]
	return unsafe.Pointer(&mp.m[mp.start+int(a.Off)])
}

// Write copies src into the buffer.
func (d *Device) Write(dst metal.Arg, src []byte) {
	if len(src) > 0 {
		C.memcpy(d.ptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)))
	}
}

// Read copies out of the buffer.
func (d *Device) Read(dst []byte, src metal.Arg) {
	if len(dst) > 0 {
		C.memcpy(unsafe.Pointer(&dst[0]), d.ptr(src), C.size_t(len(dst)))
	}
}

// Submit queues a copy of plan for the worker, which runs plans in order on the SIMT emulator.
func (d *Device) Submit(plan []metal.Dispatch) error {
	if seedErr != nil {
		return seedErr
	}
	if len(plan) == 0 {
		return nil
	}
	d.qmu.Lock()
	defer d.qmu.Unlock()
	var c []metal.Dispatch
	if n := len(d.spare); n > 0 {
		c, d.spare = d.spare[n-1][:0], d.spare[:n-1]
	}
	d.queue = append(d.queue, append(c, plan...))
	if !d.running {
		d.running = true
		go d.work()
	}
	return nil
}

// work runs the queued plans until the queue is empty.
func (d *Device) work() {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	for len(d.queue) > 0 {
		plan := d.queue[0]
		d.qmu.Unlock()
		if d.hold != nil {
			<-d.hold
		}
		err := run(plan)
		d.qmu.Lock()
		if err != nil && d.err == nil {
			d.err = err
		}
		d.queue = d.queue[:copy(d.queue, d.queue[1:])]
		d.spare = append(d.spare, plan)
		d.idle.Broadcast()
	}
	d.running = false
	d.idle.Broadcast()
}

func run(plan []metal.Dispatch) error {
	if msg := C.emu_run((*C.emu_dispatch)(unsafe.Pointer(&plan[0])), C.int(len(plan))); msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}

// Wait blocks until the submitted plans have run.
func (d *Device) Wait() error {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	for d.running {
		d.idle.Wait()
	}
	err := d.err
	d.err = nil
	return err
}

// WaitPrevious waits until at most the last submitted plan is still queued or running.
func (d *Device) WaitPrevious() error {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	for d.running && len(d.queue) > 1 {
		d.idle.Wait()
	}
	err := d.err
	d.err = nil
	return err
}

// Close waits for the submitted plans and unmaps every buffer.
func (d *Device) Close() error {
	d.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	for h, mp := range d.maps {
		syscall.Munmap(mp.m)
		delete(d.maps, h)
	}
	return nil
}

// selfTest runs the emulator's checks of its own semantics (selftest_linux.cpp).
func selfTest() error {
	if msg := C.emu_selftest(); msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}
