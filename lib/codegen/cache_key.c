/* cache_key.c - what a cache entry's PTX depends on, as text.
 *
 * The lowered IR is the kernel; the rest is what turns the same IR into
 * different PTX: the target and opt level, the LLVM that optimises and
 * emits it, the libdevice it links (by content, not by path: the same file
 * found elsewhere is the same key, an updated one in place is not), and
 * fz itself (its passes around LLVM's: libdevice linking, reflect, the
 * pipeline's options). fz's part is the build identity, a hash of lib/ and
 * include/ and of the LLVM libraries' sizes and times, taken by
 * cmake/BuildId.cmake at every build: any change to the code, committed
 * or not, or a reinstalled LLVM, gives new keys.
 */
#include "codegen/cache.h"

#include "fz_build_id.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <llvm/Config/llvm-config.h>

static char build_identity[128];
static pthread_once_t build_identity_once = PTHREAD_ONCE_INIT;

static void make_build_identity(void) {
  snprintf(build_identity, sizeof build_identity, "%s %s", fz_version(),
           FZ_BUILD_ID);
}

const char *fz_build_identity(void) {
  pthread_once(&build_identity_once, make_build_identity);
  return build_identity;
}

const char *fz_llvm_version(void) { return LLVM_VERSION_STRING; }

/* The last file hashed: libdevice is one file per process in practice. */
static struct {
  pthread_mutex_t lock;
  char path[4096];
  off_t size;
  struct timespec mtime;
  char hex[33];
} digest_memo = {.lock = PTHREAD_MUTEX_INITIALIZER};

static fz_status hash_file(const char *path, off_t size, char hex[33],
                           fz_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return fz_error_set(err, FZ_ERR_IO, "cannot read '%s'", path);
  unsigned char *data = malloc((size_t)size + 1);
  bool ok = data && fread(data, 1, (size_t)size, f) == (size_t)size &&
            fgetc(f) == EOF;
  fclose(f);
  if (ok)
    fz_hash128_hex(fz_hash128_bytes(data, (size_t)size), hex);
  free(data);
  if (!ok)
    return fz_error_set(err, FZ_ERR_IO, "cannot read '%s' (changed while read?)",
                        path);
  return FZ_OK;
}

fz_status fz_libdevice_digest(const char *path, char hex[33], fz_error *err) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
    return fz_error_set(err, FZ_ERR_IO, "cannot read '%s'", path);
  pthread_mutex_lock(&digest_memo.lock);
  bool known = strcmp(digest_memo.path, path) == 0 &&
               digest_memo.size == st.st_size &&
               digest_memo.mtime.tv_sec == st.st_mtim.tv_sec &&
               digest_memo.mtime.tv_nsec == st.st_mtim.tv_nsec;
  fz_status status = FZ_OK;
  if (!known) {
    /* A path too long for the memo is stored cut, never matches, and is
     * hashed again next time: slower, not wrong. */
    digest_memo.path[0] = '\0';
    status = hash_file(path, st.st_size, digest_memo.hex, err);
    if (status == FZ_OK) {
      snprintf(digest_memo.path, sizeof digest_memo.path, "%s", path);
      digest_memo.size = st.st_size;
      digest_memo.mtime = st.st_mtim;
    }
  }
  if (status == FZ_OK)
    memcpy(hex, digest_memo.hex, 33);
  pthread_mutex_unlock(&digest_memo.lock);
  return status;
}

void fz_cache_key(fz_buf *out, const fz_cache_identity *identity, int sm,
                  int opt_level, const char *lowered_ir) {
  fz_buf_printf(out,
                "fz ptx cache key 1\n"
                "fz %s\n"
                "llvm %s\n"
                "libdevice %s\n"
                "target sm_%d O%d\n"
                "lowered ir:\n",
                identity->build, identity->llvm, identity->libdevice, sm,
                opt_level);
  fz_buf_puts(out, lowered_ir);
}
