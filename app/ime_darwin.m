// Which keyboard input source is selected. Text Input Sources Services are main-thread-only
// (recent macOS versions assert it), while the controller asks from its worker goroutine: the
// main thread follows kTISNotifySelectedKeyboardInputSourceChanged, a distributed notification,
// and keeps the answer in an atomic flag.
//
// Signals Laya relies on: an input source of type kTISTypeKeyboardInputMode means an input method
// (Kotoeri, Pinyin, Zhuyin, 2-Set Korean, ...) turns keys into marked text before it becomes
// text. There is no public Accessibility attribute for another app's marked text, so while an
// input method is selected Laya reads and suggests nothing at all.
#import <Carbon/Carbon.h>
#import <Foundation/Foundation.h>
#include <stdatomic.h>

#include "ime_darwin.h"

static atomic_bool inputMethod;

static void update(void) {
	TISInputSourceRef src = TISCopyCurrentKeyboardInputSource();
	bool im = false;
	if (src != NULL) {
		CFStringRef type = TISGetInputSourceProperty(src, kTISPropertyInputSourceType);
		im = type != NULL && CFEqual(type, kTISTypeKeyboardInputMode);
		CFRelease(src);
	}
	atomic_store(&inputMethod, im);
}

static void changed(CFNotificationCenterRef center, void *observer, CFNotificationName name, const void *object,
                    CFDictionaryRef info) {
	(void)center;
	(void)observer;
	(void)name;
	(void)object;
	(void)info;
	update();
}

void layaObserveInputSource(void) {
	update();
	CFNotificationCenterAddObserver(CFNotificationCenterGetDistributedCenter(), NULL, changed,
	                                kTISNotifySelectedKeyboardInputSourceChanged, NULL,
	                                CFNotificationSuspensionBehaviorDeliverImmediately);
}

bool layaInputMethodActive(void) { return atomic_load(&inputMethod); }
