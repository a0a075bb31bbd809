//go:build darwin

package main

import (
	"github.com/progrium/macdriver/cocoa"
	"github.com/progrium/macdriver/core"
	"github.com/progrium/macdriver/objc"

	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/app/prefs"
	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/hotkey"
)

// prefsWindow is the Preferences window; main thread only. It is built once and reused.
type prefsWindow struct {
	win       cocoa.NSWindow
	fields    []prefsField
	automatic cocoa.NSButton
	login     cocoa.NSButton
	status    cocoa.NSTextField
	save      func(prefs.Form) error
}

type prefsField struct {
	ctl cocoa.NSTextField
	get func(*prefs.Form) *string
}

// recordKind says whether a field has a shortcut recorder and what it accepts.
type recordKind int

const (
	recordNone   recordKind = iota
	recordGlobal            // a system-wide hotkey (hotkey.Spec.CheckGlobal)
	recordAny               // any key combination
)

const (
	recordWidth = 80
	prefsWidth  = 560
	rowHeight   = 30
	labelWidth  = 190
	fieldX      = 210
	fieldWidth  = prefsWidth - fieldX - 20
	prefsMargin = 20
)

func newPrefsWindow(save func(prefs.Form) error) *prefsWindow {
	rows := []struct {
		label  string
		get    func(*prefs.Form) *string
		record recordKind
	}{
		{"Temperature (0–2)", func(f *prefs.Form) *string { return &f.Temperature }, recordNone},
		{"Top-k (0 = off)", func(f *prefs.Form) *string { return &f.TopK }, recordNone},
		{"Top-p (0 = off)", func(f *prefs.Form) *string { return &f.TopP }, recordNone},
		{"Max tokens", func(f *prefs.Form) *string { return &f.MaxTokens }, recordNone},
		{"Hotkey", func(f *prefs.Form) *string { return &f.Hotkey }, recordGlobal},
		{"Accept next word", func(f *prefs.Form) *string { return &f.AcceptWordKey }, recordAny},
		{"Pause before suggesting (ms)", func(f *prefs.Form) *string { return &f.PauseMS }, recordNone},
		{"Unload model after idle (min, 0 = never)", func(f *prefs.Form) *string { return &f.IdleUnload }, recordNone},
		{"Disabled in apps (bundle ids)", func(f *prefs.Form) *string { return &f.DisabledApps }, recordNone},
		{"Enabled in apps (bundle ids)", func(f *prefs.Form) *string { return &f.EnabledApps }, recordNone},
		{"Model directory", func(f *prefs.Form) *string { return &f.ModelDir }, recordNone},
	}
	height := float64(prefsMargin*2 + rowHeight*(len(rows)+4))
	win := cocoa.NSWindow_Init(core.Rect(0, 0, prefsWidth, height),
		cocoa.NSTitledWindowMask|cocoa.NSClosableWindowMask, cocoa.NSBackingStoreBuffered, false)
	win.SetTitle("Laya Preferences")
	win.SetReleasedWhenClosed_(false)
	view := cocoa.NSView_Init(core.Rect(0, 0, prefsWidth, height))
	w := &prefsWindow{win: win, save: save}

	y := height - prefsMargin - rowHeight
	for _, r := range rows {
		label := cocoa.NSTextField_labelWithString_(core.String(r.label))
		label.SetFrame(core.Rect(prefsMargin, y, labelWidth-prefsMargin, 22))
		view.AddSubview(label)
		field := cocoa.NSTextField_textFieldWithString_(core.String(""))
		view.AddSubview(field)
		if r.record != recordNone {
			field.SetFrame(core.Rect(fieldX, y, fieldWidth-recordWidth-8, 22))
			btn := cocoa.NSButton_buttonWithTitle_target_action_(core.String("Record"), actionTarget, actionSel)
			global := r.record == recordGlobal
			btn.SetTag_(bindAction(func() { w.record(field, global) }))
			btn.SetFrame(core.Rect(fieldX+fieldWidth-recordWidth, y-3, recordWidth, 28))
			view.AddSubview(btn)
		} else {
			field.SetFrame(core.Rect(fieldX, y, fieldWidth, 22))
		}
		w.fields = append(w.fields, prefsField{field, r.get})
		y -= rowHeight
	}
	w.automatic = cocoa.NSButton_checkboxWithTitle_target_action_(core.String("Suggest automatically after a pause (instead of only on the hotkey)"), actionTarget, actionSel) // tag 0: toggles only
	w.automatic.SetFrame(core.Rect(fieldX-4, y, fieldWidth, 22))
	view.AddSubview(w.automatic)
	y -= rowHeight
	w.login = cocoa.NSButton_checkboxWithTitle_target_action_(core.String("Launch at login"), actionTarget, actionSel) // tag 0: toggles only
	w.login.SetFrame(core.Rect(fieldX-4, y, fieldWidth, 22))
	view.AddSubview(w.login)
	y -= rowHeight

	// Invalid values are rejected here, in red, and nothing is saved until they are fixed.
	w.status = cocoa.NSTextField_wrappingLabelWithString_(core.String(""))
	w.status.SetTextColor_(cocoa.NSColor_fromRef(objc.Get("NSColor").Get("systemRedColor")))
	w.status.SetFrame(core.Rect(prefsMargin, prefsMargin+rowHeight, prefsWidth-2*prefsMargin, rowHeight*1.5))
	view.AddSubview(w.status)

	saveBtn := cocoa.NSButton_buttonWithTitle_target_action_(core.String("Save"), actionTarget, actionSel)
	saveBtn.SetTag_(bindAction(w.onSave))
	saveBtn.Set("keyEquivalent:", core.String("\r"))
	saveBtn.SetFrame(core.Rect(prefsWidth-prefsMargin-90, prefsMargin, 90, 28))
	view.AddSubview(saveBtn)
	cancelBtn := cocoa.NSButton_buttonWithTitle_target_action_(core.String("Cancel"), actionTarget, actionSel)
	cancelBtn.SetTag_(bindAction(func() {
		tapRecorder.Store(nil)
		w.win.OrderOut(nil)
	}))
	cancelBtn.SetFrame(core.Rect(prefsWidth-prefsMargin-190, prefsMargin, 90, 28))
	view.AddSubview(cancelBtn)

	win.SetContentView(view)
	return w
}

// show fills the controls from c, with warning (e.g. the config file was rejected) in red.
func (w *prefsWindow) show(c config.Config, warning string) {
	f := prefs.FromConfig(c)
	for _, pf := range w.fields {
		setText(pf.ctl, *pf.get(&f))
	}
	w.automatic.SetState_(boolState(f.Automatic))
	w.login.SetState_(boolState(f.LaunchAtLogin))
	setText(w.status, warning)
	w.win.Center()
	cocoa.NSApp().ActivateIgnoringOtherApps(true)
	w.win.MakeKeyAndOrderFront(nil)
}

func (w *prefsWindow) onSave() {
	var f prefs.Form
	for _, pf := range w.fields {
		*pf.get(&f) = pf.ctl.StringValue().String()
	}
	f.Automatic = w.automatic.State() != 0
	f.LaunchAtLogin = w.login.State() != 0
	if err := w.save(f); err != nil {
		setText(w.status, err.Error())
		return
	}
	tapRecorder.Store(nil)
	setText(w.status, "")
	w.win.OrderOut(nil)
}

func boolState(on bool) core.NSInteger {
	if on {
		return 1
	}
	return 0
}

// record captures the next key combination pressed anywhere into field, through the event
// tap (so even combinations other apps use reach it). Esc cancels.
func (w *prefsWindow) record(field cocoa.NSTextField, global bool) {
	setText(w.status, "Press the new shortcut… (Esc cancels)")
	rec := func(k controller.Key) bool {
		if k.Code == hotkey.KeyEscape && k.Mods == 0 {
			tapRecorder.Store(nil)
			onMain(func() { setText(w.status, "") })
			return true
		}
		sp, err := hotkey.FromKey(k.Code, k.Mods)
		if err == nil && global {
			err = sp.CheckGlobal()
		}
		if err != nil {
			msg := err.Error() + " — try another (Esc cancels)"
			onMain(func() { setText(w.status, msg) })
			return true
		}
		tapRecorder.Store(nil)
		onMain(func() {
			setText(field, sp.String())
			setText(w.status, "")
		})
		return true
	}
	tapRecorder.Store(&rec)
}

// setText sets a text field's string. core.String returns an owned (+1) NSString, which the
// field copies; releasing it keeps repeated updates from leaking.
func setText(f cocoa.NSTextField, text string) {
	ns := core.String(text)
	f.SetStringValue_(ns)
	ns.Release()
}
