// Accessibility (AX) access to the focused text element. Offsets are UTF-16 code units.
#include <stdbool.h>
#include <stdint.h>

typedef struct {
	double x, y, w, h;
} LayaRect;

bool layaAXTrusted(bool prompt);
bool layaSecureInput(void);
// layaAXFocused returns the focused element (retained; release with layaAXRelease) and its
// owner's pid, or NULL.
void *layaAXFocused(int *pid);
void layaAXRelease(void *el);
uint64_t layaAXHash(void *el);
// layaAXAttr returns a string attribute as malloc'd UTF-8 (free it), or NULL.
char *layaAXAttr(void *el, const char *name);
char *layaBundleID(int pid);
int layaAXSelection(void *el, long *loc, long *len);
long layaAXLength(void *el);
// layaAXText copies the UTF-16 units of [loc, loc+len) into buf (cap units) and sets *n.
int layaAXText(void *el, long loc, long len, uint16_t *buf, long cap, long *n);
// layaAXBounds returns the screen rectangle of a range in Cocoa coordinates.
int layaAXBounds(void *el, long loc, long len, LayaRect *r);
// layaAXSetSelectedText replaces the selection with utf8 through kAXSelectedTextAttribute: 0
// when the app accepted the set (it may apply it later), -1 when it is not settable or failed.
int layaAXSetSelectedText(void *el, const char *utf8);
// layaAXFont reports the font of the character at loc (name malloc'd, free it).
int layaAXFont(void *el, long loc, char **name, double *size);
