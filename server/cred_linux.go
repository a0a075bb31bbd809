package server

import "golang.org/x/sys/unix"

// fdUID reads the peer's uid with SO_PEERCRED.
func fdUID(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
