//go:build darwin

package main

/*
#include <stdlib.h>
#include "login_darwin.h"
*/
import "C"

import "errors"

// setLaunchAtLogin registers or unregisters Laya as a login item.
func setLaunchAtLogin(on bool) error {
	if msg := C.layaSetLoginItem(C.bool(on)); msg != nil {
		return errors.New("launch at login: " + cstring(msg))
	}
	return nil
}
