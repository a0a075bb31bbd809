package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseFile(t *testing.T) {
	src := `
temperature = 0.7
top_k = 0
top_p = 1.0
max_tokens = 64
hotkey = "cmd+shift+;"
mode = "automatic"
pause_ms = 450
accept_word_key = "opt+right"
launch_at_login = true
model = "laya-code"
model_dir = "/Users/me/models"

[apps]
"com.apple.Terminal" = false
"com.microsoft.VSCode" = true
`
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.Temperature != 0.7 || c.TopK != 0 || c.TopP != 1 || c.MaxTokens != 64 || c.Mode != ModeAutomatic ||
		c.PauseMS != 450 || !c.LaunchAtLogin || c.Model != "laya-code" || c.ModelDir != "/Users/me/models" {
		t.Errorf("decoded %+v", c)
	}
	if !c.Enabled {
		t.Error("enabled absent from file must keep its default, true")
	}
	if c.HotkeySpec().String() != "shift+cmd+;" || c.AcceptWordSpec().String() != "opt+right" {
		t.Errorf("specs %s, %s", c.HotkeySpec(), c.AcceptWordSpec())
	}
	if c.AppEnabled("com.apple.Terminal") || !c.AppEnabled("com.microsoft.VSCode") || !c.AppEnabled("org.other") {
		t.Error("per-app rules not applied")
	}
	c.Enabled = false
	if c.AppEnabled("com.microsoft.VSCode") || c.AppEnabled("org.other") {
		t.Error("global disable must win over per-app enable")
	}
}

func TestParseRejects(t *testing.T) {
	for src, frag := range map[string]string{
		`temperature = 2.5`:          "temperature",
		`temperature = -1`:           "temperature",
		`temperature = nan`:          "temperature",
		`top_k = -3`:                 "top_k",
		`top_p = 1.5`:                "top_p",
		`max_tokens = 0`:             "max_tokens",
		`max_tokens = 100000`:        "max_tokens",
		`hotkey = "shift+k"`:         "hotkey",
		`hotkey = "cmd+space"`:       "Spotlight",
		`hotkey = "ctrl+bogus"`:      "unknown key",
		`mode = "always"`:            "mode",
		`pause_ms = 5`:               "pause_ms",
		`accept_word_key = "tab"`:    "accept_word_key",
		`model_dir = "relative/dir"`: "model_dir",
		`idle_unload_minutes = -1`:   "idle_unload_minutes",
		`idle_unload_minutes = 9999`: "idle_unload_minutes",
		"[apps]\n\"bad id!\" = true": "bundle id",
		`temprature = 0.3`:           "unknown keys: temprature",
		`temperature = "hot"`:        "temperature",
		`this is not toml`:           "config:",
		"max_tokens = 0\ntop_k = -1": "top_k",
	} {
		_, err := Parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("Parse(%q) error = %v, want one mentioning %q", src, err, frag)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	c := Default()
	c.Temperature, c.TopK, c.Mode, c.PauseMS, c.IdleUnloadMinutes = 0.35, 7, ModeAutomatic, 1200, 0
	c.Apps = map[string]bool{"com.apple.Terminal": false, "com.google.Chrome": true}
	data, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(Marshal()): %v\n%s", err, data)
	}
	if got.Temperature != 0.35 || got.TopK != 7 || got.Mode != ModeAutomatic || got.PauseMS != 1200 ||
		got.IdleUnloadMinutes != 0 || len(got.Apps) != 2 || got.Apps["com.apple.Terminal"] || !got.Apps["com.google.Chrome"] {
		t.Errorf("round trip lost values:\n%s\n%+v", data, got)
	}
}

// env is a getenv over the given key, value pairs.
func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func TestPath(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	for _, c := range []struct{ goos, xdg, want string }{
		{"darwin", "/x", "/home/u/Library/Application Support/Laya/config.toml"},
		{"linux", "/x", "/x/laya/config.toml"},
		{"linux", "", "/home/u/.config/laya/config.toml"},
		{"linux", "relative", "/home/u/.config/laya/config.toml"}, // XDG spec: relative paths are invalid
	} {
		got, err := pathFor(c.goos, env("XDG_CONFIG_HOME", c.xdg), home)
		if err != nil || got != c.want {
			t.Errorf("pathFor(%s, XDG=%q) = %q, %v; want %q", c.goos, c.xdg, got, err, c.want)
		}
	}
	if _, err := pathFor("linux", env(), func() (string, error) { return "", errors.New("no home") }); err == nil {
		t.Error("missing home must be an error")
	}
}

func TestStoreMissingFile(t *testing.T) {
	s := NewStore(filepath.Join(t.TempDir(), "sub", "config.toml"))
	c, err := s.Load()
	if err != nil || s.Bad() {
		t.Fatalf("missing file: %v, bad=%v", err, s.Bad())
	}
	c.TopK = 5
	if err := s.Save(c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load()
	if err != nil || got.TopK != 5 {
		t.Fatalf("reload: %+v, %v", got, err)
	}
	// Only config.toml remains: the temporary file was renamed, not left behind.
	ents, _ := os.ReadDir(filepath.Dir(s.Path()))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only config.toml", len(ents))
	}
	c.Temperature = math.Inf(1)
	if err := s.Save(c); err == nil {
		t.Error("invalid config saved")
	}
	if got, _ := s.Load(); got.TopK != 5 {
		t.Error("a rejected save changed the file")
	}
}

func TestStoreBadFileNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	bad := []byte("temperature = 9\n# my hand edits\n")
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	s := NewStore(path)
	c, err := s.Load()
	if err == nil || !strings.Contains(err.Error(), "temperature") || !strings.Contains(err.Error(), "defaults") {
		t.Fatalf("Load of bad file: err = %v, want a warning naming the problem", err)
	}
	if c.Temperature != Default().Temperature || !s.Bad() {
		t.Fatalf("bad file must give defaults and mark the store bad: %+v", c)
	}
	if err := s.Save(c); !errors.Is(err, ErrBadFile) {
		t.Fatalf("Save over a bad file = %v, want ErrBadFile", err)
	}
	if data, _ := os.ReadFile(path); string(data) != string(bad) {
		t.Fatal("bad file was modified by a refused Save")
	}
	c.TopK = 9
	if err := s.SaveExplicit(c); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path + ".bad"); string(data) != string(bad) {
		t.Errorf("SaveExplicit must keep the bad file as config.toml.bad, got %q", data)
	}
	if got, err := s.Load(); err != nil || got.TopK != 9 || s.Bad() {
		t.Errorf("after explicit save: %+v, %v, bad=%v", got, err, s.Bad())
	}
}

func TestModelsDir(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	none := func(string) string { return "" }
	if got, _ := modelsDirFor("darwin", none, home); got != "/home/u/Library/Application Support/Laya/models" {
		t.Errorf("darwin: %q", got)
	}
	if got, _ := modelsDirFor("linux", none, home); got != "/home/u/.local/share/laya/models" {
		t.Errorf("linux: %q", got)
	}
	xdg := func(k string) string {
		if k == "XDG_DATA_HOME" {
			return "/data"
		}
		return ""
	}
	if got, _ := modelsDirFor("linux", xdg, home); got != "/data/laya/models" {
		t.Errorf("linux XDG: %q", got)
	}
	c := Default()
	c.ModelDir = "/opt/m"
	if got, err := c.ModelsDir(); err != nil || got != "/opt/m" {
		t.Errorf("explicit: %q, %v", got, err)
	}
}

func TestSocketPath(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	for _, c := range []struct {
		goos string
		env  func(string) string
		want string
	}{
		{"darwin", env("XDG_RUNTIME_DIR", "/run/user/1"), "/home/u/Library/Application Support/Laya/laya.sock"},
		{"linux", env("XDG_RUNTIME_DIR", "/run/user/1"), "/run/user/1/laya/laya.sock"},
		{"linux", env(), "/home/u/.cache/laya/laya.sock"},
		{"linux", env("XDG_RUNTIME_DIR", "run"), "/home/u/.cache/laya/laya.sock"}, // relative: invalid
		{"linux", env("LAYA_SOCKET", "/tmp/s.sock", "XDG_RUNTIME_DIR", "/run/user/1"), "/tmp/s.sock"},
		{"darwin", env("LAYA_SOCKET", "/tmp/s.sock"), "/tmp/s.sock"},
	} {
		if got, err := socketPathFor(c.goos, c.env, home); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.goos, got, err, c.want)
		}
	}
	if _, err := socketPathFor("linux", env(), func() (string, error) { return "", errors.New("no home") }); err == nil {
		t.Error("missing home must be an error")
	}
}
