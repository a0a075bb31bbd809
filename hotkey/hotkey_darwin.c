// Carbon global hotkeys. RegisterEventHotKey needs no Accessibility or Input Monitoring grant,
// but it and the handler must run on the main thread, whose run loop delivers the events.
#include <Carbon/Carbon.h>
#include <dispatch/dispatch.h>
#include <pthread.h>
#include <stdint.h>

#include "hotkey_darwin.h"

extern void layaHotkeyPressed(unsigned int id);

static EventHandlerRef handler;

// The Carbon Event Manager's rule: a handler returns eventNotHandledErr for events it does not
// handle, so that the next handler in the chain (another hotkey's, the system's) gets them.
static OSStatus onHotKey(EventHandlerCallRef next, EventRef ev, void *data) {
	(void)next;
	(void)data;
	EventHotKeyID hk;
	if (GetEventParameter(ev, kEventParamDirectObject, typeEventHotKeyID, NULL, sizeof hk, NULL, &hk) == noErr &&
	    hk.signature == 'LAYA') {
		layaHotkeyPressed(hk.id);
		return noErr;
	}
	return eventNotHandledErr;
}

typedef struct {
	UInt32 key, mods, id;
	EventHotKeyRef ref;
	OSStatus status;
} regCall;

static void doRegister(void *p) {
	regCall *c = p;
	if (handler == NULL) {
		EventTypeSpec spec = {kEventClassKeyboard, kEventHotKeyPressed};
		c->status = InstallEventHandler(GetApplicationEventTarget(), onHotKey, 1, &spec, NULL, &handler);
		if (c->status != noErr) {
			return;
		}
	}
	EventHotKeyID hk = {'LAYA', c->id};
	c->status = RegisterEventHotKey(c->key, c->mods, hk, GetApplicationEventTarget(), 0, &c->ref);
}

static void doUnregister(void *p) {
	regCall *c = p;
	c->status = UnregisterEventHotKey(c->ref);
}

// onMain runs f on the main thread and waits. Called on the main thread itself, it runs f
// directly rather than deadlocking in dispatch_sync.
static void onMain(void *ctx, dispatch_function_t f) {
	if (pthread_main_np()) {
		f(ctx);
	} else {
		dispatch_sync_f(dispatch_get_main_queue(), ctx, f);
	}
}

int layaHotkeyRegister(unsigned int key, unsigned int mods, unsigned int id, uintptr_t *ref) {
	regCall c = {key, mods, id, NULL, noErr};
	onMain(&c, doRegister);
	*ref = (uintptr_t)c.ref;
	return c.status;
}

int layaHotkeyUnregister(uintptr_t ref) {
	regCall c = {0, 0, 0, (EventHotKeyRef)ref, noErr};
	onMain(&c, doUnregister);
	return c.status;
}
