package buildinfo

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		i    Info
		want string
	}{
		{Info{Version: "v0.2.0"}, "v0.2.0"},
		{Info{Version: "(devel)", Revision: "1a6cd92e1f3b4c5d", Modified: true}, "(devel) 1a6cd92e1f3b (modified)"},
		{Info{Version: "(devel)", Revision: "1a6cd92e1f3b4c5d"}, "(devel) 1a6cd92e1f3b"},
		{Info{Version: "v0.0.0-20261203170436-1a6cd92e1f3b", Revision: "1a6cd92e1f3b4c5d"}, "v0.0.0-20261203170436-1a6cd92e1f3b"},
	} {
		if got := c.i.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.i, got, c.want)
		}
	}
}

// A test binary is not stamped with a commit, so its key must name the executable itself: two
// unstamped builds of different code would otherwise share cached results.
func TestKeyOfUnstampedBuild(t *testing.T) {
	i := Read()
	if i.Go != runtime.Version() {
		t.Errorf("Go %q, want %q", i.Go, runtime.Version())
	}
	if i.Revision != "" {
		t.Skipf("test binary stamped with revision %s", i.Revision)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if k := Key(); !strings.Contains(k, exe) {
		t.Errorf("key %q does not name the executable %s", k, exe)
	}
}
