/* compile.h - from a kernel plan to PTX: lower, optimise, emit, with the
 * on-disk cache in between. Shared by the executor and fuse-opt.
 */
#ifndef FZ_RUNTIME_COMPILE_H
#define FZ_RUNTIME_COMPILE_H

#include "sched/plan.h"

typedef struct fz_compile_options {
  int sm;          /* target architecture, e.g. 90 */
  int opt_level;   /* 0..3 */
  bool use_cache;  /* consult and fill the disk cache */
  bool want_llvm;  /* also return the optimised LLVM IR text */
  bool want_unoptimized_llvm; /* return the IR as lowered, before O3 */
} fz_compile_options;

typedef struct fz_kernel_code {
  char *ptx;       /* malloc'd */
  char *llvm;      /* malloc'd, when asked for */
  bool from_cache; /* the PTX came from the disk cache */
} fz_kernel_code;

fz_status fz_compile_plan(const fz_plan *plan, const fz_compile_options *opts,
                          fz_kernel_code *out, fz_error *err);
void fz_kernel_code_free(fz_kernel_code *code);

/* disk_cache.c: PTX files named by a hash of what determines them. */
uint64_t fz_hash_bytes(uint64_t seed, const void *data, size_t n);
/* Directory of the cache, or NULL when disabled (FZ_CACHE_DIR=off). */
const char *fz_disk_cache_dir(char *buf, size_t size);
/* malloc'd PTX or NULL when absent. */
char *fz_disk_cache_get(uint64_t key);
/* Best effort: a cache that cannot be written is not an error. */
void fz_disk_cache_put(uint64_t key, const char *ptx);

#endif
