/* cache.h - the on-disk PTX cache of lib/codegen; private to lib/codegen
 * and its tests.
 *
 * An entry maps *key material* to PTX. The key material is text holding
 * everything the PTX depends on (cache_key.c): the lowered LLVM IR, the
 * target and options, LLVM's version, the content hash of libdevice when
 * the kernel links it, and fz's build identity. The entry's file is named
 * by a 128-bit hash of that text (hash.c), and the entry stores the text
 * itself, compared byte for byte on every load: a hash collision, a stale
 * or a damaged entry is a miss, never another kernel's PTX.
 *
 * Entries are written to a unique temporary file in the cache directory
 * and renamed into place (disk_cache.c), so readers never see half an
 * entry and concurrent writers, of one key or many, are harmless. The
 * directory is kept under a size cap by deleting the least recently used
 * entries (cache_evict.c). docs/cache.md is the user's side of it.
 */
#ifndef FZ_CODEGEN_CACHE_H
#define FZ_CODEGEN_CACHE_H

#include "fz/ir.h"

#include <stddef.h>
#include <stdint.h>

/* ---- hash.c ------------------------------------------------------------- */

typedef struct fz_hash128 {
  uint64_t lo, hi;
} fz_hash128;

/* A 128-bit hash of n bytes: fast and well mixed, not cryptographic (the
 * cache never trusts it alone). */
fz_hash128 fz_hash128_bytes(const void *data, size_t n);
/* 32 lowercase hex digits and a NUL. */
void fz_hash128_hex(fz_hash128 h, char hex[33]);

/* ---- cache_key.c -------------------------------------------------------- */

/* What, besides the IR and the options, the PTX depends on. */
typedef struct fz_cache_identity {
  const char *build;     /* fz's version and build id (fz_build_identity) */
  const char *llvm;      /* LLVM's version */
  const char *libdevice; /* content hash of the linked libdevice, or "none" */
} fz_cache_identity;

/* "<version> <build id>": the build id hashes lib/ and include/ and the
 * LLVM libraries linked in, as they were when libfz was built. */
const char *fz_build_identity(void);
/* LLVM's version, e.g. "19.1.7". */
const char *fz_llvm_version(void);

/* The content hash of the file at path, hashed once per process for each
 * (path, size, modification time). FZ_ERR_IO when it cannot be read. */
fz_status fz_libdevice_digest(const char *path, char hex[33], fz_error *err);

/* The key material of a kernel: a header of one line per item of
 * `identity`, the target, the opt level and whether libdevice is linked,
 * then the lowered IR. Appended to *out (check out->oom). */
void fz_cache_key(fz_buf *out, const fz_cache_identity *identity, int sm,
                  int opt_level, const char *lowered_ir);

/* ---- disk_cache.c ------------------------------------------------------- */

/* The cache directory (FZ_CACHE_DIR, else $XDG_CACHE_HOME/fz, else
 * $HOME/.cache/fz), or NULL when disabled (FZ_CACHE_DIR=off) or unknown. */
const char *fz_disk_cache_dir(char *buf, size_t size);
/* The PTX stored under exactly this key material (malloc'd), or NULL: no
 * entry, another key's entry under the same name, a damaged entry, or no
 * cache. A hit marks the entry used (its modification time). */
char *fz_disk_cache_get(const char *key, size_t key_len);
/* Stores ptx under the key material, replacing any entry of the same name.
 * Best effort: a cache that cannot be written is not an error. May evict
 * old entries (fz_disk_cache_evict). */
void fz_disk_cache_put(const char *key, size_t key_len, const char *ptx);
/* Tests only: name every entry `name` (NULL: by the key's hash again), so
 * that different keys collide on one file. Not thread-safe. */
void fz_disk_cache_force_name(const char *name);

/* ---- cache_evict.c ------------------------------------------------------ */

/* The size cap in bytes: FZ_CACHE_MAX_MB MiB (default 256; 0: no cap). */
uint64_t fz_disk_cache_cap(void);
/* Called after `bytes` were written to dir: on the process's first write
 * and after every cap/8 bytes since its last look, totals the entries and,
 * over the cap, deletes the least recently used ones (oldest modification
 * time first) until they fill at most 7/8 of it. Temporary files older
 * than an hour (a writer that died) go too. */
void fz_disk_cache_evict(const char *dir, uint64_t bytes);

#endif
