// Package shell_test checks the zsh widget with a stand-in laya command. It needs zsh (Debian
// package zsh) and is skipped without it.
package shell_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func zsh(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not installed")
	}
	return p
}

func TestParses(t *testing.T) {
	if out, err := exec.Command(zsh(t), "-n", "laya.zsh").CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
}

// fakeLaya writes a laya stand-in that records its arguments and answers "tus" for a line
// ending in "git sta", "two\nlines" for "multi", and fails otherwise.
func fakeLaya(t *testing.T) (bin, argsFile string) {
	dir := t.TempDir()
	bin, argsFile = filepath.Join(dir, "laya"), filepath.Join(dir, "args")
	script := `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > "` + argsFile + `"
for last in "$@"; do :; done
case "$last" in
*"git sta") printf 'tus\n' ;;
multi) printf 'two\nlines\n' ;;
*) exit 1 ;;
esac
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argsFile
}

// run sources the widget into a non-interactive zsh, where zle is replaced by a function
// that reports which widget would run, and runs body.
func run(t *testing.T, bin, body string) string {
	t.Helper()
	script := "source ./laya.zsh\nzle() { print -r -- \"zle $*\" }\n" + body
	cmd := exec.Command(zsh(t), "-f", "-c", script)
	cmd.Env = append(os.Environ(), "LAYA_BIN="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	return string(out)
}

func TestSuggestThenAccept(t *testing.T) {
	bin, argsFile := fakeLaya(t)
	out := run(t, bin, `
LBUFFER="git sta" RBUFFER="" BUFFER="git sta"
_laya_complete
print -r -- "ghost=[$POSTDISPLAY] hl=[$region_highlight]"
_laya_complete
print -r -- "line=[$LBUFFER] ghost=[$POSTDISPLAY] hl=[$region_highlight]"
`)
	want := "ghost=[tus] hl=[7 10 fg=8]\nline=[git status] ghost=[] hl=[]\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	args, _ := os.ReadFile(argsFile)
	for _, a := range []string{"complete", "--fallback=false", "--timeout\n100ms", "--app\nzsh", "--\ngit sta"} {
		if !strings.Contains(string(args), a+"\n") {
			t.Errorf("laya called without %q:\n%s", a, args)
		}
	}
}

func TestFallsBack(t *testing.T) {
	bin, _ := fakeLaya(t)
	for name, body := range map[string]string{
		"no suggestion":    `LBUFFER="ls" RBUFFER="" BUFFER="ls"; _laya_complete`,
		"multi-line":       `LBUFFER="multi" RBUFFER="" BUFFER="multi"; _laya_complete`,
		"cursor mid-line":  `LBUFFER="git sta" RBUFFER=" -s" BUFFER="git sta -s"; _laya_complete`,
		"empty line":       `LBUFFER="  " RBUFFER="" BUFFER="  "; _laya_complete`,
		"laya not on PATH": `LAYA_BIN=/nonexistent/laya; LBUFFER="git sta" RBUFFER="" BUFFER="git sta"; _laya_complete`,
		"custom fallback":  `_laya_fallback=menu-complete; LBUFFER="ls" RBUFFER="" BUFFER="ls"; _laya_complete`,
	} {
		out := run(t, bin, body+"\nprint -r -- \"ghost=[$POSTDISPLAY]\"")
		fallback := "expand-or-complete"
		if name == "custom fallback" {
			fallback = "menu-complete"
		}
		if want := "zle " + fallback + "\nghost=[]\n"; out != want {
			t.Errorf("%s: got %q, want %q", name, out, want)
		}
	}
}

func TestEditClearsGhost(t *testing.T) {
	bin, _ := fakeLaya(t)
	out := run(t, bin, `
LBUFFER="git sta" RBUFFER="" BUFFER="git sta"
_laya_complete
BUFFER="git st" LBUFFER="git st"
_laya_redraw
print -r -- "ghost=[$POSTDISPLAY] hl=[$region_highlight]"
`)
	if want := "ghost=[] hl=[]\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestInstallsBinding(t *testing.T) {
	// Sourcing twice must not make the widget its own fallback.
	cmd := exec.Command(zsh(t), "-f", "-i", "-c", `bindkey '^I' menu-complete
source ./laya.zsh; source ./laya.zsh
bindkey '^I'; print -r -- $_laya_fallback`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	if want := "\"^I\" laya-complete\nmenu-complete\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}
