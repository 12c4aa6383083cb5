/* disk_cache.h - compiled PTX kept across processes; private to
 * lib/codegen (compile.c) and its tests. */
#ifndef FZ_CODEGEN_DISK_CACHE_H
#define FZ_CODEGEN_DISK_CACHE_H

#include <stddef.h>
#include <stdint.h>

uint64_t fz_hash_bytes(uint64_t seed, const void *data, size_t n);
/* Directory of the cache, or NULL when disabled (FZ_CACHE_DIR=off). */
const char *fz_disk_cache_dir(char *buf, size_t size);
/* malloc'd PTX or NULL when absent. */
char *fz_disk_cache_get(uint64_t key);
/* Best effort: a cache that cannot be written is not an error. */
void fz_disk_cache_put(uint64_t key, const char *ptx);

#endif
