/* persistent_trace.c - the phase marks of a traced inner-outer kernel
 * (plan.h: trace_phases, fz_trace_mark).
 *
 * Where a launch's fixed cost goes (the first row's wait, the column
 * partials, the grid barrier, the final pass) is a question of when, and
 * a profiler sums over the whole launch. So thread 0 of each block stores
 * two clocks when the block reaches each phase: the global timer, one
 * clock for every SM in ns, so that blocks line up against each other,
 * and the SM's cycle counter, finer, for the spans within a block. A
 * block barrier comes before each mark, so that it is the block's: every
 * warp got there, and no memory operation of the phase was moved past it
 * (a barrier a mark: traced kernels are for measurement only). The
 * array is a module global, not a parameter, so that a traced kernel has
 * the launcher's usual signature; the runtime reads it back after the
 * launch (fz_executor_last_trace). Blocks past FZ_TRACE_BLOCKS record
 * nothing.
 */
#include "persistent.h"

static LLVMValueRef trace_array(fz_emit *e) {
  LLVMValueRef g = LLVMGetNamedGlobal(e->mod, "fz_trace");
  if (g)
    return g;
  LLVMTypeRef t = LLVMArrayType2(
      e->t_i64, (uint64_t)FZ_TRACE_BLOCKS * FZ_TRACE_MARKS * 2);
  g = LLVMAddGlobalInAddressSpace(e->mod, t, "fz_trace", 1);
  LLVMSetInitializer(g, LLVMConstNull(t));
  LLVMSetAlignment(g, 16);
  return g;
}

bool fz_pers_trace(pers *s, fz_trace_mark mark, LLVMValueRef when) {
  if (!s->p->trace_phases)
    return true;
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  fz_if at_mark;
  if (when)
    fz_if_begin(e, &at_mark, when, "trace.when");
  /* the block's mark, not thread 0's: every warp got here, and neither
   * LLVM nor ptxas moves the phase's memory operations past a barrier */
  fz_emit_barrier(e);
  LLVMValueRef block = fz_emit_sreg(e, "ctaid.x");
  LLVMValueRef go = LLVMBuildAnd(
      b, LLVMBuildICmp(b, LLVMIntEQ, s->bs.tid, fz_emit_i32(e, 0), ""),
      LLVMBuildICmp(b, LLVMIntULT, block, fz_emit_i32(e, FZ_TRACE_BLOCKS), ""),
      "trace.go");
  fz_if f;
  fz_if_begin(e, &f, go, fz_trace_mark_name(mark));
  LLVMValueRef slot = LLVMBuildMul(b, fz_emit_zext_i64(e, block),
                                   fz_emit_i64(e, FZ_TRACE_MARKS), "");
  LLVMValueRef g = trace_array(e);
  LLVMValueRef at[2];
  for (int w = 0; w < 2; w++) {
    LLVMValueRef m = LLVMBuildAdd(b, slot, fz_emit_i64(e, mark), "");
    LLVMValueRef i = LLVMBuildAdd(b, LLVMBuildMul(b, m, fz_emit_i64(e, 2), ""),
                                  fz_emit_i64(e, w), "");
    at[w] = LLVMBuildInBoundsGEP2(b, e->t_i64, g, &i, 1, "");
  }
  LLVMValueRef clocks[2] = {fz_emit_sreg(e, "globaltimer"),
                            fz_emit_sreg(e, "clock64")};
  for (int w = 0; w < 2; w++)
    LLVMSetVolatile(LLVMBuildStore(b, clocks[w], at[w]), 1);
  /* a block that walks no row must not show a stale first row */
  if (mark == FZ_TRACE_START) {
    LLVMValueRef i = LLVMBuildMul(
        b, LLVMBuildAdd(b, slot, fz_emit_i64(e, FZ_TRACE_FIRST_ROW), ""),
        fz_emit_i64(e, 2), "");
    for (int w = 0; w < 2; w++) {
      LLVMValueRef j = LLVMBuildAdd(b, i, fz_emit_i64(e, w), "");
      LLVMSetVolatile(
          LLVMBuildStore(b, fz_emit_i64(e, 0),
                         LLVMBuildInBoundsGEP2(b, e->t_i64, g, &j, 1, "")),
          1);
    }
  }
  fz_if_end(e, &f);
  if (when)
    fz_if_end(e, &at_mark);
  return !e->failed;
}
