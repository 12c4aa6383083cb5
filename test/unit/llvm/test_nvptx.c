/* test_nvptx.c - lib/nvptx: a hand-built kernel module to PTX.
 *
 * The kernel is what lib/lower will produce in miniature: a ptx_kernel
 * reading tid/ctaid/ntid, a <4 x float> load from global memory with align
 * 16, a libdevice call per lane and a vector store. The PTX is checked for
 * its skeleton and, where ptxas is installed, assembled for the target it
 * names. Parts that need libdevice or ptxas print a SKIP line when those
 * are missing; they never pass silently.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llvm-c/Core.h>

#include "nvptx/nvptx.h"
#include "test_util.h"

/* ---- building the kernel ------------------------------------------------ */

static LLVMValueRef sreg(LLVMModuleRef m, LLVMBuilderRef b, const char *name) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  ck_assert_msg(id != 0, "no intrinsic %s", name);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
  LLVMTypeRef type = LLVMIntrinsicGetType(LLVMGetModuleContext(m), id, NULL, 0);
  return LLVMBuildCall2(b, type, fn, NULL, 0, "");
}

/* The per-lane operation: `callee`(x) when callee is a libdevice function
 * name, else x * 2. */
static LLVMValueRef lane_op(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x,
                            const char *callee) {
  LLVMContextRef ctx = LLVMGetModuleContext(m);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
  if (!callee)
    return LLVMBuildFMul(b, x, LLVMConstReal(f32, 2.0), "");
  LLVMTypeRef type = LLVMFunctionType(f32, &f32, 1, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(m, callee);
  if (!fn)
    fn = LLVMAddFunction(m, callee, type);
  return LLVMBuildCall2(b, type, fn, &x, 1, "");
}

/* kernel(in, out, n): i = ctaid.x * ntid.x + tid.x; if (i < n)
 * out[i] = op(in[i]) for <4 x float> elements. */
static LLVMModuleRef build_kernel(LLVMContextRef ctx, const char *callee) {
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("kernel", ctx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef v4 = LLVMVectorType(f32, 4);
  LLVMTypeRef gptr = LLVMPointerTypeInContext(ctx, 1);
  LLVMTypeRef params[] = {gptr, gptr, i32};
  LLVMValueRef k = LLVMAddFunction(
      m, "scale4", LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 3, 0));
  LLVMSetFunctionCallConv(k, LLVMPTXKernelCallConv);

  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, k, "entry");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ctx, k, "body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, k, "done");
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef tid = sreg(m, b, "llvm.nvvm.read.ptx.sreg.tid.x");
  LLVMValueRef bid = sreg(m, b, "llvm.nvvm.read.ptx.sreg.ctaid.x");
  LLVMValueRef ntid = sreg(m, b, "llvm.nvvm.read.ptx.sreg.ntid.x");
  LLVMValueRef i = LLVMBuildAdd(b, LLVMBuildMul(b, bid, ntid, ""), tid, "i");
  LLVMValueRef in_range =
      LLVMBuildICmp(b, LLVMIntSLT, i, LLVMGetParam(k, 2), "");
  LLVMBuildCondBr(b, in_range, body, done);

  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef i_wide = LLVMBuildSExt(b, i, i64, "");
  LLVMValueRef src =
      LLVMBuildInBoundsGEP2(b, v4, LLVMGetParam(k, 0), &i_wide, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(b, v4, src, "v");
  LLVMSetAlignment(v, 16);
  LLVMValueRef r = LLVMGetUndef(v4);
  for (int lane = 0; lane < 4; lane++) {
    LLVMValueRef idx = LLVMConstInt(i32, (unsigned)lane, 0);
    LLVMValueRef x = LLVMBuildExtractElement(b, v, idx, "");
    r = LLVMBuildInsertElement(b, r, lane_op(m, b, x, callee), idx, "");
  }
  LLVMValueRef dst =
      LLVMBuildInBoundsGEP2(b, v4, LLVMGetParam(k, 1), &i_wide, 1, "");
  LLVMValueRef store = LLVMBuildStore(b, r, dst);
  LLVMSetAlignment(store, 16);
  LLVMBuildBr(b, done);

  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return m;
}

/* ---- environment -------------------------------------------------------- */

/* Sets (value non-NULL) or clears an environment variable, remembering the
 * old value in saved (malloc'd or NULL) for restore_env. */
static char *replace_env(const char *name, const char *value) {
  const char *old = getenv(name);
  char *saved = old ? strdup(old) : NULL;
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
  return saved;
}

static void restore_env(const char *name, char *saved) {
  if (saved)
    setenv(name, saved, 1);
  else
    unsetenv(name);
  free(saved);
}

static bool have_libdevice(char *path, size_t size) {
  fz_error err = {0};
  if (fz_libdevice_find(path, size, &err) == FZ_OK)
    return true;
  printf("SKIP: libdevice not found (%s)\n", err.message);
  return false;
}

/* ---- ptxas -------------------------------------------------------------- */

static bool find_ptxas(char *path, size_t size) {
  const char *env = getenv("PATH");
  char *dirs = strdup(env ? env : "");
  bool found = false;
  for (char *save = NULL, *dir = strtok_r(dirs, ":", &save); dir && !found;
       dir = strtok_r(NULL, ":", &save)) {
    snprintf(path, size, "%s/ptxas", dir);
    found = access(path, X_OK) == 0;
  }
  free(dirs);
  if (!found) {
    snprintf(path, size, "/usr/local/cuda/bin/ptxas");
    found = access(path, X_OK) == 0;
  }
  return found;
}

/* Assembles ptx with ptxas -arch=sm_<sm>; fails the test on any error. */
static void assemble(const char *ptx, int sm) {
  char ptxas[4096];
  if (!find_ptxas(ptxas, sizeof ptxas)) {
    printf("SKIP: ptxas not found (assembling for sm_%d)\n", sm);
    return;
  }
  char file[] = "/tmp/fz_test_nvptx_XXXXXX";
  int fd = mkstemp(file);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  ck_assert_ptr_nonnull(f);
  fputs(ptx, f);
  fclose(f);

  char command[8400];
  snprintf(command, sizeof command, "'%s' -arch=sm_%d -o /dev/null '%s' 2>&1",
           ptxas, sm, file);
  FILE *p = popen(command, "r");
  ck_assert_ptr_nonnull(p);
  char output[4096] = "";
  size_t n = fread(output, 1, sizeof output - 1, p);
  output[n] = '\0';
  int status = pclose(p);
  unlink(file);
  ck_assert_msg(status == 0, "ptxas -arch=sm_%d failed (%d):\n%s\nPTX:\n%s", sm,
                status, output, ptx);
}

/* ---- tests -------------------------------------------------------------- */

static bool has(const char *text, const char *needle) {
  return strstr(text, needle) != NULL;
}

static bool has_v4_global_load(const char *ptx) {
  return has(ptx, "ld.global.v4.f32") || has(ptx, "ld.global.nc.v4.f32");
}

/* Compiles the kernel with `callee` per lane for sm and checks the PTX
 * skeleton; returns the PTX (caller frees). */
static char *compile_kernel(const char *callee, int sm, bool link) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = build_kernel(ctx, callee);
  fz_nvptx_options opts = {.sm = sm, .opt_level = 3, .link_libdevice = link};
  char *ptx = NULL;
  fz_error err = {0};
  fz_status st = fz_nvptx_compile(m, &opts, &ptx, &err);
  ck_assert_msg(st == FZ_OK, "compile failed: %s", err.message);
  ck_assert_ptr_nonnull(ptx);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);

  char target[32];
  snprintf(target, sizeof target, ".target sm_%d", sm);
  ck_assert_msg(has(ptx, ".visible .entry scale4("), "no kernel entry:\n%s",
                ptx);
  ck_assert_msg(has(ptx, target), "no %s:\n%s", target, ptx);
  ck_assert_msg(has(ptx, ".address_size 64"), "not 64-bit:\n%s", ptx);
  ck_assert_msg(has_v4_global_load(ptx), "no vector load:\n%s", ptx);
  ck_assert_msg(has(ptx, "st.global.v4.f32"), "no vector store:\n%s", ptx);
  ck_assert_msg(has(ptx, "%tid.x") && has(ptx, "%ctaid.x") &&
                    has(ptx, "%ntid.x"),
                "special registers missing:\n%s", ptx);
  return ptx;
}

START_TEST(test_kernel_with_libdevice) {
  char path[4096];
  if (!have_libdevice(path, sizeof path))
    return;
  int sms[] = {90, 80};
  for (int i = 0; i < 2; i++) {
    char *ptx = compile_kernel("__nv_expf", sms[i], true);
    /* Inlined: no call and no declaration left. */
    ck_assert_msg(!has(ptx, "__nv_expf"), "__nv_expf not inlined:\n%s", ptx);
    ck_assert_msg(!has(ptx, "call"), "a call is left:\n%s", ptx);
    ck_assert_msg(has(ptx, "ex2.approx"), "expf body missing:\n%s", ptx);
    assemble(ptx, sms[i]);
    free(ptx);
  }
}
END_TEST

START_TEST(test_kernel_without_libdevice) {
  /* No __nv_* call: libdevice is neither needed nor looked for, even when
   * asked for and FZ_LIBDEVICE points nowhere. */
  char *saved = replace_env("FZ_LIBDEVICE", "/nonexistent/libdevice.10.bc");
  for (int link = 0; link < 2; link++) {
    char *ptx = compile_kernel(NULL, 90, link);
    ck_assert_msg(has(ptx, "mul.rn.f32") || has(ptx, "add.rn.f32") ||
                      has(ptx, "mul.f32") || has(ptx, "add.f32"),
                  "no arithmetic:\n%s", ptx);
    assemble(ptx, 90);
    free(ptx);
  }
  restore_env("FZ_LIBDEVICE", saved);
}
END_TEST

/* __nv_sqrtf asks __nvvm_reflect("__CUDA_PREC_SQRT"); it must be answered 1
 * (IEEE sqrt, as nvcc), not LLVM 19's 0 (sqrt.approx). */
START_TEST(test_reflect_prec_sqrt) {
  char path[4096];
  if (!have_libdevice(path, sizeof path))
    return;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = build_kernel(ctx, "__nv_sqrtf");
  fz_nvptx_options opts = {.sm = 90, .opt_level = 3, .link_libdevice = true};
  fz_error err = {0};
  ck_assert_msg(fz_nvptx_optimize(m, &opts, &err) == FZ_OK, "%s", err.message);
  char *ir = fz_nvptx_module_text(m);
  ck_assert_ptr_nonnull(ir);
  ck_assert_msg(!has(ir, "__nvvm_reflect"), "reflect left:\n%s", ir);
  ck_assert_msg(!has(ir, "@__nv_sqrtf"), "__nv_sqrtf left:\n%s", ir);
  ck_assert_msg(has(ir, "\"nvvm-reflect-ftz\", i32 0"), "no ftz flag:\n%s", ir);
  ck_assert_msg(has(ir, "target triple = \"nvptx64-nvidia-cuda\""), "%s", ir);
  free(ir);
  char *ptx = NULL;
  ck_assert_msg(fz_nvptx_emit(m, &opts, &ptx, &err) == FZ_OK, "%s",
                err.message);
  ck_assert_msg(has(ptx, "sqrt.rn.f32"), "no IEEE sqrt:\n%s", ptx);
  ck_assert_msg(!has(ptx, "sqrt.approx"), "approximate sqrt:\n%s", ptx);
  assemble(ptx, 90);
  free(ptx);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
}
END_TEST

/* Only the functions the module calls are linked: the optimised module has
 * one kernel and nothing from libdevice even at O0 (kept internal, then
 * dropped by the always-inliner). */
START_TEST(test_libdevice_links_only_needed) {
  char path[4096];
  if (!have_libdevice(path, sizeof path))
    return;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = build_kernel(ctx, "__nv_expf");
  fz_error err = {0};
  ck_assert_msg(fz_nvptx_set_target(m, 90, &err) == FZ_OK, "%s", err.message);
  ck_assert(fz_libdevice_needed(m));
  ck_assert_msg(fz_libdevice_link(m, NULL, &err) == FZ_OK, "%s", err.message);
  int defined = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
       f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f))
      continue;
    defined++;
    size_t n;
    const char *name = LLVMGetValueName2(f, &n);
    if (strcmp(name, "scale4") == 0)
      ck_assert_int_eq(LLVMGetLinkage(f), LLVMExternalLinkage);
    else
      ck_assert_msg(LLVMGetLinkage(f) == LLVMInternalLinkage, "%s not internal",
                    name);
  }
  ck_assert_int_eq(defined, 2); /* scale4 and __nv_expf */
  ck_assert(!fz_libdevice_needed(m));

  fz_nvptx_options opts = {.sm = 90, .opt_level = 0, .link_libdevice = true};
  char *ptx = NULL;
  ck_assert_msg(fz_nvptx_compile(m, &opts, &ptx, &err) == FZ_OK, "%s",
                err.message);
  ck_assert_msg(!has(ptx, "__nv_expf"), "__nv_expf left at O0:\n%s", ptx);
  assemble(ptx, 90);
  free(ptx);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
}
END_TEST

static fz_status compile_status(const char *callee, fz_nvptx_options opts,
                                fz_error *err) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = build_kernel(ctx, callee);
  char *ptx = (char *)1;
  fz_status st = fz_nvptx_compile(m, &opts, &ptx, err);
  if (st != FZ_OK)
    ck_assert_ptr_null(ptx);
  free(ptx);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  return st;
}

START_TEST(test_libdevice_missing) {
  fz_nvptx_options opts = {.sm = 90, .opt_level = 3, .link_libdevice = true};
  fz_error err = {0};

  char *saved = replace_env("FZ_LIBDEVICE", "/nonexistent/libdevice.10.bc");
  ck_assert_int_eq(compile_status("__nv_expf", opts, &err), FZ_ERR_IO);
  ck_assert_msg(has(err.message, "FZ_LIBDEVICE") &&
                    has(err.message, "/nonexistent/libdevice.10.bc"),
                "%s", err.message);
  restore_env("FZ_LIBDEVICE", saved);

  opts.libdevice_path = "/nonexistent/other.bc";
  ck_assert_int_eq(compile_status("__nv_expf", opts, &err), FZ_ERR_IO);
  ck_assert_msg(has(err.message, "/nonexistent/other.bc"), "%s", err.message);

  opts.libdevice_path = NULL;
  opts.link_libdevice = false;
  ck_assert_int_eq(compile_status("__nv_expf", opts, &err), FZ_ERR_ARGUMENT);
  ck_assert_msg(has(err.message, "__nv_expf"), "%s", err.message);
}
END_TEST

/* The search order and its message, in a fake CUDA install. */
START_TEST(test_libdevice_find) {
  char root[] = "/tmp/fz_test_cuda_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  char dir[128], file[192];
  snprintf(dir, sizeof dir, "%s/nvvm", root);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  snprintf(dir, sizeof dir, "%s/nvvm/libdevice", root);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  snprintf(file, sizeof file, "%s/libdevice.10.bc", dir);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fputs("not bitcode", f);
  fclose(f);

  char *saved_ld = replace_env("FZ_LIBDEVICE", NULL);
  char *saved_home = replace_env("CUDA_HOME", root);
  char *saved_path = replace_env("CUDA_PATH", NULL);
  char found[4096];
  fz_error err = {0};
  ck_assert_int_eq(fz_libdevice_find(found, sizeof found, &err), FZ_OK);
  ck_assert_str_eq(found, file);

  /* FZ_LIBDEVICE may name the folder. */
  free(replace_env("CUDA_HOME", NULL));
  free(replace_env("FZ_LIBDEVICE", dir));
  ck_assert_int_eq(fz_libdevice_find(found, sizeof found, &err), FZ_OK);
  ck_assert_str_eq(found, file);

  /* A file that is not bitcode is reported as such. */
  fz_nvptx_options opts = {.sm = 90, .opt_level = 3, .link_libdevice = true};
  ck_assert_int_eq(compile_status("__nv_expf", opts, &err), FZ_ERR_LLVM);
  ck_assert_msg(has(err.message, file), "%s", err.message);

  /* Nothing anywhere: the message lists every place tried. */
  free(replace_env("FZ_LIBDEVICE", NULL));
  free(replace_env("CUDA_HOME", "/nonexistent/home"));
  free(replace_env("CUDA_PATH", "/nonexistent/path"));
  if (fz_libdevice_find(found, sizeof found, &err) == FZ_OK) {
    ck_assert_msg(strncmp(found, "/usr/", 5) == 0, "found %s", found);
  } else {
    ck_assert_int_eq(err.status, FZ_ERR_IO);
    ck_assert_msg(
        has(err.message, "/nonexistent/home/nvvm/libdevice/libdevice.10.bc") &&
            has(err.message, "/nonexistent/path/nvvm/libdevice") &&
            has(err.message, "/usr/local/cuda/nvvm/libdevice") &&
            has(err.message, "/usr/lib/nvidia-cuda-toolkit/libdevice"),
        "%s", err.message);
  }

  restore_env("FZ_LIBDEVICE", saved_ld);
  restore_env("CUDA_HOME", saved_home);
  restore_env("CUDA_PATH", saved_path);
  unlink(file);
  rmdir(dir);
  snprintf(dir, sizeof dir, "%s/nvvm", root);
  rmdir(dir);
  rmdir(root);
}
END_TEST

START_TEST(test_invalid_module) {
  /* A block without a terminator: the verifier's message, not a crash. */
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("bad", ctx);
  LLVMValueRef k = LLVMAddFunction(
      m, "k", LLVMFunctionType(LLVMVoidTypeInContext(ctx), NULL, 0, 0));
  LLVMSetFunctionCallConv(k, LLVMPTXKernelCallConv);
  LLVMAppendBasicBlockInContext(ctx, k, "entry");
  fz_nvptx_options opts = {.sm = 90, .opt_level = 3};
  char *ptx = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_nvptx_compile(m, &opts, &ptx, &err), FZ_ERR_LLVM);
  ck_assert_ptr_null(ptx);
  ck_assert_msg(has(err.message, "invalid before optimisation") &&
                    has(err.message, "terminator"),
                "%s", err.message);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
}
END_TEST

START_TEST(test_pick_sm) {
  ck_assert_int_eq(fz_nvptx_pick_sm(90), 90);
  ck_assert_int_eq(fz_nvptx_pick_sm(100), 90); /* Blackwell: PTX for sm_90 */
  ck_assert_int_eq(fz_nvptx_pick_sm(120), 90);
  ck_assert_int_eq(fz_nvptx_pick_sm(86), 86);
  ck_assert_int_eq(fz_nvptx_pick_sm(88), 87);
  ck_assert_int_eq(fz_nvptx_pick_sm(80), 80);
  ck_assert_int_eq(fz_nvptx_pick_sm(61), 0);

  fz_nvptx_options opts = {.sm = 100, .opt_level = 3};
  fz_error err = {0};
  ck_assert_int_eq(compile_status(NULL, opts, &err), FZ_ERR_UNSUPPORTED);
  ck_assert_msg(has(err.message, "sm_100"), "%s", err.message);
  opts.sm = 90;
  opts.opt_level = 4;
  ck_assert_int_eq(compile_status(NULL, opts, &err), FZ_ERR_ARGUMENT);
}
END_TEST

/* k(p): p[0] = maximum(p[0], p[1]) on <2 x bfloat>, and p[2]'s first lane
 * = minimum of the two first lanes, as lowering emits amax/amin of bf16
 * (a vector form once the SLP vectoriser has paired lanes). */
static LLVMModuleRef build_bf16_min_max(LLVMContextRef ctx) {
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("bf16", ctx);
  LLVMTypeRef bf16 = LLVMBFloatTypeInContext(ctx);
  LLVMTypeRef v2 = LLVMVectorType(bf16, 2);
  LLVMTypeRef gptr = LLVMPointerTypeInContext(ctx, 1);
  LLVMValueRef k = LLVMAddFunction(
      m, "k", LLVMFunctionType(LLVMVoidTypeInContext(ctx), &gptr, 1, 0));
  LLVMSetFunctionCallConv(k, LLVMPTXKernelCallConv);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, k, "entry"));
  LLVMValueRef p[3];
  for (int i = 0; i < 3; i++) {
    LLVMValueRef idx = LLVMConstInt(LLVMInt64TypeInContext(ctx), i, 0);
    p[i] = LLVMBuildInBoundsGEP2(b, v2, LLVMGetParam(k, 0), &idx, 1, "");
  }
  LLVMValueRef a = LLVMBuildLoad2(b, v2, p[0], "");
  LLVMValueRef c = LLVMBuildLoad2(b, v2, p[1], "");
  unsigned max_id = LLVMLookupIntrinsicID("llvm.maximum", 12);
  unsigned min_id = LLVMLookupIntrinsicID("llvm.minimum", 12);
  LLVMValueRef args[2] = {a, c};
  LLVMValueRef vmax =
      LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, max_id, &v2, 1),
                     LLVMGetIntrinsicDeclaration(m, max_id, &v2, 1), args, 2,
                     "");
  LLVMBuildStore(b, vmax, p[0]);
  LLVMValueRef lane0 = LLVMConstInt(LLVMInt32TypeInContext(ctx), 0, 0);
  LLVMValueRef lanes[2] = {LLVMBuildExtractElement(b, a, lane0, ""),
                           LLVMBuildExtractElement(b, c, lane0, "")};
  LLVMValueRef smin =
      LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, min_id, &bf16, 1),
                     LLVMGetIntrinsicDeclaration(m, min_id, &bf16, 1), lanes,
                     2, "");
  LLVMBuildStore(b, LLVMBuildInsertElement(b, c, smin, lane0, ""), p[2]);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return m;
}

/* sm_70 and sm_75 have no bf16 max/min: without the rewrite to f32,
 * instruction selection aborts the process. sm_80 keeps them native. */
START_TEST(test_bf16_min_max_before_sm80) {
  static const int sms[] = {70, 75, 80};
  for (size_t i = 0; i < sizeof sms / sizeof sms[0]; i++) {
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = build_bf16_min_max(ctx);
    fz_nvptx_options opts = {.sm = sms[i], .opt_level = 3};
    char *ptx = NULL;
    fz_error err = {0};
    ck_assert_msg(fz_nvptx_compile(m, &opts, &ptx, &err) == FZ_OK,
                  "sm_%d: %s", sms[i], err.message);
    bool native = sms[i] >= 80;
    ck_assert_msg(has(ptx, "max.NaN.bf16") == native &&
                      has(ptx, "min.NaN.bf16") == native,
                  "sm_%d:\n%s", sms[i], ptx);
    ck_assert_msg(native || (has(ptx, "max.f32") && has(ptx, "min.f32")),
                  "sm_%d:\n%s", sms[i], ptx);
    free(ptx);
    LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
  }
}
END_TEST

/* The stage borrows the context's diagnostic handler and gives it back. */
static void caller_handler(LLVMDiagnosticInfoRef info, void *opaque) {
  (void)info;
  ++*(int *)opaque;
}

START_TEST(test_diagnostic_handler_restored) {
  LLVMContextRef ctx = LLVMContextCreate();
  int calls = 0;
  LLVMContextSetDiagnosticHandler(ctx, caller_handler, &calls);
  LLVMModuleRef m = build_kernel(ctx, NULL);
  fz_nvptx_options opts = {.sm = 80, .opt_level = 2};
  char *ptx = NULL;
  fz_error err = {0};
  ck_assert_msg(fz_nvptx_compile(m, &opts, &ptx, &err) == FZ_OK, "%s",
                err.message);
  ck_assert(LLVMContextGetDiagnosticHandler(ctx) == caller_handler);
  ck_assert(LLVMContextGetDiagnosticContext(ctx) == &calls);
  free(ptx);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("nvptx");
  TCase *tc = tcase_create("nvptx");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_kernel_with_libdevice);
  tcase_add_test(tc, test_kernel_without_libdevice);
  tcase_add_test(tc, test_reflect_prec_sqrt);
  tcase_add_test(tc, test_libdevice_links_only_needed);
  tcase_add_test(tc, test_libdevice_missing);
  tcase_add_test(tc, test_libdevice_find);
  tcase_add_test(tc, test_invalid_module);
  tcase_add_test(tc, test_pick_sm);
  tcase_add_test(tc, test_bf16_min_max_before_sm80);
  tcase_add_test(tc, test_diagnostic_handler_restored);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
