// Launch at login through SMAppService, which needs no helper app and shows the item in
// System Settings > General > Login Items.
#import <Foundation/Foundation.h>
#import <ServiceManagement/ServiceManagement.h>
#include <string.h>

#include "login_darwin.h"

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
