package main

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

// testdata/tiny-arm64 is testdata/tiny.c linked by zig's linker, which signs arm64 ad hoc as
// Apple's does, without any SDK:
//
//	zig cc -target aarch64-macos.13.0 -Os -s -o tiny-arm64 tiny.c
func fixture(t testing.TB) []byte {
	data, err := os.ReadFile("testdata/tiny-arm64")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// loadCmd returns the file offset of the first load command cmd in data.
func loadCmd(t *testing.T, data []byte, cmd uint32) int {
	f, err := macho.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	off := 32 // mach_header_64
	for _, l := range f.Loads {
		raw := l.Raw()
		if binary.LittleEndian.Uint32(raw) == cmd {
			return off
		}
		off += len(raw)
	}
	t.Fatalf("no load command %#x", cmd)
	return 0
}

func TestCheckFixture(t *testing.T) {
	info, err := Check(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	// llvm-objdump --macho --private-headers: minos 13.0, LC_CODE_SIGNATURE dataoff 49408.
	if info.MinOS != "13.0" || info.CodeEnd != 49408 || !info.AdHoc {
		t.Errorf("got %+v, want macOS 13.0, code up to 49408, ad hoc", info)
	}
	if info.Pages < 1 {
		t.Errorf("verified %d pages", info.Pages)
	}
}

// testdata/dup-arm64 names libdemo twice, as zig's linker does for a library given twice
// (cgo passes -lobjc once per package that asks for it):
//
//	zig cc -target aarch64-macos.13.0 -Os -s -o dup-arm64 tiny.c -L. -ldemo -ldemo
func TestCheckDuplicateDylib(t *testing.T) {
	data, err := os.ReadFile("testdata/dup-arm64")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Check(data)
	if err == nil || !strings.Contains(err.Error(), "duplicate linked dylib /usr/lib/libdemo.dylib") {
		t.Errorf("got error %v, want a duplicate libdemo", err)
	}
}

func TestCheckRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, b []byte) []byte
		want   string
	}{
		{"not Mach-O", func(t *testing.T, b []byte) []byte { return []byte("int main(void) { return 0; }\n") }, "not a thin Mach-O"},
		{"x86_64", func(t *testing.T, b []byte) []byte {
			binary.LittleEndian.PutUint32(b[4:], uint32(macho.CpuAmd64))
			return b
		}, "want arm64"},
		{"dylib", func(t *testing.T, b []byte) []byte {
			binary.LittleEndian.PutUint32(b[12:], uint32(macho.TypeDylib))
			return b
		}, "want an executable"},
		{"iOS", func(t *testing.T, b []byte) []byte {
			binary.LittleEndian.PutUint32(b[loadCmd(t, b, lcBuildVersion)+8:], 2)
			return b
		}, "want macOS"},
		{"unsigned", func(t *testing.T, b []byte) []byte {
			// An unknown command in its place: the file still parses, the signature is gone.
			binary.LittleEndian.PutUint32(b[loadCmd(t, b, lcCodeSignature):], 0x7ffffff0)
			return b
		}, "no code signature"},
		{"code changed after signing", func(t *testing.T, b []byte) []byte {
			f, err := macho.NewFile(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			b[f.Section("__text").Offset] ^= 1
			return b
		}, "does not match its code directory hash"},
		{"dylib name outside its command", func(t *testing.T, b []byte) []byte {
			// A weak dylib, which debug/macho leaves unparsed.
			off := loadCmd(t, b, lcLoadDylib)
			binary.LittleEndian.PutUint32(b[off:], lcLoadWeakDylib)
			binary.LittleEndian.PutUint32(b[off+8:], 0xffff)
			return b
		}, "outside its"},
		{"truncated", func(t *testing.T, b []byte) []byte { return b[:len(b)-100] }, "past the end of the file"},
		{"blob count", func(t *testing.T, b []byte) []byte {
			sig := binary.LittleEndian.Uint32(b[loadCmd(t, b, lcCodeSignature)+8:])
			binary.BigEndian.PutUint32(b[sig+8:], 0xffffffff)
			return b
		}, "more than fit"},
		{"page hashes", func(t *testing.T, b []byte) []byte {
			sig := binary.LittleEndian.Uint32(b[loadCmd(t, b, lcCodeSignature)+8:])
			cd := sig + binary.BigEndian.Uint32(b[sig+16:]) // first blob: the code directory
			binary.BigEndian.PutUint32(b[cd+28:], 0x10000000)
			return b
		}, "page hashes for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(tc.change(t, fixture(t)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// FuzzCheck feeds damaged executables to Check, which must return an error rather than panic.
func FuzzCheck(f *testing.F) {
	f.Add(fixture(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		Check(data)
	})
}
