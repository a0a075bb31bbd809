package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"strings"

	"github.com/layaapp/laya/internal/doctor"
)

func init() {
	register("doctor", "report what a bug report needs: build, machine, backends and GPU self-test, model speed, server, config, models", func(args []string) error {
		return runDoctor(args, os.Stdout)
	})
}

func runDoctor(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	model := fs.String("model", "", "model to check and time (default: the config's model, else $LAYA_MODEL or the bundled model)")
	noTiming := fs.Bool("no-timing", false, "skip timing the model on each backend")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	r := doctor.Collect(context.Background(), doctor.Options{Model: *model, NoTiming: *noTiming})
	var err error
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = r.WriteText(w)
	}
	if err != nil {
		return err
	}
	if len(r.Problems) > 0 {
		return errors.New("cannot work here: " + strings.Join(r.Problems, "; "))
	}
	return nil
}
