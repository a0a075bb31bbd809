// A CGEventTap sees every key press before the focused app does, so Tab, Esc and the
// accept-word key can be swallowed while a suggestion shows, and typing can cancel requests.
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
	if (type == kCGEventTapDisabledByTimeout || type == kCGEventTapDisabledByUserInput) {
		// The system disables a tap whose callback was slow; resume at once.
		CGEventTapEnable(tap, true);
		return ev;
	}
	if (CGEventGetIntegerValueField(ev, kCGEventSourceUserData) == layaTag) {
		return ev;
	}
	if (type == kCGEventLeftMouseDown || type == kCGEventRightMouseDown) {
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
	                   CGEventMaskBit(kCGEventRightMouseDown);
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

void layaType(const uint16_t *s, long n) {
	CGEventSourceRef src = CGEventSourceCreate(kCGEventSourceStatePrivate);
	long i = 0;
	while (i < n) {
		if (s[i] == '\n') {
			// Unicode text events do not make a newline in every app; the Return key does.
			post(src, kVK_Return, NULL, 0, 0);
			i++;
			continue;
		}
		// Apps drop the tail of longer unicode strings; 20 units is the safe size.
		long end = i;
		while (end < n && end - i < 20 && s[end] != '\n') {
			end++;
		}
		// Never split a surrogate pair across two events.
		if (end < n && end - i == 20 && s[end - 1] >= 0xD800 && s[end - 1] < 0xDC00) {
			end--;
		}
		post(src, 0, (const UniChar *)s + i, end - i, 0);
		i = end;
	}
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
