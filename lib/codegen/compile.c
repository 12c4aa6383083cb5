/* compile.c - plan -> LLVM IR -> PTX, one LLVM context per compilation.
 *
 * The disk cache sits after lowering: lowering takes well under a
 * millisecond and its IR text is the most precise key there is, while the
 * O3 pipeline and code generation are the expensive part worth skipping.
 */
#include "codegen/codegen.h"
#include "codegen/disk_cache.h"

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

fz_status fz_compile_plan(const fz_plan *plan, const fz_compile_options *opts,
                          fz_kernel_code *out, fz_error *err) {
  *out = (fz_kernel_code){0};
  fz_nvptx_init();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef module = NULL;
  bool uses_libdevice = false;
  fz_status st = fz_lower_plan(plan, ctx, &module, &uses_libdevice, err);
  if (st != FZ_OK)
    goto done;

  char *text = LLVMPrintModuleToString(module);
  uint64_t key = fz_hash_bytes(0, text, strlen(text));
  char target[64];
  int n = snprintf(target, sizeof target, "sm_%d O%d fz %s", opts->sm,
                   opts->opt_level, fz_version());
  key = fz_hash_bytes(key, target, (size_t)n);
  if (opts->want_unoptimized_llvm) {
    out->llvm = dup_string(text);
    if (!out->llvm) {
      LLVMDisposeMessage(text);
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  }
  LLVMDisposeMessage(text);

  if (opts->use_cache && !opts->want_llvm) {
    out->ptx = fz_disk_cache_get(key);
    if (out->ptx) {
      out->from_cache = true;
      goto done;
    }
  }
  fz_nvptx_options nv = {.sm = opts->sm,
                         .opt_level = opts->opt_level,
                         .link_libdevice = uses_libdevice};
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
  if (st == FZ_OK && opts->use_cache)
    fz_disk_cache_put(key, out->ptx);
done:
  if (module)
    LLVMDisposeModule(module);
  LLVMContextDispose(ctx);
  if (st != FZ_OK)
    fz_kernel_code_free(out);
  return st;
}
