package fsutil

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces the file at path with data, private to the user (0600, its
// directory made 0700 when missing), so that a concurrent reader or a crash finds the old file
// or the whole new one, never half of it: the data goes to a temporary file in the same
// directory, which is synced and renamed over path.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
