/* files.c - small file-system helpers of lib/codegen. */
#include "codegen/files.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

bool fz_make_dirs(const char *path) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
    return false;
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
      return false;
    *p = '/';
  }
  struct stat st;
  return (mkdir(tmp, 0755) == 0 || errno == EEXIST) && stat(tmp, &st) == 0 &&
         S_ISDIR(st.st_mode);
}
