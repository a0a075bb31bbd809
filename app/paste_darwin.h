// Pasteboard insertion.

// layaPaste puts utf8 on the general pasteboard, presses Cmd+V, and restores the previous
// contents after restoreMS milliseconds unless something else changed the pasteboard meanwhile.
void layaPaste(const char *utf8, int restoreMS);
