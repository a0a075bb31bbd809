//go:build darwin

package main

/*
#include "mainq_darwin.h"
*/
import "C"

import "runtime/cgo"

// onMain runs f on the main thread after everything queued before it. It never blocks, so it
// is safe from the main thread itself.
func onMain(f func()) {
	C.layaAsyncMain(C.uintptr_t(cgo.NewHandle(f)))
}

//export layaRunMain
func layaRunMain(h C.uintptr_t) {
	hd := cgo.Handle(h)
	f := hd.Value().(func())
	hd.Delete()
	f()
}
