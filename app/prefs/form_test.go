package prefs

import (
	"strings"
	"testing"

	"github.com/layaapp/laya/config"
)

func TestRoundTrip(t *testing.T) {
	c := config.Default()
	c.Apps = map[string]bool{"com.apple.Terminal": false, "com.b": false, "com.c": true}
	f := FromConfig(c)
	if f.DisabledApps != "com.apple.Terminal, com.b" || f.EnabledApps != "com.c" || f.Temperature != "0.2" {
		t.Errorf("form %+v", f)
	}
	got, err := f.Apply(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Apps) != 3 || got.Apps["com.b"] || !got.Apps["com.c"] || got.Temperature != 0.2 || got.TopP != 0.95 {
		t.Errorf("round trip %+v", got)
	}
}

func TestApply(t *testing.T) {
	f := FromConfig(config.Default())
	f.Temperature, f.TopK, f.MaxTokens, f.PauseMS, f.IdleUnload = " 0.5 ", "12", "100", "800", "0"
	f.Hotkey, f.AcceptWordKey, f.Automatic = "Command+Shift+Semicolon", "alt+right", true
	f.DisabledApps = "com.apple.Terminal\ncom.1password.1password; org.x"
	c, err := f.Apply(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if c.Temperature != 0.5 || c.TopK != 12 || c.MaxTokens != 100 || c.PauseMS != 800 || c.Mode != config.ModeAutomatic ||
		c.IdleUnloadMinutes != 0 {
		t.Errorf("applied %+v", c)
	}
	if c.Hotkey != "shift+cmd+;" || c.AcceptWordKey != "opt+right" {
		t.Errorf("hotkeys not canonical: %q %q", c.Hotkey, c.AcceptWordKey)
	}
	if len(c.Apps) != 3 || c.AppEnabled("com.1password.1password") {
		t.Errorf("apps %v", c.Apps)
	}
}

func TestApplyRejects(t *testing.T) {
	base := config.Default()
	for name, edit := range map[string]func(*Form){
		"Temperature": func(f *Form) { f.Temperature = "warm" },
		"top_k":       func(f *Form) { f.TopK = "-1" },
		"Max tokens":  func(f *Form) { f.MaxTokens = "1.5" },
		"hotkey":      func(f *Form) { f.Hotkey = "q" },
		"both":        func(f *Form) { f.EnabledApps, f.DisabledApps = "com.x", "com.x" },
		"bundle id":   func(f *Form) { f.DisabledApps = "bad/id" },
		"model_dir":   func(f *Form) { f.ModelDir = "models" },
		"idle":        func(f *Form) { f.IdleUnload = "-5" },
		"Unload":      func(f *Form) { f.IdleUnload = "ten" },
	} {
		f := FromConfig(base)
		edit(&f)
		got, err := f.Apply(base)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v", name, err)
		}
		if got.TopK != base.TopK || got.Hotkey != base.Hotkey || len(got.Apps) != 0 {
			t.Errorf("%s: a rejected form changed the config: %+v", name, got)
		}
	}
}
