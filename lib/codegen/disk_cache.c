/* disk_cache.c - entries of the PTX cache: where they live, their format,
 * loading and storing them.
 *
 * An entry is one file, <32 hex digits of the key's hash>.fzptx:
 *
 *   fz ptx cache 1\n
 *   <key bytes> <ptx bytes> <hash of key and ptx, 32 hex digits>\n
 *   <key material><ptx>
 *
 * A load checks all of it: the first line, that the sizes add up to the
 * file's (a truncated or extended file is a miss), the hash of the
 * payload (a damaged one is a miss) and the key material byte for byte
 * (a colliding or stale entry is a miss). A store writes a temporary file
 * made by mkstemp in the same directory (unique across processes and
 * threads) and renames it over the entry's name, so a reader sees the old
 * entry or the new one, whole. A cache that cannot be read or written is
 * skipped silently: it only ever saves time.
 */
#include "codegen/cache.h"
#include "codegen/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char MAGIC[] = "fz ptx cache 1\n";
static const char SUFFIX[] = ".fzptx";
/* Entries larger than this are not PTX fz wrote: a miss, not a malloc. */
static const off_t MAX_ENTRY_BYTES = (off_t)1 << 30;
/* A hit marks its entry used at most this often: the order of eviction
 * needs no finer clock, and most hits then write nothing. */
static const time_t TOUCH_SECONDS = 60;

static char forced_name[33];

void fz_disk_cache_force_name(const char *name) {
  snprintf(forced_name, sizeof forced_name, "%s", name ? name : "");
}

const char *fz_disk_cache_dir(char *buf, size_t size) {
  const char *dir = getenv("FZ_CACHE_DIR");
  if (dir && strcmp(dir, "off") == 0)
    return NULL;
  int n;
  if (dir && *dir) {
    n = snprintf(buf, size, "%s", dir);
  } else {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
      n = snprintf(buf, size, "%s/fz", xdg);
    else if (home && *home)
      n = snprintf(buf, size, "%s/.cache/fz", home);
    else
      return NULL;
  }
  return n > 0 && (size_t)n < size ? buf : NULL;
}

/* dir/<name>.fzptx for the key; false when it does not fit. */
static bool entry_path(const char *dir, const char *key, size_t key_len,
                       char *path, size_t size) {
  char name[33];
  if (forced_name[0])
    snprintf(name, sizeof name, "%s", forced_name);
  else
    fz_hash128_hex(fz_hash128_bytes(key, key_len), name);
  int n = snprintf(path, size, "%s/%s%s", dir, name, SUFFIX);
  return n > 0 && (size_t)n < size;
}

static bool read_all(int fd, char *buf, size_t n) {
  while (n > 0) {
    ssize_t got = read(fd, buf, n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    buf += got;
    n -= (size_t)got;
  }
  return true;
}

static bool write_all(int fd, const char *buf, size_t n) {
  while (n > 0) {
    ssize_t put = write(fd, buf, n);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      return false;
    buf += put;
    n -= (size_t)put;
  }
  return true;
}

/* The hash line of an entry: sizes and the payload's hash. */
static int size_line(char *line, size_t size, size_t key_len, size_t ptx_len,
                     const char *payload) {
  char hex[33];
  fz_hash128_hex(fz_hash128_bytes(payload, key_len + ptx_len), hex);
  return snprintf(line, size, "%zu %zu %s\n", key_len, ptx_len, hex);
}

/* The PTX of the entry in data[0..n) if it is whole and holds exactly
 * this key material; NULL otherwise. */
static char *parse_entry(const char *data, size_t n, const char *key,
                         size_t key_len) {
  size_t magic_len = sizeof MAGIC - 1;
  if (n < magic_len || memcmp(data, MAGIC, magic_len) != 0)
    return NULL;
  const char *line = data + magic_len;
  const char *end = memchr(line, '\n', n - magic_len);
  if (!end || end - line > 100)
    return NULL;
  size_t stored_key_len = 0, ptx_len = 0;
  char digits[128];
  memcpy(digits, line, (size_t)(end - line));
  digits[end - line] = '\0';
  if (sscanf(digits, "%zu %zu", &stored_key_len, &ptx_len) != 2 ||
      stored_key_len != key_len)
    return NULL;
  const char *payload = end + 1;
  size_t header_len = (size_t)(payload - data);
  if (ptx_len > n || n - header_len != key_len + ptx_len)
    return NULL;
  char expected[128];
  int expected_len =
      size_line(expected, sizeof expected, key_len, ptx_len, payload);
  if (expected_len != end + 1 - line ||
      memcmp(expected, line, (size_t)expected_len) != 0 ||
      memcmp(payload, key, key_len) != 0)
    return NULL;
  char *ptx = malloc(ptx_len + 1);
  if (ptx) {
    memcpy(ptx, payload + key_len, ptx_len);
    ptx[ptx_len] = '\0';
  }
  return ptx;
}

char *fz_disk_cache_get(const char *key, size_t key_len) {
  char dir[4000], path[4096];
  if (!fz_disk_cache_dir(dir, sizeof dir) ||
      !entry_path(dir, key, key_len, path, sizeof path))
    return NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat st;
  char *ptx = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      st.st_size <= MAX_ENTRY_BYTES) {
    size_t n = (size_t)st.st_size;
    char *data = malloc(n);
    if (data && read_all(fd, data, n))
      ptx = parse_entry(data, n, key, key_len);
    free(data);
  }
  if (ptx && time(NULL) - st.st_mtim.tv_sec >= TOUCH_SECONDS)
    futimens(fd, NULL); /* used now: last in line for eviction */
  close(fd);
  return ptx;
}

void fz_disk_cache_put(const char *key, size_t key_len, const char *ptx) {
  char dir[4000], path[4096], tmp[4200];
  if (!fz_disk_cache_dir(dir, sizeof dir) || !fz_make_dirs(dir) ||
      !entry_path(dir, key, key_len, path, sizeof path))
    return;
  size_t ptx_len = strlen(ptx);
  char *payload = malloc(key_len + ptx_len + 1);
  if (!payload)
    return;
  memcpy(payload, key, key_len);
  memcpy(payload + key_len, ptx, ptx_len);
  char line[128];
  int line_len = size_line(line, sizeof line, key_len, ptx_len, payload);
  /* The pid only helps a person reading the directory; mkstemp makes the
   * name unique. */
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid());
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(payload);
    return;
  }
  bool ok = fchmod(fd, 0644) == 0 &&
            write_all(fd, MAGIC, sizeof MAGIC - 1) &&
            write_all(fd, line, (size_t)line_len) &&
            write_all(fd, payload, key_len + ptx_len);
  free(payload);
  ok &= close(fd) == 0;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return;
  }
  fz_disk_cache_evict(dir, sizeof MAGIC - 1 + (size_t)line_len + key_len +
                               ptx_len);
}
