// The keyboard event tap and synthesized typing.
#include <stdbool.h>
#include <stdint.h>

// layaTapStart installs the session event tap on the main run loop; false when the process
// lacks the Accessibility permission.
bool layaTapStart(void);
// layaType types one chunk of UTF-16 text (at most 20 units, no line break) as a key press.
void layaType(const uint16_t *s, long n);
// layaPostCmdV presses Cmd+V.
void layaPostCmdV(void);
