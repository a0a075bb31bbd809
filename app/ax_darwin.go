//go:build darwin

package main

/*
#cgo LDFLAGS: -framework AppKit -framework ApplicationServices -framework Carbon -framework ServiceManagement
#include <stdlib.h>
#include "ax_darwin.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/layaapp/laya/app/controller"
)

// axFields is controller.FocusedField over the Accessibility API.
type axFields struct{}

func (axFields) SecureInput() bool { return bool(C.layaSecureInput()) }

func (axFields) Focus() (controller.Element, error) {
	var pid C.int
	ref := C.layaAXFocused(&pid)
	if ref == nil {
		return nil, errors.New("no focused element")
	}
	if int(pid) == os.Getpid() {
		// Our own windows answer AX on the main thread, which may be waiting for us.
		C.layaAXRelease(ref)
		return nil, errors.New("Laya's own window has focus")
	}
	e := &axElement{ref: ref}
	e.info = controller.FieldInfo{
		App:         cstring(C.layaBundleID(pid)),
		ID:          uint64(C.layaAXHash(ref)),
		Role:        e.attr("AXRole"),
		Subrole:     e.attr("AXSubrole"),
		Identifier:  e.attr("AXIdentifier"),
		Placeholder: e.attr("AXPlaceholderValue"),
		Title:       e.attr("AXTitle"),
		Description: e.attr("AXDescription"),
	}
	e.info.Style = e.style()
	return e, nil
}

// style is the font of the character before the caret, which ghost text continues.
func (e *axElement) style() controller.Style {
	sel, err := e.Selection()
	if err != nil {
		return controller.Style{}
	}
	var name *C.char
	var size C.double
	if C.layaAXFont(e.ref, C.long(max(sel.Loc-1, 0)), &name, &size) != 0 {
		return controller.Style{}
	}
	return controller.Style{FontName: cstring(name), FontSize: float64(size)}
}

// axTrusted reports whether Laya has the Accessibility permission; prompt asks macOS to show
// its permission dialog.
func axTrusted(prompt bool) bool { return bool(C.layaAXTrusted(C.bool(prompt))) }

// axElement is a retained AXUIElementRef.
type axElement struct {
	ref  unsafe.Pointer
	info controller.FieldInfo
}

func (e *axElement) attr(name string) string {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return cstring(C.layaAXAttr(e.ref, cn))
}

func (e *axElement) Info() controller.FieldInfo { return e.info }

func (e *axElement) Selection() (controller.Range, error) {
	var loc, n C.long
	if C.layaAXSelection(e.ref, &loc, &n) != 0 {
		return controller.Range{}, errors.New("ax: no selected text range")
	}
	return controller.Range{Loc: int(loc), Len: int(n)}, nil
}

func (e *axElement) Length() (int, error) {
	n := C.layaAXLength(e.ref)
	if n < 0 {
		return 0, errors.New("ax: text length unavailable")
	}
	return int(n), nil
}

func (e *axElement) Text(r controller.Range) ([]uint16, error) {
	if r.Len == 0 {
		return nil, nil
	}
	buf := make([]uint16, r.Len)
	var n C.long
	if C.layaAXText(e.ref, C.long(r.Loc), C.long(r.Len), (*C.uint16_t)(unsafe.Pointer(&buf[0])), C.long(len(buf)), &n) != 0 {
		return nil, fmt.Errorf("ax: text of range %d+%d unavailable", r.Loc, r.Len)
	}
	return buf[:n], nil
}

func (e *axElement) Bounds(r controller.Range) (controller.Rect, error) {
	var out C.LayaRect
	if C.layaAXBounds(e.ref, C.long(r.Loc), C.long(r.Len), &out) != 0 {
		return controller.Rect{}, fmt.Errorf("ax: bounds of range %d+%d unavailable", r.Loc, r.Len)
	}
	return controller.Rect{X: float64(out.x), Y: float64(out.y), W: float64(out.w), H: float64(out.h)}, nil
}

func (e *axElement) SetSelectedText(text string) error {
	if e.ref == nil {
		return errors.New("ax: element is gone")
	}
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	if C.layaAXSetSelectedText(e.ref, ct) != 0 {
		return errors.New("ax: selected text not settable")
	}
	return nil
}

func (e *axElement) Close() {
	if e.ref != nil {
		C.layaAXRelease(e.ref)
		e.ref = nil
	}
}

// cstring converts and frees a malloc'd C string; NULL is "".
func cstring(s *C.char) string {
	if s == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s)
}
