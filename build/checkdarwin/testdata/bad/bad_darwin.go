// Package bad misuses macdriver v0.4.0 in a darwin-only file; checkdarwin must reject it.
package bad

import "github.com/progrium/macdriver/cocoa"

// Start passes a string where SetActivationPolicy takes an int.
func Start() {
	cocoa.NSApp().SetActivationPolicy("accessory")
}
