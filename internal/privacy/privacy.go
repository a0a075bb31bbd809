// Package privacy checks, from the source, the promise that Laya never sends text anywhere: no
// package but models/download acts as a network client. Serving is allowed (the socket, the
// loopback HTTP endpoint); what is checked is every way of reaching out: client-side HTTP
// (http.Client, Transport, Get, Post, NewRequest, …), dials of anything but a Unix socket,
// packet sockets that can send anywhere, TLS clients, and the standard library's client-only
// packages (net/smtp, net/rpc, net/http/httputil, …). It checks the module's packages and
// every third-party package they reach other than through models/download. Its test runs the
// check over the whole module for Linux and for macOS. Test files are not checked: they are not
// part of any binary (tests of the endpoints are HTTP clients of a local test server).
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
	"slices"
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
	Standard   bool
	Module     *struct {
		Path string
		Main bool
	}
}

// clientPackages are standard packages whose purpose is to connect to other machines.
var clientPackages = map[string]bool{
	"net/smtp": true, "net/rpc": true, "net/rpc/jsonrpc": true,
	"net/http/httputil": true, "net/http/cookiejar": true,
}

// Check lists every package of the module rooted at dir with its dependencies for each target
// and reports, for each package the module reaches other than through Allowed (the module's
// own and third-party ones), each use of a network client in its source (see scanClients) and
// each import of a standard client package.
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
		byPath := map[string]*pkg{}
		for i := range pkgs {
			byPath[pkgs[i].ImportPath] = &pkgs[i]
		}
		// Walk from the module's packages, never through allowed, remembering who imported
		// each package first so a violation outside the module can say how it is reached.
		via := map[string]string{}
		var queue []string
		for _, p := range pkgs {
			if p.Module != nil && p.Module.Main && p.ImportPath != allowed {
				checked[p.ImportPath] = true
				via[p.ImportPath] = ""
				queue = append(queue, p.ImportPath)
			}
		}
		for len(queue) > 0 {
			p := byPath[queue[0]]
			queue = queue[1:]
			if p == nil {
				continue
			}
			for _, imp := range p.Imports {
				if _, seen := via[imp]; seen || imp == allowed {
					continue
				}
				via[imp] = p.ImportPath
				queue = append(queue, imp)
			}
		}
		reached := func(path string) string {
			var chain []string
			for p := via[path]; p != ""; p = via[p] {
				chain = append([]string{p}, chain...)
			}
			if len(chain) == 0 {
				return ""
			}
			return ", reached through " + strings.Join(chain, " -> ")
		}
		for path := range via {
			p := byPath[path]
			if p == nil {
				continue
			}
			if p.Standard {
				if clientPackages[path] {
					// Reported at the package that imports it.
					at := via[path]
					what := "imports " + path + ", a network client"
					if ip := byPath[at]; ip != nil && (ip.Module == nil || !ip.Module.Main) {
						what += reached(at)
					}
					r.Violations = append(r.Violations, Violation{Package: at, Target: t, What: what})
				}
				continue
			}
			inModule := p.Module != nil && p.Module.Main
			for _, f := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
				file := filepath.Join(p.Dir, f)
				if scanned[file] {
					continue
				}
				scanned[file] = true
				vs, err := scanClients(file, dir)
				if err != nil {
					return nil, err
				}
				for _, v := range vs {
					v.Package, v.Target = p.ImportPath, t
					if !inModule {
						v.What += reached(path)
					}
					r.Violations = append(r.Violations, v)
				}
			}
		}
	}
	sort.Slice(r.Violations, func(i, j int) bool { return r.Violations[i].String() < r.Violations[j].String() })
	for p := range checked {
		r.Packages = append(r.Packages, p)
	}
	sort.Strings(r.Packages)
	return r, nil
}

func list(dir string, t Target) ([]pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-deps",
		"-json=ImportPath,Dir,Imports,GoFiles,CgoFiles,Standard,Module", "./...")
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

// httpClient are the names of net/http that make or carry client requests.
var httpClient = map[string]bool{
	"Client": true, "Transport": true, "DefaultClient": true, "DefaultTransport": true, "RoundTripper": true,
	"Get": true, "Head": true, "Post": true, "PostForm": true, "NewRequest": true, "NewRequestWithContext": true,
	"ReadResponse": true,
}

// scanClients reports the ways one file reaches out to the network:
//   - any use of a client name of net/http (httpClient);
//   - net.Dial and net.DialTimeout with a network other than a literal "unix",
//     net.DialTCP/DialUDP/DialIP, and Dial or DialContext methods (as on net.Dialer or
//     tls.Dialer) in files that import net, net/http or crypto/tls; without type information a
//     Dial method of some other type in such a file is reported too: rename it or dial "unix";
//   - net.ListenUDP, ListenIP, ListenMulticastUDP and ListenPacket other than on a literal
//     "unixgram" network: a packet socket can send to any address;
//   - tls.Dial, tls.DialWithDialer and tls.Client.
func scanClients(path, root string) ([]Violation, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("privacy: %w", err)
	}
	names := map[string]string{} // local name -> import path, for the packages that matter
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "net" && p != "net/http" && p != "crypto/tls" {
			continue
		}
		name := filepath.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	if len(names) == 0 {
		return nil, nil
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = filepath.Base(filepath.Dir(path)) + "/" + filepath.Base(path)
	}
	var out []Violation
	report := func(n ast.Node, what string) {
		out = append(out, Violation{Where: fmt.Sprintf("%s:%d", filepath.ToSlash(rel), fset.Position(n.Pos()).Line), What: what})
	}
	// pkgOf is the import path a selector's or a dot-imported identifier's package has.
	pkgOf := func(e ast.Expr) (pkgPath, name string) {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				return names[id.Name], x.Sel.Name
			}
			return "", x.Sel.Name
		case *ast.Ident:
			return names["."], x.Name
		}
		return "", ""
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if p, name := pkgOf(sel); p == "net/http" && httpClient[name] {
				report(sel, "uses http."+name+" (client-side HTTP)")
			}
			return true
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		p, name := pkgOf(call.Fun)
		if _, isIdent := call.Fun.(*ast.Ident); isIdent && p == "" {
			return true // a local function
		}
		arg := func(i int, want ...string) bool {
			if i >= len(call.Args) {
				return false
			}
			lit, ok := call.Args[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return false
			}
			s, err := strconv.Unquote(lit.Value)
			return err == nil && slices.Contains(want, s)
		}
		switch {
		case p == "net" && (name == "DialTCP" || name == "DialUDP" || name == "DialIP"):
			report(call, "calls net."+name)
		case p == "net" && (name == "Dial" || name == "DialTimeout"):
			if !arg(0, "unix") {
				report(call, "net."+name+` with a network other than the literal "unix"`)
			}
		case p == "net" && (name == "ListenUDP" || name == "ListenIP" || name == "ListenMulticastUDP"):
			report(call, "calls net."+name+", a packet socket that can send anywhere")
		case p == "net" && name == "ListenPacket":
			if !arg(0, "unixgram") {
				report(call, `net.ListenPacket with a network other than the literal "unixgram"`)
			}
		case p == "crypto/tls" && (name == "Dial" || name == "DialWithDialer" || name == "Client"):
			report(call, "calls tls."+name)
		case p == "" && name == "Dial":
			if !arg(0, "unix") {
				report(call, `Dial with a network other than the literal "unix"`)
			}
		case p == "" && name == "DialContext":
			if !arg(1, "unix") {
				report(call, `DialContext with a network other than the literal "unix"`)
			}
		}
		return true
	})
	return out, nil
}
