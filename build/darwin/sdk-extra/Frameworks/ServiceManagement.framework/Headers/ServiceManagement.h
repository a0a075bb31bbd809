// Check-only stand-in (make check-darwin-link): the macOS SDK set used on Linux lacks
// ServiceManagement. This declares only the SMAppService API that app/login_darwin.m uses, written
// from Apple's documentation of SMAppService (macOS 13). A Mac compiles against the real header.
#import <Foundation/Foundation.h>

typedef NS_ENUM(NSInteger, SMAppServiceStatus) {
	SMAppServiceStatusNotRegistered = 0,
	SMAppServiceStatusEnabled = 1,
	SMAppServiceStatusRequiresApproval = 2,
	SMAppServiceStatusNotFound = 3,
} API_AVAILABLE(macos(13.0));

API_AVAILABLE(macos(13.0))
@interface SMAppService : NSObject
@property (class, readonly) SMAppService *mainAppService;
@property (readonly) SMAppServiceStatus status;
- (BOOL)registerAndReturnError:(NSError **)error;
- (BOOL)unregisterAndReturnError:(NSError **)error;
+ (void)openSystemSettingsLoginItems;
@end
