/* compile.c - plan -> LLVM IR -> PTX, one LLVM context per compilation.
 *
 * The disk cache sits after lowering: lowering takes well under a
 * millisecond and its IR text is the most precise key there is, while the
 * O3 pipeline and code generation are the expensive part worth skipping.
 * The key also names the libdevice the module links, by content: the
 * path found here is the one linked, so the two cannot disagree.
 */
#include "codegen/codegen.h"
#include "codegen/cache.h"

#include "lower/lower.h"
#include "nvptx/nvptx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fz_kernel_code_free(fz_kernel_code *code) {
  if (!code)
    return;
  free(code->ptx);
  free(code->llvm);
  *code = (fz_kernel_code){0};
}

fz_compile_options fz_codegen_options(int device_sm) {
  return (fz_compile_options){.sm = device_sm >= 90 ? 90 : device_sm,
                              .opt_level = 3,
                              .use_cache = true};
}

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p)
    memcpy(p, s, n);
  return p;
}

/* The libdevice file a module links: its path, and its content hash when
 * the key needs it; "none" when the module links no libdevice. */
typedef struct libdevice_use {
  char path[4096];
  char digest[33];
  bool linked;
} libdevice_use;

static fz_status find_libdevice(LLVMModuleRef module, bool uses_libdevice,
                                bool want_digest, libdevice_use *use,
                                fz_error *err) {
  snprintf(use->digest, sizeof use->digest, "none");
  use->linked = uses_libdevice && fz_libdevice_needed(module);
  if (!use->linked)
    return FZ_OK;
  fz_status st = fz_libdevice_find(use->path, sizeof use->path, err);
  if (st == FZ_OK && want_digest)
    st = fz_libdevice_digest(use->path, use->digest, err);
  return st;
}

/* The key material of the module's PTX (malloc'd), or NULL when out of
 * memory (then the cache is skipped). */
static char *cache_key(const char *lowered_ir, const fz_compile_options *opts,
                       const libdevice_use *libdevice) {
  fz_cache_identity identity = {.build = fz_build_identity(),
                                .llvm = fz_llvm_version(),
                                .libdevice = libdevice->digest};
  fz_buf b = {0};
  fz_cache_key(&b, &identity, opts->sm, opts->opt_level, lowered_ir);
  return fz_buf_take(&b);
}

fz_status fz_compile_plan(const fz_plan *plan, const fz_compile_options *opts,
                          fz_kernel_code *out, fz_error *err) {
  *out = (fz_kernel_code){0};
  fz_nvptx_init();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef module = NULL;
  bool uses_libdevice = false;
  char *key = NULL;
  char dir[4096];
  bool caching = opts->use_cache && fz_disk_cache_dir(dir, sizeof dir);
  libdevice_use libdevice;
  fz_status st = fz_lower_plan(plan, ctx, &module, &uses_libdevice, err);
  if (st == FZ_OK)
    st = find_libdevice(module, uses_libdevice, caching, &libdevice, err);
  if (st != FZ_OK)
    goto done;

  char *text = LLVMPrintModuleToString(module);
  if (caching)
    key = cache_key(text, opts, &libdevice);
  if (opts->want_unoptimized_llvm) {
    out->llvm = dup_string(text);
    if (!out->llvm) {
      LLVMDisposeMessage(text);
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  }
  LLVMDisposeMessage(text);

  if (key && !opts->want_llvm) {
    out->ptx = fz_disk_cache_get(key, strlen(key));
    if (out->ptx) {
      out->from_cache = true;
      goto done;
    }
  }
  fz_nvptx_options nv = {.sm = opts->sm,
                         .opt_level = opts->opt_level,
                         .link_libdevice = uses_libdevice,
                         .libdevice_path =
                             libdevice.linked ? libdevice.path : NULL};
  st = fz_nvptx_optimize(module, &nv, err);
  if (st != FZ_OK)
    goto done;
  if (opts->want_llvm && !opts->want_unoptimized_llvm) {
    out->llvm = fz_nvptx_module_text(module);
    if (!out->llvm) {
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  }
  st = fz_nvptx_emit(module, &nv, &out->ptx, err);
  if (st == FZ_OK && key)
    fz_disk_cache_put(key, strlen(key), out->ptx);
done:
  free(key);
  if (module)
    LLVMDisposeModule(module);
  LLVMContextDispose(ctx);
  if (st != FZ_OK)
    fz_kernel_code_free(out);
  return st;
}
