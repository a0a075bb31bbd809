//go:build darwin

package main

import (
	"github.com/progrium/macdriver/cocoa"
	"github.com/progrium/macdriver/core"
)

// accessibilitySettings opens System Settings at Privacy & Security > Accessibility.
const accessibilitySettings = "x-apple.systempreferences:com.apple.preference.security?Privacy_Accessibility"

const onboardingText = "Laya completes what you type in any app. To read the text around your " +
	"cursor and to type an accepted suggestion, macOS requires you to allow Laya under " +
	"Privacy & Security > Accessibility.\n\n" +
	"Laya never reads password fields, and nothing you type leaves this Mac: the model runs " +
	"on it. This window closes by itself once access is granted."

// onboardingWindow asks for the Accessibility permission; main thread only.
type onboardingWindow struct {
	win cocoa.NSWindow
}

func newOnboardingWindow() *onboardingWindow {
	const w, h = 480, 230
	win := cocoa.NSWindow_Init(core.Rect(0, 0, w, h), cocoa.NSTitledWindowMask|cocoa.NSClosableWindowMask,
		cocoa.NSBackingStoreBuffered, false)
	win.SetTitle("Allow Laya to use Accessibility")
	win.SetReleasedWhenClosed_(false)
	view := cocoa.NSView_Init(core.Rect(0, 0, w, h))
	text := cocoa.NSTextField_wrappingLabelWithString_(core.String(onboardingText))
	text.SetFrame(core.Rect(20, 70, w-40, h-90))
	view.AddSubview(text)
	open := cocoa.NSButton_buttonWithTitle_target_action_(core.String("Open System Settings"), actionTarget, actionSel)
	open.SetTag_(bindAction(func() {
		axTrusted(true) // also adds Laya to the list, so the user only flips the switch
		cocoa.NSWorkspace_sharedWorkspace().OpenURL_(core.NSURL_URLWithString_(core.String(accessibilitySettings)))
	}))
	open.SetFrame(core.Rect(w-20-190, 20, 190, 30))
	view.AddSubview(open)
	win.SetContentView(view)
	return &onboardingWindow{win: win}
}

func (o *onboardingWindow) show() {
	o.win.Center()
	cocoa.NSApp().ActivateIgnoringOtherApps(true)
	o.win.MakeKeyAndOrderFront(nil)
}

func (o *onboardingWindow) close() { o.win.OrderOut(nil) }
