//go:build darwin

package main

import (
	"github.com/progrium/macdriver/cocoa"
	"github.com/progrium/macdriver/core"
	"github.com/progrium/macdriver/objc"

	"github.com/layaapp/laya/app/menu"
)

// statusBar is the menu-bar item; main thread only.
//
// AppKit runs main-queue blocks while a menu is open (download progress, suggestions), so the
// menu is never rebuilt while open (NSMenuDelegate menuWillOpen:/menuDidClose:): a state of the
// same shape updates titles in place, another shape waits for the menu to close. Each item
// carries its menu.Item ID as representedObject, so a click runs the action it showed however
// the state moved meanwhile.
type statusBar struct {
	item    cocoa.NSStatusItem
	onItem  func(menu.Item)
	root    cocoa.NSMenu
	shown   []menu.Item // what root shows
	pending []menu.Item // the newest state, while the menu is open and of another shape
	open    bool
}

// menuDelegate routes NSMenuDelegate calls to the one status bar.
var menuDelegate objc.Object

func newStatusBar(iconPath string, onItem func(menu.Item)) *statusBar {
	item := cocoa.NSStatusBar_System().StatusItemWithLength(cocoa.NSVariableStatusItemLength)
	item.Retain()
	img := cocoa.NSImage_InitWithURL(core.NSURL_fileURLWithPath_(core.String(iconPath)))
	if img.Pointer() != 0 {
		// A template image is drawn in the menu bar's own colour, light or dark.
		img.SetTemplate(true)
		img.SetSize(core.Size(18, 18))
		item.Button().SetImage(img)
	} else {
		item.Button().SetTitle("Laya")
	}
	item.Button().SetToolTip("Laya")
	s := &statusBar{item: item, onItem: onItem}
	menuActions = func(id string) {
		if it, ok := menu.Find(s.shown, id); ok {
			s.onItem(it)
		}
	}
	cls := objc.NewClass("LayaMenuDelegate", "NSObject")
	cls.AddMethod("menuWillOpen:", func(_, _ objc.Object) { s.open = true })
	cls.AddMethod("menuDidClose:", func(_, _ objc.Object) {
		s.open = false
		if s.pending != nil {
			items := s.pending
			s.pending = nil
			s.render(items)
		}
	})
	objc.RegisterClass(cls)
	menuDelegate = objc.Get("LayaMenuDelegate").Alloc().Init()
	return s
}

// render shows items: in place when the shape is unchanged, else by a new menu once the
// current one is closed.
func (s *statusBar) render(items []menu.Item) {
	if s.root.Pointer() != 0 && menu.SameShape(s.shown, items) {
		s.update(s.root, items)
		s.shown, s.pending = items, nil
		return
	}
	if s.open {
		s.pending = items
		return
	}
	m := s.build(items)
	m.SetDelegate_(menuDelegate)
	s.item.SetMenu(m)
	if s.root.Pointer() != 0 {
		s.root.Release()
	}
	s.root, s.shown = m, items // the status item retains m too; root keeps our reference
}

// build returns a retained NSMenu for items.
func (s *statusBar) build(items []menu.Item) cocoa.NSMenu {
	m := cocoa.NSMenu_New()
	m.SetAutoenablesItems(false)
	for _, it := range items {
		if it.Separator {
			m.AddItem(cocoa.NSMenuItem_Separator())
			continue
		}
		// setLook sets the title; the key string stands in for it until then.
		key := core.String(it.Key)
		mi := cocoa.NSMenuItem_alloc().InitWithTitle_action_keyEquivalent__asNSMenuItem(key, actionSel, key)
		key.Release()
		setLook(mi, it)
		switch {
		case it.Submenu != nil:
			sub := s.build(it.Submenu)
			mi.SetSubmenu(sub)
			sub.Release()
		case it.Action != menu.None:
			mi.SetTarget(actionTarget)
			mi.SetTag_(menuTag)
			id := core.String(it.ID())
			mi.SetRepresentedObject_(id) // retained by the item
			id.Release()
		}
		m.AddItem(mi)
		mi.Release()
	}
	return m
}

// update sets titles, check marks and enabled states of m's items, which have items' shape.
func (s *statusBar) update(m cocoa.NSMenu, items []menu.Item) {
	for i, it := range items {
		if it.Separator {
			continue
		}
		mi := m.ItemAtIndex_(core.NSInteger(i))
		setLook(mi, it)
		if it.Submenu != nil {
			s.update(mi.Submenu(), it.Submenu)
		}
	}
}

func setLook(mi cocoa.NSMenuItem, it menu.Item) {
	// An owned NSString per title: released once the item has copied it.
	t := core.String(it.Title)
	mi.SetTitle_(t)
	t.Release()
	mi.SetEnabled(it.Enabled)
	var state core.NSInteger // NSControlStateValueOff
	if it.Checked {
		state = 1 // NSControlStateValueOn
	}
	mi.SetState_(state)
}
