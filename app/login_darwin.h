// layaSetLoginItem registers (on) or unregisters the app as a login item with SMAppService
// (macOS 13+). It returns NULL on success, else a malloc'd message (free it).
#include <stdbool.h>

char *layaSetLoginItem(bool on);
