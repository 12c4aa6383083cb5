/* cache_evict.c - keeping the PTX cache under its size cap.
 *
 * Looking costs a readdir and a stat per entry, so a process looks only on
 * its first store and then after every cap/8 bytes it stores, never on a
 * hit: with one writer the directory stays within the cap (eviction leaves
 * it at 7/8, and the next look comes before another 1/8 is written); with
 * several, each may overshoot by its own 1/8 until its next look. Least
 * recently used is judged by modification time, which a store sets and a
 * hit refreshes (disk_cache.c): access times are often not kept (noatime,
 * relatime). Processes evicting at once may delete the same file twice
 * (harmless) or an entry another has just used (a miss later, not an
 * error); a reader that has the file open keeps reading it.
 */
#include "codegen/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const uint64_t DEFAULT_CAP_MB = 256;
static const time_t STALE_TEMP_SECONDS = 3600;

uint64_t fz_disk_cache_cap(void) {
  const char *s = getenv("FZ_CACHE_MAX_MB");
  if (!s || !*s)
    return DEFAULT_CAP_MB << 20;
  char *end = NULL;
  unsigned long long mb = strtoull(s, &end, 10);
  if (*end != '\0' || *s == '-' || mb > (UINT64_MAX >> 20))
    return DEFAULT_CAP_MB << 20;
  return (uint64_t)mb << 20;
}

typedef struct entry {
  char *name;
  uint64_t bytes;
  struct timespec mtime;
} entry;

static int older_first(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec)
    return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec)
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void unlink_in(const char *dir, const char *name) {
  char path[4400];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path)
    unlink(path);
}

/* Lists dir's entries (deleting dead writers' temporary files on the way);
 * false when the directory cannot be read or memory runs out. */
static bool list_entries(const char *dir, entry **out, size_t *count,
                         uint64_t *total) {
  DIR *d = opendir(dir);
  if (!d)
    return false;
  size_t n = 0, cap = 0;
  entry *list = NULL;
  bool ok = true;
  time_t now = time(NULL);
  struct dirent *de;
  while (ok && (de = readdir(d)) != NULL) {
    bool is_entry = has_suffix(de->d_name, ".fzptx");
    bool is_temp = strstr(de->d_name, ".fzptx.tmp.") != NULL;
    if (!is_entry && !is_temp)
      continue;
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    if (is_temp) {
      if (now - st.st_mtim.tv_sec > STALE_TEMP_SECONDS)
        unlink_in(dir, de->d_name);
      continue;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      entry *grown = realloc(list, cap * sizeof *list);
      if (!grown) {
        ok = false;
        break;
      }
      list = grown;
    }
    list[n].name = strdup(de->d_name);
    if (!list[n].name) {
      ok = false;
      break;
    }
    list[n].bytes = (uint64_t)st.st_size;
    list[n].mtime = st.st_mtim;
    *total += list[n].bytes;
    n++;
  }
  closedir(d);
  *out = list;
  *count = n;
  return ok;
}

static void evict(const char *dir, uint64_t cap) {
  entry *list = NULL;
  size_t n = 0;
  uint64_t total = 0;
  if (list_entries(dir, &list, &n, &total) && total > cap) {
    qsort(list, n, sizeof *list, older_first);
    uint64_t target = cap - cap / 8;
    for (size_t i = 0; i < n && total > target; i++) {
      unlink_in(dir, list[i].name);
      total -= list[i].bytes;
    }
  }
  for (size_t i = 0; i < n; i++)
    free(list[i].name);
  free(list);
}

static struct {
  pthread_mutex_t lock;
  bool looked;
  uint64_t since_look;
} state = {.lock = PTHREAD_MUTEX_INITIALIZER};

void fz_disk_cache_evict(const char *dir, uint64_t bytes) {
  uint64_t cap = fz_disk_cache_cap();
  if (cap == 0)
    return;
  pthread_mutex_lock(&state.lock);
  state.since_look += bytes;
  bool look = !state.looked || state.since_look >= cap / 8;
  if (look) {
    state.looked = true;
    state.since_look = 0;
  }
  pthread_mutex_unlock(&state.lock);
  if (look)
    evict(dir, cap);
}
