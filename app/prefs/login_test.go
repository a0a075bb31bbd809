package prefs

import "testing"

func TestPlanLogin(t *testing.T) {
	for _, c := range []struct {
		want bool
		st   LoginStatus
		step LoginStep
	}{
		{true, LoginEnabled, LoginNothing},
		{true, LoginNotRegistered, LoginRegister},
		{true, LoginNotFound, LoginRegister},
		{true, LoginRequiresApproval, LoginOpenSettings},
		{false, LoginEnabled, LoginUnregister},
		{false, LoginRequiresApproval, LoginUnregister},
		{false, LoginNotRegistered, LoginNothing},
		{false, LoginNotFound, LoginNothing},
	} {
		if got := PlanLogin(c.want, c.st); got != c.step {
			t.Errorf("PlanLogin(%v, %v) = %v, want %v", c.want, c.st, got, c.step)
		}
	}
	if LoginShown(LoginNotRegistered) || !LoginShown(LoginEnabled) || !LoginShown(LoginRequiresApproval) {
		t.Error("checkbox does not follow the system's status")
	}
}
