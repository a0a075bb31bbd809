package server

import "golang.org/x/sys/unix"

// fdUID reads the peer's uid with LOCAL_PEERCRED.
func fdUID(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
