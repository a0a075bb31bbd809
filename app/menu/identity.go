package menu

import "strconv"

// ID identifies an actionable item across rebuilds by what it does: its action and argument,
// never its position or title (titles change with download progress and latency). Items
// without an action have no ID.
func (it Item) ID() string {
	if it.Action == None {
		return ""
	}
	return strconv.Itoa(int(it.Action)) + ":" + it.Arg
}

// Find returns the item with id among items and their submenus.
func Find(items []Item, id string) (Item, bool) {
	if id == "" {
		return Item{}, false
	}
	for _, it := range items {
		if it.ID() == id {
			return it, true
		}
		if found, ok := Find(it.Submenu, id); ok {
			return found, true
		}
	}
	return Item{}, false
}

// SameShape reports whether a menu showing a can show b by updating its items in place
// (titles, check marks, enabled states): the same separators, IDs and submenus, in the same
// order. A menu that is open must not be rebuilt, so an open menu whose next state has another
// shape waits until it closes.
func SameShape(a, b []Item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Separator != y.Separator || x.ID() != y.ID() || (x.Submenu == nil) != (y.Submenu == nil) ||
			!SameShape(x.Submenu, y.Submenu) {
			return false
		}
	}
	return true
}
