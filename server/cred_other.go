//go:build !linux && !darwin

package server

import (
	"errors"
	"net"
)

// peerUID is not implemented here, so every Unix-socket peer is refused.
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("server: peer credentials are not supported on this system")
}
