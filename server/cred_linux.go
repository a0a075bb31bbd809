package server

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the user id of the process at the other end of c (SO_PEERCRED).
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("server: peer credentials: %w", err)
	}
	uid := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		if cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); cerr == nil {
			uid = int(cred.Uid)
		}
	}); err != nil {
		return -1, fmt.Errorf("server: peer credentials: %w", err)
	}
	if cerr != nil {
		return -1, fmt.Errorf("server: peer credentials: %w", cerr)
	}
	return uid, nil
}
