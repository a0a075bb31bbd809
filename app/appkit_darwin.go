//go:build darwin

package main

/*
#include "appkit_darwin.h"
*/
import "C"

import "runtime"

// AppKit must run on the process's first thread. An init func of package main runs on it
// (main itself may not, if anything before it let the goroutine move), so the lock is taken
// here.
func init() { runtime.LockOSThread() }

// installMainMenu gives Preferences' text fields the standard Edit shortcuts; main thread.
func installMainMenu() { C.layaInstallMainMenu() }

// keepAwake holds off App Nap while suggestions are enabled; main thread.
func keepAwake(on bool) { C.layaKeepAwake(C.bool(on)) }
