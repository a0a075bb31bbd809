// A CGEventTap sees every key press before the focused app does, so Tab, Esc and the
// accept-word key can be swallowed while a suggestion shows, and typing can cancel requests.
// An active tap holds every event of the session until its callback returns, and macOS
// disables a tap that is slow (kCGEventTapDisabledByTimeout): the callback only asks the Go
// side for a swallow-or-pass decision it makes from a snapshot, and returns.
// Events Laya synthesizes carry a tag in kCGEventSourceUserData and pass straight through.
#import <ApplicationServices/ApplicationServices.h>
#import <Carbon/Carbon.h>

#include "events_darwin.h"

extern int layaKeyDown(unsigned short code, unsigned int mods, uint16_t *text, int n);
extern void layaMouseDown(void);

static const int64_t layaTag = 0x4C415941; // "LAYA"
static CFMachPortRef tap;

// carbonMods maps event flags to Carbon modifier bits, which hotkey.Modifier uses.
static unsigned int carbonMods(CGEventFlags f) {
	unsigned int m = 0;
	if (f & kCGEventFlagMaskCommand) m |= cmdKey;
	if (f & kCGEventFlagMaskShift) m |= shiftKey;
	if (f & kCGEventFlagMaskAlternate) m |= optionKey;
	if (f & kCGEventFlagMaskControl) m |= controlKey;
	return m;
}

static CGEventRef onEvent(CGEventTapProxy proxy, CGEventType type, CGEventRef ev, void *data) {
	(void)proxy;
	(void)data;
	if (type == kCGEventTapDisabledByTimeout || type == kCGEventTapDisabledByUserInput) {
		// The system disables a tap whose callback was slow; resume at once.
		CGEventTapEnable(tap, true);
		return ev;
	}
	if (CGEventGetIntegerValueField(ev, kCGEventSourceUserData) == layaTag) {
		return ev;
	}
	if (type == kCGEventLeftMouseDown || type == kCGEventRightMouseDown || type == kCGEventOtherMouseDown ||
	    type == kCGEventScrollWheel) {
		// Clicks and scrolling move the text away from where the ghost text was put.
		layaMouseDown();
		return ev;
	}
	if (type != kCGEventKeyDown) {
		return ev;
	}
	UniChar buf[8];
	UniCharCount n = 0;
	CGEventKeyboardGetUnicodeString(ev, 8, &n, buf);
	unsigned short code = (unsigned short)CGEventGetIntegerValueField(ev, kCGKeyboardEventKeycode);
	if (layaKeyDown(code, carbonMods(CGEventGetFlags(ev)), buf, (int)n)) {
		return NULL;
	}
	return ev;
}

bool layaTapStart(void) {
	if (tap != NULL) {
		return true;
	}
	CGEventMask mask = CGEventMaskBit(kCGEventKeyDown) | CGEventMaskBit(kCGEventLeftMouseDown) |
	                   CGEventMaskBit(kCGEventRightMouseDown) | CGEventMaskBit(kCGEventOtherMouseDown) |
	                   CGEventMaskBit(kCGEventScrollWheel);
	tap = CGEventTapCreate(kCGSessionEventTap, kCGHeadInsertEventTap, kCGEventTapOptionDefault, mask, onEvent, NULL);
	if (tap == NULL) {
		return false;
	}
	CFRunLoopSourceRef src = CFMachPortCreateRunLoopSource(NULL, tap, 0);
	CFRunLoopAddSource(CFRunLoopGetMain(), src, kCFRunLoopCommonModes);
	CFRelease(src);
	CGEventTapEnable(tap, true);
	return true;
}

static void post(CGEventSourceRef src, CGKeyCode code, const UniChar *s, UniCharCount n, CGEventFlags flags) {
	for (int down = 1; down >= 0; down--) {
		CGEventRef e = CGEventCreateKeyboardEvent(src, code, down);
		// Clear held modifiers (the user may still hold Cmd from the accept-word key), or the
		// app would read a shortcut instead of text.
		CGEventSetFlags(e, flags);
		if (n > 0) {
			CGEventKeyboardSetUnicodeString(e, n, s);
		}
		CGEventSetIntegerValueField(e, kCGEventSourceUserData, layaTag);
		CGEventPost(kCGHIDEventTap, e);
		CFRelease(e);
	}
}

// layaType posts one chunk; the controller splits text into chunks of at most 20 UTF-16 units
// (apps drop the tail of longer unicode strings), keeps line breaks out (a Return key sends
// chat messages and re-indents code) and paces the chunks.
void layaType(const uint16_t *s, long n) {
	CGEventSourceRef src = CGEventSourceCreate(kCGEventSourceStatePrivate);
	post(src, 0, (const UniChar *)s, (UniCharCount)n, 0);
	if (src != NULL) {
		CFRelease(src);
	}
}

void layaPostCmdV(void) {
	CGEventSourceRef src = CGEventSourceCreate(kCGEventSourceStatePrivate);
	post(src, kVK_ANSI_V, NULL, 0, kCGEventFlagMaskCommand);
	if (src != NULL) {
		CFRelease(src);
	}
}
