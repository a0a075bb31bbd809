// Package config holds Laya's preferences: their defaults, validation, and their file
// (config.toml, TOML), which is written atomically and never silently replaced when it is bad.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/layaapp/laya/hotkey"
)

// Modes: when suggestions are requested.
const (
	ModeHotkey    = "hotkey"    // only when the global hotkey is pressed
	ModeAutomatic = "automatic" // after the user pauses typing
)

// Config is the whole preference set, as stored in config.toml.
type Config struct {
	Enabled       bool    `toml:"enabled"`
	Temperature   float64 `toml:"temperature"`
	TopK          int     `toml:"top_k"`
	TopP          float64 `toml:"top_p"`
	MaxTokens     int     `toml:"max_tokens"`
	Hotkey        string  `toml:"hotkey"`
	Mode          string  `toml:"mode"`
	PauseMS       int     `toml:"pause_ms"`
	AcceptWordKey string  `toml:"accept_word_key"`
	LaunchAtLogin bool    `toml:"launch_at_login"`
	// Model names the model to load: an installed model's name or a path; "" is the bundled one.
	Model string `toml:"model"`
	// ModelDir is where downloaded models live; "" is the platform default.
	ModelDir string `toml:"model_dir"`
	// IdleUnloadMinutes releases the model after that many minutes without a request (the
	// next one reloads it); 0 keeps it loaded.
	IdleUnloadMinutes int `toml:"idle_unload_minutes"`
	// Apps enables (true) or disables (false) suggestions per app bundle id; apps not listed
	// follow Enabled.
	Apps map[string]bool `toml:"apps"`
}

// Limits on numeric preferences; the Preferences window uses the same bounds.
const (
	MaxTemperature = 2
	MaxTopK        = 1000
	MinMaxTokens   = 1
	MaxMaxTokens   = 512
	MinPauseMS     = 50
	MaxPauseMS     = 5000
	MaxIdleUnload  = 24 * 60 // minutes
)

// Default returns the preferences Laya starts with.
func Default() Config {
	return Config{
		Enabled:           true,
		Temperature:       0.2,
		TopK:              40,
		TopP:              0.95,
		MaxTokens:         32,
		Hotkey:            hotkey.Default,
		Mode:              ModeHotkey,
		PauseMS:           300,
		AcceptWordKey:     "cmd+right",
		IdleUnloadMinutes: 10,
		Apps:              map[string]bool{},
	}
}

// Validate reports every invalid value, one per line, or nil.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !(c.Temperature >= 0 && c.Temperature <= MaxTemperature) {
		add("temperature = %v: must be between 0 and %d (0 is greedy)", c.Temperature, MaxTemperature)
	}
	if c.TopK < 0 || c.TopK > MaxTopK {
		add("top_k = %d: must be between 0 (off) and %d", c.TopK, MaxTopK)
	}
	if !(c.TopP >= 0 && c.TopP <= 1) {
		add("top_p = %v: must be between 0 (off) and 1", c.TopP)
	}
	if c.MaxTokens < MinMaxTokens || c.MaxTokens > MaxMaxTokens {
		add("max_tokens = %d: must be between %d and %d", c.MaxTokens, MinMaxTokens, MaxMaxTokens)
	}
	if sp, err := hotkey.Parse(c.Hotkey); err != nil {
		add("hotkey = %q: %w", c.Hotkey, err)
	} else if err := sp.CheckGlobal(); err != nil {
		add("hotkey = %q: %w", c.Hotkey, err)
	}
	if c.Mode != ModeHotkey && c.Mode != ModeAutomatic {
		add("mode = %q: must be %q or %q", c.Mode, ModeHotkey, ModeAutomatic)
	}
	if c.PauseMS < MinPauseMS || c.PauseMS > MaxPauseMS {
		add("pause_ms = %d: must be between %d and %d", c.PauseMS, MinPauseMS, MaxPauseMS)
	}
	if sp, err := hotkey.Parse(c.AcceptWordKey); err != nil {
		add("accept_word_key = %q: %w", c.AcceptWordKey, err)
	} else if sp.Matches(hotkey.KeyTab, 0) || sp.Matches(hotkey.KeyEscape, 0) {
		add("accept_word_key = %q: Tab and Esc already accept and dismiss", c.AcceptWordKey)
	}
	if c.IdleUnloadMinutes < 0 || c.IdleUnloadMinutes > MaxIdleUnload {
		add("idle_unload_minutes = %d: must be between 0 (never) and %d", c.IdleUnloadMinutes, MaxIdleUnload)
	}
	if c.ModelDir != "" && !filepath.IsAbs(c.ModelDir) {
		add("model_dir = %q: must be an absolute path", c.ModelDir)
	}
	ids := make([]string, 0, len(c.Apps))
	for id := range c.Apps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := checkBundleID(id); err != nil {
			add("apps: %w", err)
		}
	}
	return errors.Join(errs...)
}

// checkBundleID accepts reverse-DNS bundle identifiers: the characters CFBundleIdentifier allows.
func checkBundleID(id string) error {
	if id == "" || len(id) > 255 {
		return fmt.Errorf("bundle id %q: must be 1 to 255 characters", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			return fmt.Errorf("bundle id %q: only letters, digits, '.' and '-' are allowed", id)
		}
	}
	return nil
}

// AppEnabled reports whether suggestions are on for the app with this bundle id.
func (c Config) AppEnabled(bundleID string) bool {
	if !c.Enabled {
		return false
	}
	if on, ok := c.Apps[bundleID]; ok {
		return on
	}
	return true
}

// HotkeySpec returns the parsed global hotkey of a validated Config.
func (c Config) HotkeySpec() hotkey.Spec { return mustSpec(c.Hotkey) }

// AcceptWordSpec returns the parsed accept-next-word key of a validated Config.
func (c Config) AcceptWordSpec() hotkey.Spec { return mustSpec(c.AcceptWordKey) }

func mustSpec(s string) hotkey.Spec {
	sp, err := hotkey.Parse(s)
	if err != nil {
		return hotkey.Spec{}
	}
	return sp
}

// Parse decodes and validates config.toml contents. Keys it does not know are errors, so a
// typo is reported instead of silently ignored; keys absent from data keep their defaults.
func Parse(data []byte) (Config, error) {
	c := Default()
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return Config{}, fmt.Errorf("config: unknown keys: %s", strings.Join(keys, ", "))
	}
	if c.Apps == nil {
		c.Apps = map[string]bool{}
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// Marshal encodes c as config.toml contents.
func Marshal(c Config) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Laya preferences. Edit with Laya > Preferences…, or by hand while Laya is not running.\n")
	if err := toml.NewEncoder(&b).Encode(c); err != nil {
		return nil, fmt.Errorf("config: encode: %w", err)
	}
	return b.Bytes(), nil
}

// Path returns where config.toml lives: ~/Library/Application Support/Laya on macOS,
// $XDG_CONFIG_HOME/laya (default ~/.config/laya) elsewhere.
func Path() (string, error) {
	return pathFor(runtime.GOOS, os.Getenv, os.UserHomeDir)
}

func pathFor(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	dir, err := appDir(goos, "XDG_CONFIG_HOME", ".config", getenv, home)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config.toml"), nil
}

// appDir is Laya's directory for one kind of file: Application Support on macOS, where
// configuration and data share a folder; elsewhere laya under the XDG base directory named by
// xdgVar, whose default is ~/xdgDefault.
func appDir(goos, xdgVar, xdgDefault string, getenv func(string) string, home func() (string, error)) (string, error) {
	if goos != "darwin" {
		if x := getenv(xdgVar); filepath.IsAbs(x) {
			return filepath.Join(x, "laya"), nil
		}
	}
	h, err := home()
	if err != nil {
		return "", fmt.Errorf("config: home directory: %w", err)
	}
	if goos == "darwin" {
		return filepath.Join(h, "Library", "Application Support", "Laya"), nil
	}
	return filepath.Join(h, filepath.FromSlash(xdgDefault), "laya"), nil
}

// ModelsDir returns where downloaded models live: c.ModelDir when set, else
// ~/Library/Application Support/Laya/models on macOS and $XDG_DATA_HOME/laya/models
// (default ~/.local/share/laya/models) elsewhere.
func (c Config) ModelsDir() (string, error) {
	if c.ModelDir != "" {
		return c.ModelDir, nil
	}
	return modelsDirFor(runtime.GOOS, os.Getenv, os.UserHomeDir)
}

func modelsDirFor(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	dir, err := appDir(goos, "XDG_DATA_HOME", ".local/share", getenv, home)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "models"), nil
}

// SocketPath returns where the server listens and clients connect: $LAYA_SOCKET when set, else
// laya.sock in ~/Library/Application Support/Laya on macOS and in $XDG_RUNTIME_DIR/laya (or
// ~/.cache/laya without it) elsewhere.
func SocketPath() (string, error) {
	return socketPathFor(runtime.GOOS, os.Getenv, os.UserHomeDir)
}

func socketPathFor(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	if p := getenv("LAYA_SOCKET"); p != "" {
		return p, nil
	}
	// The runtime directory is per login session and private to the user, as a socket wants;
	// the cache directory stands in where there is none.
	dir, err := appDir(goos, "XDG_RUNTIME_DIR", ".cache", getenv, home)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "laya.sock"), nil
}
