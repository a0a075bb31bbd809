package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Target is the platform checked.
const (
	targetOS   = "darwin"
	targetArch = "arm64"
)

// Result is the outcome of Check.
type Result struct {
	Errors    []string // in main-module packages: the check fails
	Tolerated []string // in dependencies
	Packages  int      // packages type-checked
	Ours      int      // of which in the main module
}

// listed is the part of `go list -json` output Check uses.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	ImportMap  map[string]string
	Standard   bool
	DepOnly    bool
	Module     *struct{ Main bool }
	Error      *struct{ Err string }
}

// Check lists patterns and their dependencies for darwin/arm64 from dir and type-checks each
// package in dependency order.
func Check(dir string, patterns []string) (*Result, error) {
	pkgs, err := list(dir, patterns)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	done := map[string]*types.Package{"unsafe": types.Unsafe}
	r := &Result{}
	for _, p := range pkgs {
		if p.ImportPath == "unsafe" {
			continue
		}
		// A package named on the command line that failed to load has no module to go by.
		ours := p.Module != nil && p.Module.Main || !p.DepOnly && !p.Standard
		report := func(msg string) {
			if ours {
				r.Errors = append(r.Errors, msg)
			} else {
				r.Tolerated = append(r.Tolerated, msg)
			}
		}
		if p.Error != nil {
			report(fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
			continue
		}
		files, perrs := parse(fset, p)
		for _, e := range perrs {
			report(e.Error())
		}
		conf := types.Config{
			Importer:    importer{p, done},
			FakeImportC: true,
			Sizes:       types.SizesFor("gc", targetArch),
			// Dependencies only contribute their exported API; their bodies are compiled and
			// tested on the platforms they target, and skipping them keeps this fast.
			IgnoreFuncBodies: !ours,
			Error:            func(err error) { report(err.Error()) },
		}
		tp, _ := conf.Check(p.ImportPath, fset, files, nil)
		done[p.ImportPath] = tp
		r.Packages++
		if ours {
			r.Ours++
		}
	}
	return r, nil
}

// list runs go list for the target platform. -deps prints dependencies before their
// dependents, which is the order Check needs.
func list(dir string, patterns []string) ([]*listed, error) {
	args := append([]string{"list", "-e", "-deps", "-json=ImportPath,Dir,GoFiles,CgoFiles,ImportMap,Standard,DepOnly,Module,Error"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+targetOS, "GOARCH="+targetArch, "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var pkgs []*listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(listed)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

func parse(fset *token.FileSet, p *listed) ([]*ast.File, []error) {
	var files []*ast.File
	var errs []error
	for _, name := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		files = append(files, f)
	}
	return files, errs
}

// importer resolves imports of one package against the packages already checked, through
// the package's ImportMap (vendored standard-library paths).
type importer struct {
	p    *listed
	done map[string]*types.Package
}

// Import implements types.Importer.
func (im importer) Import(path string) (*types.Package, error) {
	if m, ok := im.p.ImportMap[path]; ok {
		path = m
	}
	if tp := im.done[path]; tp != nil {
		return tp, nil
	}
	return nil, fmt.Errorf("%s: import %q: not checked (failed to list or load)", im.p.ImportPath, path)
}
