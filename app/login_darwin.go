//go:build darwin

package main

/*
#include <stdlib.h>
#include "login_darwin.h"
*/
import "C"

import (
	"errors"

	"github.com/layaapp/laya/app/prefs"
)

// loginStatus is the system's record of the login item.
func loginStatus() prefs.LoginStatus { return prefs.LoginStatus(C.layaLoginStatus()) }

// setLaunchAtLogin does what prefs.PlanLogin says for want. The error is for the user to see;
// it never stops the other preferences from being saved.
func setLaunchAtLogin(want bool) error {
	step := prefs.PlanLogin(want, loginStatus())
	switch step {
	case prefs.LoginRegister, prefs.LoginUnregister:
		if msg := C.layaSetLoginItem(C.bool(step == prefs.LoginRegister)); msg != nil {
			return errors.New("launch at login: " + cstring(msg))
		}
		if step == prefs.LoginRegister && loginStatus() == prefs.LoginRequiresApproval {
			C.layaOpenLoginItemsSettings()
		}
	case prefs.LoginOpenSettings:
		C.layaOpenLoginItemsSettings()
	}
	return nil
}
