/* The run-time version: a program built against one header and run with
 * another library can tell (the macros only say what it was compiled with). */
#include "ks_internal.h"

const char *ks_version(void) { return KS_VERSION_STRING; }
