//go:build darwin

package main

import (
	"github.com/progrium/macdriver/core"
	"github.com/progrium/macdriver/objc"
)

// Controls and menu items send "perform:" to one target object; the sender's tag selects the
// Go function. Window controls keep their tags for the app's lifetime; menu items get tags at
// or above menuTagBase, renumbered on every rebuild.
const menuTagBase = 1 << 20

var (
	actionTarget objc.Object
	actionSel    = objc.Sel("perform:")
	fixedActions []func()  // main thread only
	menuActions  func(int) // current menu's handler, by index
)

func init() {
	cls := objc.NewClass("LayaActionTarget", "NSObject")
	cls.AddMethod("perform:", func(_, sender objc.Object) {
		tag := int(sender.Get("tag").Int())
		switch {
		case tag >= menuTagBase:
			if menuActions != nil {
				menuActions(tag - menuTagBase)
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
