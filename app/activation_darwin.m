// Switching apps without a key press or click in the old one (Dock, Mission Control, a
// notification) must still take the ghost text away.
#import <AppKit/AppKit.h>

#include "activation_darwin.h"

extern void layaAppActivated(void);

void layaObserveActivation(void) {
	[[[NSWorkspace sharedWorkspace] notificationCenter] addObserverForName:NSWorkspaceDidActivateApplicationNotification
	                                                                object:nil
	                                                                 queue:[NSOperationQueue mainQueue]
	                                                            usingBlock:^(NSNotification *n) {
		                                                            (void)n;
		                                                            layaAppActivated();
	                                                            }];
}
