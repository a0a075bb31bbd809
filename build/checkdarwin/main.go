// Command checkdarwin type-checks Go packages as they build for macOS on Apple silicon
// (GOOS=darwin GOARCH=arm64), on any machine and without a C toolchain: cgo's C.x references
// are accepted unchecked (go/types FakeImportC), everything else is checked for real, so
// misuse of macdriver or of our own APIs in darwin-only files fails here, not on a Mac.
//
// Usage:
//
//	go run ./build/checkdarwin [-v] [packages]
//
// It exits 1 when a package of the main module has errors. Errors inside third-party or
// standard-library packages, which FakeImportC cannot always model, are tolerated and counted
// with -v.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	verbose := flag.Bool("v", false, "list tolerated errors in dependencies and a summary")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: checkdarwin [-v] [packages]")
		flag.PrintDefaults()
	}
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	r, err := Check(".", patterns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkdarwin:", err)
		os.Exit(2)
	}
	for _, e := range r.Errors {
		fmt.Fprintln(os.Stderr, e)
	}
	if *verbose {
		for _, e := range r.Tolerated {
			fmt.Fprintln(os.Stderr, "tolerated:", e)
		}
		fmt.Fprintf(os.Stderr, "checkdarwin: %d packages checked (%d of ours), %d errors, %d tolerated in dependencies\n",
			r.Packages, r.Ours, len(r.Errors), len(r.Tolerated))
	}
	if len(r.Errors) > 0 {
		os.Exit(1)
	}
}
