/* compile.c - the NVPTX pipeline: verify, link libdevice, reflect, optimise,
 * verify, emit PTX.
 *
 * Optimising and emitting are separate calls because codegen rewrites the
 * IR it is given (argument lowering, address spaces), and fuse-opt's
 * --emit=llvm wants the module as the optimiser left it. The verifier runs
 * on the way in, so a bug in lib/lower is reported as such instead of as
 * a crash deep inside the optimiser, and on the way out. The optimiser is
 * LLVM's own default<On> pipeline run with the NVPTX target machine, which
 * adds the target's passes (address-space inference, NVVM intrinsic
 * ranges) and cost model, as clang does for CUDA.
 */
#include "nvptx/nvptx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>

static fz_status check_options(const fz_nvptx_options *opts, fz_error *err) {
  if (!opts)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "no NVPTX options given");
  return FZ_OK;
}

static fz_status verify(LLVMModuleRef m, const char *when, fz_error *err) {
  char *message = NULL;
  bool broken = LLVMVerifyModule(m, LLVMReturnStatusAction, &message);
  fz_status st = FZ_OK;
  if (broken)
    st = fz_error_set(err, FZ_ERR_LLVM, "LLVM module is invalid %s: %s", when,
                      message ? message : "(no message)");
  LLVMDisposeMessage(message);
  return st;
}

/* The first __nv_* function m declares, or NULL. */
static const char *libdevice_call(LLVMModuleRef m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f;
       f = LLVMGetNextFunction(f)) {
    size_t length;
    const char *name = LLVMGetValueName2(f, &length);
    if (LLVMIsDeclaration(f) && strncmp(name, "__nv_", 5) == 0)
      return name;
  }
  return NULL;
}

/* nvcc's default, and what the interpreter computes: denormals kept. Left
 * alone if lib/lower already chose. */
static void set_reflect_ftz(LLVMModuleRef m) {
  static const char key[] = "nvvm-reflect-ftz";
  if (LLVMGetModuleFlag(m, key, sizeof key - 1))
    return;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(m));
  LLVMAddModuleFlag(m, LLVMModuleFlagBehaviorOverride, key, sizeof key - 1,
                    LLVMValueAsMetadata(LLVMConstInt(i32, 0, 0)));
}

static fz_status run_pipeline(LLVMModuleRef m, LLVMTargetMachineRef tm,
                              int opt_level, fz_error *err) {
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", opt_level);
  LLVMPassBuilderOptionsRef options = LLVMCreatePassBuilderOptions();
  /* As clang sets them for -O2 and up. */
  LLVMPassBuilderOptionsSetLoopVectorization(options, opt_level >= 2);
  LLVMPassBuilderOptionsSetSLPVectorization(options, opt_level >= 2);

  fz_nvptx_diag diag;
  fz_nvptx_diag_begin(&diag, LLVMGetModuleContext(m));
  LLVMErrorRef error = LLVMRunPasses(m, pipeline, tm, options);
  fz_nvptx_diag_end(&diag);
  LLVMDisposePassBuilderOptions(options);

  if (error) {
    char *message = LLVMGetErrorMessage(error);
    fz_status st = fz_error_set(err, FZ_ERR_LLVM, "%s failed: %s", pipeline,
                                message ? message : "(no message)");
    LLVMDisposeErrorMessage(message);
    return st;
  }
  if (diag.num_errors)
    return fz_error_set(err, FZ_ERR_LLVM, "%s failed: %s", pipeline,
                        diag.message);
  return FZ_OK;
}

fz_status fz_nvptx_optimize(LLVMModuleRef m, const fz_nvptx_options *opts,
                            fz_error *err) {
  fz_status st = check_options(opts, err);
  if (st != FZ_OK)
    return st;
  LLVMTargetMachineRef tm;
  st = fz_nvptx_target_machine(opts->sm, opts->opt_level, &tm, err);
  if (st != FZ_OK)
    return st;

  st = verify(m, "before optimisation", err);
  if (st == FZ_OK)
    st = fz_nvptx_set_target(m, opts->sm, err);
  if (st == FZ_OK && fz_libdevice_needed(m)) {
    if (opts->link_libdevice)
      st = fz_libdevice_link(m, opts->libdevice_path, err);
    else
      st = fz_error_set(err, FZ_ERR_ARGUMENT,
                        "the module calls %s but libdevice linking is off",
                        libdevice_call(m));
  }
  if (st == FZ_OK) {
    fz_nvvm_reflect(m, opts->sm);
    set_reflect_ftz(m);
    st = run_pipeline(m, tm, opts->opt_level, err);
  }
  if (st == FZ_OK)
    st = verify(m, "after optimisation", err);
  LLVMDisposeTargetMachine(tm);
  return st;
}

fz_status fz_nvptx_emit(LLVMModuleRef m, const fz_nvptx_options *opts,
                        char **ptx, fz_error *err) {
  *ptx = NULL;
  fz_status st = check_options(opts, err);
  if (st != FZ_OK)
    return st;
  /* thread-block clusters exist from sm_90 on; LLVM would abort on them */
  if (opts->sm < 90 &&
      LLVMGetNamedFunction(m, "llvm.nvvm.barrier.cluster.arrive"))
    return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                        "the kernel uses thread-block clusters, which need "
                        "sm_90, not sm_%d",
                        opts->sm);
  LLVMTargetMachineRef tm;
  st = fz_nvptx_target_machine(opts->sm, opts->opt_level, &tm, err);
  if (st != FZ_OK)
    return st;
  st = fz_nvptx_set_target(m, opts->sm, err);
  if (st != FZ_OK) {
    LLVMDisposeTargetMachine(tm);
    return st;
  }
  fz_nvptx_legalize(m, opts->sm);

  fz_nvptx_diag diag;
  fz_nvptx_diag_begin(&diag, LLVMGetModuleContext(m));
  char *message = NULL;
  LLVMMemoryBufferRef buffer = NULL;
  bool failed = LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile,
                                                    &message, &buffer);
  fz_nvptx_diag_end(&diag);
  LLVMDisposeTargetMachine(tm);

  if (failed || diag.num_errors) {
    st = fz_error_set(err, FZ_ERR_LLVM, "PTX emission for sm_%d failed: %s",
                      opts->sm,
                      diag.num_errors ? diag.message
                      : message       ? message
                                      : "(no message)");
  } else {
    size_t size = LLVMGetBufferSize(buffer);
    char *text = malloc(size + 1);
    if (!text) {
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    } else {
      memcpy(text, LLVMGetBufferStart(buffer), size);
      text[size] = '\0';
      *ptx = text;
    }
  }
  LLVMDisposeMessage(message);
  if (buffer)
    LLVMDisposeMemoryBuffer(buffer);
  return st;
}

fz_status fz_nvptx_compile(LLVMModuleRef m, const fz_nvptx_options *opts,
                           char **ptx, fz_error *err) {
  *ptx = NULL;
  fz_status st = fz_nvptx_optimize(m, opts, err);
  if (st != FZ_OK)
    return st;
  return fz_nvptx_emit(m, opts, ptx, err);
}

char *fz_nvptx_module_text(LLVMModuleRef m) {
  char *text = LLVMPrintModuleToString(m);
  char *copy = text ? strdup(text) : NULL;
  LLVMDisposeMessage(text);
  return copy;
}
