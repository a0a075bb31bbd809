// Application-wide AppKit setup.
#include <stdbool.h>

// layaInstallMainMenu installs a main menu with the standard Edit menu. An accessory app shows
// no menu bar of its own, but Cmd+C/V/X/A/Z in its text fields only work through one.
void layaInstallMainMenu(void);
// layaKeepAwake holds (on) or ends an NSProcessInfo activity that keeps App Nap from
// throttling Laya's timers and threads while suggestions are enabled.
void layaKeepAwake(bool on);
