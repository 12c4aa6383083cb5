/* welford.c - var and mean as Welford states.
 *
 * A var or mean REDUCE node accumulates a state (mean, m2, count), each an
 * accumulator of the node's accumulator dtype (f32 for f16/bf16/f32, f64),
 * held as one LLVM struct value so that combine.c moves it like any
 * partial: shuffles go field by field (fz_emit_map_fields), shared memory
 * and the split workspace hold it as a struct.
 *
 *   update with x:   n' = n + 1, d = x - mean, mean' = mean + d / n',
 *                    m2' = m2 + d * (x - mean')
 *   combine a and b: n = na + nb, d = mb - ma, w = nb / n (0 when n is 0),
 *                    mean = ma + d * w, m2 = m2a + m2b + d * d * na * w
 *                    (Chan et al.), so an empty state is an identity;
 *   results:         mean (NaN for no points), and
 *                    var = m2 / max(0, n - correction) (inf when the
 *                    correction reaches the count, NaN for a constant
 *                    input, as in PyTorch).
 *
 * The count is an accumulator too, not an integer: it is exact while a
 * thread counts fewer than 2^24 points in f32, and beyond that its
 * rounding is that of the mean's own. Counting at run time serves every
 * extent, symbolic or not, and split or tail layout alike.
 *
 * One state serves every var and mean of one operand in a reduction set
 * (fz_reduce_entry_of): a var_mean reads its operand and updates once.
 * The fz_reduce_* calls below (and fz_reduce_accumulate in combine.c)
 * are the hooks the reduction and persistent skeletons go through; for
 * the other reductions they are what those skeletons did before (the
 * accumulator's register type and size, convert).
 */
#include "emit.h"

#include <math.h>

enum { MEAN, M2, COUNT };

LLVMTypeRef fz_welford_state_type(fz_emit *e, fz_dtype acc) {
  LLVMTypeRef t = fz_emit_reg_type(e, acc);
  LLVMTypeRef fields[3] = {t, t, t};
  return LLVMStructTypeInContext(e->ctx, fields, 3, 0);
}

static LLVMValueRef field(fz_emit *e, LLVMValueRef s, unsigned i) {
  return LLVMBuildExtractValue(e->b, s, i, "");
}

static LLVMValueRef state(fz_emit *e, fz_dtype acc, LLVMValueRef mean,
                          LLVMValueRef m2, LLVMValueRef n) {
  LLVMValueRef s = LLVMGetUndef(fz_welford_state_type(e, acc));
  s = LLVMBuildInsertValue(e->b, s, mean, MEAN, "");
  s = LLVMBuildInsertValue(e->b, s, m2, M2, "");
  return LLVMBuildInsertValue(e->b, s, n, COUNT, "welford");
}

LLVMValueRef fz_welford_identity(fz_emit *e, fz_dtype acc) {
  LLVMValueRef zero = LLVMConstReal(fz_emit_reg_type(e, acc), 0.0);
  LLVMValueRef f[3] = {zero, zero, zero};
  return LLVMConstStructInContext(e->ctx, f, 3, 0);
}

LLVMValueRef fz_welford_combine(fz_emit *e, fz_dtype acc, LLVMValueRef a,
                                LLVMValueRef b) {
  LLVMBuilderRef bld = e->b;
  LLVMValueRef zero = LLVMConstReal(fz_emit_reg_type(e, acc), 0.0);
  LLVMValueRef na = field(e, a, COUNT), nb = field(e, b, COUNT);
  LLVMValueRef ma = field(e, a, MEAN), mb = field(e, b, MEAN);
  LLVMValueRef n = LLVMBuildFAdd(bld, na, nb, "n");
  LLVMValueRef empty = LLVMBuildFCmp(bld, LLVMRealOEQ, n, zero, "");
  LLVMValueRef w = LLVMBuildSelect(
      bld, empty, zero, LLVMBuildFDiv(bld, nb, n, ""), "w");
  LLVMValueRef d = LLVMBuildFSub(bld, mb, ma, "d");
  LLVMValueRef mean =
      LLVMBuildFAdd(bld, ma, LLVMBuildFMul(bld, d, w, ""), "mean");
  LLVMValueRef m2 = LLVMBuildFAdd(bld, field(e, a, M2), field(e, b, M2), "");
  LLVMValueRef cross = LLVMBuildFMul(
      bld, LLVMBuildFMul(bld, d, d, ""), LLVMBuildFMul(bld, na, w, ""), "");
  return state(e, acc, mean, LLVMBuildFAdd(bld, m2, cross, "m2"), n);
}

LLVMValueRef fz_welford_update(fz_emit *e, fz_dtype acc, LLVMValueRef s,
                               LLVMValueRef x) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef one = LLVMConstReal(fz_emit_reg_type(e, acc), 1.0);
  LLVMValueRef n = LLVMBuildFAdd(b, field(e, s, COUNT), one, "n");
  LLVMValueRef mean = field(e, s, MEAN);
  LLVMValueRef d = LLVMBuildFSub(b, x, mean, "d");
  LLVMValueRef mean1 =
      LLVMBuildFAdd(b, mean, LLVMBuildFDiv(b, d, n, ""), "mean");
  LLVMValueRef m2 =
      LLVMBuildFAdd(b, field(e, s, M2),
                    LLVMBuildFMul(b, d, LLVMBuildFSub(b, x, mean1, ""), ""),
                    "m2");
  return state(e, acc, mean1, m2, n);
}

int fz_reduce_entry_of(const fz_plan *p, const fz_reduce_set *rs, int node) {
  for (int r = 0; r < rs->count; r++)
    if (rs->node[r] == node)
      return r;
  const fz_plan_node *n = &p->nodes[node];
  if (!fz_reduce_is_welford(n->code))
    return -1;
  for (int r = 0; r < rs->count; r++) {
    const fz_plan_node *o = &p->nodes[rs->node[r]];
    if (fz_reduce_is_welford(o->code) && o->operands[0] == n->operands[0] &&
        o->space == n->space && o->phase == n->phase &&
        fz_reduce_acc_dtype(o->dtype) == fz_reduce_acc_dtype(n->dtype))
      return r;
  }
  return -1;
}

bool fz_reduce_shares_state(const fz_plan *p, const fz_reduce_set *rs,
                            int node) {
  return fz_reduce_is_welford(p->nodes[node].code) &&
         fz_reduce_entry_of(p, rs, node) >= 0;
}

/* var or mean of a final state, in the accumulator dtype. */
static LLVMValueRef welford_result(fz_emit *e, const fz_plan_node *n,
                                   fz_dtype acc, LLVMValueRef s) {
  LLVMBuilderRef b = e->b;
  LLVMTypeRef t = fz_emit_reg_type(e, acc);
  LLVMValueRef count = field(e, s, COUNT);
  if (n->code == FZ_OP_MEAN) {
    LLVMValueRef none =
        LLVMBuildFCmp(b, LLVMRealOEQ, count, LLVMConstReal(t, 0.0), "");
    return LLVMBuildSelect(b, none, LLVMConstReal(t, NAN), field(e, s, MEAN),
                           "mean");
  }
  LLVMValueRef dof =
      LLVMBuildFSub(b, count, LLVMConstReal(t, n->correction), "");
  dof = fz_emit_intrinsic2(e, "llvm.maxnum", dof, LLVMConstReal(t, 0.0));
  return dof ? LLVMBuildFDiv(b, field(e, s, M2), dof, "var") : NULL;
}

LLVMValueRef fz_reduce_value(fz_emit *e, const fz_plan_node *n, fz_dtype acc,
                             LLVMValueRef partial) {
  if (fz_plan_node_is_arg(n))
    return fz_arg_position(e, partial);
  if (fz_reduce_is_welford(n->code))
    partial = welford_result(e, n, acc, partial);
  return partial ? fz_emit_convert(e, partial, acc, n->dtype) : NULL;
}
