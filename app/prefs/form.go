// Package prefs converts between a Config and the string values of the Preferences window's
// controls, so that what the user typed is validated here (and tested) before it is saved.
package prefs

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/layaapp/laya/config"
)

// Form holds the controls' values as the window shows them.
type Form struct {
	Temperature   string
	TopK          string
	TopP          string
	MaxTokens     string
	Hotkey        string
	AcceptWordKey string
	Automatic     bool
	PauseMS       string
	IdleUnload    string // minutes without requests before the model is released; 0 = never
	DisabledApps  string // bundle ids separated by commas, spaces or newlines
	EnabledApps   string
	LaunchAtLogin bool
	ModelDir      string
}

// FromConfig fills a Form from c.
func FromConfig(c config.Config) Form {
	var on, off []string
	for id, enabled := range c.Apps {
		if enabled {
			on = append(on, id)
		} else {
			off = append(off, id)
		}
	}
	sort.Strings(on)
	sort.Strings(off)
	return Form{
		Temperature:   strconv.FormatFloat(c.Temperature, 'g', -1, 64),
		TopK:          strconv.Itoa(c.TopK),
		TopP:          strconv.FormatFloat(c.TopP, 'g', -1, 64),
		MaxTokens:     strconv.Itoa(c.MaxTokens),
		Hotkey:        c.Hotkey,
		AcceptWordKey: c.AcceptWordKey,
		Automatic:     c.Mode == config.ModeAutomatic,
		PauseMS:       strconv.Itoa(c.PauseMS),
		IdleUnload:    strconv.Itoa(c.IdleUnloadMinutes),
		DisabledApps:  strings.Join(off, ", "),
		EnabledApps:   strings.Join(on, ", "),
		LaunchAtLogin: c.LaunchAtLogin,
		ModelDir:      c.ModelDir,
	}
}

// Apply returns base with f's values, or every problem found, one per line, in words the
// window can show next to the Save button. Hotkeys are stored in canonical form.
func (f Form) Apply(base config.Config) (config.Config, error) {
	c := base
	var errs []error
	num := func(name, s string, dst *int) {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a whole number", name, s))
			return
		}
		*dst = v
	}
	real := func(name, s string, dst *float64) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a number", name, s))
			return
		}
		*dst = v
	}
	real("Temperature", f.Temperature, &c.Temperature)
	num("Top-k", f.TopK, &c.TopK)
	real("Top-p", f.TopP, &c.TopP)
	num("Max tokens", f.MaxTokens, &c.MaxTokens)
	num("Pause", f.PauseMS, &c.PauseMS)
	num("Unload after idle minutes", f.IdleUnload, &c.IdleUnloadMinutes)
	c.Hotkey = strings.TrimSpace(f.Hotkey)
	c.AcceptWordKey = strings.TrimSpace(f.AcceptWordKey)
	c.Mode = config.ModeHotkey
	if f.Automatic {
		c.Mode = config.ModeAutomatic
	}
	c.LaunchAtLogin = f.LaunchAtLogin
	c.ModelDir = strings.TrimSpace(f.ModelDir)
	c.Apps = map[string]bool{}
	for _, id := range splitIDs(f.EnabledApps) {
		c.Apps[id] = true
	}
	for _, id := range splitIDs(f.DisabledApps) {
		if on, dup := c.Apps[id]; dup && on {
			errs = append(errs, fmt.Errorf("%s is listed as both enabled and disabled", id))
		}
		c.Apps[id] = false
	}
	if len(errs) > 0 {
		return base, errors.Join(errs...)
	}
	if err := c.Validate(); err != nil {
		return base, err
	}
	c.Hotkey = c.HotkeySpec().String()
	c.AcceptWordKey = c.AcceptWordSpec().String()
	return c, nil
}

func splitIDs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == ';' })
}
