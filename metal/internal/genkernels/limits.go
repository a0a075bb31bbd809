package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// maxThreadgroupMemory is what one threadgroup of a kernel may declare: 32 KB, the
// maxThreadgroupMemoryLength of every Apple-silicon GPU family. Past it the pipeline fails to
// build on the Mac, which the emulator would never show.
const maxThreadgroupMemory = 32 << 10

// Thread-attribute parameter types that Metal accepts (MSL specification, "Kernel Function Input
// Attributes"): positions and sizes may be scalars or 2- and 3-component vectors of uint or
// ushort, indices and counts only scalars.
var (
	gridAttrTypes  = []string{"uint", "uint2", "uint3", "ushort", "ushort2", "ushort3"}
	indexAttrTypes = []string{"uint", "ushort"}
	gridAttrs      = map[string]bool{
		"thread_position_in_grid":        true,
		"threadgroup_position_in_grid":   true,
		"thread_position_in_threadgroup": true,
		"threads_per_threadgroup":        true,
		"threadgroups_per_grid":          true,
	}
)

var (
	reAnyDefine   = regexp.MustCompile(`(?m)^#define\s+(\w+)\s+(.+?)\s*$`)
	reThreadgroup = regexp.MustCompile(`\bthreadgroup\b`)
	reTGArray     = regexp.MustCompile(`^threadgroup\s+(\w+)\s+(\w+)\s*((?:\[[^\[\]]+\]\s*)+);`)
	reDim         = regexp.MustCompile(`\[([^\[\]]+)\]`)
	reIntSuffix   = regexp.MustCompile(`\b(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]+\b`)
)

// checkAttrs applies Metal's rules for thread-attribute parameter types to one kernel.
func checkAttrs(k kernel) error {
	types := map[string]string{}
	vecLen, vecAttr := 0, ""
	for _, a := range k.attrs {
		allowed := indexAttrTypes
		if gridAttrs[a.attr] {
			allowed = gridAttrTypes
		}
		if !contains(allowed, a.typ) {
			return fmt.Errorf("kernel %s: [[%s]] %s has type %q, Metal allows %s", k.name, a.attr, a.name, a.typ, strings.Join(allowed, ", "))
		}
		types[a.attr] = a.typ
		if n := components(a.typ); n > 1 && gridAttrs[a.attr] {
			if vecLen != 0 && n != vecLen {
				return fmt.Errorf("kernel %s: [[%s]] has %d components and [[%s]] %d: Metal needs vector attributes of one size", k.name, a.attr, n, vecAttr, vecLen)
			}
			vecLen, vecAttr = n, a.attr
		}
	}
	pos, size := types["thread_position_in_threadgroup"], types["threads_per_threadgroup"]
	if pos != "" && size != "" && pos != size {
		return fmt.Errorf("kernel %s: [[thread_position_in_threadgroup]] is %s but [[threads_per_threadgroup]] %s: Metal needs one type", k.name, pos, size)
	}
	if idx := types["thread_index_in_threadgroup"]; strings.HasPrefix(pos, "uint") && idx == "ushort" {
		return fmt.Errorf("kernel %s: [[thread_index_in_threadgroup]] must be uint when [[thread_position_in_threadgroup]] is %s", k.name, pos)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// components is the vector length of a type name (float4: 4), 1 for scalars.
func components(typ string) int {
	if n := typ[len(typ)-1]; n >= '2' && n <= '4' {
		return int(n - '0')
	}
	return 1
}

// scalarSizes are the byte sizes of the element types threadgroup arrays may have.
var scalarSizes = map[string]int{
	"char": 1, "uchar": 1, "bool": 1, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
	"int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8,
}

// typeSize is sizeof(typ) in Metal: 3-component vectors take the room of 4.
func typeSize(typ string) (int, bool) {
	if s, ok := scalarSizes[typ]; ok {
		return s, true
	}
	n := components(typ)
	s, ok := scalarSizes[typ[:len(typ)-1]]
	if n == 1 || !ok {
		return 0, false
	}
	if n == 3 {
		n = 4
	}
	return n * s, true
}

// threadgroupBytes sums the threadgroup arrays declared in a kernel body, each rounded up to 16
// bytes as Metal allocates them. Every threadgroup declaration must be an array without an
// initializer: the emulator turns it into static storage shared by the threadgroup's threads,
// where an initializer would run once per OS thread rather than per threadgroup.
func threadgroupBytes(body string, defs map[string]string) (int64, error) {
	var total int64
	for _, loc := range reThreadgroup.FindAllStringIndex(body, -1) {
		m := reTGArray.FindStringSubmatch(body[loc[0]:])
		if m == nil {
			end := min(loc[0]+60, len(body))
			if i := strings.IndexAny(body[loc[0]:end], ";{"); i >= 0 {
				end = loc[0] + i + 1
			}
			return 0, fmt.Errorf("threadgroup declaration %q is not an array without initializer", strings.Join(strings.Fields(body[loc[0]:end]), " "))
		}
		size, ok := typeSize(m[1])
		if !ok {
			return 0, fmt.Errorf("threadgroup array %s: unknown element type %q", m[2], m[1])
		}
		n := int64(size)
		for _, d := range reDim.FindAllStringSubmatch(m[3], -1) {
			v, err := evalInt(d[1], defs, 0)
			if err != nil {
				return 0, fmt.Errorf("threadgroup array %s: %w", m[2], err)
			}
			if v <= 0 || v > maxThreadgroupMemory {
				return 0, fmt.Errorf("threadgroup array %s: dimension %s = %d", m[2], strings.TrimSpace(d[1]), v)
			}
			n *= v
			if n > maxThreadgroupMemory {
				return 0, fmt.Errorf("threadgroup array %s: %d bytes or more, the limit is %d", m[2], n, maxThreadgroupMemory)
			}
		}
		total += (n + 15) &^ 15
	}
	return total, nil
}

// evalInt evaluates an integer constant expression of the kernel sources: literals, object-like
// #defines, parentheses and + - * / % << >>. Its syntax is close enough to Go's to use Go's parser.
func evalInt(expr string, defs map[string]string, depth int) (int64, error) {
	if depth > 16 {
		return 0, fmt.Errorf("%q: #defines nest too deep", expr)
	}
	e, err := parser.ParseExpr(reIntSuffix.ReplaceAllString(expr, "$1"))
	if err != nil {
		return 0, fmt.Errorf("%q is not a constant expression", expr)
	}
	var eval func(ast.Expr) (int64, error)
	eval = func(e ast.Expr) (int64, error) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.INT {
				break
			}
			return strconv.ParseInt(e.Value, 0, 64)
		case *ast.Ident:
			d, ok := defs[e.Name]
			if !ok {
				return 0, fmt.Errorf("%s is not a #define", e.Name)
			}
			return evalInt(d, defs, depth+1)
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.BinaryExpr:
			x, err := eval(e.X)
			if err != nil {
				return 0, err
			}
			y, err := eval(e.Y)
			if err != nil {
				return 0, err
			}
			switch e.Op {
			case token.ADD:
				return x + y, nil
			case token.SUB:
				return x - y, nil
			case token.MUL:
				return x * y, nil
			case token.QUO, token.REM:
				if y == 0 {
					return 0, fmt.Errorf("%q divides by zero", expr)
				}
				if e.Op == token.QUO {
					return x / y, nil
				}
				return x % y, nil
			case token.SHL, token.SHR:
				if y < 0 || y > 62 {
					return 0, fmt.Errorf("%q shifts by %d", expr, y)
				}
				if e.Op == token.SHL {
					return x << y, nil
				}
				return x >> y, nil
			}
		}
		return 0, fmt.Errorf("%q is not an integer constant expression", expr)
	}
	return eval(e)
}

// body returns the text of the braced block that starts at the first '{' of s.
func body(s string) (string, error) {
	start := strings.IndexByte(s, '{')
	if start < 0 {
		return "", fmt.Errorf("no body")
	}
	depth := 0
	for i := start; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[start : i+1], nil
			}
		}
	}
	return "", fmt.Errorf("unterminated body")
}
