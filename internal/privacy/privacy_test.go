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
	for _, p := range []string{"/cmd/laya", "/models", "/internal/privacy", "/server/httpapi"} {
		if !slices.Contains(r.Packages, r.Module+p) {
			t.Errorf("package %s%s was not checked; checked %v", r.Module, p, r.Packages)
		}
	}
	if slices.Contains(r.Packages, r.Module+"/"+Allowed) {
		t.Errorf("%s is exempt but was checked", Allowed)
	}
}

// TestCheckCatchesViolations runs the check on a module made to break the rule in every way
// it knows, next to packages that only serve or dial a Unix socket (which must pass).
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
		`direct/direct.go:7 (linux/amd64): uses http.Get (client-side HTTP)`,
		`darwinonly/fetch_darwin.go:6 (darwin/arm64): uses http.DefaultClient (client-side HTTP)`,
		"example.com/badmod/viastd (linux/amd64): imports net/smtp, a network client",
		"example.com/badmod/viastd (darwin/arm64): imports net/smtp, a network client",
		`lib/lib.go:8 (linux/amd64): uses http.Post (client-side HTTP), reached through example.com/badmod/vialib`,
		`httpclient/httpclient.go:13 (linux/amd64): uses http.Client (client-side HTTP)`,
		`httpclient/httpclient.go:14 (linux/amd64): uses http.NewRequestWithContext (client-side HTTP)`,
		`httpclient/httpclient.go:16 (linux/amd64): calls tls.Dial`,
		`httpclient/httpclient.go:17 (linux/amd64): calls net.ListenUDP, a packet socket that can send anywhere`,
		`httpclient/httpclient.go:18 (linux/amd64): net.ListenPacket with a network other than the literal "unixgram"`,
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
