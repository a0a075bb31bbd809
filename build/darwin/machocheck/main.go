// Machocheck verifies that files are arm64 Mach-O executables for macOS with a code signature that
// matches their contents, as make check-darwin-link produces them off a Mac.
//
// Usage:
//
//	go run ./build/darwin/machocheck FILE...
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: machocheck FILE...")
		os.Exit(2)
	}
	failed := false
	for _, name := range os.Args[1:] {
		data, err := os.ReadFile(name)
		if err == nil {
			var info *Info
			if info, err = Check(data); err == nil {
				sign := "signed"
				if info.AdHoc {
					sign = "signed ad hoc"
				}
				fmt.Printf("%s: arm64 Mach-O executable for macOS %s+, %s, %d pages match the signature\n", name, info.MinOS, sign, info.Pages)
				continue
			}
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}
