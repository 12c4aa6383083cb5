/* codegen.h - the code generation stage: a kernel plan in, PTX text out.
 *
 * It drives the stages below it for one kernel: lib/lower builds the LLVM
 * module from the plan, lib/nvptx links libdevice, runs the O3 pipeline and
 * emits PTX; in between sits the on-disk cache of compiled PTX (cache.h,
 * docs/cache.md), keyed by the lowered IR and everything else the PTX
 * depends on, so that a kernel compiled once is not optimised again by the
 * next process. It knows nothing of devices
 * or launches: the runtime's executor calls it for each kernel it needs,
 * and fuse-opt calls it to print LLVM IR and PTX, with the same options
 * (fz_codegen_options), so that what fuse-opt prints is what runs.
 *
 * Layering: lib/codegen uses lib/ir, lib/sched, lib/lower and lib/nvptx,
 * and is used by lib/runtime and the tools; it never includes lib/runtime.
 */
#ifndef FZ_CODEGEN_CODEGEN_H
#define FZ_CODEGEN_CODEGEN_H

#include "sched/plan.h"

typedef struct fz_compile_options {
  int sm;          /* target architecture, e.g. 90 */
  int opt_level;   /* 0..3 */
  bool use_cache;  /* consult and fill the disk cache */
  bool want_llvm;  /* also return the optimised LLVM IR text */
  bool want_unoptimized_llvm; /* return the IR as lowered, before O3 */
  /* FZ_DUMP (dump.h): the unit and kernel index this kernel's dumps are
   * filed under; NULL: a unit of its own, named after the plan's fusion,
   * kernel 0. */
  const struct fz_dump_unit *dump_unit;
  int dump_kernel;
} fz_compile_options;

/* The options the executor compiles with for a device of compute
 * capability device_sm (major*10 + minor): PTX for sm_90 at most (later
 * devices run it through the driver's JIT), O3, the disk cache on. */
fz_compile_options fz_codegen_options(int device_sm);

typedef struct fz_kernel_code {
  char *ptx;       /* malloc'd */
  char *llvm;      /* malloc'd, when asked for */
  bool from_cache; /* the PTX came from the disk cache */
} fz_kernel_code;

/* Lowers, optimises and emits one plan's kernel (or takes its PTX from the
 * disk cache, unless FZ_DUMP asks for LLVM IR). Dumps what FZ_DUMP asks
 * for of the plan, the LLVM IR and the PTX. Thread-safe: each call has its
 * own LLVM context. */
fz_status fz_compile_plan(const fz_plan *plan, const fz_compile_options *opts,
                          fz_kernel_code *out, fz_error *err);
void fz_kernel_code_free(fz_kernel_code *code);

#endif
