/* output.c - where fuse-opt writes (-o FILE): stdout, or a file that
 * appears whole or not at all.
 *
 * The text goes to a temporary file next to FILE, renamed over FILE only
 * when the run succeeded, so a failing fusion or a full disk never leaves
 * FILE half written (and an existing FILE is kept as it was).
 */
#define _POSIX_C_SOURCE 200809L

#include "fuse-opt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool fo_output_open(fo_output *o, const char *path) {
  *o = (fo_output){.file = stdout};
  if (!path || strcmp(path, "-") == 0)
    return true;
  size_t n = strlen(path);
  o->path = path;
  o->temp = malloc(n + sizeof ".XXXXXX");
  if (!o->temp) {
    fprintf(stderr, "fuse-opt: error: out of memory\n");
    return false;
  }
  memcpy(o->temp, path, n);
  memcpy(o->temp + n, ".XXXXXX", sizeof ".XXXXXX");
  int fd = mkstemp(o->temp);
  if (fd >= 0) {
    /* mkstemp's 0600, widened to what creating FILE would have given */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    o->file = fdopen(fd, "w");
    if (!o->file)
      close(fd);
  }
  if (fd < 0 || !o->file) {
    fprintf(stderr, "fuse-opt: error: cannot write '%s': %s\n", path,
            strerror(errno));
    if (fd >= 0)
      remove(o->temp);
    free(o->temp);
    *o = (fo_output){0};
    return false;
  }
  return true;
}

bool fo_output_close(fo_output *o, bool keep) {
  bool written = fflush(o->file) == 0 && !ferror(o->file);
  if (!o->temp) {
    if (!written)
      fprintf(stderr, "fuse-opt: error: writing the output failed\n");
    return written;
  }
  written = fclose(o->file) == 0 && written;
  if (!written)
    fprintf(stderr, "fuse-opt: error: writing '%s' failed\n", o->path);
  else if (keep && rename(o->temp, o->path) != 0) {
    fprintf(stderr, "fuse-opt: error: cannot write '%s': %s\n", o->path,
            strerror(errno));
    written = false;
  }
  if (!written || !keep)
    remove(o->temp);
  free(o->temp);
  *o = (fo_output){0};
  return written;
}
