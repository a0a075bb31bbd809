// Package mmap maps model files read-only into memory, so tensors can point into the file's pages
// instead of holding copies of the weights.
package mmap

import (
	"fmt"
	"os"
)

// File is a read-only view of a whole file. Data stays valid until Close.
type File struct {
	Path string
	Data []byte

	unmap func() error
}

// Open maps the file at path. An empty file gives an empty Data.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("mmap: %s: not a regular file", path)
	}
	size := st.Size()
	if size != int64(int(size)) {
		return nil, fmt.Errorf("mmap: %s: %d bytes do not fit in memory", path, size)
	}
	if size == 0 {
		return &File{Path: path, Data: []byte{}, unmap: func() error { return nil }}, nil
	}
	data, unmap, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("mmap: %s: %w", path, err)
	}
	return &File{Path: path, Data: data, unmap: unmap}, nil
}

// Parse maps the file at path and parses its bytes with parse: the result, and the mapping the
// result points into, which the caller closes when done with both. When parse fails the mapping
// is released and the error names the file.
func Parse[T any](path string, parse func([]byte) (T, error)) (T, *File, error) {
	var zero T
	mm, err := Open(path)
	if err != nil {
		return zero, nil, err
	}
	v, err := parse(mm.Data)
	if err != nil {
		mm.Close()
		return zero, nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return v, mm, nil
}

// Close releases the mapping; Data must not be used afterwards. Closing twice, or a nil File,
// is harmless.
func (f *File) Close() error {
	if f == nil || f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.Data = nil, nil
	if err != nil {
		return fmt.Errorf("mmap: %s: %w", f.Path, err)
	}
	return nil
}
