// Package hotkey parses global keyboard shortcuts such as "ctrl+shift+space" into a validated
// Spec carrying the macOS virtual key code, and registers them system-wide where the platform
// allows it (Carbon RegisterEventHotKey on macOS, which needs no extra permission).
package hotkey

import (
	"errors"
	"fmt"
	"strings"
)

// Default is the shortcut Laya ships with. Ctrl+Space is the macOS input-source switcher and
// Cmd+Space is Spotlight; Ctrl+Shift+Space has no system or common editor binding on macOS.
const Default = "ctrl+shift+space"

// Modifier is a set of modifier keys, using the bit values of Carbon's cmdKey, shiftKey,
// optionKey and controlKey so that a Spec can be handed to RegisterEventHotKey unchanged.
type Modifier uint32

// The modifier keys.
const (
	ModCmd   Modifier = 1 << 8
	ModShift Modifier = 1 << 9
	ModOpt   Modifier = 1 << 11
	ModCtrl  Modifier = 1 << 12
)

// modOrder is the canonical order modifiers are written in (Apple's menu order).
var modOrder = []struct {
	mod  Modifier
	name string
}{{ModCtrl, "ctrl"}, {ModOpt, "opt"}, {ModShift, "shift"}, {ModCmd, "cmd"}}

var modAliases = map[string]Modifier{
	"ctrl": ModCtrl, "control": ModCtrl, "⌃": ModCtrl,
	"opt": ModOpt, "option": ModOpt, "alt": ModOpt, "⌥": ModOpt,
	"shift": ModShift, "⇧": ModShift,
	"cmd": ModCmd, "command": ModCmd, "super": ModCmd, "⌘": ModCmd,
}

// Key is a macOS virtual key code (the kVK_* constants of Carbon's Events.h).
type Key uint16

// Keys Laya refers to by name in code.
const (
	KeyTab    Key = 0x30
	KeySpace  Key = 0x31
	KeyDelete Key = 0x33
	KeyEscape Key = 0x35
	KeyReturn Key = 0x24
	KeyLeft   Key = 0x7B
	KeyRight  Key = 0x7C
	KeyDown   Key = 0x7D
	KeyUp     Key = 0x7E
)

// keyNames maps canonical key names to ANSI-layout virtual key codes. Aliases are in keyAliases.
var keyNames = map[string]Key{
	"a": 0x00, "s": 0x01, "d": 0x02, "f": 0x03, "h": 0x04, "g": 0x05, "z": 0x06, "x": 0x07,
	"c": 0x08, "v": 0x09, "b": 0x0B, "q": 0x0C, "w": 0x0D, "e": 0x0E, "r": 0x0F, "y": 0x10,
	"t": 0x11, "1": 0x12, "2": 0x13, "3": 0x14, "4": 0x15, "6": 0x16, "5": 0x17, "=": 0x18,
	"9": 0x19, "7": 0x1A, "-": 0x1B, "8": 0x1C, "0": 0x1D, "]": 0x1E, "o": 0x1F, "u": 0x20,
	"[": 0x21, "i": 0x22, "p": 0x23, "l": 0x25, "j": 0x26, "'": 0x27, "k": 0x28, ";": 0x29,
	"\\": 0x2A, ",": 0x2B, "/": 0x2C, "n": 0x2D, "m": 0x2E, ".": 0x2F, "`": 0x32,
	"return": KeyReturn, "tab": KeyTab, "space": KeySpace, "delete": KeyDelete,
	"escape": KeyEscape, "forwarddelete": 0x75, "home": 0x73, "end": 0x77, "pageup": 0x74,
	"pagedown": 0x79, "left": KeyLeft, "right": KeyRight, "down": KeyDown, "up": KeyUp,
	"f1": 0x7A, "f2": 0x78, "f3": 0x63, "f4": 0x76, "f5": 0x60, "f6": 0x61, "f7": 0x62,
	"f8": 0x64, "f9": 0x65, "f10": 0x6D, "f11": 0x67, "f12": 0x6F, "f13": 0x69, "f14": 0x6B,
	"f15": 0x71, "f16": 0x6A, "f17": 0x40, "f18": 0x4F, "f19": 0x50, "f20": 0x5A,
}

var keyAliases = map[string]string{
	"enter": "return", "esc": "escape", "backspace": "delete", "del": "forwarddelete",
	"semicolon": ";", "comma": ",", "period": ".", "slash": "/", "backslash": "\\",
	"quote": "'", "grave": "`", "backtick": "`", "minus": "-", "equal": "=", "equals": "=",
	"leftbracket": "[", "rightbracket": "]", "pgup": "pageup", "pgdn": "pagedown",
	"←": "left", "→": "right", "↑": "up", "↓": "down", "␣": "space",
}

// Spec is a validated key combination.
type Spec struct {
	Mods Modifier
	Key  Key
	name string // canonical key name
}

// ErrUnsupported is returned by Register on platforms without global hotkeys.
var ErrUnsupported = errors.New("hotkey: global hotkeys are not supported on this platform")

// Parse reads a combination such as "ctrl+space", "cmd+shift+;" or "opt+tab": modifiers and
// exactly one key joined by '+', case-insensitive, with common aliases ("alt", "command",
// "esc", "enter"…). "+" itself is not a key name; write "shift+=".
func Parse(s string) (Spec, error) {
	if strings.TrimSpace(s) == "" {
		return Spec{}, errors.New("hotkey: empty shortcut")
	}
	var sp Spec
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "+")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return Spec{}, fmt.Errorf("hotkey: %q: empty part (write \"shift+=\" for the + key)", s)
		}
		if i < len(parts)-1 {
			m, ok := modAliases[p]
			if !ok {
				return Spec{}, fmt.Errorf("hotkey: %q: %q is not a modifier (ctrl, opt, shift, cmd)", s, p)
			}
			if sp.Mods&m != 0 {
				return Spec{}, fmt.Errorf("hotkey: %q: modifier %q repeated", s, p)
			}
			sp.Mods |= m
			continue
		}
		if _, ok := modAliases[p]; ok {
			return Spec{}, fmt.Errorf("hotkey: %q: ends with modifier %q; a key must come last", s, p)
		}
		if a, ok := keyAliases[p]; ok {
			p = a
		}
		k, ok := keyNames[p]
		if !ok {
			return Spec{}, fmt.Errorf("hotkey: %q: unknown key %q", s, p)
		}
		sp.Key, sp.name = k, p
	}
	return sp, nil
}

// keyByCode is keyNames inverted.
var keyByCode = func() map[Key]string {
	m := make(map[Key]string, len(keyNames))
	for name, k := range keyNames {
		m[k] = name
	}
	return m
}()

// FromKey returns the Spec for a key press, as a shortcut recorder sees it.
func FromKey(k Key, mods Modifier) (Spec, error) {
	name, ok := keyByCode[k]
	if !ok {
		return Spec{}, fmt.Errorf("hotkey: key code %#x has no name", uint16(k))
	}
	if extra := mods &^ (ModCmd | ModShift | ModOpt | ModCtrl); extra != 0 {
		return Spec{}, fmt.Errorf("hotkey: unknown modifier bits %#x", uint32(extra))
	}
	return Spec{Mods: mods, Key: k, name: name}, nil
}

// MustParse is Parse for compile-time constants; it panics on a malformed spec.
func MustParse(s string) Spec {
	sp, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return sp
}

// String returns the canonical form: modifiers in ctrl, opt, shift, cmd order, then the key.
func (s Spec) String() string {
	var b strings.Builder
	for _, m := range modOrder {
		if s.Mods&m.mod != 0 {
			b.WriteString(m.name)
			b.WriteByte('+')
		}
	}
	b.WriteString(s.name)
	return b.String()
}

// IsZero reports whether s is the zero Spec (no key).
func (s Spec) IsZero() bool { return s.name == "" }

// Matches reports whether a key event with this code and these modifiers is this combination.
func (s Spec) Matches(k Key, mods Modifier) bool {
	return s.name != "" && s.Key == k && s.Mods == mods
}

// reserved lists combinations macOS or nearly every app already owns; a global hotkey on one
// would break it everywhere.
var reserved = map[string]string{
	"cmd+space": "Spotlight", "ctrl+space": "the input source switcher",
	"ctrl+opt+space": "the input source switcher", "opt+cmd+space": "Finder search",
	"cmd+tab": "the app switcher", "shift+cmd+tab": "the app switcher", "cmd+`": "the window switcher",
	"cmd+q": "Quit", "cmd+w": "Close", "cmd+c": "Copy", "cmd+v": "Paste", "cmd+x": "Cut",
	"cmd+z": "Undo", "shift+cmd+z": "Redo", "cmd+a": "Select All", "cmd+s": "Save",
	"cmd+n": "New", "cmd+o": "Open", "cmd+p": "Print", "cmd+f": "Find", "cmd+t": "New Tab",
	"cmd+h": "Hide", "cmd+m": "Minimize", "cmd+,": "Settings", "opt+cmd+escape": "Force Quit",
	"shift+cmd+3": "screenshots", "shift+cmd+4": "screenshots", "shift+cmd+5": "screenshots",
	"ctrl+cmd+q": "Lock Screen", "ctrl+cmd+f": "full screen", "ctrl+cmd+space": "the emoji picker",
}

// CheckGlobal reports why s is unfit as a system-wide hotkey: it must use Ctrl, Opt or Cmd (a
// bare or Shift-only key would swallow ordinary typing) and must not take a combination macOS or
// nearly every app already uses.
func (s Spec) CheckGlobal() error {
	if s.IsZero() {
		return errors.New("hotkey: no key")
	}
	if s.Mods&(ModCtrl|ModOpt|ModCmd) == 0 {
		return fmt.Errorf("hotkey: %s: a global shortcut needs ctrl, opt or cmd", s)
	}
	if owner, ok := reserved[s.String()]; ok {
		return fmt.Errorf("hotkey: %s is already used by %s", s, owner)
	}
	return nil
}

// Event is one press of a registered hotkey.
type Event struct{}

// Hotkey is one registrable global shortcut. Its methods are safe for concurrent use.
type Hotkey struct {
	spec    Spec
	keydown chan Event
	//lint:ignore U1000 the darwin build's registration state; empty and unused elsewhere
	plat platformState
}

// New returns an unregistered hotkey for spec.
func New(spec Spec) *Hotkey {
	return &Hotkey{spec: spec, keydown: make(chan Event, 1)}
}

// Keydown delivers an Event per press. Presses arriving while one is still unread are merged,
// so a slow reader never blocks the system's event dispatch.
func (h *Hotkey) Keydown() <-chan Event { return h.keydown }

// Register makes the hotkey system-wide. On macOS it must not be called from the main thread
// inside applicationDidFinishLaunching: it waits for the main run loop.
func (h *Hotkey) Register() error {
	if h.spec.IsZero() {
		return errors.New("hotkey: register: no key")
	}
	return h.register()
}

// Unregister removes the system-wide registration; it is a no-op when not registered.
func (h *Hotkey) Unregister() error { return h.unregister() }

// press is called by the platform layer for each keydown.
func (h *Hotkey) press() {
	select {
	case h.keydown <- Event{}:
	default:
	}
}
