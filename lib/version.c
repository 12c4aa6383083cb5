/* version.c - the library's version string. */
#include "fz/fz.h"

const char *fz_version(void) { return "0.1.0"; }
