// Command laya is Laya's command line: generation, tokenization, benchmarks, the completion
// server and its client, and model management, all on the same engine the app runs.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
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

func usage() {
	fmt.Fprintln(os.Stderr, "usage: laya <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
}

func main() {
	// The engine logs what the user should know but need not act on (a GPU that failed its
	// self-test), as a laya: line like the commands' own messages.
	log.SetFlags(0)
	log.SetPrefix("laya: ")
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "laya: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := c.run(os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "laya %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
