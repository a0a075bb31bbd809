package metal

import (
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/engine/weights"
)

func TestNoCopyRange(t *testing.T) {
	const page = 16384 // Apple silicon's page size
	for _, c := range []struct {
		addr        uintptr
		n           int
		start, size uintptr
		ok          bool
	}{
		{addr: 0x10000, n: 1, start: 0x10000, size: page, ok: true},
		{addr: 0x10000 + 8, n: 100, start: 0x10000, size: page, ok: true},          // 8 mod 16: in place now
		{addr: 0x10000 + 4, n: page - 4, start: 0x10000, size: page, ok: true},     // ends on the page boundary
		{addr: 0x10000 + 4, n: page - 3, start: 0x10000, size: 2 * page, ok: true}, // one byte over
		{addr: 0x10000 + 2*page + 12, n: 3 * page, start: 0x10000 + 2*page, size: 4 * page, ok: true},
		{addr: 0x10000 + 2, n: 8},  // only 2-byte aligned: copied
		{addr: 0x10000 + 13, n: 8}, // odd
		{addr: 0x10000, n: 0},
		{addr: ^uintptr(0) &^ 3, n: 8}, // runs past the address space
	} {
		start, size, off, ok := noCopyRange(c.addr, c.n, page)
		if ok != c.ok || ok && (start != c.start || size != c.size || off != c.addr-c.start) {
			t.Errorf("%#x+%d: start %#x size %#x off %#x ok %v, want %#x %#x %#x %v",
				c.addr, c.n, start, size, off, ok, c.start, c.size, c.addr-c.start, c.ok)
		}
		if ok && (start%page != 0 || size%page != 0 || start+off != c.addr || off+uintptr(c.n) > size) {
			t.Errorf("%#x+%d: range [%#x, +%#x) off %#x does not cover the data in whole pages", c.addr, c.n, start, size, off)
		}
	}
}

// TestFixturesWrapInPlace: every tensor of every parity fixture, as the engine maps it, is
// placed so the GPU can read it without a copy (before 4-byte offsets were accepted, the
// safetensors files, whose data starts at 8 mod 16, were copied whole).
func TestFixturesWrapInPlace(t *testing.T) {
	var paths []string
	for _, pat := range []string{"*/hf", "*/mlx*", "*/*.gguf"} {
		p, _ := filepath.Glob(filepath.Join("..", "testdata", "models", pat))
		paths = append(paths, p...)
	}
	if len(paths) == 0 {
		t.Skip("no parity fixtures")
	}
	opened := 0
	for _, p := range paths {
		m, err := weights.Open(p)
		if err != nil {
			t.Logf("%s: not checked: %v", p, err) // a fixture of a family in progress
			continue
		}
		opened++
		var n, old int
		check := func(ts *tensor.Tensor) {
			addr := uintptr(unsafe.Pointer(&ts.Data[0]))
			if _, _, _, ok := noCopyRange(addr, len(ts.Data), 16384); !ok {
				t.Errorf("%s: tensor %q at %#x would be copied", p, ts.Name, addr)
			}
			n++
			if addr%16 != 0 {
				old++
			}
		}
		for _, ts := range m.Tensors {
			check(ts)
			if ts.DType == tensor.Affine {
				check(ts.Scales)
				check(ts.Biases)
			}
		}
		t.Logf("%s: %d tensors in place, %d of them not 16-byte aligned", p, n, old)
		m.Close()
	}
	if opened == 0 {
		t.Fatalf("none of %d fixtures opened", len(paths))
	}
}
