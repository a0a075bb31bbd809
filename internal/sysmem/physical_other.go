//go:build !darwin && !linux

package sysmem

import "errors"

// Physical is the machine's RAM in bytes; unknown on this system.
func Physical() (uint64, error) { return 0, errors.ErrUnsupported }
