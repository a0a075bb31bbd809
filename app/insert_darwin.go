//go:build darwin

package main

/*
#include <stdlib.h>
#include "ax_darwin.h"
#include "paste_darwin.h"
*/
import "C"

import (
	"errors"
	"unicode/utf16"
	"unsafe"

	"github.com/layaapp/laya/app/controller"
)

// maxTyped is the longest text typed as key events; longer text is pasted, because typing
// it visibly lags and some apps drop events under load.
const maxTyped = 400

// pasteRestoreMS is how long the accepted text stays on the pasteboard before the user's
// clipboard comes back: long enough for the target app to handle Cmd+V.
const pasteRestoreMS = 500

// inserter puts accepted text into the focused field: through kAXSelectedText when the
// element allows it and the result verifies, else as typed keys, else by pasting.
type inserter struct{}

func (inserter) Insert(e controller.Element, text string) error {
	el, ok := e.(*axElement)
	if !ok || el.ref == nil {
		return errors.New("insert: element is gone")
	}
	units := utf16.Encode([]rune(text))
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	switch C.layaAXInsert(el.ref, ctext, C.long(len(units))) {
	case 0:
		return nil
	case -2:
		return errors.New("insert: the app changed the text in an unexpected way; not inserting twice")
	}
	if len(units) <= maxTyped {
		typeUnits(units)
		return nil
	}
	C.layaPaste(ctext, pasteRestoreMS)
	return nil
}

func decodeUTF16(u []uint16) string { return string(utf16.Decode(u)) }
