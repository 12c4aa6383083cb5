/* lower.c - the stage's driver, the one file that knows every skeleton:
 *
 *   verify the plan (fz_plan_verify: lowering never hands a malformed one
 *   to LLVM) and check it is within lowering's limits;
 *   set up the emitter and the module for NVPTX;
 *   declare the kernel and read its parameters (kernel.c);
 *   hand the body to the plan kind's skeleton (pointwise.c, reduction.c,
 *   persistent.c, transpose.c);
 *   verify the module.
 */
#include "lower/lower.h"
#include "emit.h"
#include "skeleton.h"

#include <llvm-c/Analysis.h>
#include <stdlib.h>

/* NVPTX's layout for 64-bit pointers (as the target machine reports it). */
static const char *NVPTX_TRIPLE = "nvptx64-nvidia-cuda";
static const char *NVPTX_DATALAYOUT =
    "e-i64:64-i128:128-v16:16-v32:32-n16:32:64";

/* ---- what lowering can emit ---------------------------------------------- */

/* A plan that verifies (lib/sched/plan_verify.c) within lowering's own
 * limits: lanes a group unrolls here, and the skeletons' own (skeleton.h).
 * Past this point lowering trusts the plan. */
static fz_status check_plan(const fz_plan *p, fz_error *err) {
  fz_status st = fz_plan_verify(p, err);
  if (st)
    return st;
  if (p->vector > FZ_LOWER_MAX_LANES)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: %d lanes per group, at most %d", p->vector,
                        FZ_LOWER_MAX_LANES);
  if (p->kind == FZ_PLAN_TRANSPOSE)
    return fz_check_transpose(p, err);
  return fz_plan_is_persistent(p) ? fz_check_persistent(p, err) : FZ_OK;
}

/* ---- entry point --------------------------------------------------------- */

static fz_status verify(LLVMModuleRef m, fz_error *err) {
  char *msg = NULL;
  LLVMBool broken = LLVMVerifyModule(m, LLVMReturnStatusAction, &msg);
  fz_status st = FZ_OK;
  if (broken)
    st = fz_error_set(err, FZ_ERR_INTERNAL,
                      "lower: the kernel does not verify: %s",
                      msg ? msg : "(no message)");
  if (msg)
    LLVMDisposeMessage(msg);
  return st;
}

static bool emit_body(fz_kernel *k) {
  fz_emit *e = &k->e;
  LLVMBasicBlockRef entry =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "entry");
  LLVMPositionBuilderAtEnd(e->b, entry);
  fz_kernel_read_params(k);
  switch (e->plan->kind) {
  case FZ_PLAN_POINTWISE:
    return fz_emit_pointwise(k);
  case FZ_PLAN_INNER_REDUCTION:
    return fz_emit_inner_reduction(k);
  case FZ_PLAN_OUTER_REDUCTION:
    return fz_emit_outer_reduction(k);
  case FZ_PLAN_INNER_PERSISTENT:
  case FZ_PLAN_INNER_OUTER_PERSISTENT:
  case FZ_PLAN_OUTER_PERSISTENT:
    return e->plan->multipass ? fz_emit_multipass(k) : fz_emit_persistent(k);
  case FZ_PLAN_TRANSPOSE:
    return fz_emit_transpose(k);
  default: /* fz_plan_verify refused it */
    fz_emit_fail(e, FZ_ERR_UNSUPPORTED, "plan kind %d", (int)e->plan->kind);
    return false;
  }
}

fz_status fz_lower_plan(const fz_plan *plan, LLVMContextRef ctx,
                        LLVMModuleRef *out, bool *uses_libdevice,
                        fz_error *err) {
  if (out)
    *out = NULL;
  if (uses_libdevice)
    *uses_libdevice = false;
  if (!out || !ctx)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "lower: no context or output");
  fz_status st = check_plan(plan, err);
  if (st)
    return st;

  fz_kernel k = {.e = {.plan = plan, .ctx = ctx, .err = err}};
  fz_emit *e = &k.e;
  fz_emit_init_types(e);
  e->mod = LLVMModuleCreateWithNameInContext(plan->kernel_name, ctx);
  LLVMSetTarget(e->mod, NVPTX_TRIPLE);
  LLVMSetDataLayout(e->mod, NVPTX_DATALAYOUT);
  e->b = LLVMCreateBuilderInContext(ctx);
  k.access = calloc((size_t)plan->num_accesses, sizeof *k.access);
  k.symbol = calloc((size_t)plan->num_symbols + 1, sizeof *k.symbol);
  bool ok = k.access != NULL && k.symbol != NULL;
  if (!ok)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  ok = ok && fz_kernel_declare(&k) && emit_body(&k);
  free(k.access);
  free(k.symbol);
  LLVMDisposeBuilder(e->b);
  if (!ok || e->failed) {
    if (!e->failed)
      fz_error_set(err, FZ_ERR_INTERNAL, "lower: emission failed");
    LLVMDisposeModule(e->mod);
    return e->failed ? e->status : FZ_ERR_INTERNAL;
  }
  st = verify(e->mod, err);
  if (st) {
    LLVMDisposeModule(e->mod);
    return st;
  }
  *out = e->mod;
  if (uses_libdevice)
    *uses_libdevice = e->uses_libdevice;
  return FZ_OK;
}
