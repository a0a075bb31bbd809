//go:build darwin && arm64

package metal

import (
	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/engine/backend"
)

// On Apple silicon the engine can select this backend as "metal" (and prefers it by default);
// opening fails, and the engine falls back to the CPU, when the machine has no Metal device.
func init() {
	engine.RegisterBackend("metal", func(engine.Options) (backend.Backend, error) {
		d, err := OpenDevice()
		if err != nil {
			return nil, err
		}
		return New(d)
	})
}
