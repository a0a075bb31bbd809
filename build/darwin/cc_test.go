// Tests of make check-darwin-link's scripts: cc, the C compiler cgo uses there, and link.sh. They
// run cc with a stand-in for zig, so they need bash but neither zig nor a macOS SDK.
package darwin

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runCC runs cc with args in dir and returns its output lines.
func runCC(t *testing.T, dir string, env []string, args ...string) ([]string, error) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cc, err := filepath.Abs("cc")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cc, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MACOS_SDK=/sdk", "LAYA_ZIG=/zig", "LAYA_STRICT_DIR=/repo")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return strings.Split(strings.TrimSpace(string(out)), "\n"), err
}

// dry returns the zig command line cc would run for args.
func dry(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := runCC(t, t.TempDir(), []string{"LAYA_CC_DRY=1"}, args...)
	if err != nil {
		t.Fatalf("cc %q: %v\n%s", args, err, strings.Join(out, "\n"))
	}
	return out
}

// hasSeq reports whether seq occurs in line, in order and adjacent.
func hasSeq(line, seq []string) bool {
	for i := range len(line) - len(seq) + 1 {
		if slices.Equal(line[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}

func TestCCFlags(t *testing.T) {
	extra, err := filepath.Abs("sdk-extra")
	if err != nil {
		t.Fatal(err)
	}
	system := [][]string{{"-iframework", "/sdk/Frameworks"}, {"-iframework", extra + "/Frameworks"}, {"-idirafter", "/sdk/include"}}
	link := [][]string{{"-F", "/sdk/Frameworks"}, {"-F", extra + "/Frameworks"}, {"-L", "/sdk/lib"}, {"-L", extra + "/lib"}}
	strict := [][]string{{"-Wall", "-Wextra", "-Werror"}}
	for _, tc := range []struct {
		name      string
		args      []string
		want, not [][]string
	}{
		{"our Obj-C", []string{"-I", "/repo/app", "-O2", "-c", "x.m"},
			append(slices.Clone(system), strict...), append(slices.Clone(link), []string{"-w"}, []string{"-Wno-unused-parameter"})},
		{"our cgo wrappers", []string{"-I", "/repo/app", "-c", "ax_darwin.cgo2.c"},
			[][]string{{"-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"}}, [][]string{{"-w"}}},
		{"a dependency", []string{"-I", "/mod/macdriver/cocoa", "-c", "x.m"},
			[][]string{{"-w"}}, strict},
		{"a directory named like ours", []string{"-I", "/repository/app", "-c", "x.m"},
			[][]string{{"-w"}}, strict},
		{"a probe", []string{"-E", "-dM", "-I", "/repo/engine/cpu", "/tmp/cgo-gcc-input-1.c"},
			system, append(slices.Clone(link), strict...)},
		{"a link", []string{"-arch", "arm64", "-o", "a.out", "go.o", "-framework", "AppKit"},
			append(slices.Clone(system), link...), strict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := dry(t, tc.args...)
			if got[0] != "/zig" || !hasSeq(got, []string{"cc", "-target", "aarch64-macos.13.0"}) {
				t.Errorf("command %q, want /zig cc -target aarch64-macos.13.0 ...", got)
			}
			if len(got) < len(tc.args) || !slices.Equal(got[len(got)-len(tc.args):], tc.args) {
				t.Errorf("command %q does not end with the arguments %q", got, tc.args)
			}
			for _, w := range tc.want {
				if !hasSeq(got, w) {
					t.Errorf("command %q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if hasSeq(got, n) {
					t.Errorf("command %q has %q", got, n)
				}
			}
		})
	}
}

func TestCCLinkNamesEachLibraryOnce(t *testing.T) {
	got := dry(t, "-o", "a.out", "go.o", "-lobjc", "-framework", "AppKit", "-lresolv", "-lobjc", "-lm", "-lresolv")
	want := []string{"-o", "a.out", "go.o", "-lobjc", "-framework", "AppKit", "-lresolv", "-lm"}
	if len(got) < len(want) || !slices.Equal(got[len(got)-len(want):], want) {
		t.Errorf("command %q, want it to end with %q", got, want)
	}
	// A compile is left as it is.
	got = dry(t, "-c", "x.c", "-lm", "-lm")
	if !slices.Equal(got[len(got)-4:], []string{"-c", "x.c", "-lm", "-lm"}) {
		t.Errorf("compile %q", got)
	}
}

func TestCCTools(t *testing.T) {
	bin := t.TempDir()
	strip := filepath.Join(bin, "llvm-strip")
	if err := os.WriteFile(strip, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")
	for tool, want := range map[string]string{"strip": strip, "dsymutil": "dsymutil"} {
		out, err := runCC(t, t.TempDir(), []string{path}, "-arch", "arm64", "--print-prog-name", tool)
		if err != nil || len(out) != 1 || out[0] != want {
			t.Errorf("--print-prog-name %s: %q, %v; want %s", tool, out, err, want)
		}
	}
}

// TestCCStrayObjects runs cc with a zig stand-in that, like zig, leaves an object named after its
// input in the working directory even when it only preprocesses.
func TestCCStrayObjects(t *testing.T) {
	zig := filepath.Join(t.TempDir(), "zig")
	script := "#!/bin/sh\nfor a; do last=$a; done\nb=$(basename -- \"$last\")\necho new > \"${b%.*}.o\"\n"
	if err := os.WriteFile(zig, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := []string{"LAYA_ZIG=" + zig}
	if _, err := runCC(t, dir, env, "-E", "-dM", "-I", "/repo/x", "/tmp/cgo-gcc-input-7.c"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCC(t, dir, env, "-###", "-x", "c", "-c", "-"); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left %q", left)
	}
	// An object that was there before is not cc's to remove.
	mine := filepath.Join(dir, "cgo-gcc-input-8.o")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runCC(t, dir, env, "-E", "-dM", "/tmp/cgo-gcc-input-8.c"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("removed an object it did not make: %v", err)
	}
}

func TestCCNeedsSDK(t *testing.T) {
	out, err := runCC(t, t.TempDir(), []string{"MACOS_SDK=", "LAYA_CC_DRY=1"}, "-c", "x.c")
	if err == nil || !strings.Contains(strings.Join(out, "\n"), "MACOS_SDK must name") {
		t.Errorf("without MACOS_SDK: %q, %v", out, err)
	}
}

// TestLinkSkipsWithoutSDK runs make check-darwin-link's script as CI does, without an SDK, and
// with an SDK directory that is not one.
func TestLinkSkipsWithoutSDK(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	run := func(sdk string) (string, error) {
		cmd := exec.Command("bash", "build/darwin/link.sh", t.TempDir())
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "MACOS_SDK="+sdk)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || out != "check-darwin-link: skipped: no macOS SDK (MACOS_SDK unset)\n" {
		t.Errorf("without MACOS_SDK: %q, %v", out, err)
	}
	out, err = run(t.TempDir())
	if err == nil || !strings.Contains(out, "has no Frameworks/Foundation.framework") {
		t.Errorf("with an empty MACOS_SDK: %q, %v", out, err)
	}
}
