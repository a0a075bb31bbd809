//go:build !darwin

package hotkey

type platformState struct{}

func (h *Hotkey) register() error   { return ErrUnsupported }
func (h *Hotkey) unregister() error { return nil }
