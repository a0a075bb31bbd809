//go:build darwin

package main

/*
#include "ime_darwin.h"
*/
import "C"

// observeInputSource starts following the keyboard input source; main thread.
func observeInputSource() { C.layaObserveInputSource() }

// Composing is controller.FocusedField's input-method check (see ime_darwin.m for the signal).
func (axFields) Composing() bool { return bool(C.layaInputMethodActive()) }
