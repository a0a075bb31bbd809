// Command checkmetal compiles every Metal kernel file strictly, without a Mac (make check-metal).
//
// Each file of metal/kernels is type-checked by clang as C++14, Metal's base language, through
// the emulator's compatibility header (metal/emu/msl.h) in its MSL_STRICT mode: device, constant
// and threadgroup are distinct clang address spaces and thread is the default one, so passing a
// device pointer where a thread pointer is expected, binding threadgroup memory to a device
// pointer, writing constant memory and the like fail here as they fail in the Metal compiler,
// while g++ and the emulator, which treat every address space as plain memory, accept them.
// Also rejected: C++17 features (-Werror=c++17-extensions), float arithmetic promoted to double
// (Apple GPUs have none, so the emulator would compute what the GPU does not), and any -Wall
// -Wextra warning. Copying a plain struct out of any address space, which Metal allows, is
// declared for the kernels' plain structs (MSL_AS_COPY).
//
// The files compile as one source in kernelsrc's order, as on the Mac, with #line markers so that
// diagnostics name the .metal file and line.
// It needs clang 15 or later (or Apple clang) for _Float16; CLANGXX names one explicitly.
//
// With -metal (macOS) it then compiles the same source with Apple's Metal compiler, as the app
// does at run time but offline (xcrun -sdk macosx metal -c), which needs no GPU.
//
// Usage, from the repository root: go run ./metal/internal/checkmetal [-metal] [-kernels DIR] [-header DIR]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/layaapp/laya/metal/internal/kernelsrc"
)

// flags are clang's: a type check of C++14 with every warning an error, except Metal's
// [[attributes]], which clang does not know and genkernels checks instead.
var flags = []string{
	"-x", "c++", "-std=c++14", "-fsyntax-only", "-fno-exceptions", "-fno-rtti",
	"-Wall", "-Wextra", "-Werror", "-Werror=c++17-extensions", "-Werror=double-promotion",
	"-Wno-unknown-attributes",
}

func main() {
	kernels := flag.String("kernels", "metal/kernels", "directory of the .metal files")
	header := flag.String("header", "metal/emu", "directory of msl.h")
	apple := flag.Bool("metal", false, "also compile with Apple's Metal compiler (macOS, xcrun)")
	flag.Parse()
	start := time.Now()
	n, err := check(context.Background(), *kernels, *header)
	if err != nil {
		fmt.Fprintln(os.Stderr, "check-metal:", err)
		os.Exit(1)
	}
	fmt.Printf("check-metal: %d kernel files compile strictly (%.1f s)\n", n, time.Since(start).Seconds())
	if *apple {
		start = time.Now()
		if err := checkApple(context.Background(), *kernels); err != nil {
			fmt.Fprintln(os.Stderr, "check-metal:", err)
			os.Exit(1)
		}
		fmt.Printf("check-metal: %d kernel files compile with xcrun metal (%.1f s)\n", n, time.Since(start).Seconds())
	}
}

// checkApple compiles the kernels of dir as the one source the app compiles, with Apple's Metal
// compiler and every warning an error.
func checkApple(ctx context.Context, dir string) error {
	srcs, err := kernelsrc.Read(dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "checkmetal")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var b strings.Builder
	for _, s := range srcs {
		fmt.Fprintf(&b, "#line 1 %q\n%s\n", filepath.ToSlash(filepath.Join(dir, s.Name)), s.Text)
	}
	src := filepath.Join(tmp, "kernels.metal")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "xcrun", "-sdk", "macosx", "metal", "-Wall", "-Werror", "-c", src, "-o", filepath.Join(tmp, "kernels.air"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("xcrun metal: %v\n%s", err, out)
	}
	return nil
}

// check compiles every kernel file of dir against the header in headerDir and returns how many
// it compiled, or an error holding clang's diagnostics.
func check(ctx context.Context, dir, headerDir string) (int, error) {
	srcs, err := kernelsrc.Read(dir)
	if err != nil {
		return 0, err
	}
	cxx, err := findClang(ctx)
	if err != nil {
		return 0, err
	}
	header, err := filepath.Abs(headerDir)
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(filepath.Join(header, "msl.h")); err != nil {
		return 0, err
	}
	var all strings.Builder
	for _, s := range srcs {
		all.WriteString(kernelsrc.StripComments(s.Text))
	}
	if diags := compile(ctx, cxx, header, translationUnit(dir, srcs, kernelsrc.PlainStructs(all.String()))); diags != "" {
		return 0, errors.New("strict compile failed:\n" + diags)
	}
	return len(srcs), nil
}

// compile type-checks one translation unit and returns clang's diagnostics, empty if it passed.
func compile(ctx context.Context, cxx, header, unit string) string {
	cmd := exec.CommandContext(ctx, cxx, append(flags, "-I", header, "-")...)
	cmd.Stdin = strings.NewReader(unit)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if out.Len() == 0 {
			return err.Error()
		}
		return out.String()
	}
	return out.String()
}

var reStructOpen = regexp.MustCompile(`\bstruct\s+(\w+)\s*\{`)

// translationUnit is the strict header followed by srcs, each under a #line naming its file so
// diagnostics point into metal/kernels. Each plain struct gets, on its own opening line (line
// numbers stay), a default constructor and MSL_AS_COPY: the copies out of other address spaces
// that Metal allows for plain data.
func translationUnit(dir string, srcs []kernelsrc.Source, structs map[string]kernelsrc.Struct) string {
	var b strings.Builder
	b.WriteString("#define MSL_STRICT\n#include \"msl.h\"\n")
	for _, s := range srcs {
		fmt.Fprintf(&b, "#line 1 %q\n", filepath.ToSlash(filepath.Join(dir, s.Name)))
		text := reStructOpen.ReplaceAllStringFunc(s.Text, func(m string) string {
			name := reStructOpen.FindStringSubmatch(m)[1]
			if _, ok := structs[name]; !ok {
				return m
			}
			return fmt.Sprintf("%s %s() = default; MSL_AS_COPY(%s)", m, name, name)
		})
		for _, line := range strings.SplitAfter(text, "\n") {
			if strings.TrimSpace(line) == "#include <metal_stdlib>" {
				line = "\n" // the header stands in for it
			}
			b.WriteString(line)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// findClang returns CLANGXX, or the first clang++ on PATH that has _Float16 (msl.h's half in the
// strict mode): a versioned one first, as Debian's plain clang++ may be too old.
func findClang(ctx context.Context) (string, error) {
	if c := os.Getenv("CLANGXX"); c != "" {
		return c, nil
	}
	var names []string
	for v := 30; v >= 15; v-- {
		names = append(names, fmt.Sprintf("clang++-%d", v))
	}
	names = append(names, "clang++")
	var tried []string
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			continue
		}
		probe := exec.CommandContext(ctx, p, "-x", "c++", "-std=c++14", "-fsyntax-only", "-")
		probe.Stdin = strings.NewReader("_Float16 h;\n")
		if probe.Run() == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("no clang++ with _Float16 found (tried %v); install clang 15 or later (Debian: apt-get install clang-16) or set CLANGXX", tried)
}
