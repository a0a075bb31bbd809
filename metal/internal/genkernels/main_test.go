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
		{"attribute type", params + "kernel void f(constant P& p [[buffer(0)]], int i [[thread_position_in_grid]]) {}", `has type "int"`},
		{"vector index", params + "kernel void f(constant P& p [[buffer(0)]], uint2 i [[thread_index_in_simdgroup]]) {}", `has type "uint2"`},
		{"vector sizes", params + "kernel void f(constant P& p [[buffer(0)]], uint2 g [[threadgroup_position_in_grid]], uint3 t [[thread_position_in_threadgroup]]) {}", "vector attributes of one size"},
		{"position and size", params + "kernel void f(constant P& p [[buffer(0)]], ushort t [[thread_position_in_threadgroup]], uint n [[threads_per_threadgroup]]) {}", "needs one type"},
		{"index width", params + "kernel void f(constant P& p [[buffer(0)]], uint2 t [[thread_position_in_threadgroup]], ushort i [[thread_index_in_threadgroup]]) {}", "must be uint"},
		{"threadgroup memory", params + "#define N 4096\n#define M (N * 2)\nkernel void f(constant P& p [[buffer(0)]]) { threadgroup float a[M]; threadgroup uchar b[16]; }", "32784 bytes of threadgroup memory"},
		{"threadgroup array", params + "kernel void f(constant P& p [[buffer(0)]]) { threadgroup float a[1u << 14]; }", "65536 bytes or more"},
		{"threadgroup initializer", params + "kernel void f(constant P& p [[buffer(0)]]) { threadgroup float a = 0; }", "not an array without initializer"},
		{"threadgroup type", params + "kernel void f(constant P& p [[buffer(0)]]) { threadgroup Foo a[2]; }", `unknown element type "Foo"`},
		{"threadgroup size", params + "kernel void f(constant P& p [[buffer(0)]]) { threadgroup float a[K]; }", "K is not a #define"},
		{"threadgroup helper", params + "inline void h(threadgroup float* a) {}\nkernel void f(constant P& p [[buffer(0)]]) {}", "outside a kernel body"},
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

// TestThreadgroupBytes checks the sizes the limit is computed from: 3-component vectors take the
// room of 4, each array is rounded up to 16 bytes, #defines nest.
func TestThreadgroupBytes(t *testing.T) {
	defs := map[string]string{"A": "8", "B": "(A * 4)", "C": "B / A"}
	for _, tc := range []struct {
		body string
		want int64
	}{
		{"{ threadgroup float x[B]; }", 128},
		{"{ threadgroup float3 x[2]; threadgroup half y[3]; }", 32 + 16},
		{"{ threadgroup uint x[A][C]; threadgroup_barrier(mem_flags::mem_threadgroup); }", 128},
		{"{ float x[1024]; }", 0},
	} {
		got, err := threadgroupBytes(tc.body, defs)
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.body, got, err, tc.want)
		}
	}
}

// TestWrites checks the written-buffer masks: a device pointer to non-const data may be
// written, one to const data only read, wherever the const stands.
func TestWrites(t *testing.T) {
	const src = "struct P { uint n; };\n" +
		"kernel void f(device const float* a [[buffer(0)]], device float* b [[buffer(1)]], device const uint* c [[buffer(2)]],\n" +
		"  device half* d [[buffer(3)]], constant P& p [[buffer(4)]]) {}\n" +
		"kernel void g(device uchar* x [[buffer(0)]], device float const* y [[buffer(1)]], constant P& p [[buffer(2)]]) {}\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "common.metal"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	goSrc, _, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "var kernelWrites = [...]uint32{0xa, 0x1}"; !strings.Contains(string(goSrc), want) {
		t.Errorf("generated Go lacks %q:\n%s", want, goSrc)
	}
}
