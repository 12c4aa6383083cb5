/* disk_cache.c - compiled PTX kept across processes.
 *
 * The key is a hash of the lowered (unoptimised) LLVM IR, the target and
 * the fz version: everything the PTX depends on. Entries are written to a
 * temporary name and renamed into place, so a reader never sees half a
 * file and concurrent writers of one key are harmless. A cache that cannot
 * be read or written is skipped silently: it only ever saves time.
 */
#include "codegen/disk_cache.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t fz_hash_bytes(uint64_t h, const void *data, size_t n) {
  /* FNV-1a, 64-bit */
  const unsigned char *p = data;
  if (h == 0)
    h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

const char *fz_disk_cache_dir(char *buf, size_t size) {
  const char *dir = getenv("FZ_CACHE_DIR");
  if (dir && strcmp(dir, "off") == 0)
    return NULL;
  if (dir && *dir) {
    snprintf(buf, size, "%s", dir);
    return buf;
  }
  const char *xdg = getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) {
    snprintf(buf, size, "%s/fz", xdg);
    return buf;
  }
  const char *home = getenv("HOME");
  if (!home || !*home)
    return NULL;
  snprintf(buf, size, "%s/.cache/fz", home);
  return buf;
}

static bool make_dirs(const char *path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
      return false;
    *p = '/';
  }
  return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

static bool entry_path(uint64_t key, char *buf, size_t size) {
  char dir[4000];
  if (!fz_disk_cache_dir(dir, sizeof dir))
    return false;
  int n = snprintf(buf, size, "%s/%016" PRIx64 ".ptx", dir, key);
  return n > 0 && (size_t)n < size;
}

char *fz_disk_cache_get(uint64_t key) {
  char path[4096];
  if (!entry_path(key, path, sizeof path))
    return NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *data = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long len = ftell(f);
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0) {
      data = malloc((size_t)len + 1);
      if (data && fread(data, 1, (size_t)len, f) == (size_t)len) {
        data[len] = 0;
      } else {
        free(data);
        data = NULL;
      }
    }
  }
  fclose(f);
  return data;
}

void fz_disk_cache_put(uint64_t key, const char *ptx) {
  char dir[4000], path[4096], tmp[4200];
  if (!fz_disk_cache_dir(dir, sizeof dir) || !make_dirs(dir) ||
      !entry_path(key, path, sizeof path))
    return;
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return;
  size_t len = strlen(ptx);
  bool ok = fwrite(ptx, 1, len, f) == len;
  ok &= fclose(f) == 0;
  if (!ok || rename(tmp, path) != 0)
    remove(tmp);
}
