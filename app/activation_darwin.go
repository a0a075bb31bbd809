//go:build darwin

package main

/*
#include "activation_darwin.h"
*/
import "C"

// observeActivation dismisses suggestions whenever another app becomes active.
func observeActivation() { C.layaObserveActivation() }

//export layaAppActivated
func layaAppActivated() {
	if c := tapTarget.Load(); c != nil {
		c.Dismiss()
	}
}
