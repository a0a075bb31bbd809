package metal

// GPUInfo describes the Metal GPU for diagnostics (laya doctor).
type GPUInfo struct {
	// Available says a Metal device exists; Error says why not.
	Available bool   `json:"available"`
	Error     string `json:"error,omitempty"`
	Device    string `json:"device,omitempty"` // e.g. "Apple M2"
	// Family is the highest Apple GPU family the device supports: "apple7" for M1, "apple8"
	// for M2, "apple9" for M3 and M4.
	Family string `json:"family,omitempty"`
	// Kernels is "compiled" when the kernels compiled and every pipeline was made, else the
	// error.
	Kernels string `json:"kernels,omitempty"`
}

// DeviceName names the device the backend runs on (the GPU's name on darwin, "metal-emu" under
// the emulator); the engine's self-test keys its cached verdicts by it.
func (b *Backend) DeviceName() string { return b.dev.Name() }
