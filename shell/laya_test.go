// Package shell_test checks the zsh widget with a stand-in laya command: its functions with zle
// stubbed out, and a real interactive zsh driven through a pseudo-terminal (zsh's zpty). It
// needs zsh (Debian package zsh) and is skipped without it.
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

func TestQuery(t *testing.T) {
	bin, argsFile := fakeLaya(t)
	out := run(t, bin, `_laya_query "git sta"; print; _laya_query multi || print none; _laya_query ls || print none`)
	if want := "tus\nnone\nnone\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	// A line of just "-" is text: it follows "--", and laya never reads stdin for it.
	run(t, bin, `_laya_query - </dev/null || true`)
	args, _ := os.ReadFile(argsFile)
	for _, a := range []string{"complete", "--fallback=false", "--timeout\n300ms", "--app\nzsh", "--\n-"} {
		if !strings.Contains(string(args), a+"\n") {
			t.Errorf("laya called without %q:\n%s", a, args)
		}
	}
	if strings.Contains(string(args), "--stdin") {
		t.Errorf("laya asked to read stdin:\n%s", args)
	}
}

func TestAccept(t *testing.T) {
	bin, _ := fakeLaya(t)
	out := run(t, bin, `
BUFFER="git sta" CURSOR=7
_laya_show tus
print -r -- "ghost=[$POSTDISPLAY] hl=[$region_highlight]"
CURSOR=3; _laya_accept .forward-char
print -r -- "mid-line: line=[$BUFFER] ghost=[$POSTDISPLAY]"
CURSOR=7; _laya_accept .end-of-line
print -r -- "at the end: line=[$BUFFER] cursor=$CURSOR ghost=[$POSTDISPLAY] hl=[$region_highlight]"
_laya_accept .forward-char
`)
	want := "ghost=[tus] hl=[7 10 fg=8]\n" +
		"zle .forward-char --\nmid-line: line=[git sta] ghost=[tus]\n" +
		"at the end: line=[git status] cursor=10 ghost=[] hl=[]\n" +
		"zle .forward-char --\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestEditClearsGhost(t *testing.T) {
	bin, _ := fakeLaya(t)
	out := run(t, bin, `
BUFFER="git sta" CURSOR=7
_laya_show tus
BUFFER="git st" RBUFFER="x" PENDING=0
_laya_redraw
print -r -- "ghost=[$POSTDISPLAY] hl=[$region_highlight]"
`)
	if want := "ghost=[] hl=[]\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestBindings: sourcing (twice) leaves Tab as it was, and wraps the accepting widgets once,
// keeping a user's own forward-char to run when there is no suggestion.
func TestBindings(t *testing.T) {
	cmd := exec.Command(zsh(t), "-f", "-i", "-c", `bindkey '^I' menu-complete
my-forward() { print -r -- "mine" }
zle -N forward-char my-forward
source ./laya.zsh; source ./laya.zsh
bindkey '^I'; print -r -- ${widgets[forward-char]} ${widgets[_laya_orig_forward-char]} ${widgets[end-of-line]}`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	if want := "\"^I\" menu-complete\nuser:_laya_accept_forward-char user:my-forward user:_laya_accept_end-of-line\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestInteractive types into a real zsh through a pseudo-terminal: the suggestion appears
// while typing, → and End (^E, end-of-line) accept it, and Tab completes as zsh always did,
// with or without a suggestion shown.
func TestInteractive(t *testing.T) {
	z := zsh(t)
	bin, _ := fakeLaya(t)
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "usrdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	widget, err := filepath.Abs("laya.zsh")
	if err != nil {
		t.Fatal(err)
	}
	// Each line is typed, given time for the suggestion to come, then a key, then run; its
	// echo output shows what the line had become.
	driver := `
zmodload zsh/zpty || exit 3
zpty -b z "cd ${(q)HOME} && zsh -f -i"
zpty -w z "PS1='%% '; source ${(q)WIDGET}"
sleep 0.5
line() { zpty -w -n z "$1"; sleep 1; zpty -w -n z "$2"; sleep 0.3; zpty -w -n z $'\r'; sleep 0.3 }
line 'echo 1 git sta' $'\e[C'
line 'echo 2 git sta' $'\x05'
line 'echo 3 git sta' $'\t'
line 'echo 4 usrd'    $'\t'
line 'echo 5 usrd'    $'\e[C'
zpty -w z exit
sleep 0.5
while zpty -r -t z line; do print -rn -- "$line"; done
`
	cmd := exec.Command(z, "-f", "-c", driver)
	cmd.Env = append(os.Environ(), "HOME="+home, "WIDGET="+widget, "LAYA_BIN="+bin)
	raw, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, raw)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.ReplaceAll(string(raw), "\r", ""), "\n") {
		got[l] = true
	}
	for _, want := range []string{
		"1 git status", // → accepted
		"2 git status", // End accepted
		"3 git sta",    // Tab did not accept
		"4 usrdir",     // Tab completed (the slash goes with the space)
		"5 usrd",       // → without a suggestion did what it does
	} {
		if !got[want] {
			t.Errorf("no output line %q in:\n%q", want, raw)
		}
	}
}
