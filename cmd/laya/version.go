package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/layaapp/laya/internal/buildinfo"
)

func init() {
	register("version", "print the version and commit this laya was built from", func(args []string) error {
		return runVersion(args, os.Stdout)
	})
}

func runVersion(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	i := buildinfo.Read()
	if *asJSON {
		return json.NewEncoder(w).Encode(i)
	}
	_, err := fmt.Fprintf(w, "laya %s %s\n", i, i.Go)
	return err
}
