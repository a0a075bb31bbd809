// Package buildinfo says which Laya this binary is: the module version and the commit it was
// built from, as the Go toolchain stamps them (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Info identifies a build.
type Info struct {
	// Version is the main module's version: a tag for `go install ...@v1.2.3`, "(devel)" for a
	// build from a checkout.
	Version string `json:"version"`
	// Revision is the commit the binary was built from, Time its commit time and Modified
	// whether the tree had uncommitted changes; all empty when the build was not stamped (go
	// test, go run, -buildvcs=false, or a tree without git).
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

var read = sync.OnceValue(func() Info {
	i := Info{Version: "(unknown)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	if bi.Main.Version != "" {
		i.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
})

// Read returns this binary's build information.
func Read() Info { return read() }

// String is a one-line form for people: "v0.1.0", "(devel) 1a6cd92e1f3b (modified)", or a
// pseudo-version, which names the commit itself.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	short := i.Revision[:min(12, len(i.Revision))]
	if short != "" && !strings.Contains(i.Version, short) {
		b.WriteString(" " + short)
	}
	if i.Modified {
		b.WriteString(" (modified)")
	}
	return b.String()
}

// Key identifies the code of this binary for caches of results that depend on it (the GPU
// self-test's verdicts). A clean stamped build is its version and commit; an unstamped or
// modified one could change without either changing, so the executable's size and modification
// time are added.
func Key() string {
	i := Read()
	k := i.Version + " " + i.Revision
	if i.Revision == "" || i.Modified {
		k += " " + exeStamp()
	}
	return k
}

func exeStamp() string {
	exe, err := os.Executable()
	if err != nil {
		return "exe?"
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "exe?"
	}
	return fmt.Sprintf("%s %d %d", exe, st.Size(), st.ModTime().UnixNano())
}
