/* nvptx.h - the NVPTX stage: an LLVM module (built by lib/lower) in, PTX out.
 *
 * The stage runs in two steps so that the optimised IR can be printed
 * (fuse-opt --emit=llvm, through lib/codegen) and each step timed
 * (bench/latency.c):
 *   fz_nvptx_optimize  target triple and data layout, libdevice (only when the
 *                      module calls __nv_*), __nvvm_reflect, LLVM's
 *                      default<On> pipeline, verification before and after;
 *   fz_nvptx_emit      PTX from the optimised module (after rewriting what
 *                      the back end cannot select for older sms).
 * fz_nvptx_compile does both. Both work on the caller's module in place and
 * take ownership of nothing: the context and module stay the caller's. They
 * are thread-safe for modules in distinct LLVM contexts.
 *
 * It pulls in LLVM's C API, so only lib/nvptx, lib/codegen (which chains
 * lowering and this stage), bench/latency.c, the LLVM unit tests and the
 * compile fuzzer include it; lib/lower builds modules without knowing
 * this stage.
 */
#ifndef FZ_NVPTX_NVPTX_H
#define FZ_NVPTX_NVPTX_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "fz/fz.h"

/* ---- target.c ----------------------------------------------------------- */

typedef struct fz_nvptx_options {
  int sm;              /* 70 72 75 80 86 87 89 90: see fz_nvptx_pick_sm */
  int opt_level;       /* 0..3: the IR pipeline default<On> and codegen */
  bool link_libdevice; /* link libdevice if the module calls any __nv_* */
  const char *libdevice_path; /* NULL: fz_libdevice_find */
} fz_nvptx_options;

/* Registers the NVPTX target with LLVM. Thread-safe and idempotent; every
 * entry point below calls it, so callers need not. */
void fz_nvptx_init(void);

/* The architecture to compile for on a device of compute capability
 * device_sm (major*10 + minor): the highest one LLVM 19 can target that
 * is <= device_sm (PTX runs on later devices through the driver's JIT), or
 * 0 when the device is older than sm_70 (fz needs shfl.sync and
 * independent thread scheduling). */
int fz_nvptx_pick_sm(int device_sm);

/* Sets the triple nvptx64-nvidia-cuda and the data layout of the NVPTX
 * target machine on m. lib/lower calls it right after creating a module
 * so that type sizes it asks for match the target; optimize calls it again
 * (harmless). FZ_ERR_UNSUPPORTED for an sm fz cannot target. */
fz_status fz_nvptx_set_target(LLVMModuleRef m, int sm, fz_error *err);

/* A target machine for sm_<sm> at opt_level; the caller disposes it
 * (LLVMDisposeTargetMachine). The PTX ISA version is LLVM's default for the
 * architecture (7.0 for sm_80, 7.8 for sm_90): the oldest that has every
 * instruction of that sm, so the PTX loads on the oldest drivers that
 * support the device. */
fz_status fz_nvptx_target_machine(int sm, int opt_level,
                                  LLVMTargetMachineRef *out, fz_error *err);

/* ---- diag.c ------------------------------------------------------------- */

/* While installed, collects the context's error diagnostics (the only way
 * LLVM's C API reports why linking or bitcode reading failed) and keeps
 * warnings off stderr. The caller's handler is restored by end. */
typedef struct fz_nvptx_diag {
  LLVMContextRef context;
  LLVMDiagnosticHandler saved_handler;
  void *saved_context;
  int num_errors;
  char message[768]; /* first error(s), "; "-separated, truncated */
} fz_nvptx_diag;

void fz_nvptx_diag_begin(fz_nvptx_diag *diag, LLVMContextRef context);
void fz_nvptx_diag_end(fz_nvptx_diag *diag);

/* ---- libdevice.c -------------------------------------------------------- */

/* Finds libdevice.10.bc: $FZ_LIBDEVICE (a file, or a folder holding it; when
 * set it is the only place looked at, so a wrong setting is reported rather
 * than silently bypassed), then $CUDA_HOME/nvvm/libdevice/,
 * $CUDA_PATH/nvvm/libdevice/, /usr/local/cuda/nvvm/libdevice/,
 * /usr/lib/nvidia-cuda-toolkit/libdevice/. FZ_ERR_IO with a message listing
 * every place it looked. */
fz_status fz_libdevice_find(char *path, size_t size, fz_error *err);

/* True when m calls or declares any __nv_* function. */
bool fz_libdevice_needed(LLVMModuleRef m);

/* Links the libdevice functions m needs (and only those) from the bitcode
 * at path (NULL: fz_libdevice_find) into m and makes them internal, so the
 * optimiser inlines and then drops them. FZ_ERR_IO when the file cannot be
 * read, FZ_ERR_LLVM when it cannot be parsed or linked. */
fz_status fz_libdevice_link(LLVMModuleRef m, const char *path, fz_error *err);

/* Replaces every __nvvm_reflect("...") call in m by its constant, as nvcc
 * does by default: __CUDA_FTZ 0 (denormals kept), __CUDA_PREC_SQRT 1
 * (IEEE sqrt), __CUDA_ARCH sm*10. LLVM 19's NVVMReflect pass knows only
 * the first and last, and would give __nv_sqrtf the approximate sqrt. */
void fz_nvvm_reflect(LLVMModuleRef m, int sm);

/* ---- legalize.c --------------------------------------------------------- */

/* Rewrites what LLVM's NVPTX back end cannot select for sm_<sm> into
 * equivalent IR (bf16 llvm.maximum/minimum below sm_80 go through f32).
 * A no-op from sm_80 on. fz_nvptx_emit calls it. */
void fz_nvptx_legalize(LLVMModuleRef m, int sm);

/* ---- compile.c ---------------------------------------------------------- */

/* Verifies m, sets its target, links libdevice when asked and needed,
 * resolves __nvvm_reflect, sets the module flag nvvm-reflect-ftz = 0, runs
 * default<O{opt_level}> with the target machine and verifies again.
 * FZ_ERR_LLVM with LLVM's message; FZ_ERR_ARGUMENT when m calls __nv_*
 * without link_libdevice (the PTX would not load). */
fz_status fz_nvptx_optimize(LLVMModuleRef m, const fz_nvptx_options *opts,
                            fz_error *err);

/* PTX for sm_<sm> from an optimised module. Codegen rewrites parts of the
 * IR, so print the module (fz_nvptx_module_text) before calling this.
 * *ptx is malloc'd and NUL-terminated; the caller frees it. */
fz_status fz_nvptx_emit(LLVMModuleRef m, const fz_nvptx_options *opts,
                        char **ptx, fz_error *err);

/* fz_nvptx_optimize then fz_nvptx_emit. */
fz_status fz_nvptx_compile(LLVMModuleRef m, const fz_nvptx_options *opts,
                           char **ptx, fz_error *err);

/* Textual LLVM IR of m (malloc'd; NULL when out of memory), for
 * fuse-opt --emit=llvm. */
char *fz_nvptx_module_text(LLVMModuleRef m);

#endif
