// The login item follows SMAppService's rules: its status is the truth (the user may switch it
// off in System Settings), registering is only done when the user asks in Preferences (never on
// every launch, which would override that choice), and a requires-approval status sends the
// user to System Settings with openSystemSettingsLoginItems.
#import <Foundation/Foundation.h>
#import <ServiceManagement/ServiceManagement.h>
#include <string.h>

#include "login_darwin.h"

int layaLoginStatus(void) {
	if (@available(macOS 13.0, *)) {
		switch ([SMAppService mainAppService].status) {
		case SMAppServiceStatusNotRegistered:
			return 0;
		case SMAppServiceStatusEnabled:
			return 1;
		case SMAppServiceStatusRequiresApproval:
			return 2;
		case SMAppServiceStatusNotFound:
			return 3;
		}
	}
	return 3;
}

char *layaSetLoginItem(bool on) {
	@autoreleasepool {
		if (@available(macOS 13.0, *)) {
			SMAppService *svc = [SMAppService mainAppService];
			NSError *err = nil;
			BOOL ok = on ? [svc registerAndReturnError:&err] : [svc unregisterAndReturnError:&err];
			if (ok || (!on && svc.status == SMAppServiceStatusNotRegistered)) {
				return NULL;
			}
			return strdup(err ? [[err localizedDescription] UTF8String] : "unknown error");
		}
		return strdup("launch at login needs macOS 13 or later");
	}
}

void layaOpenLoginItemsSettings(void) {
	if (@available(macOS 13.0, *)) {
		[SMAppService openSystemSettingsLoginItems];
	}
}
