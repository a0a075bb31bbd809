// Command genkernels reads the kernel signatures and parameter structs of metal/kernels/*.metal
// once and writes the binding tables both executors use, so the Go host code and the emulator
// cannot disagree on buffer indices or parameter layouts:
//
//   - metal/kernels_gen.go: kernel ids and names, the source order, Go mirrors of the parameter
//     structs, and one typed encode method per kernel that puts each buffer at its [[buffer(n)]].
//   - metal/emu/kernels_gen_linux.cpp: the kernel sources (compiled by g++ through msl.h) and one
//     trampoline per kernel that unpacks the bound buffers and thread attributes in signature order.
//
// Run it from the metal directory (go generate ./metal).
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// firstSources are compiled before the rest (sorted by name) because the others use them.
var firstSources = []string{"common.metal", "dequant.metal"}

// kernel is one parsed kernel function.
type kernel struct {
	name    string
	buffers []param // [[buffer(i)]] at index i
	params  string  // struct type of the constant params block, bound after the buffers
	attrs   []param // thread attributes in signature order
	all     []param // every parameter in signature order
}

type param struct {
	typ, name, attr string
	index           int // buffer index; -1 for attributes
}

type field struct{ typ, name string }

type structDef struct {
	name   string
	fields []field
}

type source struct {
	name, text string
}

// attrFields maps MSL thread attributes to the msl::Ids fields the emulator fills.
var attrFields = map[string]string{
	"thread_position_in_grid":        "tpig",
	"threadgroup_position_in_grid":   "tgpig",
	"thread_position_in_threadgroup": "tpitg",
	"threads_per_threadgroup":        "tptg",
	"threadgroups_per_grid":          "tgpg",
	"thread_index_in_threadgroup":    "tiitg",
	"thread_index_in_simdgroup":      "tiisg",
	"simdgroup_index_in_threadgroup": "sgitg",
	"simdgroups_per_threadgroup":     "sptg",
	"threads_per_simdgroup":          "tpsg",
}

var (
	reKernel  = regexp.MustCompile(`\bkernel\s+void\s+(\w+)\s*\(`)
	reParam   = regexp.MustCompile(`^(.*?)\b(\w+)\s*\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]$`)
	reStruct  = regexp.MustCompile(`\bstruct\s+(\w+)\s*\{([^{}]*)\};`)
	reField   = regexp.MustCompile(`^(\w+)\s+(\w+)$`)
	reDefine  = regexp.MustCompile(`(?m)^#define\s+(\w+)\s+(\d+)\s*$`)
	reComment = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
)

func main() {
	goSrc, cppSrc, err := generate("kernels")
	if err == nil {
		err = os.WriteFile("kernels_gen.go", goSrc, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join("emu", "kernels_gen_linux.cpp"), cppSrc, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genkernels:", err)
		os.Exit(1)
	}
}

// generate parses the .metal files in dir and returns the Go and C++ tables.
func generate(dir string) (goSrc, cppSrc []byte, err error) {
	srcs, err := readSources(dir)
	if err != nil {
		return nil, nil, err
	}
	var all strings.Builder
	for _, s := range srcs {
		all.WriteString(reComment.ReplaceAllString(s.text, " "))
		all.WriteString("\n")
	}
	text := all.String()
	structs := map[string]structDef{}
	for _, m := range reStruct.FindAllStringSubmatch(text, -1) {
		if sd, ok := parseStruct(m[1], m[2]); ok {
			structs[sd.name] = sd
		}
	}
	kernels, err := parseKernels(text, structs)
	if err != nil {
		return nil, nil, err
	}
	var defines [][2]string
	for _, m := range reDefine.FindAllStringSubmatch(text, -1) {
		defines = append(defines, [2]string{m[1], m[2]})
	}
	goSrc, err = genGo(srcs, kernels, structs, defines)
	if err != nil {
		return nil, nil, err
	}
	return goSrc, genCpp(srcs, kernels), nil
}

func readSources(dir string) ([]source, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.metal"))
	if err != nil {
		return nil, err
	}
	rank := func(name string) int {
		for i, f := range firstSources {
			if f == name {
				return i
			}
		}
		return len(firstSources)
	}
	sort.Slice(paths, func(i, j int) bool {
		a, b := filepath.Base(paths[i]), filepath.Base(paths[j])
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		return a < b
	})
	var srcs []source
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, source{filepath.Base(p), string(b)})
	}
	if len(srcs) == 0 || srcs[0].name != firstSources[0] {
		return nil, fmt.Errorf("%s: no %s", dir, firstSources[0])
	}
	return srcs, nil
}

// parseStruct accepts only plain-data structs (scalars and other such structs); helper structs
// with member functions do not match and are not parameter blocks.
func parseStruct(name, body string) (structDef, bool) {
	sd := structDef{name: name}
	for _, decl := range strings.Split(body, ";") {
		decl = strings.TrimSpace(decl)
		if decl == "" {
			continue
		}
		m := reField.FindStringSubmatch(decl)
		if m == nil {
			return sd, false
		}
		sd.fields = append(sd.fields, field{m[1], m[2]})
	}
	return sd, len(sd.fields) > 0
}

func parseKernels(text string, structs map[string]structDef) ([]kernel, error) {
	var ks []kernel
	for _, loc := range reKernel.FindAllStringSubmatchIndex(text, -1) {
		k := kernel{name: text[loc[2]:loc[3]]}
		args, err := paramList(text[loc[1]:])
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.name, err)
		}
		for _, a := range args {
			a = strings.Join(strings.Fields(a), " ")
			m := reParam.FindStringSubmatch(a)
			if m == nil {
				return nil, fmt.Errorf("kernel %s: parameter %q has no [[attribute]]", k.name, a)
			}
			p := param{typ: strings.TrimSpace(m[1]), name: m[2], attr: m[3], index: -1}
			switch {
			case p.attr == "buffer":
				fmt.Sscan(m[4], &p.index)
				if k.params != "" {
					return nil, fmt.Errorf("kernel %s: buffer %s after the constant params block", k.name, p.name)
				}
				if p.index != len(k.buffers) {
					return nil, fmt.Errorf("kernel %s: %s is buffer(%d), want buffer(%d): buffers must be numbered in order", k.name, p.name, p.index, len(k.buffers))
				}
				if strings.HasPrefix(p.typ, "constant ") && strings.HasSuffix(p.typ, "&") {
					st := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(p.typ, "constant "), "&"))
					if _, ok := structs[st]; !ok {
						return nil, fmt.Errorf("kernel %s: params type %q is not a plain struct", k.name, st)
					}
					k.params = st
				} else if strings.HasPrefix(p.typ, "device ") && strings.HasSuffix(p.typ, "*") {
					k.buffers = append(k.buffers, p)
				} else {
					return nil, fmt.Errorf("kernel %s: buffer %s has type %q, want a device pointer or constant struct reference", k.name, p.name, p.typ)
				}
			case attrFields[p.attr] != "":
				k.attrs = append(k.attrs, p)
			default:
				return nil, fmt.Errorf("kernel %s: unsupported attribute [[%s]]", k.name, p.attr)
			}
			k.all = append(k.all, p)
		}
		if k.params == "" {
			return nil, fmt.Errorf("kernel %s: no constant params block", k.name)
		}
		if len(k.buffers) > 12 {
			return nil, fmt.Errorf("kernel %s: %d buffers, at most 12", k.name, len(k.buffers))
		}
		ks = append(ks, k)
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("no kernels")
	}
	return ks, nil
}

// paramList splits the text after a kernel's "(" into its top-level parameters.
func paramList(s string) ([]string, error) {
	depth, start := 0, 0
	var out []string
	for i, c := range s {
		switch c {
		case '(', '[':
			depth++
		case ']':
			depth--
		case ')':
			if depth == 0 {
				out = append(out, s[start:i])
				return out, nil
			}
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return nil, fmt.Errorf("unterminated parameter list")
}

// camel turns snake_case into CamelCase.
func camel(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "_") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

func goType(s string) string { return "msl" + s }

func words(name string, structs map[string]structDef) (int, error) {
	sd, ok := structs[name]
	if !ok {
		return 0, fmt.Errorf("unknown struct %s", name)
	}
	n := 0
	for _, f := range sd.fields {
		switch f.typ {
		case "uint", "int", "float":
			n++
		default:
			w, err := words(f.typ, structs)
			if err != nil {
				return 0, fmt.Errorf("%s.%s: %w", name, f.name, err)
			}
			n += w
		}
	}
	return n, nil
}

func genGo(srcs []source, ks []kernel, structs map[string]structDef, defines [][2]string) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("// Code generated by metal/internal/genkernels from kernels/*.metal; DO NOT EDIT.\n\n")
	p("package metal\n\nimport \"math\"\n\n")
	p("// kernelSources lists the kernel files in the order they compile as one source.\n")
	p("var kernelSources = []string{")
	for _, s := range srcs {
		p("%q, ", s.name)
	}
	p("}\n\n")
	p("// Numeric #defines of the kernel sources.\nconst (\n")
	for _, d := range defines {
		p("\tmsl%s = %s\n", strings.ReplaceAll(camel(strings.ToLower(d[0])), "_", ""), d[1])
	}
	p(")\n\n")
	p("// Kernel ids, indices into kernelNames and the emulator's trampoline table.\nconst (\n")
	for i, k := range ks {
		if i == 0 {
			p("\tk%s kernelID = iota\n", camel(k.name))
		} else {
			p("\tk%s\n", camel(k.name))
		}
	}
	p(")\n\n")
	p("// kernelNames are the kernel function names, by kernel id.\nvar kernelNames = [...]string{")
	for _, k := range ks {
		p("%q, ", k.name)
	}
	p("}\n\n")

	used := map[string]bool{}
	var mark func(string)
	mark = func(n string) {
		if used[n] {
			return
		}
		used[n] = true
		for _, f := range structs[n].fields {
			if _, ok := structs[f.typ]; ok {
				mark(f.typ)
			}
		}
	}
	for _, k := range ks {
		mark(k.params)
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sd := structs[n]
		w, err := words(n, structs)
		if err != nil {
			return nil, err
		}
		if w > 16 {
			return nil, fmt.Errorf("struct %s: %d words, at most 16", n, w)
		}
		p("// %s mirrors the kernels' struct %s (%d words).\ntype %s struct {\n", goType(n), n, w, goType(n))
		for _, f := range sd.fields {
			switch f.typ {
			case "uint":
				p("\t%s uint32\n", f.name)
			case "int":
				p("\t%s int32\n", f.name)
			case "float":
				p("\t%s float32\n", f.name)
			default:
				p("\t%s %s\n", f.name, goType(f.typ))
			}
		}
		p("}\n\n")
		p("func (s *%s) encode(w []uint32) int {\n\tn := 0\n", goType(n))
		for _, f := range sd.fields {
			switch f.typ {
			case "uint":
				p("\tw[n] = s.%s\n\tn++\n", f.name)
			case "int":
				p("\tw[n] = uint32(s.%s)\n\tn++\n", f.name)
			case "float":
				p("\tw[n] = math.Float32bits(s.%s)\n\tn++\n", f.name)
			default:
				p("\tn += s.%s.encode(w[n:])\n", f.name)
			}
		}
		p("\treturn n\n}\n\n")
	}
	for _, k := range ks {
		var args []string
		for _, a := range k.buffers {
			args = append(args, a.name)
		}
		p("// enc%s records kernel %s with buffers %s at [[buffer(0..%d)]] and params at [[buffer(%d)]].\n",
			camel(k.name), k.name, strings.Join(args, ", "), len(args)-1, len(args))
		p("func (pl *plan) enc%s(groups, threads [3]uint32, %s Arg, p *%s) {\n", camel(k.name), strings.Join(args, ", "), goType(k.params))
		p("\td := pl.next(k%s, groups, threads)\n", camel(k.name))
		for i, a := range args {
			p("\td.Args[%d] = %s\n", i, a)
		}
		p("\td.NArgs = %d\n\td.NParams = uint32(p.encode(d.Params[:]))\n}\n\n", len(args))
	}
	return format.Source(b.Bytes())
}

// cppType drops MSL address spaces, which the emulator treats as plain memory.
func cppType(t string) string {
	var out []string
	for _, f := range strings.Fields(t) {
		if f != "device" && f != "constant" && f != "thread" {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

func genCpp(srcs []source, ks []kernel) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("// Code generated by metal/internal/genkernels from kernels/*.metal; DO NOT EDIT.\n")
	p("// The kernel sources follow verbatim (metal_stdlib comes from msl.h), then the trampolines.\n")
	p("#include \"emu.h\"\n\n")
	for _, s := range srcs {
		p("#line 1 \"metal/kernels/%s\"\n", s.name)
		for _, line := range strings.SplitAfter(s.text, "\n") {
			if strings.TrimSpace(line) == "#include <metal_stdlib>" {
				line = "\n"
			}
			b.WriteString(line)
		}
		if !strings.HasSuffix(s.text, "\n") {
			p("\n")
		}
	}
	p("\nnamespace {\n")
	for _, k := range ks {
		p("void k_%s(void* const* b, const msl::Ids& id) {\n  %s(", k.name, k.name)
		var args []string
		for _, a := range k.all {
			t := cppType(a.typ)
			switch {
			case a.attr == "buffer" && strings.HasSuffix(t, "&"):
				args = append(args, fmt.Sprintf("*reinterpret_cast<%s*>(b[%d])", strings.TrimSuffix(t, "&"), a.index))
			case a.attr == "buffer":
				args = append(args, fmt.Sprintf("reinterpret_cast<%s>(b[%d])", t, a.index))
			default:
				args = append(args, fmt.Sprintf("msl::Attr<%s>(id.%s)", t, attrFields[a.attr]))
			}
		}
		p("%s);\n}\n", strings.Join(args, ", "))
	}
	p("}  // namespace\n\nconst msl::Kernel emu_kernels[] = {\n")
	for _, k := range ks {
		p("    k_%s,\n", k.name)
	}
	p("};\nconst uint32_t emu_kernel_count = %d;\n", len(ks))
	return b.Bytes()
}
