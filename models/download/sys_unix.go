//go:build linux || darwin

package download

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// statfsFree reports the bytes an unprivileged user may still write on dir's file system.
func statfsFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// lockDir takes an exclusive lock on path (created if needed), so the app and the CLI never
// write the same partial files at once. The lock dies with the process.
func lockDir(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another download of this model is in progress")
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}
