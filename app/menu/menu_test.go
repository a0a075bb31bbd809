package menu

import (
	"testing"
	"time"

	"github.com/layaapp/laya/config"
)

func titles(items []Item) []string {
	var t []string
	for _, it := range items {
		if it.Separator {
			t = append(t, "---")
		} else {
			t = append(t, it.Title)
		}
	}
	return t
}

func find(t *testing.T, items []Item, title string) Item {
	t.Helper()
	for _, it := range items {
		if it.Title == title {
			return it
		}
	}
	t.Fatalf("no item %q in %q", title, titles(items))
	return Item{}
}

func TestStatus(t *testing.T) {
	for _, c := range []struct {
		s    State
		want string
	}{
		{State{Model: "laya-code", Backend: "metal"}, "laya-code · metal"},
		{State{Model: "laya-code", Backend: "cpu", LastLatency: 142 * time.Millisecond}, "laya-code · cpu · last 142 ms"},
		{State{Model: "qwen", Backend: "cpu", GPUOff: true}, "qwen · cpu (GPU failed its self-test)"},
		{State{Model: "qwen", Loading: true}, "Loading qwen…"},
		{State{Model: "qwen", LoadErr: "no such file"}, "Model failed to load: no such file"},
		{State{Model: "qwen", Backend: "cpu", Unloaded: true}, "qwen unloaded while idle · the next suggestion loads it"},
	} {
		if got := Status(c.s); got != c.want {
			t.Errorf("Status(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestBuild(t *testing.T) {
	s := State{
		Model: "laya-code", Backend: "metal", Enabled: true, Mode: config.ModeAutomatic, Trusted: true,
		Current:   "/m/qwen",
		Installed: []Installed{{Name: "laya-code", Path: ""}, {Name: "qwen", Path: "/m/qwen"}},
		Offers: []Offer{
			{ID: "qwen", Name: "qwen", SizeMB: 900},
			{ID: "big", Name: "Big Coder", SizeMB: 4608},
			{ID: "small", Name: "Small", SizeMB: 300},
			{ID: "bad", Name: "Broken", SizeMB: 10},
		},
		Downloads: map[string]Transfer{"small": {Fraction: 0.425}, "bad": {Err: "disk full"}},
	}
	items := Build(s)
	want := []string{"laya-code · metal", "---", "Disable Suggestions", "Mode", "Models", "Statistics", "---", "Preferences…", "Copy Diagnostics", "About Laya", "Quit Laya"}
	if got := titles(items); len(got) != len(want) {
		t.Fatalf("menu %q, want %q", got, want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("item %d = %q, want %q", i, got[i], want[i])
			}
		}
	}
	if items[0].Enabled || items[0].Action != None {
		t.Error("status line must be an inert label")
	}
	st := find(t, items, "Statistics").Submenu
	if st[0].Title != "No suggestions yet" || find(t, st, "Reset Statistics").Action != ResetStats {
		t.Errorf("statistics without data: %+v", st)
	}
	s.Stats = []string{"Shown 3", "Characters saved 9"}
	st = find(t, Build(s), "Statistics").Submenu
	if titles(st)[0] != "Shown 3" || titles(st)[1] != "Characters saved 9" || st[0].Action != None {
		t.Errorf("statistics lines %q", titles(st))
	}
	mode := find(t, items, "Mode").Submenu
	if find(t, mode, "Hotkey").Checked || !find(t, mode, "Automatic (after a pause)").Checked {
		t.Error("mode checkmarks wrong")
	}
	models := find(t, items, "Models").Submenu
	wantModels := []string{"laya-code", "qwen", "---", "Download Big Coder (4.5 GB)…", "Download Broken failed (disk full) — Retry", "Downloading Small… 42% — Cancel"}
	got := titles(models)
	if len(got) != len(wantModels) {
		t.Fatalf("models %q, want %q", got, wantModels)
	}
	for i := range wantModels {
		if got[i] != wantModels[i] {
			t.Errorf("model item %d = %q, want %q", i, got[i], wantModels[i])
		}
	}
	if models[0].Checked || !models[1].Checked || models[1].Arg != "/m/qwen" || models[1].Action != UseModel {
		t.Errorf("installed entries %+v %+v", models[0], models[1])
	}
	if it := find(t, models, "Downloading Small… 42% — Cancel"); it.Action != CancelDownload || it.Arg != "small" {
		t.Errorf("running download %+v", it)
	}
	if it := find(t, items, "Quit Laya"); it.Action != Quit || it.Key != "q" {
		t.Errorf("quit %+v", it)
	}
}

func TestBuildWarningsAndDisabled(t *testing.T) {
	items := Build(State{Model: "m", Backend: "cpu", Loading: true, Enabled: false, Mode: config.ModeHotkey,
		Warning: "config.toml has errors", Installed: []Installed{{Name: "m"}}})
	if it := find(t, items, "⚠︎ Allow Accessibility access…"); it.Action != Onboarding {
		t.Errorf("untrusted item %+v", it)
	}
	if it := find(t, items, "⚠︎ config.toml has errors"); it.Action != Preferences {
		t.Errorf("warning item %+v", it)
	}
	find(t, items, "Enable Suggestions")
	if m := find(t, items, "Models").Submenu; m[0].Enabled {
		t.Error("switching models while one loads must be disabled")
	}
	if m := find(t, Build(State{}), "Models").Submenu; len(m) != 1 || m[0].Title != "No models found" {
		t.Errorf("empty models submenu %q", titles(m))
	}
}

// TestInstalledGGUFHidesOffer: a catalog GGUF model installs into the directory its ID names
// and is then listed as "<id>/<file>.gguf", which must count as installed.
func TestInstalledGGUFHidesOffer(t *testing.T) {
	s := State{
		Installed: []Installed{{Name: "tiny/tiny-q4_k_m.gguf", Path: "/m/tiny/tiny-q4_k_m.gguf"}},
		Offers:    []Offer{{ID: "tiny", Name: "Tiny", SizeMB: 100}, {ID: "other", Name: "Other", SizeMB: 200}},
	}
	got := titles(find(t, Build(s), "Models").Submenu)
	want := []string{"tiny/tiny-q4_k_m.gguf", "---", "Download Other (200 MB)…"}
	if len(got) != len(want) {
		t.Fatalf("models %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("model item %d = %q, want %q", i, got[i], want[i])
		}
	}
}
