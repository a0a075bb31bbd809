// Main thread only: NSApp's main menu and the process's activity assertion.
#import <AppKit/AppKit.h>

#include "appkit_darwin.h"

static NSMenuItem *addItem(NSMenu *m, NSString *title, SEL action, NSString *key) {
	NSMenuItem *it = [[NSMenuItem alloc] initWithTitle:title action:action keyEquivalent:key];
	[m addItem:it];
	[it release];
	return it;
}

// The items send the standard first-responder actions (undo:, cut:, ...) with a nil target,
// so whatever text field is key handles them, as in any app's Edit menu.
void layaInstallMainMenu(void) {
	NSMenu *bar = [[NSMenu alloc] initWithTitle:@""];
	NSMenuItem *appItem = addItem(bar, @"Laya", NULL, @"");
	NSMenu *appMenu = [[NSMenu alloc] initWithTitle:@"Laya"];
	addItem(appMenu, @"Quit Laya", @selector(terminate:), @"q");
	[appItem setSubmenu:appMenu];
	[appMenu release];

	NSMenuItem *editItem = addItem(bar, @"Edit", NULL, @"");
	NSMenu *edit = [[NSMenu alloc] initWithTitle:@"Edit"];
	addItem(edit, @"Undo", @selector(undo:), @"z");
	NSMenuItem *redo = addItem(edit, @"Redo", @selector(redo:), @"z");
	[redo setKeyEquivalentModifierMask:NSEventModifierFlagCommand | NSEventModifierFlagShift];
	[edit addItem:[NSMenuItem separatorItem]];
	addItem(edit, @"Cut", @selector(cut:), @"x");
	addItem(edit, @"Copy", @selector(copy:), @"c");
	addItem(edit, @"Paste", @selector(paste:), @"v");
	addItem(edit, @"Select All", @selector(selectAll:), @"a");
	[editItem setSubmenu:edit];
	[edit release];

	[NSApp setMainMenu:bar];
	[bar release];
}

static id<NSObject> activity;

// Apple's rule for App Nap: an app that must stay responsive while it has no visible window
// declares it with beginActivityWithOptions:reason:. User-initiated, but allowing idle system
// sleep (Laya is no reason to keep the Mac awake), and latency-critical for the event tap and
// the ghost text's timers.
void layaKeepAwake(bool on) {
	if (on && activity == nil) {
		NSActivityOptions opts = NSActivityUserInitiatedAllowingIdleSystemSleep | NSActivityLatencyCritical;
		activity = [[[NSProcessInfo processInfo] beginActivityWithOptions:opts
		                                                           reason:@"Completing text as the user types"] retain];
	} else if (!on && activity != nil) {
		[[NSProcessInfo processInfo] endActivity:activity];
		[activity release];
		activity = nil;
	}
}
