package main

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"debug/macho"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
)

// Load commands, from <mach-o/loader.h>.
const (
	lcLoadDylib       = 0xc
	lcLoadWeakDylib   = 0x80000018
	lcRpath           = 0x8000001c
	lcCodeSignature   = 0x1d
	lcReexportDylib   = 0x8000001f
	lcLazyLoadDylib   = 0x20
	lcLoadUpwardDylib = 0x80000023
	lcBuildVersion    = 0x32
)

// Code signing blob magics and flags (xnu's osfmk/kern/cs_blobs.h).
const (
	magicEmbeddedSignature = 0xfade0cc0
	magicCodeDirectory     = 0xfade0c02
	slotCodeDirectory      = 0
	csAdhoc                = 0x2
	platformMacOS          = 1
)

// Info describes a checked executable.
type Info struct {
	MinOS   string // minimum macOS version, e.g. "13.0"
	Pages   int    // code pages whose hashes were verified
	AdHoc   bool   // signed without an identity (the linker's signature)
	CodeEnd uint32 // bytes covered by the signature
}

// Check verifies that data is a thin arm64 Mach-O executable for macOS carrying a code signature
// whose code directory matches every page it covers, which is what the kernel of an Apple silicon
// Mac demands before it runs a binary.
func Check(data []byte) (*Info, error) {
	f, err := macho.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a thin Mach-O file: %w", err)
	}
	defer f.Close()
	if f.Cpu != macho.CpuArm64 {
		return nil, fmt.Errorf("cpu %v, want arm64", f.Cpu)
	}
	if f.Type != macho.TypeExec {
		return nil, fmt.Errorf("file type %v, want an executable", f.Type)
	}
	info := &Info{}
	var sig []byte
	seen := map[string]bool{}
	for _, l := range f.Loads {
		raw := l.Raw()
		if len(raw) < 8 {
			continue
		}
		switch cmd := f.ByteOrder.Uint32(raw); cmd {
		case lcLoadDylib, lcLoadWeakDylib, lcReexportDylib, lcLazyLoadDylib, lcLoadUpwardDylib, lcRpath:
			// dyld warns about a dylib or run path named twice since macOS 15 and refuses to
			// launch the executable since macOS 26; Apple's linker drops repeats, zig's does not.
			name, err := loadString(f.ByteOrder, raw)
			if err != nil {
				return nil, err
			}
			what := "linked dylib"
			if cmd == lcRpath {
				what = "LC_RPATH"
			}
			if seen[what+name] {
				return nil, fmt.Errorf("duplicate %s %s: dyld refuses to launch it", what, name)
			}
			seen[what+name] = true
		case lcBuildVersion:
			if len(raw) < 16 {
				return nil, errors.New("short LC_BUILD_VERSION")
			}
			if p := f.ByteOrder.Uint32(raw[8:]); p != platformMacOS {
				return nil, fmt.Errorf("built for platform %d, want macOS (%d)", p, platformMacOS)
			}
			v := f.ByteOrder.Uint32(raw[12:])
			info.MinOS = fmt.Sprintf("%d.%d", v>>16, v>>8&0xff)
		case lcCodeSignature:
			if sig != nil {
				return nil, errors.New("two LC_CODE_SIGNATURE commands")
			}
			if len(raw) < 16 {
				return nil, errors.New("short LC_CODE_SIGNATURE")
			}
			off, size := uint64(f.ByteOrder.Uint32(raw[8:])), uint64(f.ByteOrder.Uint32(raw[12:]))
			if off+size > uint64(len(data)) {
				return nil, fmt.Errorf("code signature at %d+%d lies past the end of the file (%d bytes)", off, size, len(data))
			}
			sig = data[off : off+size]
			info.CodeEnd = uint32(off)
		}
	}
	if info.MinOS == "" {
		return nil, errors.New("no LC_BUILD_VERSION: not built for macOS")
	}
	if sig == nil {
		return nil, errors.New("no code signature (LC_CODE_SIGNATURE): an Apple silicon Mac will not run it")
	}
	cd, err := codeDirectory(sig)
	if err != nil {
		return nil, err
	}
	if err := verifyPages(cd, data, info); err != nil {
		return nil, err
	}
	return info, nil
}

// loadString returns the string a dylib or run path load command names.
func loadString(bo binary.ByteOrder, raw []byte) (string, error) {
	if len(raw) < 12 {
		return "", errors.New("short dylib or run path load command")
	}
	off := bo.Uint32(raw[8:])
	if off < 12 || uint64(off) >= uint64(len(raw)) {
		return "", fmt.Errorf("load command string at %d outside its %d bytes", off, len(raw))
	}
	s := raw[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s), nil
}

// codeDirectory returns the code directory blob of an embedded signature.
func codeDirectory(sig []byte) ([]byte, error) {
	be := binary.BigEndian
	if len(sig) < 12 || be.Uint32(sig) != magicEmbeddedSignature {
		return nil, errors.New("code signature is not an embedded signature blob")
	}
	n := be.Uint32(sig[4:])
	if n < 12 || uint64(n) > uint64(len(sig)) {
		return nil, fmt.Errorf("signature blob length %d outside its %d bytes", n, len(sig))
	}
	sig = sig[:n]
	count := uint64(be.Uint32(sig[8:]))
	if count > uint64(len(sig)-12)/8 {
		return nil, fmt.Errorf("signature lists %d blobs, more than fit in it", count)
	}
	for i := range count {
		idx := sig[12+8*i:]
		if be.Uint32(idx) != slotCodeDirectory {
			continue
		}
		off := uint64(be.Uint32(idx[4:]))
		if off+8 > uint64(len(sig)) {
			return nil, fmt.Errorf("code directory offset %d outside the signature", off)
		}
		b := sig[off:]
		if be.Uint32(b) != magicCodeDirectory {
			return nil, fmt.Errorf("code directory magic %#x", be.Uint32(b))
		}
		n := uint64(be.Uint32(b[4:]))
		if n < 44 || n > uint64(len(b)) {
			return nil, fmt.Errorf("code directory length %d outside the signature", n)
		}
		return b[:n], nil
	}
	return nil, errors.New("signature has no code directory")
}

// verifyPages compares every code slot of the code directory cd with the hash of its page.
func verifyPages(cd, data []byte, info *Info) error {
	be := binary.BigEndian
	flags := be.Uint32(cd[12:])
	hashOff := uint64(be.Uint32(cd[16:]))
	nCode := uint64(be.Uint32(cd[28:]))
	limit := uint64(be.Uint32(cd[32:]))
	hashSize, hashType, pageShift := uint64(cd[36]), cd[37], cd[39]

	var h hash.Hash
	switch {
	case hashType == 1 && hashSize == sha1.Size:
		h = sha1.New()
	case hashType == 2 && hashSize == sha256.Size:
		h = sha256.New()
	default:
		return fmt.Errorf("code directory hash type %d of %d bytes is not one this check knows", hashType, hashSize)
	}
	if pageShift < 12 || pageShift > 16 {
		return fmt.Errorf("code directory page size 2^%d", pageShift)
	}
	page := uint64(1) << pageShift
	if limit != uint64(info.CodeEnd) {
		return fmt.Errorf("code directory covers %d bytes, the signature starts at %d", limit, info.CodeEnd)
	}
	if nCode != (limit+page-1)/page {
		return fmt.Errorf("code directory has %d page hashes for %d bytes of %d-byte pages", nCode, limit, page)
	}
	if hashOff > uint64(len(cd)) || nCode*hashSize > uint64(len(cd))-hashOff {
		return errors.New("code directory hashes lie outside it")
	}
	sum := make([]byte, 0, h.Size())
	for i := range nCode {
		lo := i * page
		hi := min(lo+page, limit)
		h.Reset()
		h.Write(data[lo:hi])
		sum = h.Sum(sum[:0])
		want := cd[hashOff+i*hashSize : hashOff+(i+1)*hashSize]
		if !bytes.Equal(sum, want) {
			return fmt.Errorf("page %d (bytes %d-%d) does not match its code directory hash: the signature is stale", i, lo, hi)
		}
	}
	info.Pages = int(nCode)
	info.AdHoc = flags&csAdhoc != 0
	return nil
}
