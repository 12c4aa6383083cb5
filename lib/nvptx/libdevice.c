/* libdevice.c - NVIDIA's libdevice (the __nv_* math functions): finding it,
 * linking the part a module needs, and resolving its __nvvm_reflect calls.
 *
 * libdevice.10.bc holds ~350 functions; a kernel uses a handful. The C API's
 * LLVMLinkModules2 links every external definition, so linking the whole
 * file and letting O3 delete the rest would parse and optimise all of it on
 * every compile. Instead the bitcode is read lazily and every external
 * libdevice function is made linkonce_odr first: the linker then brings in
 * (and the reader materialises) only what the module calls, transitively,
 * which is what clang's -mlink-builtin-bitcode gets from LinkOnlyNeeded.
 * After linking, everything that came from libdevice is made internal so
 * the optimiser inlines it and drops the bodies.
 */
#include "nvptx/nvptx.h"

#include "fz/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>

static const char LIBDEVICE_NAME[] = "libdevice.10.bc";

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Copies candidate into path if it names a file; notes it in tried. */
static bool try_path(const char *candidate, char *path, size_t size,
                     fz_buf *tried) {
  fz_buf_printf(tried, "%s%s", tried->len ? ", " : "", candidate);
  if (!is_file(candidate) || strlen(candidate) >= size)
    return false;
  memcpy(path, candidate, strlen(candidate) + 1);
  return true;
}

/* FZ_LIBDEVICE, when set, is the only place looked at. */
static fz_status find_from_env(const char *env, char *path, size_t size,
                               fz_error *err) {
  char candidate[4096];
  if (is_dir(env))
    snprintf(candidate, sizeof candidate, "%s/%s", env, LIBDEVICE_NAME);
  else
    snprintf(candidate, sizeof candidate, "%s", env);
  if (!is_file(candidate) || strlen(candidate) >= size)
    return fz_error_set(err, FZ_ERR_IO,
                        "libdevice not found: FZ_LIBDEVICE is set to '%s', "
                        "which is neither %s nor a folder holding it",
                        env, LIBDEVICE_NAME);
  memcpy(path, candidate, strlen(candidate) + 1);
  return FZ_OK;
}

fz_status fz_libdevice_find(char *path, size_t size, fz_error *err) {
  const char *env = getenv("FZ_LIBDEVICE");
  if (env && *env)
    return find_from_env(env, path, size, err);

  char candidate[4096];
  fz_buf tried = {0};
  bool found = false;
  static const char *const roots[] = {"CUDA_HOME", "CUDA_PATH"};
  for (size_t i = 0; i < 2 && !found; i++) {
    const char *root = getenv(roots[i]);
    if (!root || !*root)
      continue;
    snprintf(candidate, sizeof candidate, "%s/nvvm/libdevice/%s", root,
             LIBDEVICE_NAME);
    found = try_path(candidate, path, size, &tried);
  }
  static const char *const fixed[] = {
      "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc",
      "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc"};
  for (size_t i = 0; i < 2 && !found; i++)
    found = try_path(fixed[i], path, size, &tried);

  char *list = fz_buf_take(&tried);
  fz_status st = FZ_OK;
  if (!found)
    st = fz_error_set(err, FZ_ERR_IO,
                      "libdevice not found; looked at %s (set FZ_LIBDEVICE to "
                      "the path of %s)",
                      list ? list : "(out of memory)", LIBDEVICE_NAME);
  free(list);
  return st;
}

static bool is_libdevice_name(const char *name) {
  return strncmp(name, "__nv_", 5) == 0;
}

bool fz_libdevice_needed(LLVMModuleRef m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
       f = LLVMGetNextFunction(f)) {
    size_t length;
    if (LLVMIsDeclaration(f) &&
        is_libdevice_name(LLVMGetValueName2(f, &length)))
      return true;
  }
  return false;
}

/* Reads libdevice lazily into m's context with m's triple and layout (the
 * file says nvptx64-nvidia-gpulibs and an older layout, and the linker
 * would warn about both). */
static fz_status load_libdevice(LLVMModuleRef m, const char *path,
                                LLVMModuleRef *out, fz_error *err) {
  *out = NULL;
  LLVMMemoryBufferRef buffer = NULL;
  char *message = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buffer, &message)) {
    fz_status st =
        fz_error_set(err, FZ_ERR_IO, "cannot read libdevice '%s': %s", path,
                     message ? message : "(no message)");
    LLVMDisposeMessage(message);
    return st;
  }
  fz_nvptx_diag diag;
  fz_nvptx_diag_begin(&diag, LLVMGetModuleContext(m));
  LLVMModuleRef lib = NULL;
  bool failed =
      LLVMGetBitcodeModuleInContext2(LLVMGetModuleContext(m), buffer, &lib);
  fz_nvptx_diag_end(&diag);
  if (failed) {
    /* The module owns the buffer only when reading succeeded. */
    LLVMDisposeMemoryBuffer(buffer);
    return fz_error_set(err, FZ_ERR_LLVM, "cannot read libdevice '%s': %s",
                        path, diag.num_errors ? diag.message : "bad bitcode");
  }
  LLVMSetTarget(lib, LLVMGetTarget(m));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(m));
  *out = lib;
  return FZ_OK;
}

fz_status fz_libdevice_link(LLVMModuleRef m, const char *path, fz_error *err) {
  char found[4096];
  if (!path) {
    fz_status st = fz_libdevice_find(found, sizeof found, err);
    if (st != FZ_OK)
      return st;
    path = found;
  }
  LLVMModuleRef lib;
  fz_status st = load_libdevice(m, path, &lib, err);
  if (st != FZ_OK)
    return st;

  /* Link only what is called (see the top of the file). */
  for (LLVMValueRef f = LLVMGetFirstFunction(lib); f;
       f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage)
      LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);

  /* Remember m's own definitions: whatever is defined after linking and is
   * not among them came from libdevice. */
  size_t num_own = 0, cap_own = 16;
  LLVMValueRef *own = malloc(cap_own * sizeof *own);
  if (!own) {
    LLVMDisposeModule(lib);
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
       f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f))
      continue;
    if (num_own == cap_own) {
      LLVMValueRef *grown = realloc(own, 2 * cap_own * sizeof *own);
      if (!grown) {
        free(own);
        LLVMDisposeModule(lib);
        return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      }
      own = grown;
      cap_own *= 2;
    }
    own[num_own++] = f;
  }

  fz_nvptx_diag diag;
  fz_nvptx_diag_begin(&diag, LLVMGetModuleContext(m));
  bool failed = LLVMLinkModules2(m, lib); /* destroys lib */
  fz_nvptx_diag_end(&diag);
  if (failed) {
    free(own);
    return fz_error_set(err, FZ_ERR_LLVM, "linking libdevice '%s' failed: %s",
                        path, diag.num_errors ? diag.message : "(no message)");
  }

  for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
       f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f))
      continue;
    bool is_own = false;
    for (size_t i = 0; i < num_own && !is_own; i++)
      is_own = own[i] == f;
    if (!is_own) {
      LLVMSetLinkage(f, LLVMInternalLinkage);
      LLVMSetVisibility(f, LLVMDefaultVisibility);
    }
  }
  free(own);
  return FZ_OK;
}

/* The string a reflect call asks about, or NULL when it is not a constant
 * string global (possibly behind casts or a GEP). */
static const char *reflect_key(LLVMValueRef arg, size_t *length) {
  while (arg && LLVMIsAConstantExpr(arg)) {
    LLVMOpcode op = LLVMGetConstOpcode(arg);
    if (op != LLVMAddrSpaceCast && op != LLVMBitCast && op != LLVMGetElementPtr)
      return NULL;
    arg = LLVMGetOperand(arg, 0);
  }
  if (!arg || !LLVMIsAGlobalVariable(arg))
    return NULL;
  LLVMValueRef init = LLVMGetInitializer(arg);
  if (!init || !LLVMIsConstantString(init))
    return NULL;
  const char *s = LLVMGetAsString(init, length);
  while (*length > 0 && s[*length - 1] == '\0')
    (*length)--;
  return s;
}

static bool key_is(const char *key, size_t length, const char *name) {
  return length == strlen(name) && memcmp(key, name, length) == 0;
}

void fz_nvvm_reflect(LLVMModuleRef m, int sm) {
  LLVMValueRef reflect = LLVMGetNamedFunction(m, "__nvvm_reflect");
  if (!reflect)
    return;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(m));
  /* Replacing a call edits the use list being walked: restart each time. */
  bool changed = true;
  while (changed) {
    changed = false;
    for (LLVMUseRef u = LLVMGetFirstUse(reflect); u; u = LLVMGetNextUse(u)) {
      LLVMValueRef call = LLVMGetUser(u);
      if (!LLVMIsACallInst(call) || LLVMGetCalledValue(call) != reflect ||
          LLVMGetNumArgOperands(call) != 1)
        continue;
      size_t length = 0;
      const char *key = reflect_key(LLVMGetOperand(call, 0), &length);
      if (!key)
        continue;
      long long value = 0; /* NVVMReflect's answer for unknown keys */
      if (key_is(key, length, "__CUDA_FTZ"))
        value = 0;
      else if (key_is(key, length, "__CUDA_PREC_SQRT"))
        value = 1;
      else if (key_is(key, length, "__CUDA_ARCH"))
        value = sm * 10;
      LLVMReplaceAllUsesWith(call,
                             LLVMConstInt(i32, (unsigned long long)value, 0));
      LLVMInstructionEraseFromParent(call);
      changed = true;
      break;
    }
  }
  if (!LLVMGetFirstUse(reflect))
    LLVMDeleteFunction(reflect);
}
