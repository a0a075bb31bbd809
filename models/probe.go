package models

import "github.com/layaapp/laya/engine/weights"

// OpenProbe decides with the engine's own loader: weights.Open maps the files and checks the
// architecture, the quantization and every tensor's presence and shape without reading weights.
func OpenProbe(path string) (ProbeResult, error) {
	m, err := weights.Open(path)
	if err != nil {
		return ProbeResult{}, err
	}
	defer m.Close()
	return ProbeResult{Format: m.Format, Arch: m.Config.Arch}, nil
}
