// Pasteboard insertion.

// layaPasteBegin saves the general pasteboard's items, puts utf8 there as a transient item and
// presses Cmd+V. It returns a handle for layaPasteRestore, or NULL if nothing was pasted.
void *layaPasteBegin(const char *utf8);
// layaPasteRestore puts the saved items back unless something else wrote the pasteboard
// meanwhile, and frees the handle.
void layaPasteRestore(void *h);
