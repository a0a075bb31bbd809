// Last-resort insertion: through the pasteboard and Cmd+V, putting the user's clipboard back
// once the target app has had time to read it.
#import <AppKit/AppKit.h>

#include "events_darwin.h"
#include "paste_darwin.h"

void layaPaste(const char *utf8, int restoreMS) {
	@autoreleasepool {
		NSPasteboard *pb = [NSPasteboard generalPasteboard];
		NSMutableArray<NSPasteboardItem *> *saved = [NSMutableArray array];
		for (NSPasteboardItem *item in [pb pasteboardItems]) {
			NSPasteboardItem *copy = [[[NSPasteboardItem alloc] init] autorelease];
			for (NSPasteboardType t in [item types]) {
				NSData *d = [item dataForType:t];
				if (d != nil) {
					[copy setData:d forType:t];
				}
			}
			[saved addObject:copy];
		}
		[pb clearContents];
		[pb setString:[NSString stringWithUTF8String:utf8] forType:NSPasteboardTypeString];
		NSInteger ours = [pb changeCount];
		layaPostCmdV();
		[saved retain];
		dispatch_after(dispatch_time(DISPATCH_TIME_NOW, (int64_t)restoreMS * NSEC_PER_MSEC), dispatch_get_main_queue(), ^{
			NSPasteboard *p = [NSPasteboard generalPasteboard];
			if ([p changeCount] == ours) {
				[p clearContents];
				if ([saved count] > 0) {
					[p writeObjects:saved];
				}
			}
			[saved release];
		});
	}
}
