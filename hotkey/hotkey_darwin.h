#include <stdint.h>

int layaHotkeyRegister(unsigned int key, unsigned int mods, unsigned int id, uintptr_t *ref);
int layaHotkeyUnregister(uintptr_t ref);
