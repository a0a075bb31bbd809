//go:build !linux && !darwin

package server

import "errors"

// fdUID is not implemented here, so every Unix-socket peer is refused.
func fdUID(int) (int, error) {
	return -1, errors.New("peer credentials are not supported on this system")
}
