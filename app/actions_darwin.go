//go:build darwin

package main

import (
	"github.com/progrium/macdriver/core"
	"github.com/progrium/macdriver/objc"
)

// Controls and menu items send "perform:" to one target object. A window control's tag selects
// its Go function, for the app's lifetime. Status-menu items all carry menuTag, and their
// representedObject holds the menu.Item ID, which stays right however often the menu changes.
const menuTag = 1 << 20

var (
	actionTarget objc.Object
	actionSel    = objc.Sel("perform:")
	fixedActions []func()        // main thread only
	menuActions  func(id string) // the status menu's handler
)

func init() {
	cls := objc.NewClass("LayaActionTarget", "NSObject")
	cls.AddMethod("perform:", func(_, sender objc.Object) {
		tag := int(sender.Get("tag").Int())
		switch {
		case tag == menuTag:
			if menuActions != nil {
				menuActions(sender.Get("representedObject").String())
			}
		case tag > 0 && tag <= len(fixedActions):
			fixedActions[tag-1]()
		}
	})
	objc.RegisterClass(cls)
	actionTarget = objc.Get("LayaActionTarget").Alloc().Init()
}

// bindAction registers f and returns the tag to give the control; main thread only.
func bindAction(f func()) core.NSInteger {
	fixedActions = append(fixedActions, f)
	return core.NSInteger(len(fixedActions))
}
