// The "Copy Diagnostics" menu item's pasteboard write.
#include <stdbool.h>

// layaCopyText replaces the general pasteboard's contents with the UTF-8 text; false when
// macOS refused it. NSPasteboard may be used off the main thread.
bool layaCopyText(const char *utf8);
