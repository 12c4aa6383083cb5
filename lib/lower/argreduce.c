/* argreduce.c - the (value, position) pair of an arg-reduction.
 *
 * An argmax or argmin partial is an LLVM struct {value, i64 position}:
 * the value in the register form of its accumulator dtype (f32 for
 * f32/f16/bf16, f64, i64 for integers and bool), the position as the
 * plan's IOTA node gives it (lib/sched/argreduce.c). Every place a
 * reduction combines (a thread's chain, warp shuffles, which move the
 * pair field by field, shared memory, the split workspace, persistent
 * rows) takes the pair through combine.c, which hands these nodes here.
 *
 * Combining takes the winner of a total order on pairs, so the result
 * does not depend on the combining tree, and equals the interpreter's
 * (interp_argreduce.c): a NaN beats every number, a greater value (a
 * smaller one for argmin) beats a lesser one, and between equal values or
 * two NaNs the smaller position wins. The identity is (-inf, INT64_MAX)
 * for argmax ((+inf, ...) for argmin; INT64_MIN / INT64_MAX for integer
 * values): any element beats it, -inf itself through its position.
 */
#include "emit.h"

#include <math.h>
#include <stdint.h>

LLVMTypeRef fz_arg_state_type(fz_emit *e, fz_dtype acc) {
  LLVMTypeRef fields[2] = {fz_emit_reg_type(e, acc), e->t_i64};
  return LLVMStructTypeInContext(e->ctx, fields, 2, 0);
}

static LLVMValueRef pair(fz_emit *e, fz_dtype acc, LLVMValueRef value,
                         LLVMValueRef position) {
  LLVMValueRef s = LLVMGetUndef(fz_arg_state_type(e, acc));
  s = LLVMBuildInsertValue(e->b, s, value, 0, "");
  return LLVMBuildInsertValue(e->b, s, position, 1, "");
}

LLVMValueRef fz_arg_identity(fz_emit *e, fz_opcode code, fz_dtype acc) {
  bool max = code == FZ_OP_ARGMAX;
  LLVMTypeRef t = fz_emit_reg_type(e, acc);
  LLVMValueRef v =
      fz_dtype_is_float(acc)
          ? LLVMConstReal(t, max ? -INFINITY : INFINITY)
          : LLVMConstInt(t, (unsigned long long)(max ? INT64_MIN : INT64_MAX),
                         1);
  LLVMValueRef fields[2] = {
      v, LLVMConstInt(e->t_i64, (unsigned long long)INT64_MAX, 1)};
  return LLVMConstNamedStruct(fz_arg_state_type(e, acc), fields, 2);
}

LLVMValueRef fz_arg_input(fz_emit *e, fz_dtype acc, LLVMValueRef x,
                          fz_dtype from, LLVMValueRef position) {
  LLVMValueRef v = fz_emit_convert(e, x, from, acc);
  if (!v || !position)
    return v ? fz_emit_fail(e, FZ_ERR_INTERNAL,
                            "an arg-reduction without its position")
             : NULL;
  return pair(e, acc, v, position);
}

LLVMValueRef fz_arg_position(fz_emit *e, LLVMValueRef state) {
  return LLVMBuildExtractValue(e->b, state, 1, "position");
}

LLVMValueRef fz_arg_combine(fz_emit *e, fz_opcode code, fz_dtype acc,
                            LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef bd = e->b;
  bool max = code == FZ_OP_ARGMAX;
  LLVMValueRef av = LLVMBuildExtractValue(bd, a, 0, ""),
               ai = LLVMBuildExtractValue(bd, a, 1, ""),
               bv = LLVMBuildExtractValue(bd, b, 0, ""),
               bi = LLVMBuildExtractValue(bd, b, 1, "");
  LLVMValueRef earlier = LLVMBuildICmp(bd, LLVMIntSLT, bi, ai, "");
  LLVMValueRef take;
  if (fz_dtype_is_float(acc)) {
    LLVMValueRef a_nan = LLVMBuildFCmp(bd, LLVMRealUNO, av, av, "");
    LLVMValueRef b_nan = LLVMBuildFCmp(bd, LLVMRealUNO, bv, bv, "");
    LLVMValueRef beyond =
        LLVMBuildFCmp(bd, max ? LLVMRealOGT : LLVMRealOLT, bv, av, "");
    LLVMValueRef tie = LLVMBuildAnd(
        bd, LLVMBuildFCmp(bd, LLVMRealOEQ, bv, av, ""), earlier, "");
    LLVMValueRef over_number =
        LLVMBuildOr(bd, b_nan, LLVMBuildOr(bd, beyond, tie, ""), "");
    LLVMValueRef over_nan = LLVMBuildAnd(bd, b_nan, earlier, "");
    take = LLVMBuildSelect(bd, a_nan, over_nan, over_number, "");
  } else {
    LLVMValueRef beyond =
        LLVMBuildICmp(bd, max ? LLVMIntSGT : LLVMIntSLT, bv, av, "");
    LLVMValueRef tie = LLVMBuildAnd(
        bd, LLVMBuildICmp(bd, LLVMIntEQ, bv, av, ""), earlier, "");
    take = LLVMBuildOr(bd, beyond, tie, "");
  }
  return pair(e, acc, LLVMBuildSelect(bd, take, bv, av, ""),
              LLVMBuildSelect(bd, take, bi, ai, ""));
}
