package server

import (
	"fmt"
	"net"
)

// peerUID is the user id of the process at the other end of c, asked of the kernel through the
// socket itself (fdUID is per OS).
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("server: peer credentials: %w", err)
	}
	uid := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) { uid, cerr = fdUID(int(fd)) }); err != nil {
		return -1, fmt.Errorf("server: peer credentials: %w", err)
	}
	if cerr != nil {
		return -1, fmt.Errorf("server: peer credentials: %w", cerr)
	}
	return uid, nil
}
