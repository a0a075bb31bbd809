// Package fsutil reads files whole under a size bound, so that a huge or endless file (a
// multi-gigabyte mistake, /dev/zero, a FIFO) fails at once with a clear error instead of
// exhausting memory, and replaces small private files atomically.
package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is wrapped by ReadFileLimit's error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// ReadFileLimit reads the file at path, which must hold at most limit bytes. A regular file
// over the limit fails before anything is read; any other (device files report size 0) fails
// once limit+1 bytes have come. The error wraps the open error (fs.ErrNotExist) or ErrTooLarge.
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, at most %d", path, ErrTooLarge, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, limit)
	}
	return data, nil
}
