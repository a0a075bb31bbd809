//go:build !darwin

package hotkey

//lint:ignore U1000 Hotkey.plat's type on platforms without global hotkeys
type platformState struct{}

func (h *Hotkey) register() error   { return ErrUnsupported }
func (h *Hotkey) unregister() error { return nil }
