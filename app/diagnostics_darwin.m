#import <AppKit/AppKit.h>

#include "diagnostics_darwin.h"

bool layaCopyText(const char *utf8) {
	@autoreleasepool {
		NSString *s = [NSString stringWithUTF8String:utf8];
		if (s == nil) return false;
		NSPasteboard *pb = [NSPasteboard generalPasteboard];
		[pb clearContents];
		return [pb setString:s forType:NSPasteboardTypeString];
	}
}
