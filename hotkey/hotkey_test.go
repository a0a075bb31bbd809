package hotkey

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// eventsH holds kVK_* values transcribed from Carbon's HIToolbox/Events.h, the reference the
// key table must agree with.
var eventsH = map[string]Key{
	"a": 0x00, "s": 0x01, "d": 0x02, "f": 0x03, "h": 0x04, "g": 0x05, "z": 0x06, "x": 0x07,
	"c": 0x08, "v": 0x09, "b": 0x0B, "q": 0x0C, "w": 0x0D, "e": 0x0E, "r": 0x0F, "y": 0x10,
	"t": 0x11, "1": 0x12, "2": 0x13, "3": 0x14, "4": 0x15, "6": 0x16, "5": 0x17, "=": 0x18,
	"9": 0x19, "7": 0x1A, "-": 0x1B, "8": 0x1C, "0": 0x1D, "]": 0x1E, "o": 0x1F, "u": 0x20,
	"[": 0x21, "i": 0x22, "p": 0x23, "l": 0x25, "j": 0x26, "'": 0x27, "k": 0x28, ";": 0x29,
	"\\": 0x2A, ",": 0x2B, "/": 0x2C, "n": 0x2D, "m": 0x2E, ".": 0x2F, "`": 0x32,
	"return": 0x24, "tab": 0x30, "space": 0x31, "delete": 0x33, "escape": 0x35, "f17": 0x40,
}

func TestKeyCodesMatchEventsH(t *testing.T) {
	for name, want := range eventsH {
		sp, err := Parse("cmd+" + name)
		if err != nil {
			t.Fatalf("Parse(cmd+%s): %v", name, err)
		}
		if sp.Key != want {
			t.Errorf("%s: key code %#x, Events.h says %#x", name, sp.Key, want)
		}
	}
	// Two names on one code would make String ambiguous.
	seen := map[Key]string{}
	for name, k := range keyNames {
		if other, dup := seen[k]; dup {
			t.Errorf("keys %q and %q share code %#x", name, other, k)
		}
		seen[k] = name
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		in, canon string
		mods      Modifier
		key       Key
	}{
		{"ctrl+space", "ctrl+space", ModCtrl, 0x31},
		{"cmd+shift+;", "shift+cmd+;", ModCmd | ModShift, 0x29},
		{"opt+tab", "opt+tab", ModOpt, 0x30},
		{" Command + Option + K ", "opt+cmd+k", ModCmd | ModOpt, 0x28},
		{"alt+esc", "opt+escape", ModOpt, 0x35},
		{"control+shift+semicolon", "ctrl+shift+;", ModCtrl | ModShift, 0x29},
		{"right", "right", 0, 0x7C},
		{"⌘+→", "cmd+right", ModCmd, 0x7C},
		{"shift+=", "shift+=", ModShift, 0x18},
	}
	for _, c := range cases {
		sp, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if sp.String() != c.canon || sp.Mods != c.mods || sp.Key != c.key {
			t.Errorf("Parse(%q) = %s mods %#x key %#x; want %s %#x %#x", c.in, sp, sp.Mods, sp.Key, c.canon, c.mods, c.key)
		}
		again, err := Parse(sp.String())
		if err != nil || again != sp {
			t.Errorf("Parse(String()) of %q = %v, %v; not a round trip", c.in, again, err)
		}
	}
	// Carbon's modifier bits, from HIToolbox/Events.h.
	if ModCmd != 0x100 || ModShift != 0x200 || ModOpt != 0x800 || ModCtrl != 0x1000 {
		t.Errorf("modifier bits differ from Carbon's cmdKey/shiftKey/optionKey/controlKey")
	}
}

func TestParseErrors(t *testing.T) {
	for in, frag := range map[string]string{
		"":                               "empty",
		"ctrl+":                          "empty part",
		"ctrl++":                         "empty part",
		"ctrl+shift":                     "ends with modifier",
		"hyper+k":                        "not a modifier",
		"ctrl+ctrl+k":                    "repeated",
		"ctrl+nosuchkey":                 "unknown key",
		"ctrl+space+k":                   "not a modifier",
		"cmd+shift+🙂":                    "unknown key",
		strings.Repeat("ctrl+", 3) + "k": "repeated",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("Parse(%q) error = %v, want it to mention %q", in, err, frag)
		}
	}
}

func TestCheckGlobal(t *testing.T) {
	if err := MustParse(Default).CheckGlobal(); err != nil {
		t.Errorf("default %s: %v", Default, err)
	}
	for _, bad := range []string{"k", "shift+k", "cmd+space", "ctrl+space", "command+c", "cmd+tab", "shift+cmd+tab"} {
		if err := MustParse(bad).CheckGlobal(); err == nil {
			t.Errorf("%s accepted as a global hotkey", bad)
		}
	}
	if err := (Spec{}).CheckGlobal(); err == nil {
		t.Error("zero spec accepted")
	}
}

func TestMatches(t *testing.T) {
	sp := MustParse("cmd+right")
	if !sp.Matches(KeyRight, ModCmd) || sp.Matches(KeyRight, ModCmd|ModShift) || sp.Matches(KeyLeft, ModCmd) {
		t.Error("Matches must compare key and exact modifier set")
	}
	if (Spec{}).Matches(0, 0) {
		t.Error("zero spec matched key code 0 (the A key)")
	}
}

func TestRegisterUnsupported(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("darwin registers for real")
	}
	h := New(MustParse(Default))
	if err := h.Register(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Register = %v, want ErrUnsupported", err)
	}
	if err := New(Spec{}).Register(); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("Register of zero spec = %v, want a no-key error", err)
	}
}

func TestPressCoalesces(t *testing.T) {
	h := New(MustParse(Default))
	h.press()
	h.press() // must not block while the first is unread
	<-h.Keydown()
	select {
	case <-h.Keydown():
		t.Error("two unread presses delivered twice")
	default:
	}
}

func TestFromKey(t *testing.T) {
	sp, err := FromKey(0x29, ModCmd|ModShift) // kVK_ANSI_Semicolon
	if err != nil || sp != MustParse("cmd+shift+;") {
		t.Errorf("FromKey(;, cmd+shift) = %v, %v", sp, err)
	}
	for name, k := range keyNames {
		sp, err := FromKey(k, ModCtrl|ModOpt)
		if err != nil || sp != MustParse("ctrl+opt+"+name) {
			t.Errorf("FromKey(%#x) = %v, %v; want ctrl+opt+%s", k, sp, err, name)
		}
	}
	if _, err := FromKey(0x0A, ModCmd); err == nil { // ISO section key: no name
		t.Error("unnamed key code accepted")
	}
	if _, err := FromKey(KeySpace, 1<<16); err == nil {
		t.Error("unknown modifier bit accepted")
	}
}
