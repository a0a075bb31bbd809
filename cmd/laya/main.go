// Command laya is Laya's command line: generation, tokenization, benchmarks, the completion
// server and its client, and model management, all on the same engine the app runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"sort"
)

// command is one subcommand. Each lives in its own file and registers itself from init.
type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string) error) {
	commands[name] = command{summary, run}
}

// A command returns errUsage, or flag.ErrHelp after printing its usage, for a command line
// that it or the flag package has already described on stderr: laya exits 2 without repeating
// it. errHelp is the usage asked for with -h: exit 0.
var (
	errUsage = errors.New("usage error")
	errHelp  = errors.New("help requested")
)

// parseFlags parses args into fs: errHelp for -h or --help, errUsage for any other mistake,
// which the flag package has printed with the usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	switch err := fs.Parse(args); {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return errHelp
	}
	return errUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: laya <command> [flags]   (laya <command> -h for its flags)\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// socketUsage describes the default socket of this OS, for --socket.
func socketUsage() string {
	def := "$XDG_RUNTIME_DIR/laya/laya.sock, or ~/.cache/laya/laya.sock without it"
	if runtime.GOOS == "darwin" {
		def = "~/Library/Application Support/Laya/laya.sock"
	}
	return "the server's Unix socket (default: $LAYA_SOCKET, else " + def + ")"
}

func main() {
	// The engine logs what the user should know but need not act on (a GPU that failed its
	// self-test), as a laya: line like the commands' own messages.
	log.SetFlags(0)
	log.SetPrefix("laya: ")
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit status: 0, 1 for a failure, 2 for a
// command line that is wrong, 130 for an interrupt (as a shell reports SIGINT).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "laya: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	case errors.Is(err, context.Canceled):
		// Ctrl-C: the user knows; what was generated has been printed.
		return 130
	}
	fmt.Fprintf(stderr, "laya %s: %v\n", args[0], err)
	return 1
}
