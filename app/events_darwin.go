//go:build darwin

package main

/*
#include "events_darwin.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"

	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/hotkey"
)

// tapTarget receives the event tap's keys; nil until the controller exists.
var tapTarget atomic.Pointer[controller.Controller]

// tapRecorder, while set, sees every key first (the Preferences shortcut recorder) and
// reports whether it consumed it.
var tapRecorder atomic.Pointer[func(controller.Key) bool]

// startTap installs the event tap for c; false without the Accessibility permission.
func startTap(c *controller.Controller) bool {
	tapTarget.Store(c)
	return bool(C.layaTapStart())
}

// layaKeyDown runs inside the event tap's callback on the main thread: KeyDown decides from a
// snapshot and queues the key, so nothing here waits.
//
//export layaKeyDown
func layaKeyDown(code C.ushort, mods C.uint, text *C.uint16_t, n C.int) C.int {
	k := controller.Key{Code: hotkey.Key(code), Mods: hotkey.Modifier(mods)}
	if n > 0 {
		k.Text = decodeUTF16(unsafe.Slice((*uint16)(unsafe.Pointer(text)), int(n)))
	}
	if r := tapRecorder.Load(); r != nil && (*r)(k) {
		return 1
	}
	if c := tapTarget.Load(); c != nil && c.KeyDown(k) {
		return 1
	}
	return 0
}

// layaMouseDown reports a click or scroll; Dismiss only queues, so the tap is not held.
//
//export layaMouseDown
func layaMouseDown() {
	if c := tapTarget.Load(); c != nil {
		c.Dismiss()
	}
}
