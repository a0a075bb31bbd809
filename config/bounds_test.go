package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/internal/fsutil"
)

// TestStoreBoundsFile: a config.toml that never ends (here /dev/zero) gives the defaults and an
// error at once, and the store is marked bad so nothing overwrites it.
func TestStoreBoundsFile(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	s := NewStore(path)
	start := time.Now()
	c, err := s.Load()
	if !errors.Is(err, fsutil.ErrTooLarge) {
		t.Fatalf("Load: %v, want fsutil.ErrTooLarge", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	if !reflect.DeepEqual(c, Default()) || !s.Bad() {
		t.Errorf("got %+v, bad=%v; want the defaults and a bad store", c, s.Bad())
	}
}

// TestBadFileAdviceLinux: the warning mentions a Preferences window only where one exists.
func TestBadFileAdviceLinux(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("temperature = 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewStore(path).Load()
	if err == nil {
		t.Fatal("bad file loaded")
	}
	mentions := strings.Contains(strings.ToLower(err.Error()), "preferences")
	if mentions != (runtime.GOOS == "darwin") {
		t.Errorf("on %s: %q", runtime.GOOS, err)
	}
}
