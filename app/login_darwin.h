// The login item through SMAppService (macOS 13+), which needs no helper app and shows the item
// in System Settings > General > Login Items.
#include <stdbool.h>

// layaLoginStatus returns SMAppService.mainAppService.status (0 not registered, 1 enabled,
// 2 requires approval, 3 not found).
int layaLoginStatus(void);
// layaSetLoginItem registers (on) or unregisters the app. It returns NULL on success, else a
// malloc'd message (free it).
char *layaSetLoginItem(bool on);
// layaOpenLoginItemsSettings opens System Settings at Login Items, where the user approves.
void layaOpenLoginItemsSettings(void);
