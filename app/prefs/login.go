package prefs

// LoginStatus is SMAppService.mainAppService.status: the system, not the preferences file, knows
// whether Laya launches at login (the user can switch it off in System Settings).
type LoginStatus int

// Login item states, in SMAppServiceStatus order.
const (
	LoginNotRegistered LoginStatus = iota
	LoginEnabled
	LoginRequiresApproval
	LoginNotFound
)

// LoginStep is what saving the preferences does about the login item.
type LoginStep int

// Login steps.
const (
	LoginNothing  LoginStep = iota
	LoginRegister           // then, if the status is LoginRequiresApproval, LoginOpenSettings
	LoginUnregister
	LoginOpenSettings // System Settings > General > Login Items, where the user approves
)

// PlanLogin says what to do when the user asks for launch at login to be want while the system
// reports st. Nothing happens at launch: registering again on every start would override a
// user who switched Laya off in System Settings.
func PlanLogin(want bool, st LoginStatus) LoginStep {
	switch {
	case want && st == LoginEnabled, !want && st == LoginNotRegistered, !want && st == LoginNotFound:
		return LoginNothing
	case want && st == LoginRequiresApproval:
		return LoginOpenSettings
	case want:
		return LoginRegister
	default:
		return LoginUnregister
	}
}

// LoginShown is what the Preferences checkbox shows for st.
func LoginShown(st LoginStatus) bool { return st == LoginEnabled || st == LoginRequiresApproval }
