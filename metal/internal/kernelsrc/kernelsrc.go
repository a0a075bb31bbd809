// Package kernelsrc reads the Metal kernel sources (metal/kernels/*.metal) in the order they
// compile as one source, and finds their plain parameter structs. The binding generator
// (genkernels) and the strict compile check (checkmetal) share it, so both see the same files
// in the same order.
package kernelsrc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// First lists the files compiled before the rest (sorted by name), in this order, because the
// others use them.
var First = []string{"common.metal", "dequant.metal"}

// Source is one kernel file.
type Source struct {
	Name string // file name, e.g. "matvec.metal"
	Text string
}

// Read returns the .metal files in dir in compile order: First, then the rest by name.
func Read(dir string) ([]Source, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.metal"))
	if err != nil {
		return nil, err
	}
	rank := func(name string) int {
		for i, f := range First {
			if f == name {
				return i
			}
		}
		return len(First)
	}
	sort.Slice(paths, func(i, j int) bool {
		a, b := filepath.Base(paths[i]), filepath.Base(paths[j])
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		return a < b
	})
	var srcs []Source
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, Source{filepath.Base(p), string(b)})
	}
	if len(srcs) == 0 || srcs[0].Name != First[0] {
		return nil, fmt.Errorf("%s: no %s", dir, First[0])
	}
	return srcs, nil
}

// IsFirst reports whether name is one of the files every other file builds on.
func IsFirst(name string) bool {
	for _, f := range First {
		if f == name {
			return true
		}
	}
	return false
}

var (
	reComment = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
	reStruct  = regexp.MustCompile(`\bstruct\s+(\w+)\s*\{([^{}]*)\};`)
	reField   = regexp.MustCompile(`^(\w+)\s+(\w+)$`)
)

// StripComments replaces every comment with a space.
func StripComments(s string) string { return reComment.ReplaceAllString(s, " ") }

// Field is one member of a plain struct.
type Field struct{ Type, Name string }

// Struct is a plain-data struct: scalar members and members of other such structs, nothing else.
type Struct struct {
	Name   string
	Fields []Field
}

// PlainStructs returns the plain structs defined in text (comments stripped), by name. Structs
// with member functions, arrays or qualifiers do not match.
func PlainStructs(text string) map[string]Struct {
	out := map[string]Struct{}
	for _, m := range reStruct.FindAllStringSubmatch(text, -1) {
		sd := Struct{Name: m[1]}
		ok := true
		for _, decl := range strings.Split(m[2], ";") {
			decl = strings.TrimSpace(decl)
			if decl == "" {
				continue
			}
			f := reField.FindStringSubmatch(decl)
			if f == nil {
				ok = false
				break
			}
			sd.Fields = append(sd.Fields, Field{f[1], f[2]})
		}
		if ok && len(sd.Fields) > 0 {
			out[sd.Name] = sd
		}
	}
	return out
}
