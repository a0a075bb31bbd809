// Command genkernels reads the kernel signatures and parameter structs of metal/kernels/*.metal
// once and writes the binding tables both executors use, so the Go host code and the emulator
// cannot disagree on buffer indices or parameter layouts:
//
//   - metal/kernels_gen.go: kernel ids and names, the source order, which buffers each kernel
//     writes, Go mirrors of the parameter structs, and one typed encode method per kernel that
//     puts each buffer at its [[buffer(n)]].
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
	"slices"
	"sort"
	"strings"

	"github.com/layaapp/laya/metal/internal/kernelsrc"
)

// kernel is one parsed kernel function.
type kernel struct {
	name    string
	buffers []param // [[buffer(i)]] at index i
	params  string  // struct type of the constant params block, bound after the buffers
	attrs   []param // thread attributes in signature order
	all     []param // every parameter in signature order
	// writes has bit i set when buffer i is a device pointer to non-const data, which the
	// kernel may write; through a pointer to const it can only read.
	writes uint32
}

type param struct {
	typ, name, attr string
	index           int // buffer index; -1 for attributes
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
	reKernel = regexp.MustCompile(`\bkernel\s+void\s+(\w+)\s*\(`)
	reParam  = regexp.MustCompile(`^(.*?)\b(\w+)\s*\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]$`)
	reDefine = regexp.MustCompile(`(?m)^#define\s+(\w+)\s+(\d+)\s*$`)
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
	srcs, err := kernelsrc.Read(dir)
	if err != nil {
		return nil, nil, err
	}
	var all strings.Builder
	for _, s := range srcs {
		all.WriteString(kernelsrc.StripComments(s.Text))
		all.WriteString("\n")
	}
	text := all.String()
	structs := kernelsrc.PlainStructs(text)
	defs := map[string]string{}
	for _, m := range reAnyDefine.FindAllStringSubmatch(text, -1) {
		defs[m[1]] = m[2]
	}
	kernels, err := parseKernels(text, structs, defs)
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

// parseKernels parses every kernel signature of text and checks what Metal or the emulator
// would reject later: binding conventions, thread-attribute types and threadgroup memory.
func parseKernels(text string, structs map[string]kernelsrc.Struct, defs map[string]string) ([]kernel, error) {
	var ks []kernel
	inKernels := 0 // threadgroup keywords inside kernel bodies
	for _, loc := range reKernel.FindAllStringSubmatchIndex(text, -1) {
		k := kernel{name: text[loc[2]:loc[3]]}
		args, end, err := paramList(text[loc[1]:])
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.name, err)
		}
		b, err := body(text[loc[1]+end:])
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.name, err)
		}
		tg, err := threadgroupBytes(b, defs)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.name, err)
		}
		if tg > maxThreadgroupMemory {
			return nil, fmt.Errorf("kernel %s: %d bytes of threadgroup memory, Apple GPUs allow %d", k.name, tg, maxThreadgroupMemory)
		}
		inKernels += len(reThreadgroup.FindAllStringIndex(b, -1))
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
					if !slices.Contains(strings.Fields(strings.TrimSuffix(p.typ, "*")), "const") {
						k.writes |= 1 << p.index
					}
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
		if len(k.buffers) > 20 {
			return nil, fmt.Errorf("kernel %s: %d buffers, at most 20", k.name, len(k.buffers))
		}
		if err := checkAttrs(k); err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("no kernels")
	}
	// Threadgroup memory elsewhere (a helper's variable or pointer parameter) is outside what
	// the emulator can give a threadgroup, and outside the per-kernel total above.
	if n := len(reThreadgroup.FindAllStringIndex(text, -1)); n != inKernels {
		return nil, fmt.Errorf("threadgroup memory outside a kernel body: declare threadgroup arrays in the kernel itself")
	}
	return ks, nil
}

// paramList splits the text after a kernel's "(" into its top-level parameters; end is the
// offset of the closing ")".
func paramList(s string) (params []string, end int, err error) {
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
				return out, i, nil
			}
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return nil, 0, fmt.Errorf("unterminated parameter list")
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

func words(name string, structs map[string]kernelsrc.Struct) (int, error) {
	sd, ok := structs[name]
	if !ok {
		return 0, fmt.Errorf("unknown struct %s", name)
	}
	n := 0
	for _, f := range sd.Fields {
		switch f.Type {
		case "uint", "int", "float":
			n++
		default:
			w, err := words(f.Type, structs)
			if err != nil {
				return 0, fmt.Errorf("%s.%s: %w", name, f.Name, err)
			}
			n += w
		}
	}
	return n, nil
}

func genGo(srcs []kernelsrc.Source, ks []kernel, structs map[string]kernelsrc.Struct, defines [][2]string) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("// Code generated by metal/internal/genkernels from kernels/*.metal; DO NOT EDIT.\n\n")
	p("package metal\n\nimport \"math\"\n\n")
	p("// kernelSources lists the kernel files in the order they compile as one source.\n")
	p("var kernelSources = []string{")
	for _, s := range srcs {
		p("%q, ", s.Name)
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
	p("// kernelWrites has, by kernel id, bit i set when the kernel may write its buffer(i) (a\n")
	p("// device pointer to non-const data); the others it only reads.\nvar kernelWrites = [...]uint32{")
	for _, k := range ks {
		p("%#x, ", k.writes)
	}
	p("}\n\n")

	used := map[string]bool{}
	var mark func(string)
	mark = func(n string) {
		if used[n] {
			return
		}
		used[n] = true
		for _, f := range structs[n].Fields {
			if _, ok := structs[f.Type]; ok {
				mark(f.Type)
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
		if w > 32 {
			return nil, fmt.Errorf("struct %s: %d words, at most 32", n, w)
		}
		p("// %s mirrors the kernels' struct %s (%d words).\ntype %s struct {\n", goType(n), n, w, goType(n))
		for _, f := range sd.Fields {
			switch f.Type {
			case "uint":
				p("\t%s uint32\n", f.Name)
			case "int":
				p("\t%s int32\n", f.Name)
			case "float":
				p("\t%s float32\n", f.Name)
			default:
				p("\t%s %s\n", f.Name, goType(f.Type))
			}
		}
		p("}\n\n")
		p("func (s *%s) encode(w []uint32) int {\n\tn := 0\n", goType(n))
		for _, f := range sd.Fields {
			switch f.Type {
			case "uint":
				p("\tw[n] = s.%s\n\tn++\n", f.Name)
			case "int":
				p("\tw[n] = uint32(s.%s)\n\tn++\n", f.Name)
			case "float":
				p("\tw[n] = math.Float32bits(s.%s)\n\tn++\n", f.Name)
			default:
				p("\tn += s.%s.encode(w[n:])\n", f.Name)
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

func genCpp(srcs []kernelsrc.Source, ks []kernel) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("// Code generated by metal/internal/genkernels from kernels/*.metal; DO NOT EDIT.\n")
	p("// The kernel sources follow verbatim (metal_stdlib comes from msl.h), then the trampolines.\n")
	p("#include \"emu.h\"\n\n")
	for _, s := range srcs {
		p("#line 1 \"metal/kernels/%s\"\n", s.Name)
		for _, line := range strings.SplitAfter(s.Text, "\n") {
			if strings.TrimSpace(line) == "#include <metal_stdlib>" {
				line = "\n"
			}
			b.WriteString(line)
		}
		if !strings.HasSuffix(s.Text, "\n") {
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
