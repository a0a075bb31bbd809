//go:build darwin

package hotkey

/*
#cgo LDFLAGS: -framework Carbon
#include "hotkey_darwin.h"
*/
import "C"

import (
	"fmt"
	"sync"
)

// registry maps Carbon hotkey ids to hotkeys; the C handler only knows the id.
var registry struct {
	sync.Mutex
	next uint32
	byID map[uint32]*Hotkey
}

type platformState struct {
	mu  sync.Mutex
	id  uint32
	ref C.uintptr_t
}

func (h *Hotkey) register() error {
	h.plat.mu.Lock()
	defer h.plat.mu.Unlock()
	if h.plat.id != 0 {
		return nil
	}
	registry.Lock()
	registry.next++
	id := registry.next
	if registry.byID == nil {
		registry.byID = map[uint32]*Hotkey{}
	}
	registry.byID[id] = h
	registry.Unlock()

	var ref C.uintptr_t
	if st := C.layaHotkeyRegister(C.uint(h.spec.Key), C.uint(h.spec.Mods), C.uint(id), &ref); st != 0 {
		registry.Lock()
		delete(registry.byID, id)
		registry.Unlock()
		// eventHotKeyExistsErr (-9878): another app owns the combination.
		if st == -9878 {
			return fmt.Errorf("hotkey: %s is already taken by another app", h.spec)
		}
		return fmt.Errorf("hotkey: register %s: Carbon error %d", h.spec, int(st))
	}
	h.plat.id, h.plat.ref = id, ref
	return nil
}

func (h *Hotkey) unregister() error {
	h.plat.mu.Lock()
	defer h.plat.mu.Unlock()
	if h.plat.id == 0 {
		return nil
	}
	st := C.layaHotkeyUnregister(h.plat.ref)
	registry.Lock()
	delete(registry.byID, h.plat.id)
	registry.Unlock()
	h.plat.id, h.plat.ref = 0, 0
	if st != 0 {
		return fmt.Errorf("hotkey: unregister %s: Carbon error %d", h.spec, int(st))
	}
	return nil
}

//export layaHotkeyPressed
func layaHotkeyPressed(id C.uint) {
	registry.Lock()
	h := registry.byID[uint32(id)]
	registry.Unlock()
	if h != nil {
		h.press()
	}
}
