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
#include "codegen/dump.h"

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

static void dump_plan(const fz_dump_unit *unit, int kernel,
                      const fz_plan *plan) {
  if (!unit->name[0] || !fz_dump_wants(FZ_DUMP_PLAN))
    return;
  fz_buf b = {0};
  fz_plan_print(plan, &b);
  char *text = fz_buf_take(&b);
  fz_dump_text(unit, kernel, FZ_DUMP_KIND_PLAN, plan->kernel_name, text);
  free(text);
}

/* Dumps the optimised IR and, when asked for, hands it to the caller. */
static fz_status take_optimized_llvm(LLVMModuleRef module,
                                     const fz_compile_options *opts,
                                     const fz_dump_unit *unit, int kernel,
                                     fz_kernel_code *out, fz_error *err) {
  bool wanted = opts->want_llvm && !opts->want_unoptimized_llvm;
  if (!wanted && !(unit->name[0] && fz_dump_wants(FZ_DUMP_LLVM)))
    return FZ_OK;
  char *text = fz_nvptx_module_text(module);
  if (!text)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  char detail[32];
  snprintf(detail, sizeof detail, "O%d, sm_%d", opts->opt_level, opts->sm);
  fz_dump_text(unit, kernel, FZ_DUMP_KIND_LLVM_OPTIMIZED, detail, text);
  if (wanted)
    out->llvm = text;
  else
    free(text);
  return FZ_OK;
}

static void dump_ptx(const fz_dump_unit *unit, int kernel,
                     const fz_compile_options *opts, const fz_kernel_code *code) {
  char detail[64];
  snprintf(detail, sizeof detail, "sm_%d%s", opts->sm,
           code->from_cache ? ", from the disk cache" : "");
  fz_dump_text(unit, kernel, FZ_DUMP_KIND_PTX, detail, code->ptx);
}

fz_status fz_compile_plan(const fz_plan *plan, const fz_compile_options *opts,
                          fz_kernel_code *out, fz_error *err) {
  *out = (fz_kernel_code){0};
  fz_dump_unit own_unit;
  const fz_dump_unit *unit = opts->dump_unit;
  int kernel = opts->dump_kernel;
  if (!unit) {
    fz_dump_unit_begin(&own_unit, plan->fusion ? plan->fusion->name : NULL);
    unit = &own_unit;
    kernel = 0;
  }
  dump_plan(unit, kernel, plan);
  /* Dumped LLVM IR is compiled now, so a cached kernel is no reason to
   * show half of it. */
  bool skip_cache_read = opts->want_llvm || fz_dump_wants(FZ_DUMP_LLVM);

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
  fz_dump_text(unit, kernel, FZ_DUMP_KIND_LLVM_LOWERED, plan->kernel_name,
               text);
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

  if (key && !skip_cache_read) {
    out->ptx = fz_disk_cache_get(key, strlen(key));
    if (out->ptx) {
      out->from_cache = true;
      dump_ptx(unit, kernel, opts, out);
      goto done;
    }
  }
  fz_nvptx_options nv = {.sm = opts->sm,
                         .opt_level = opts->opt_level,
                         .link_libdevice = uses_libdevice,
                         .libdevice_path =
                             libdevice.linked ? libdevice.path : NULL};
  st = fz_nvptx_optimize(module, &nv, err);
  if (st == FZ_OK)
    st = take_optimized_llvm(module, opts, unit, kernel, out, err);
  if (st == FZ_OK)
    st = fz_nvptx_emit(module, &nv, &out->ptx, err);
  if (st == FZ_OK) {
    dump_ptx(unit, kernel, opts, out);
    if (key)
      fz_disk_cache_put(key, strlen(key), out->ptx);
  }
done:
  free(key);
  if (module)
    LLVMDisposeModule(module);
  LLVMContextDispose(ctx);
  if (st != FZ_OK)
    fz_kernel_code_free(out);
  return st;
}
