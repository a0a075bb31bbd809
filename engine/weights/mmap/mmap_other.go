//go:build !unix

package mmap

import (
	"io"
	"os"
)

// mapFile reads the file into memory on systems without mmap; the weights are then held once, in
// this buffer, and never copied again.
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
