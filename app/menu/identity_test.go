package menu

import (
	"testing"
	"time"

	"github.com/layaapp/laya/config"
)

func TestIdentityAcrossRebuilds(t *testing.T) {
	s := State{Model: "laya-code", Backend: "metal", Enabled: true, Mode: config.ModeHotkey, Trusted: true,
		Offers:    []Offer{{ID: "a", Name: "A", SizeMB: 100}, {ID: "b", Name: "B", SizeMB: 200}},
		Downloads: map[string]Transfer{"a": {Fraction: 0.1}}}
	before := Build(s)
	s.Downloads = map[string]Transfer{"a": {Fraction: 0.6}}
	s.LastLatency = 12 * time.Millisecond
	after := Build(s)
	if !SameShape(before, after) {
		t.Fatal("progress and latency changed the menu's shape; it would be rebuilt while open")
	}
	// The item clicked in the old menu is found by ID in the new one, with the same action.
	for _, id := range []string{Item{Action: CancelDownload, Arg: "a"}.ID(), Item{Action: Download, Arg: "b"}.ID(),
		Item{Action: Quit}.ID(), Item{Action: ModeAutomatic}.ID()} {
		old, ok1 := Find(before, id)
		now, ok2 := Find(after, id)
		if !ok1 || !ok2 || old.Action != now.Action || old.Arg != now.Arg {
			t.Errorf("item %q: before %+v (%v), after %+v (%v)", id, old, ok1, now, ok2)
		}
	}
	// A finished download turns Cancel into Download: another shape, rebuilt once closed.
	s.Downloads = nil
	if SameShape(after, Build(s)) {
		t.Error("a different set of actions counted as the same shape")
	}
	s.Enabled = false // the toggle's title changes, not its action
	if !SameShape(Build(s), Build(State{Model: "x", Mode: config.ModeHotkey, Trusted: true,
		Offers: s.Offers, Enabled: true})) {
		t.Error("toggle title change altered the shape")
	}
	if _, ok := Find(after, ""); ok {
		t.Error("an item without an action was found")
	}
}
