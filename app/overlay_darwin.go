//go:build darwin

package main

import (
	"github.com/progrium/macdriver/cocoa"
	"github.com/progrium/macdriver/core"
	"github.com/progrium/macdriver/objc"

	"github.com/layaapp/laya/app/controller"
)

// Style and level constants AppKit defines and macdriver v0.4.0 does not.
const (
	styleNonactivatingPanel = 1 << 7 // NSWindowStyleMaskNonactivatingPanel
	statusWindowLevel       = 25     // NSStatusWindowLevel: above full-screen apps' windows
	// The ghost colour cannot follow Laya's own appearance (the host may be a dark editor on a
	// light system), and AX does not report the host's: a mid grey reads on both white and
	// black backgrounds (contrast about 4:1 and 5:1) and is clearly not real text.
	ghostWhite, ghostAlpha = 0.5, 0.9
)

// overlay is the ghost-text panel: borderless, never key, transparent to the mouse, present on
// every Space and over full-screen apps. Its methods may be called from any thread.
type overlay struct {
	panel cocoa.NSWindow
	label cocoa.NSTextField
}

// newOverlay builds the panel; main thread only.
func newOverlay() *overlay {
	panel := cocoa.NSWindow_fromRef(objc.Get("NSPanel").Alloc()).InitWithContentRect_styleMask_backing_defer__asNSWindow(
		core.Rect(0, 0, 10, 10), core.NSUInteger(cocoa.NSBorderlessWindowMask|styleNonactivatingPanel),
		core.NSUInteger(cocoa.NSBackingStoreBuffered), false)
	panel.SetLevel(statusWindowLevel)
	panel.SetCollectionBehavior(cocoa.NSWindowCollectionBehaviorCanJoinAllSpaces |
		cocoa.NSWindowCollectionBehaviorFullScreenAuxiliary | cocoa.NSWindowCollectionBehaviorStationary |
		cocoa.NSWindowCollectionBehaviorIgnoresCycle)
	panel.SetIgnoresMouseEvents(true)
	panel.SetOpaque(false)
	panel.SetHasShadow(false)
	panel.SetBackgroundColor(cocoa.NSColor_Clear())
	panel.Set("hidesOnDeactivate:", false)
	panel.Set("becomesKeyOnlyIfNeeded:", true)

	label := cocoa.NSTextField_labelWithString_(core.String(""))
	label.SetTextColor_(cocoa.NSColor_fromRef(objc.Get("NSColor").Send("colorWithWhite:alpha:", ghostWhite, ghostAlpha)))
	label.SetDrawsBackground_(false)
	label.SetBezeled_(false)
	panel.SetContentView(label)
	return &overlay{panel: panel, label: label}
}

func (o *overlay) Show(text string, at controller.Rect, st controller.Style) {
	f := controller.GhostFont(st, at.H)
	onMain(func() {
		size := core.CGFloat(f.Size)
		var font cocoa.NSFont
		switch {
		case f.Name != "":
			name := core.String(f.Name)
			font = cocoa.NSFont_fontWithName_size_(name, size)
			name.Release()
		case f.Mono:
			font = cocoa.NSFont_fromRef(objc.Get("NSFont").Send("monospacedSystemFontOfSize:weight:", float64(f.Size), 0.0))
		}
		if font.Pointer() == 0 {
			font = cocoa.NSFont_systemFontOfSize_(size)
		}
		o.label.SetFont_(font)
		// core.String returns an owned (+1) NSString, and this runs for every streamed piece:
		// release it once the label has copied it (Cocoa's ownership rule for alloc/init).
		s := core.String(text)
		o.label.SetStringValue_(s)
		s.Release()
		fit := o.label.FittingSize()
		// Align the first line's top with the caret's top; further lines hang below.
		o.panel.SetFrameDisplay(core.Rect(at.X, at.Y+at.H-float64(fit.Height), float64(fit.Width), float64(fit.Height)), true)
		o.panel.OrderFront(nil)
	})
}

func (o *overlay) Hide() {
	onMain(func() { o.panel.OrderOut(nil) })
}
