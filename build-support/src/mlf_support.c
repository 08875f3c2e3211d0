/* mlf-build's platform layer as one translation unit: one compiler run. */
#include "call.c"
#include "arena.c"
#include "log.c"
#include "registry.c"
