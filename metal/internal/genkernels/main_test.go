package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCurrent fails when kernels/*.metal changed without go generate ./metal.
func TestGeneratedCurrent(t *testing.T) {
	goSrc, cppSrc, err := generate(filepath.Join("..", "..", "kernels"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{
		filepath.Join("..", "..", "kernels_gen.go"):               goSrc,
		filepath.Join("..", "..", "emu", "kernels_gen_linux.cpp"): cppSrc,
	} {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./metal", path)
		}
	}
}

// TestBindingErrors checks that signatures the tables cannot represent are rejected.
func TestBindingErrors(t *testing.T) {
	const params = "struct P { uint n; };\n"
	for _, tc := range []struct{ name, src, want string }{
		{"gap", params + "kernel void f(device float* a [[buffer(1)]], constant P& p [[buffer(2)]]) {}", "want buffer(0)"},
		{"no params", "kernel void f(device float* a [[buffer(0)]]) {}", "no constant params"},
		{"buffer after params", params + "kernel void f(constant P& p [[buffer(0)]], device float* a [[buffer(1)]]) {}", "after the constant params"},
		{"no attribute", params + "kernel void f(device float* a, constant P& p [[buffer(1)]]) {}", "no [[attribute]]"},
		{"unknown attribute", params + "kernel void f(constant P& p [[buffer(0)]], uint x [[sample_id]]) {}", "unsupported attribute"},
		{"not a struct", "kernel void f(constant float& p [[buffer(0)]]) {}", "not a plain struct"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "common.metal"), []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := generate(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
