//go:build darwin

package main

import (
	"github.com/progrium/macdriver/cocoa"
	"github.com/progrium/macdriver/core"

	"github.com/layaapp/laya/app/menu"
)

// accessibilitySettings opens System Settings at Privacy & Security > Accessibility.
const accessibilitySettings = "x-apple.systempreferences:com.apple.preference.security?Privacy_Accessibility"

const onboardingText = "Laya completes what you type in any app. To read the text around your " +
	"cursor and to type an accepted suggestion, macOS requires you to allow Laya under " +
	"Privacy & Security > Accessibility.\n\n" +
	"Laya never reads password fields, and nothing you type leaves this Mac: the model runs " +
	"on it. This window closes by itself once access is granted."

// onboardingWindow asks for the Accessibility permission and, while menu.FirstRun has one,
// offers the recommended prose model; main thread only.
type onboardingWindow struct {
	win   cocoa.NSWindow
	text  cocoa.NSTextField
	offer cocoa.NSButton
	item  menu.Item // what offer's click does
}

// newOnboardingWindow returns the window; onItem runs the offer button's action as the
// status menu runs its items.
func newOnboardingWindow(onItem func(menu.Item)) *onboardingWindow {
	const w, h = 480, 320
	win := cocoa.NSWindow_Init(core.Rect(0, 0, w, h), cocoa.NSTitledWindowMask|cocoa.NSClosableWindowMask,
		cocoa.NSBackingStoreBuffered, false)
	win.SetTitle("Allow Laya to use Accessibility")
	win.SetReleasedWhenClosed_(false)
	view := cocoa.NSView_Init(core.Rect(0, 0, w, h))
	o := &onboardingWindow{win: win}
	o.text = cocoa.NSTextField_wrappingLabelWithString_(core.String(onboardingText))
	o.text.SetFrame(core.Rect(20, 70, w-40, h-90))
	view.AddSubview(o.text)
	open := cocoa.NSButton_buttonWithTitle_target_action_(core.String("Open System Settings"), actionTarget, actionSel)
	open.SetTag_(bindAction(func() {
		axTrusted(true) // also adds Laya to the list, so the user only flips the switch
		cocoa.NSWorkspace_sharedWorkspace().OpenURL_(core.NSURL_URLWithString_(core.String(accessibilitySettings)))
	}))
	open.SetFrame(core.Rect(w-20-190, 20, 190, 30))
	view.AddSubview(open)
	o.offer = cocoa.NSButton_buttonWithTitle_target_action_(core.String(""), actionTarget, actionSel)
	o.offer.SetTag_(bindAction(func() { onItem(o.item) }))
	o.offer.SetFrame(core.Rect(20, 20, 210, 30))
	o.offer.SetHidden_(true)
	view.AddSubview(o.offer)
	win.SetContentView(view)
	return o
}

// setOffer shows p below the Accessibility text, or hides the offer when ok is false.
func (o *onboardingWindow) setOffer(p menu.Prompt, ok bool) {
	text := onboardingText
	if ok {
		text += "\n\n" + p.Text
		t := core.String(p.Button.Title)
		o.offer.SetTitle_(t)
		t.Release()
		o.offer.SetEnabled_(p.Button.Enabled)
	}
	o.item = p.Button
	o.offer.SetHidden_(!ok)
	setText(o.text, text)
}

func (o *onboardingWindow) show() {
	o.win.Center()
	cocoa.NSApp().ActivateIgnoringOtherApps(true)
	o.win.MakeKeyAndOrderFront(nil)
}

func (o *onboardingWindow) close() { o.win.OrderOut(nil) }
