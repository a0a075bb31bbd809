package privacy

import (
	"slices"
	"sort"
	"testing"
)

var targets = []Target{{"linux", "amd64"}, {"darwin", "arm64"}}

func TestModuleReachesNetworkOnlyThroughDownload(t *testing.T) {
	r, err := Check("../..", targets)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Violations {
		t.Errorf("%v", v)
	}
	// The check must have seen the module itself, or passing it proves nothing.
	for _, p := range []string{"/cmd/laya", "/models", "/internal/privacy"} {
		if !slices.Contains(r.Packages, r.Module+p) {
			t.Errorf("package %s%s was not checked; checked %v", r.Module, p, r.Packages)
		}
	}
	if slices.Contains(r.Packages, r.Module+"/"+Allowed) {
		t.Errorf("%s is exempt but was checked", Allowed)
	}
}

func TestCheckCatchesViolations(t *testing.T) {
	r, err := Check("testdata/badmod", targets)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.String())
	}
	want := []string{
		"example.com/badmod/direct (linux/amd64): imports net/http",
		"example.com/badmod/direct (darwin/arm64): imports net/http",
		"example.com/badmod/transitive (linux/amd64): imports net/http through example.com/badmod/direct",
		"example.com/badmod/transitive (darwin/arm64): imports net/http through example.com/badmod/direct",
		"example.com/badmod/viastd (linux/amd64): imports net/http through expvar",
		"example.com/badmod/viastd (darwin/arm64): imports net/http through expvar",
		"example.com/badmod/darwinonly (darwin/arm64): imports net/http",
		`dialer/dialer.go:12 (linux/amd64): net.Dial with a network other than the literal "unix"`,
		`dialer/dialer.go:13 (linux/amd64): net.DialTimeout with a network other than the literal "unix"`,
		`dialer/dialer.go:14 (linux/amd64): DialContext with a network other than the literal "unix"`,
		`dialer/dialer.go:16 (linux/amd64): Dial with a network other than the literal "unix"`,
		`dialer/dialer.go:17 (linux/amd64): calls net.DialTCP`,
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", join(got), join(want))
	}
}

func join(s []string) string {
	out := ""
	for _, x := range s {
		out += "  " + x + "\n"
	}
	return out
}
