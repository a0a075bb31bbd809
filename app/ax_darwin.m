// The focused element, its text around the caret and the caret's bounds, via the
// Accessibility API. These functions run on the controller's worker goroutine, never on the
// event tap's thread or with the controller's lock held, so a slow app only delays Laya's own
// work. Every element gets a messaging timeout (AXUIElementSetMessagingTimeout): first reads
// in Electron apps and long reads in Xcode take well over 50 ms, and a hung app must still
// not hold the worker for seconds.
#import <AppKit/AppKit.h>
#import <ApplicationServices/ApplicationServices.h>
#import <Carbon/Carbon.h>
#include <os/lock.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ax_darwin.h"

static const float axTimeout = 0.3f;

bool layaAXTrusted(bool prompt) {
	const void *keys[] = {kAXTrustedCheckOptionPrompt};
	const void *vals[] = {prompt ? kCFBooleanTrue : kCFBooleanFalse};
	CFDictionaryRef opts = CFDictionaryCreate(NULL, keys, vals, 1, &kCFTypeDictionaryKeyCallBacks,
	                                          &kCFTypeDictionaryValueCallBacks);
	bool ok = AXIsProcessTrustedWithOptions(opts);
	CFRelease(opts);
	return ok;
}

bool layaSecureInput(void) { return IsSecureEventInputEnabled(); }

// Chromium and Electron build their accessibility tree only for assistive apps that ask;
// AXManualAccessibility asks without the side effects of AXEnhancedUserInterface. A pid is
// recorded only once the set succeeded; a failure (an app still launching, or one that does
// not know the attribute) is retried after manualRetrySec, so a slow starter is not missed
// for good and an app that refuses costs one call every few seconds. The table is shared by
// whichever thread reads focus, so a lock guards it.
enum { manualSlots = 64 };
static const double manualRetrySec = 3;
static struct {
	pid_t pid;
	bool ok;
	double tried; // seconds, CLOCK_MONOTONIC
} manual[manualSlots];
static int manualNext;
static os_unfair_lock manualLock = OS_UNFAIR_LOCK_INIT;

static double monotonicSec(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void enableManualAccessibility(AXUIElementRef app, pid_t pid) {
	double now = monotonicSec();
	int slot = -1;
	os_unfair_lock_lock(&manualLock);
	for (int i = 0; i < manualSlots; i++) {
		if (manual[i].pid == pid) {
			slot = i;
			break;
		}
	}
	if (slot >= 0 && (manual[slot].ok || now - manual[slot].tried < manualRetrySec)) {
		os_unfair_lock_unlock(&manualLock);
		return;
	}
	if (slot < 0) {
		slot = manualNext;
		manualNext = (manualNext + 1) % manualSlots;
		manual[slot].pid = pid;
	}
	manual[slot].ok = false;
	manual[slot].tried = now;
	os_unfair_lock_unlock(&manualLock);

	bool ok = AXUIElementSetAttributeValue(app, CFSTR("AXManualAccessibility"), kCFBooleanTrue) == kAXErrorSuccess;

	os_unfair_lock_lock(&manualLock);
	if (manual[slot].pid == pid) {
		manual[slot].ok = ok;
	}
	os_unfair_lock_unlock(&manualLock);
}

// isFocused reports whether el says it has keyboard focus (kAXFocusedAttribute).
static bool isFocused(AXUIElementRef el) {
	CFTypeRef v = NULL;
	if (AXUIElementCopyAttributeValue(el, kAXFocusedAttribute, &v) != kAXErrorSuccess || v == NULL) {
		return false;
	}
	bool on = CFGetTypeID(v) == CFBooleanGetTypeID() && CFBooleanGetValue((CFBooleanRef)v);
	CFRelease(v);
	return on;
}

static AXUIElementRef copyFocused(AXUIElementRef owner) {
	CFTypeRef v = NULL;
	if (AXUIElementCopyAttributeValue(owner, kAXFocusedUIElementAttribute, &v) != kAXErrorSuccess || v == NULL) {
		return NULL;
	}
	if (CFGetTypeID(v) != AXUIElementGetTypeID()) {
		CFRelease(v);
		return NULL;
	}
	return (AXUIElementRef)v;
}

void *layaAXFocused(int *pid) {
	@autoreleasepool {
		AXUIElementRef sys = AXUIElementCreateSystemWide();
		AXUIElementSetMessagingTimeout(sys, axTimeout);
		AXUIElementRef el = copyFocused(sys);
		CFRelease(sys);
		pid_t front = [[[NSWorkspace sharedWorkspace] frontmostApplication] processIdentifier];
		if (front > 0) {
			AXUIElementRef app = AXUIElementCreateApplication(front);
			AXUIElementSetMessagingTimeout(app, axTimeout);
			enableManualAccessibility(app, front);
			if (el == NULL) {
				// Some apps answer only through their application element.
				el = copyFocused(app);
			}
			if (el == NULL) {
				// Last resort: the element under the mouse pointer, which is where a click just
				// put the caret in apps that report no focus at all. Only if it says it has
				// focus: an unfocused text view keeps a stale selection that an insertion
				// would overwrite.
				CGEventRef e = CGEventCreate(NULL);
				CGPoint p = CGEventGetLocation(e);
				CFRelease(e);
				if (AXUIElementCopyElementAtPosition(app, p.x, p.y, &el) == kAXErrorSuccess && el != NULL) {
					AXUIElementSetMessagingTimeout(el, axTimeout);
					if (!isFocused(el)) {
						CFRelease(el);
						el = NULL;
					}
				}
			}
			CFRelease(app);
		}
		if (el == NULL) {
			return NULL;
		}
		AXUIElementSetMessagingTimeout(el, axTimeout);
		pid_t owner = 0;
		AXUIElementGetPid(el, &owner);
		*pid = owner;
		return (void *)el;
	}
}

void layaAXRelease(void *el) { CFRelease((AXUIElementRef)el); }

uint64_t layaAXHash(void *el) { return (uint64_t)CFHash((CFTypeRef)el); }

static char *utf8Copy(CFStringRef s) {
	CFIndex n = CFStringGetMaximumSizeForEncoding(CFStringGetLength(s), kCFStringEncodingUTF8) + 1;
	char *buf = malloc(n);
	if (!CFStringGetCString(s, buf, n, kCFStringEncodingUTF8)) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *layaAXAttr(void *el, const char *name) {
	CFStringRef attr = CFStringCreateWithCString(NULL, name, kCFStringEncodingUTF8);
	CFTypeRef v = NULL;
	AXError err = AXUIElementCopyAttributeValue((AXUIElementRef)el, attr, &v);
	CFRelease(attr);
	if (err != kAXErrorSuccess || v == NULL) {
		return NULL;
	}
	char *out = NULL;
	if (CFGetTypeID(v) == CFStringGetTypeID()) {
		out = utf8Copy((CFStringRef)v);
	}
	CFRelease(v);
	return out;
}

char *layaBundleID(int pid) {
	@autoreleasepool {
		NSRunningApplication *app = [NSRunningApplication runningApplicationWithProcessIdentifier:pid];
		NSString *b = [app bundleIdentifier];
		return b ? strdup([b UTF8String]) : NULL;
	}
}

int layaAXSelection(void *el, long *loc, long *len) {
	CFTypeRef v = NULL;
	if (AXUIElementCopyAttributeValue((AXUIElementRef)el, kAXSelectedTextRangeAttribute, &v) != kAXErrorSuccess || v == NULL) {
		return -1;
	}
	CFRange r;
	bool ok = CFGetTypeID(v) == AXValueGetTypeID() && AXValueGetValue((AXValueRef)v, kAXValueCFRangeType, &r);
	CFRelease(v);
	if (!ok) {
		return -1;
	}
	*loc = r.location;
	*len = r.length;
	return 0;
}

static CFStringRef copyValue(AXUIElementRef el) {
	CFTypeRef v = NULL;
	if (AXUIElementCopyAttributeValue(el, kAXValueAttribute, &v) != kAXErrorSuccess || v == NULL) {
		return NULL;
	}
	if (CFGetTypeID(v) != CFStringGetTypeID()) {
		CFRelease(v);
		return NULL;
	}
	return (CFStringRef)v;
}

long layaAXLength(void *el) {
	CFTypeRef v = NULL;
	if (AXUIElementCopyAttributeValue((AXUIElementRef)el, kAXNumberOfCharactersAttribute, &v) == kAXErrorSuccess && v != NULL) {
		long n = -1;
		if (CFGetTypeID(v) == CFNumberGetTypeID()) {
			CFNumberGetValue((CFNumberRef)v, kCFNumberLongType, &n);
		}
		CFRelease(v);
		if (n >= 0) {
			return n;
		}
	}
	CFStringRef s = copyValue((AXUIElementRef)el);
	if (s == NULL) {
		return -1;
	}
	long n = CFStringGetLength(s);
	CFRelease(s);
	return n;
}

int layaAXText(void *el, long loc, long len, uint16_t *buf, long cap, long *n) {
	*n = 0;
	if (len == 0) {
		return 0;
	}
	if (len > cap) {
		return -1;
	}
	CFRange r = CFRangeMake(loc, len);
	AXValueRef rv = AXValueCreate(kAXValueCFRangeType, &r);
	CFTypeRef v = NULL;
	AXError err = AXUIElementCopyParameterizedAttributeValue((AXUIElementRef)el, kAXStringForRangeParameterizedAttribute, rv, &v);
	CFRelease(rv);
	CFStringRef s = NULL;
	if (err == kAXErrorSuccess && v != NULL && CFGetTypeID(v) == CFStringGetTypeID()) {
		s = (CFStringRef)v;
	} else {
		if (v != NULL) {
			CFRelease(v);
		}
		// Fields without the parameterized attribute still expose their whole value.
		CFStringRef all = copyValue((AXUIElementRef)el);
		if (all == NULL) {
			return -1;
		}
		if (loc + len > CFStringGetLength(all)) {
			CFRelease(all);
			return -1;
		}
		s = CFStringCreateWithSubstring(NULL, all, r);
		CFRelease(all);
	}
	long got = CFStringGetLength(s);
	if (got > cap) {
		got = cap;
	}
	CFStringGetCharacters(s, CFRangeMake(0, got), (UniChar *)buf);
	CFRelease(s);
	*n = got;
	return 0;
}

int layaAXBounds(void *el, long loc, long len, LayaRect *out) {
	CFRange r = CFRangeMake(loc, len);
	AXValueRef rv = AXValueCreate(kAXValueCFRangeType, &r);
	CFTypeRef v = NULL;
	AXError err = AXUIElementCopyParameterizedAttributeValue((AXUIElementRef)el, kAXBoundsForRangeParameterizedAttribute, rv, &v);
	CFRelease(rv);
	if (err != kAXErrorSuccess || v == NULL) {
		return -1;
	}
	CGRect rect;
	bool ok = CFGetTypeID(v) == AXValueGetTypeID() && AXValueGetValue((AXValueRef)v, kAXValueCGRectType, &rect);
	CFRelease(v);
	if (!ok) {
		return -1;
	}
	// AX uses global coordinates with the origin at the top-left of the primary screen, y down;
	// Cocoa puts it at the bottom-left, y up. CGDisplayBounds of the main display gives the
	// primary screen's height without AppKit, which is main-thread-only for NSScreen and would
	// need an autorelease pool on this Go thread.
	CGFloat primaryHeight = CGDisplayBounds(CGMainDisplayID()).size.height;
	out->x = rect.origin.x;
	out->y = primaryHeight - rect.origin.y - rect.size.height;
	out->w = rect.size.width;
	out->h = rect.size.height;
	return 0;
}

int layaAXSetSelectedText(void *el, const char *utf8) {
	AXUIElementRef e = (AXUIElementRef)el;
	Boolean settable = false;
	if (AXUIElementIsAttributeSettable(e, kAXSelectedTextAttribute, &settable) != kAXErrorSuccess || !settable) {
		return -1;
	}
	CFStringRef s = CFStringCreateWithCString(NULL, utf8, kCFStringEncodingUTF8);
	if (s == NULL) {
		return -1;
	}
	AXError err = AXUIElementSetAttributeValue(e, kAXSelectedTextAttribute, s);
	CFRelease(s);
	return err == kAXErrorSuccess ? 0 : -1;
}

int layaAXFont(void *el, long loc, char **name, double *size) {
	*name = NULL;
	*size = 0;
	CFRange r = CFRangeMake(loc, 1);
	AXValueRef rv = AXValueCreate(kAXValueCFRangeType, &r);
	CFTypeRef v = NULL;
	AXError err = AXUIElementCopyParameterizedAttributeValue((AXUIElementRef)el, kAXAttributedStringForRangeParameterizedAttribute, rv, &v);
	CFRelease(rv);
	if (err != kAXErrorSuccess || v == NULL) {
		return -1;
	}
	int rc = -1;
	if (CFGetTypeID(v) == CFAttributedStringGetTypeID() && CFAttributedStringGetLength((CFAttributedStringRef)v) > 0) {
		CFTypeRef font = CFAttributedStringGetAttribute((CFAttributedStringRef)v, 0, kAXFontTextAttribute, NULL);
		if (font != NULL && CFGetTypeID(font) == CFDictionaryGetTypeID()) {
			CFTypeRef n = CFDictionaryGetValue((CFDictionaryRef)font, kAXFontNameKey);
			CFTypeRef s = CFDictionaryGetValue((CFDictionaryRef)font, kAXFontSizeKey);
			if (n != NULL && CFGetTypeID(n) == CFStringGetTypeID()) {
				*name = utf8Copy((CFStringRef)n);
			}
			if (s != NULL && CFGetTypeID(s) == CFNumberGetTypeID()) {
				CFNumberGetValue((CFNumberRef)s, kCFNumberDoubleType, size);
			}
			rc = 0;
		}
	}
	CFRelease(v);
	return rc;
}
