//go:build darwin || linux

// Package pin keeps a model's weight files resident in memory. The engine maps the files
// itself; pinning a second read-only mapping of the same files with mlock locks the very same
// page-cache pages, so the engine's mapping never faults after the system pages them out.
package pin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/layaapp/laya/internal/sysmem"
)

// WeightFiles returns the weight files of a model path: the file itself, or a directory's
// .safetensors and .gguf files.
func WeightFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("pin: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("pin: %w", err)
	}
	var files []string
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".safetensors") || strings.HasSuffix(n, ".gguf")) {
			files = append(files, filepath.Join(path, n))
		}
	}
	return files, nil
}

// Pinned is a set of locked mappings.
type Pinned struct {
	maps  [][]byte
	Bytes int64
}

// MemoryShare is the largest part of physical memory Files locks: wired pages cannot be
// reclaimed, and a multi-GB model must not wire most of an 8 GB Mac. Weights over the share
// are not locked at all and page in from the mapping as usual.
const MemoryShare = 4 // a quarter

// Files maps and locks every file, provided their total fits the RLIMIT_MEMLOCK soft limit and
// 1/MemoryShare of physical memory. On any failure nothing stays locked and the error says
// why; callers treat it as advisory.
func Files(paths []string) (*Pinned, error) {
	ram, err := sysmem.Physical()
	if err != nil {
		return nil, fmt.Errorf("pin: physical memory unknown: %w", err)
	}
	return files(paths, ram/MemoryShare)
}

func files(paths []string, share uint64) (*Pinned, error) {
	var total int64
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("pin: %w", err)
		}
		total += st.Size()
	}
	if uint64(total) > share {
		return nil, fmt.Errorf("pin: %d bytes of weights exceed 1/%d of physical memory (%d bytes)", total, MemoryShare, share)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(rlimitMemlock, &lim); err != nil {
		return nil, fmt.Errorf("pin: getrlimit: %w", err)
	}
	if lim.Cur != rlimInfinity && uint64(total) > lim.Cur {
		return nil, fmt.Errorf("pin: %d bytes of weights exceed the memlock limit of %d", total, lim.Cur)
	}
	p := &Pinned{}
	for _, path := range paths {
		if err := p.add(path); err != nil {
			p.Release()
			return nil, err
		}
	}
	return p, nil
}

func (p *Pinned) add(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	if st.Size() == 0 {
		return nil
	}
	if st.Size() != int64(int(st.Size())) {
		return fmt.Errorf("pin: %s: too large to map", path)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("pin: mmap %s: %w", path, err)
	}
	if err := syscall.Mlock(m); err != nil {
		syscall.Munmap(m)
		return fmt.Errorf("pin: mlock %s: %w", path, err)
	}
	p.maps = append(p.maps, m)
	p.Bytes += int64(len(m))
	return nil
}

// Release unlocks and unmaps everything; p may be nil.
func (p *Pinned) Release() {
	if p == nil {
		return
	}
	// Errors are ignored: undoing our own read-only mappings cannot lose data.
	for _, m := range p.maps {
		syscall.Munlock(m)
		syscall.Munmap(m)
	}
	p.maps, p.Bytes = nil, 0
}
