/* lower.h - lib/lower: a kernel plan in, an LLVM module with one kernel out.
 *
 * The module targets nvptx64-nvidia-cuda. Its kernel takes the parameters
 * of plan.h in that order (fz_plan_num_params / fz_plan_scalar_params are
 * the launcher's side) and is annotated for NVPTX (`.entry`, `.maxntid`).
 * Transcendentals are calls to libdevice's __nv_* functions, declared but
 * not defined: lib/nvptx links libdevice before optimising.
 *
 * Only lib/lower, lib/nvptx, lib/runtime and tools include this header (it
 * pulls in LLVM's C API).
 */
#ifndef FZ_LOWER_LOWER_H
#define FZ_LOWER_LOWER_H

#include <llvm-c/Core.h>

#include "sched/plan.h"

/* Emit the plan's kernel into a new module owned by ctx (the caller
 * disposes it, or the context). *uses_libdevice (may be NULL) tells whether
 * any __nv_ function is called. On failure *out is NULL and err says why:
 * FZ_ERR_UNSUPPORTED for a plan kind or op lowering does not handle,
 * FZ_ERR_INTERNAL for a malformed plan or a module LLVM rejects. */
fz_status fz_lower_plan(const fz_plan *plan, LLVMContextRef ctx,
                        LLVMModuleRef *out, bool *uses_libdevice,
                        fz_error *err);

#endif
