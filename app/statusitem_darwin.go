//go:build darwin

package main

import (
	"github.com/progrium/macdriver/cocoa"
	"github.com/progrium/macdriver/core"

	"github.com/layaapp/laya/app/menu"
)

// statusBar is the menu-bar item; main thread only.
type statusBar struct {
	item    cocoa.NSStatusItem
	onItem  func(menu.Item)
	current []menu.Item // actionable items of the menu on screen, by tag - menuTagBase
}

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
	menuActions = func(i int) {
		if i >= 0 && i < len(s.current) {
			s.onItem(s.current[i])
		}
	}
	return s
}

// render replaces the menu with items.
func (s *statusBar) render(items []menu.Item) {
	s.current = s.current[:0]
	m := s.build(items)
	s.item.SetMenu(m)
	m.Release()
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
		mi := cocoa.NSMenuItem_Init(it.Title, actionSel, it.Key)
		mi.SetEnabled(it.Enabled)
		if it.Checked {
			mi.SetState(1) // NSControlStateValueOn
		}
		switch {
		case it.Submenu != nil:
			sub := s.build(it.Submenu)
			mi.SetSubmenu(sub)
			sub.Release()
		case it.Action != menu.None:
			mi.SetTarget(actionTarget)
			mi.SetTag_(core.NSInteger(menuTagBase + len(s.current)))
			s.current = append(s.current, it)
		}
		m.AddItem(mi)
		mi.Release()
	}
	return m
}
