// Input-method state for the controller.
#include <stdbool.h>

// layaObserveInputSource starts following the selected keyboard input source; main thread.
void layaObserveInputSource(void);
// layaInputMethodActive reports whether the selected input source is an input method's mode
// (kTISTypeKeyboardInputMode, e.g. Japanese Kana or Pinyin) rather than a keyboard layout.
// Any thread.
bool layaInputMethodActive(void);
