//go:build darwin

package main

/*
#cgo LDFLAGS: -framework AppKit
#include <stdlib.h>
#include "diagnostics_darwin.h"
*/
import "C"

import (
	"bytes"
	"context"
	"log"
	"unsafe"

	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/internal/doctor"
)

// copyDiagnostics puts laya doctor's report, with what only the app knows (its permissions, its
// warm model), on the pasteboard. It loads and times no model. Not on the main thread: the
// report dials the app's own server and lists the models on disk.
func (a *app) copyDiagnostics() {
	a.mu.Lock()
	tap, loadErr := a.state.Trusted, a.state.LoadErr
	a.mu.Unlock()
	r := doctor.Collect(context.Background(), doctor.Options{
		App:           &doctor.AppState{AccessibilityTrusted: axTrusted(false), EventTap: tap},
		AppModel:      a.eng.modelInfo(),
		AppModelError: loadErr,
	})
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		log.Printf("diagnostics: %v", err)
		return
	}
	text := C.CString(b.String())
	defer C.free(unsafe.Pointer(text))
	if !C.layaCopyText(text) {
		log.Print("diagnostics: the pasteboard refused the report")
	}
}

// modelInfo describes the loaded model; nil while none is (loading, failed, released while idle).
func (h *engineHost) modelInfo() *engine.Info {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.model == nil {
		return nil
	}
	i := h.model.Info()
	return &i
}
