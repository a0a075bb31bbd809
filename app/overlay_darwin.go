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
	ghostAlpha              = 0.55   // of the label colour: readable, clearly not real text
	minFont, maxFont        = 10, 32 // points, when the caret height suggests a size
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
	label.SetTextColor_(cocoa.NSColor_fromRef(objc.Get("NSColor").Get("labelColor").Send("colorWithAlphaComponent:", ghostAlpha)))
	label.SetDrawsBackground_(false)
	label.SetBezeled_(false)
	panel.SetContentView(label)
	return &overlay{panel: panel, label: label}
}

func (o *overlay) Show(text string, at controller.Rect, st controller.Style) {
	onMain(func() {
		size := st.FontSize
		if size <= 0 {
			size = min(max(at.H*0.8, minFont), maxFont)
		}
		font := cocoa.NSFont_systemFontOfSize_(core.CGFloat(size))
		if st.FontName != "" {
			if f := cocoa.NSFont_fontWithName_size_(core.String(st.FontName), core.CGFloat(size)); f.Pointer() != 0 {
				font = f
			}
		}
		o.label.SetFont_(font)
		o.label.SetStringValue_(core.String(text))
		fit := o.label.FittingSize()
		// Align the first line's top with the caret's top; further lines hang below.
		o.panel.SetFrameDisplay(core.Rect(at.X, at.Y+at.H-float64(fit.Height), float64(fit.Width), float64(fit.Height)), true)
		o.panel.OrderFront(nil)
	})
}

func (o *overlay) Hide() {
	onMain(func() { o.panel.OrderOut(nil) })
}
