/* files.h - small file-system helpers of lib/codegen (the disk cache and
 * FZ_DUMP both write into directories they may have to create). */
#ifndef FZ_CODEGEN_FILES_H
#define FZ_CODEGEN_FILES_H

#include <stdbool.h>

/* mkdir -p: true when path is a directory afterwards. */
bool fz_make_dirs(const char *path);

#endif
