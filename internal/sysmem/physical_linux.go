package sysmem

import "golang.org/x/sys/unix"

// Physical is the machine's RAM in bytes.
func Physical() (uint64, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, err
	}
	return uint64(si.Totalram) * uint64(si.Unit), nil
}
