package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	kernelsDir = "../../kernels"
	headerDir  = "../../emu"
)

// needClang skips when no suitable clang is installed; CI installs one (.ci/run), and make
// check-metal fails without it.
func needClang(t *testing.T) {
	t.Helper()
	if _, err := findClang(context.Background()); err != nil {
		t.Skip(err)
	}
}

// TestKernels is make check-metal over the real kernels.
func TestKernels(t *testing.T) {
	needClang(t)
	n, err := check(context.Background(), kernelsDir, headerDir)
	if err != nil {
		t.Fatal(err)
	}
	if n < 9 {
		t.Fatalf("compiled %d kernel files, want every one of metal/kernels", n)
	}
}

// TestFaultsRejected injects into a copy of the kernels, one at a time, mistakes that the Metal
// compiler rejects but g++ and the emulator accept, and expects the strict compile to fail in
// the file that has it. The unmodified copy passes (the control), so a failure is the fault's.
func TestFaultsRejected(t *testing.T) {
	needClang(t)
	if _, err := check(context.Background(), copyKernels(t), headerDir); err != nil {
		t.Fatalf("control (unmodified copy): %v", err)
	}
	for _, tc := range []struct {
		name, file, from, to, want string
	}{
		{
			"device pointer as thread pointer", "attention.metal",
			"device float* o = att_output(", "float* o = att_output(",
			"cannot initialize a variable of type 'float *' with an rvalue of type 'device float *'",
		},
		{
			"thread pointer as device pointer", "matvec.metal",
			"F::dot(wt, w + row * wt.rowBytes,", "F::dot(wt, (const uchar*)xv,",
			"cannot initialize a parameter of type 'device",
		},
		{
			"threadgroup memory as device pointer", "attention.metal",
			"device float* o = att_output(", "device float* o = tacc; att_output(",
			"cannot initialize a variable of type 'device",
		},
		{
			"write to constant memory", "norm.metal",
			"x += row * p.n;", "p.n = row; x += row * p.n;",
			"cannot assign to",
		},
		{
			"C++17", "elementwise.metal",
			"if (i >= p.n) return;\n  out[i] = silu", "if constexpr (SIMD == 32) { if (i >= p.n) return; }\n  out[i] = silu",
			"constexpr if is a C++17 extension",
		},
		{
			"double arithmetic", "common.metal",
			"g / (1.0f + exp(-g))", "g / (1.0 + exp(-g))",
			"implicit conversion increases floating-point precision",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := copyKernels(t)
			path := filepath.Join(dir, tc.file)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), tc.from) {
				t.Fatalf("%s no longer contains %q: choose another place for the fault", tc.file, tc.from)
			}
			bad := strings.Replace(string(src), tc.from, tc.to, 1)
			if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = check(context.Background(), dir, headerDir)
			if err == nil {
				t.Fatal("the strict compile accepted the fault")
			}
			if !strings.Contains(err.Error(), tc.file+":") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not name %s and %q:\n%v", tc.file, tc.want, err)
			}
		})
	}
}

func copyKernels(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	paths, err := filepath.Glob(filepath.Join(kernelsDir, "*.metal"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no kernels in %s: %v", kernelsDir, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
