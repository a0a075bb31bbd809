//go:build darwin

package main

/*
#include "qos_darwin.h"
*/
import "C"

import (
	"fmt"
	"runtime"
)

// lockInteractiveThread pins the calling goroutine to its OS thread and gives that thread the
// user-interactive QoS class, the closest macOS offers to affinity for latency-critical work.
func lockInteractiveThread() error {
	runtime.LockOSThread()
	if rc := C.layaQoSInteractive(); rc != 0 {
		return fmt.Errorf("qos: pthread_set_qos_class_self_np: error %d", int(rc))
	}
	return nil
}
