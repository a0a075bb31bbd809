//go:build darwin

package main

/*
#include <stdlib.h>
#include "events_darwin.h"
#include "paste_darwin.h"
*/
import "C"

import (
	"errors"
	"unicode/utf16"
	"unsafe"
)

// keyboard is controller.Keyboard over synthesized key events and the general pasteboard. The
// controller calls it on its worker goroutine, so neither blocks the event tap; it chunks and
// paces typing and decides when the user's clipboard comes back.
type keyboard struct{}

func (keyboard) Type(text string) error {
	u := utf16.Encode([]rune(text))
	if len(u) == 0 {
		return nil
	}
	C.layaType((*C.uint16_t)(unsafe.Pointer(&u[0])), C.long(len(u)))
	return nil
}

func (keyboard) Paste(text string) (func(), error) {
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	h := C.layaPasteBegin(ct)
	if h == nil {
		return nil, errors.New("paste: the pasteboard refused the text")
	}
	return func() { C.layaPasteRestore(h) }, nil
}

func decodeUTF16(u []uint16) string { return string(utf16.Decode(u)) }
