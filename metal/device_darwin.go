//go:build darwin && arm64

package metal

/*
#cgo CFLAGS: -fobjc-arc
#cgo LDFLAGS: -framework Metal -framework Foundation
#include <stdlib.h>
#include "device_darwin.h"
*/
import "C"

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

//go:embed kernels/*.metal
var kernelFS embed.FS

// mtlDevice is the Apple GPU. The Metal device, queue and compiled pipelines are shared by the
// whole process; each Device owns the buffers it made.
type mtlDevice struct {
	name string
	// stream holds the command buffers submitted since the last Wait (mtl_stream_new).
	stream unsafe.Pointer
	mu     sync.Mutex
	owned  []Buf
	pinner runtime.Pinner
	closed bool
}

// kernelSource is every kernel file in compile order, as one Metal source.
func kernelSource() (string, error) {
	var b strings.Builder
	for _, name := range kernelSources {
		src, err := kernelFS.ReadFile("kernels/" + name)
		if err != nil {
			return "", err
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// OpenDevice opens the system's default Metal GPU, compiling the kernels on first use.
func OpenDevice() (Device, error) {
	src, err := kernelSource()
	if err != nil {
		return nil, fmt.Errorf("metal: kernel sources: %w", err)
	}
	csrc := C.CString(src)
	defer C.free(unsafe.Pointer(csrc))
	// C strings, kept as unsafe.Pointer: a Go array of C pointers may be passed to C.
	names := make([]unsafe.Pointer, len(kernelNames))
	for i, n := range kernelNames {
		names[i] = unsafe.Pointer(C.CString(n))
		defer C.free(names[i])
	}
	if msg := C.mtl_init(csrc, (**C.char)(unsafe.Pointer(&names[0])), C.int(len(names))); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return nil, fmt.Errorf("metal: %s", C.GoString(msg))
	}
	name, _ := deviceName()
	return &mtlDevice{name: name, stream: C.mtl_stream_new()}, nil
}

// deviceName is the default GPU's name and highest Apple GPU family, "" without a device.
func deviceName() (string, int) {
	var family C.int
	p := C.mtl_device_name(&family)
	if p == nil {
		return "", 0
	}
	defer C.free(unsafe.Pointer(p))
	return C.GoString(p), int(family)
}

// Name is the GPU's name, e.g. "Apple M2".
func (d *mtlDevice) Name() string { return d.name }

func (d *mtlDevice) keep(h C.uint64_t, what string) (Buf, error) {
	if h == 0 {
		return 0, fmt.Errorf("metal: allocating %s failed", what)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owned = append(d.owned, Buf(h))
	return Buf(h), nil
}

// NewBuffer returns a zeroed shared-storage buffer.
func (d *mtlDevice) NewBuffer(size int) (Buf, error) {
	if size < 0 {
		return 0, fmt.Errorf("metal: buffer of %d bytes", size)
	}
	return d.keep(C.mtl_new_buffer(C.size_t(size)), fmt.Sprintf("a %d-byte buffer", size))
}

// Wrap exposes data in place when noCopyRange allows, keeping it pinned (a no-op for mmapped
// weights) while the GPU buffer refers to it, and copies it otherwise.
func (d *mtlDevice) Wrap(data []byte) (Arg, error) {
	if len(data) == 0 {
		return Arg{}, errors.New("metal: wrap of empty data")
	}
	p := unsafe.Pointer(&data[0])
	what := fmt.Sprintf("%d weight bytes", len(data))
	if _, size, off, ok := noCopyRange(uintptr(p), len(data), uintptr(os.Getpagesize())); ok {
		if h := C.mtl_wrap_nocopy(p, C.uint64_t(off), C.size_t(size)); h != 0 {
			d.mu.Lock()
			d.pinner.Pin(p)
			d.mu.Unlock()
			b, err := d.keep(h, what)
			return Arg{b, uint64(off)}, err
		}
	}
	b, err := d.keep(C.mtl_wrap_copy(p, C.size_t(len(data))), what)
	return Arg{Buf: b}, err
}

// Free releases a buffer this device made.
func (d *mtlDevice) Free(b Buf) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, h := range d.owned {
		if h == b {
			C.mtl_free(C.uint64_t(b))
			d.owned = append(d.owned[:i], d.owned[i+1:]...)
			return
		}
	}
}

// Write copies src into the buffer's shared memory.
func (d *mtlDevice) Write(dst Arg, src []byte) {
	if len(src) > 0 {
		C.mtl_write(C.uint64_t(dst.Buf), C.uint64_t(dst.Off), unsafe.Pointer(&src[0]), C.size_t(len(src)))
	}
}

// Read copies out of the buffer's shared memory.
func (d *mtlDevice) Read(dst []byte, src Arg) {
	if len(dst) > 0 {
		C.mtl_read(C.uint64_t(src.Buf), C.uint64_t(src.Off), unsafe.Pointer(&dst[0]), C.size_t(len(dst)))
	}
}

// Submit encodes the whole step in one cgo call and commits it in command buffers of at most
// 64 dispatches, without waiting.
func (d *mtlDevice) Submit(plan []Dispatch) error {
	if len(plan) == 0 {
		return nil
	}
	return cError(C.mtl_submit(d.stream, (*C.mtl_dispatch)(unsafe.Pointer(&plan[0])), C.int(len(plan))))
}

// Wait waits for every command buffer submitted since the last Wait.
func (d *mtlDevice) Wait() error { return cError(C.mtl_wait(d.stream)) }

// WaitPrevious waits for every command buffer submitted before the last Submit.
func (d *mtlDevice) WaitPrevious() error { return cError(C.mtl_wait_previous(d.stream)) }

// cError converts and frees an error string from the C side.
func cError(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New(C.GoString(msg))
}

// Close waits for the submitted work and releases every buffer this device made; the
// process-wide device and pipelines stay.
func (d *mtlDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	err := d.Wait()
	C.mtl_stream_free(d.stream)
	for _, h := range d.owned {
		C.mtl_free(C.uint64_t(h))
	}
	d.owned = nil
	d.pinner.Unpin()
	return err
}
