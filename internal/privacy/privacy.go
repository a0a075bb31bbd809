// Package privacy checks, from the source, the promise that Laya never sends text anywhere: no
// package but models/download may link net/http, and none may dial anything but a Unix socket.
// Its test runs the check over the whole module for Linux and for macOS. Test files are not
// checked: they are not part of any binary (tests of the downloader serve a fake hub over HTTP).
package privacy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Allowed is the one package, relative to the module path, that may use the network.
const Allowed = "models/download"

// Target is a platform to evaluate build constraints for.
type Target struct{ GOOS, GOARCH string }

// Violation is one way a package could reach the network.
type Violation struct {
	Package string
	Target  Target
	Where   string // file:line for a dial; empty for an import
	What    string
}

// String formats v as "where (goos/goarch): what".
func (v Violation) String() string {
	where := v.Package
	if v.Where != "" {
		where = v.Where
	}
	return fmt.Sprintf("%s (%s/%s): %s", where, v.Target.GOOS, v.Target.GOARCH, v.What)
}

// Report is the outcome of Check.
type Report struct {
	Module     string
	Packages   []string // the module's packages that were checked, for every target together
	Violations []Violation
}

type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
	CgoFiles   []string
	Module     *struct {
		Path string
		Main bool
	}
}

// Check lists every package of the module rooted at dir with its dependencies for each target and
// reports each package of the module (other than Allowed) that imports net/http directly or
// through any chain of imports not passing through Allowed, and each call in its source that
// dials a network other than a literal "unix".
func Check(dir string, targets []Target) (*Report, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("privacy: %w", err)
	}
	r := &Report{}
	checked := map[string]bool{}
	scanned := map[string]bool{}
	for _, t := range targets {
		pkgs, err := list(dir, t)
		if err != nil {
			return nil, err
		}
		mod := ""
		for _, p := range pkgs {
			if p.Module != nil && p.Module.Main {
				mod = p.Module.Path
				break
			}
		}
		if mod == "" {
			return nil, fmt.Errorf("privacy: go list in %s found no packages of the main module", dir)
		}
		if r.Module != "" && r.Module != mod {
			return nil, fmt.Errorf("privacy: module changed between targets: %s, %s", r.Module, mod)
		}
		r.Module = mod
		allowed := mod + "/" + Allowed
		imports := map[string][]string{}
		for _, p := range pkgs {
			imports[p.ImportPath] = p.Imports
		}
		chains := map[string][]string{} // memo: package -> import chain to net/http, or nil
		for _, p := range pkgs {
			if p.Module == nil || !p.Module.Main || p.ImportPath == allowed {
				continue
			}
			checked[p.ImportPath] = true
			if chain := httpChain(p.ImportPath, allowed, imports, chains, map[string]bool{}); chain != nil {
				what := "imports net/http"
				if len(chain) > 2 {
					what = "imports net/http through " + strings.Join(chain[1:len(chain)-1], " -> ")
				}
				r.Violations = append(r.Violations, Violation{Package: p.ImportPath, Target: t, What: what})
			}
			for _, f := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
				path := filepath.Join(p.Dir, f)
				if scanned[path] {
					continue
				}
				scanned[path] = true
				vs, err := scanDials(path, dir)
				if err != nil {
					return nil, err
				}
				for _, v := range vs {
					v.Package, v.Target = p.ImportPath, t
					r.Violations = append(r.Violations, v)
				}
			}
		}
	}
	for p := range checked {
		r.Packages = append(r.Packages, p)
	}
	sort.Strings(r.Packages)
	return r, nil
}

// httpChain returns the import chain from p to net/http (p first), or nil. It never walks
// through allowed. onPath guards against import cycles in a broken tree.
func httpChain(p, allowed string, imports map[string][]string, memo map[string][]string, onPath map[string]bool) []string {
	if p == "net/http" {
		return []string{p}
	}
	if c, ok := memo[p]; ok {
		return c
	}
	if p == allowed || onPath[p] {
		return nil
	}
	onPath[p] = true
	defer delete(onPath, p)
	var chain []string
	for _, imp := range imports[p] {
		if c := httpChain(imp, allowed, imports, memo, onPath); c != nil {
			chain = append([]string{p}, c...)
			break
		}
	}
	memo[p] = chain
	return chain
}

func list(dir string, t Target) ([]pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-deps",
		"-json=ImportPath,Dir,Imports,GoFiles,CgoFiles,Module", "./...")
	cmd.Dir = dir
	// CGO_ENABLED=1 so the cgo files of the darwin adapters are listed too (listing runs no
	// compiler). GOWORK=off keeps a test module from joining an outer workspace.
	cmd.Env = append(os.Environ(), "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "CGO_ENABLED=1", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("privacy: go list (%s/%s) in %s: %w: %s", t.GOOS, t.GOARCH, dir, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("privacy: go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// scanDials reports calls in one file that dial a network other than a literal "unix":
// net.Dial and net.DialTimeout with another network, net.DialTCP/DialUDP/DialIP, and Dial or
// DialContext methods (as on net.Dialer) in files that import net. Without type information a
// Dial method of some other type in such a file is reported too; rename it or dial "unix".
func scanDials(path, root string) ([]Violation, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("privacy: %w", err)
	}
	netName := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "net" {
			netName = "net"
			if imp.Name != nil {
				netName = imp.Name.Name
			}
		}
	}
	if netName == "" || netName == "_" {
		return nil, nil
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		rel = path
	}
	var out []Violation
	report := func(n ast.Node, what string) {
		out = append(out, Violation{Where: fmt.Sprintf("%s:%d", filepath.ToSlash(rel), fset.Position(n.Pos()).Line), What: what})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var name string
		pkgFunc := false
		switch fn := call.Fun.(type) {
		case *ast.SelectorExpr:
			name = fn.Sel.Name
			id, isIdent := fn.X.(*ast.Ident)
			pkgFunc = isIdent && id.Name == netName
		case *ast.Ident:
			// A dot import of net makes its functions plain identifiers.
			if netName != "." {
				return true
			}
			name, pkgFunc = fn.Name, true
		default:
			return true
		}
		network := -1 // index of the network argument
		switch {
		case pkgFunc && (name == "DialTCP" || name == "DialUDP" || name == "DialIP"):
			report(call, "calls net."+name)
			return true
		case pkgFunc && (name == "Dial" || name == "DialTimeout"):
			network = 0
		case !pkgFunc && name == "Dial":
			network = 0
		case !pkgFunc && name == "DialContext":
			network = 1
		default:
			return true
		}
		if network < len(call.Args) && isUnixLiteral(call.Args[network]) {
			return true
		}
		callee := name
		if pkgFunc {
			callee = "net." + name
		}
		report(call, fmt.Sprintf("%s with a network other than the literal \"unix\"", callee))
		return true
	})
	return out, nil
}

func isUnixLiteral(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && s == "unix"
}
