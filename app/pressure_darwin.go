//go:build darwin

package main

/*
#include "pressure_darwin.h"
*/
import "C"

import (
	"sync/atomic"

	"github.com/layaapp/laya/app/controller"
)

var pressureIdle atomic.Pointer[controller.Idle]

// observeMemoryPressure releases the model through idle when the system runs short of memory.
func observeMemoryPressure(idle *controller.Idle) {
	pressureIdle.Store(idle)
	C.layaObserveMemoryPressure()
}

// layaMemoryPressure runs on the main queue; the release waits for the engine thread, so it
// goes to a goroutine.
//
//export layaMemoryPressure
func layaMemoryPressure() {
	if idle := pressureIdle.Load(); idle != nil {
		go idle.Pressure()
	}
}
