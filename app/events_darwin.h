// The keyboard event tap and synthesized typing.
#include <stdbool.h>
#include <stdint.h>

// layaTapStart installs the session event tap on the main run loop; false when the process
// lacks the Accessibility permission.
bool layaTapStart(void);
// layaType types UTF-16 text as keyboard events in chunks of at most 20 units.
void layaType(const uint16_t *s, long n);
// layaPostCmdV presses Cmd+V.
void layaPostCmdV(void);
