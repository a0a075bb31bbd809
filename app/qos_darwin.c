// macOS has no thread affinity; a quality-of-service class is how a thread asks for the
// performance cores and prompt scheduling.
#include <pthread.h>
#include <pthread/qos.h>

#include "qos_darwin.h"

int layaQoSInteractive(void) { return pthread_set_qos_class_self_np(QOS_CLASS_USER_INTERACTIVE, 0); }
