// Package good uses macdriver v0.4.0 and cgo correctly in a darwin-only file.
package good

/*
#include <stdint.h>
static int32_t twice(int32_t x) { return 2 * x; }
*/
import "C"

import (
	"github.com/progrium/macdriver/cocoa"
	"github.com/progrium/macdriver/core"
)

// Start makes an accessory app with a status item titled by a C computation.
func Start() {
	app := cocoa.NSApp()
	app.SetActivationPolicy(cocoa.NSApplicationActivationPolicyAccessory)
	item := cocoa.NSStatusBar_System().StatusItemWithLength(cocoa.NSVariableStatusItemLength)
	item.Button().SetTitle(core.String("x").String())
	_ = C.twice(21)
}
