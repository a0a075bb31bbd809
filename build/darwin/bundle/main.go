// Bundle lays out Laya.app around a darwin executable, the one recipe for make app (on a Mac, which
// then signs the bundle) and make app-cross (off a Mac, where the linker's ad-hoc signature of the
// executable is the only one), and optionally zips it.
//
// Usage (from the repository root):
//
//	go run ./build/darwin/bundle -exe BIN -app build/Laya.app -version 0.1.0 -build 42 [-zip OUT.zip]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	exe := flag.String("exe", "", "the darwin executable")
	app := flag.String("app", "build/Laya.app", "the bundle to write")
	version := flag.String("version", "", "CFBundleShortVersionString")
	build := flag.String("build", "", "CFBundleVersion")
	zipTo := flag.String("zip", "", "also zip the bundle into this file")
	flag.Parse()
	if *exe == "" || *version == "" || *build == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	l := Layout{
		Exe:        *exe,
		InfoPlist:  "Info.plist",
		StatusIcon: "assets/icons/StatusIcon.png",
		AppIcon:    "assets/icons/AppIcon.png",
		Model:      "assets/models/laya-code",
		Version:    *version,
		Build:      *build,
	}
	if err := Assemble(l, *app); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
	if *zipTo == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(*zipTo), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
	if err := Zip(*app, *zipTo); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}
