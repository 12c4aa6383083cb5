/* compute.c - one plan node -> LLVM values: every unary, binary, ternary and
 * cast op for every dtype class, literals and iota.
 *
 * An op is lowered the way the interpreter defines it (lib/ir/interp_ops.c):
 * its operands are converted to the op's compute dtype, the op computes as
 * if in f64 (int64 for integers), and the result is rounded once to the
 * node's dtype. The compute dtype is PyTorch's "opmath" of the result
 * dtype, or of the operands' promotion for comparisons: f16 and bf16
 * compute in f32, so f16[N] * 3.3 multiplies by 3.3 rounded to f32, not to
 * f16. "As if in f64" means the cheapest code with the interpreter's
 * answer:
 *  - add/sub/mul/div/sqrt in f32 when every operand is an f32 value, or,
 *    for an f16/bf16 result, an f16/bf16 value: f32-then-round equals
 *    f64-then-round for these ops when the wider format has 2p+2 bits. An
 *    f16/bf16 result whose operands are wider (an i32, a literal like 3.3)
 *    would round twice, so those ops run in f64;
 *  - fma and rsqrt of f32/f16/bf16 in f64, because a single f32 fma or an
 *    approximate rsqrt would round differently from f64-then-round;
 *  - transcendentals from libdevice in the register precision (float for
 *    f32/f16/bf16): within a few ulp of the interpreter, not bit-exact;
 *  - integers in their own width (wrapping agrees with int64-then-wrap),
 *    bool arithmetic in i64 then != 0, exactly as the interpreter does it;
 *  - max/min/relu/clamp with llvm.maximum/minimum (NaN-propagating);
 *  - not/and/or/xor and where's condition look only at != 0, as do
 *    isnan, isinf, isfinite and signbit at the value itself;
 *  - shifts select their result for counts outside the width (PyTorch's
 *    CUDA rule), so LLVM never sees a poison shift.
 * The op helpers return the value and its "raw" dtype (what it was
 * computed in); fz_emit_op_node converts raw -> node dtype at the end.
 */
#include "emit.h"

#include <math.h>
#include <string.h>

/* ---- the compute dtype --------------------------------------------------- */

/* f16 and bf16 compute in f32, as PyTorch and the interpreter do. */
static fz_dtype opmath(fz_dtype d) {
  return d == FZ_F16 || d == FZ_BF16 ? FZ_F32 : d;
}

/* The promotion of a comparison's operands. Ask the fusion op when the plan
 * still knows it, because promotion ranks operands by rank and
 * literal-ness, which shape ops resolved away from the nodes. */
static fz_dtype operand_promotion(const fz_plan *plan, const fz_plan_node *n) {
  const fz_value *v = n->value;
  if (v && v->kind == FZ_VALUE_RESULT && v->def && v->def->code == n->code &&
      v->def->num_operands == n->num_operands)
    return fz_promote(v->def->num_operands, v->def->operands);
  fz_value tmp[3];
  fz_value *ops[3];
  for (int k = 0; k < n->num_operands; k++) {
    const fz_plan_node *o = &plan->nodes[n->operands[k]];
    memset(&tmp[k], 0, sizeof tmp[k]);
    if (o->value) {
      tmp[k].kind = o->value->kind;
      tmp[k].type.rank = o->value->type.rank;
    } else {
      tmp[k].kind =
          o->kind == FZ_NODE_LITERAL ? FZ_VALUE_LITERAL : FZ_VALUE_RESULT;
      tmp[k].type.rank = o->kind == FZ_NODE_LITERAL ? 0 : 1;
    }
    tmp[k].type.dtype = o->dtype;
    ops[k] = &tmp[k];
  }
  return fz_promote(n->num_operands, ops);
}

fz_dtype fz_node_compute_dtype(const fz_plan *plan, const fz_plan_node *n) {
  switch (n->code) {
  case FZ_OP_CAST:
    return n->dtype; /* straight to the target */
  case FZ_OP_NOT:
  case FZ_OP_AND:
  case FZ_OP_OR:
  case FZ_OP_XOR:
    return FZ_BOOL;
  case FZ_OP_ISNAN:
    return plan->nodes[n->operands[0]].dtype; /* the value unchanged */
  case FZ_OP_ISINF:
  case FZ_OP_ISFINITE:
  case FZ_OP_SIGNBIT:
    /* f16/bf16 -> f32 keeps infinities and signs */
    return opmath(plan->nodes[n->operands[0]].dtype);
  default:
    if (fz_op_table[n->code].flags & FZ_F_TO_BOOL)
      return opmath(operand_promotion(plan, n));
    /* the result dtype: the promotion, or f32 for FZ_F_TO_FLOAT ops on
     * integers; where's is the promotion of its two values */
    return opmath(n->dtype);
  }
}

/* ---- floats -------------------------------------------------------------- */

static const char *libdevice_base(fz_opcode code) {
  switch (code) {
  case FZ_OP_LOG1P: return "log1p";
  case FZ_OP_EXPM1: return "expm1";
  case FZ_OP_TAN: return "tan";
  case FZ_OP_ATAN: return "atan";
  case FZ_OP_ASIN: return "asin";
  case FZ_OP_ACOS: return "acos";
  case FZ_OP_SINH: return "sinh";
  case FZ_OP_COSH: return "cosh";
  case FZ_OP_ASINH: return "asinh";
  case FZ_OP_ACOSH: return "acosh";
  case FZ_OP_ATANH: return "atanh";
  case FZ_OP_ERFC: return "erfc";
  case FZ_OP_ERFINV: return "erfinv";
  case FZ_OP_LGAMMA: return "lgamma";
  case FZ_OP_ATAN2: return "atan2";
  case FZ_OP_FMOD: return "fmod";
  case FZ_OP_HYPOT: return "hypot";
  default: return NULL;
  }
}

static LLVMValueRef fconst(LLVMValueRef like, double v) {
  return LLVMConstReal(LLVMTypeOf(like), v);
}

static LLVMValueRef sigmoid(fz_emit *e, LLVMValueRef x) {
  LLVMValueRef nx = LLVMBuildFNeg(e->b, x, "");
  LLVMValueRef ex = fz_emit_libdevice(e, "exp", &nx, 1);
  if (!ex)
    return NULL;
  LLVMValueRef den = LLVMBuildFAdd(e->b, fconst(x, 1.0), ex, "");
  return LLVMBuildFDiv(e->b, fconst(x, 1.0), den, "");
}

/* PyTorch's remainder: fmod is exact; then move it to the divisor's sign. */
static LLVMValueRef float_mod(fz_emit *e, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  LLVMValueRef r = fz_emit_libdevice(e, "fmod", args, 2);
  if (!r)
    return NULL;
  LLVMValueRef zero = fconst(a, 0.0);
  LLVMValueRef nonzero = LLVMBuildFCmp(e->b, LLVMRealUNE, r, zero, "");
  LLVMValueRef rneg = LLVMBuildFCmp(e->b, LLVMRealOLT, r, zero, "");
  LLVMValueRef bneg = LLVMBuildFCmp(e->b, LLVMRealOLT, b, zero, "");
  LLVMValueRef adjust =
      LLVMBuildAnd(e->b, nonzero, LLVMBuildXor(e->b, rneg, bneg, ""), "");
  return LLVMBuildSelect(e->b, adjust, LLVMBuildFAdd(e->b, r, b, ""), r, "");
}

static LLVMValueRef to_f64(fz_emit *e, LLVMValueRef x) {
  return LLVMTypeOf(x) == e->t_f64 ? x : LLVMBuildFPExt(e->b, x, e->t_f64, "");
}

static bool is_const_fp(LLVMValueRef v, double want) {
  if (!LLVMIsAConstantFP(v))
    return false;
  LLVMBool loses = 0;
  return LLVMConstRealGetDouble(v, &loses) == want;
}

/* PyTorch's sign: (0 < a) - (a < 0); NaN and -0.0 give +0.0. */
static LLVMValueRef float_sign(fz_emit *e, LLVMValueRef a) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef zero = fconst(a, 0.0);
  LLVMValueRef neg = LLVMBuildSelect(
      b, LLVMBuildFCmp(b, LLVMRealOLT, a, zero, ""), fconst(a, -1.0), zero,
      "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, a, zero, ""),
                         fconst(a, 1.0), neg, "");
}

static LLVMValueRef float_test(fz_emit *e, fz_opcode code, LLVMValueRef a) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef inf = fconst(a, INFINITY), ninf = fconst(a, -INFINITY);
  switch (code) {
  case FZ_OP_ISINF:
    return LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, a, inf, ""),
                       LLVMBuildFCmp(b, LLVMRealOEQ, a, ninf, ""), "");
  case FZ_OP_ISFINITE: /* ordered: NaN is not finite */
    return LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOGT, a, ninf, ""),
                        LLVMBuildFCmp(b, LLVMRealOLT, a, inf, ""), "");
  default: { /* signbit: the sign bit itself, so -0.0 and -NaN count */
    LLVMTypeRef it = LLVMTypeOf(a) == e->t_f64 ? e->t_i64 : e->t_i32;
    LLVMValueRef bits = LLVMBuildBitCast(b, a, it, "");
    return LLVMBuildICmp(b, LLVMIntSLT, bits, LLVMConstInt(it, 0, 0), "");
  }
  }
}

static LLVMValueRef float_op(fz_emit *e, fz_opcode code, fz_dtype cd,
                             LLVMValueRef *x, fz_dtype *raw) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef a = x[0], y = x[1], z = x[2];
  *raw = cd == FZ_F64 ? FZ_F64 : FZ_F32;
  const char *base = libdevice_base(code);
  if (base)
    return fz_emit_libdevice(e, base, x, fz_op_table[code].arity);
  switch (code) {
  case FZ_OP_NEG:
    return LLVMBuildFNeg(b, a, "");
  case FZ_OP_ABS:
    return fz_emit_intrinsic1(e, "llvm.fabs", a);
  case FZ_OP_EXP:
    return fz_emit_libdevice(e, "exp", &a, 1);
  case FZ_OP_EXP2:
    return fz_emit_libdevice(e, "exp2", &a, 1);
  case FZ_OP_LOG:
    return fz_emit_libdevice(e, "log", &a, 1);
  case FZ_OP_LOG2:
    return fz_emit_libdevice(e, "log2", &a, 1);
  case FZ_OP_SIN:
    return fz_emit_libdevice(e, "sin", &a, 1);
  case FZ_OP_COS:
    return fz_emit_libdevice(e, "cos", &a, 1);
  case FZ_OP_TANH:
    return fz_emit_libdevice(e, "tanh", &a, 1);
  case FZ_OP_ERF:
    return fz_emit_libdevice(e, "erf", &a, 1);
  case FZ_OP_SQRT:
    return fz_emit_intrinsic1(e, "llvm.sqrt", a);
  case FZ_OP_RSQRT: {
    /* 1/sqrt(x) in f64 and rounded once, as the interpreter does; a float
     * rsqrt (approximate, or sqrt then divide) rounds differently. */
    *raw = FZ_F64;
    LLVMValueRef s = fz_emit_intrinsic1(e, "llvm.sqrt", to_f64(e, a));
    return s ? LLVMBuildFDiv(b, LLVMConstReal(e->t_f64, 1.0), s, "") : NULL;
  }
  case FZ_OP_RECIPROCAL:
    return LLVMBuildFDiv(b, fconst(a, 1.0), a, "");
  case FZ_OP_SIGMOID:
    return sigmoid(e, a);
  case FZ_OP_RELU:
    return fz_emit_intrinsic2(e, "llvm.maximum", a, fconst(a, 0.0));
  case FZ_OP_GELU: {
    LLVMValueRef t = LLVMBuildFMul(b, a, fconst(a, 0.7071067811865476), "");
    LLVMValueRef erf = fz_emit_libdevice(e, "erf", &t, 1);
    if (!erf)
      return NULL;
    LLVMValueRef half_x = LLVMBuildFMul(b, fconst(a, 0.5), a, "");
    return LLVMBuildFMul(b, half_x, LLVMBuildFAdd(b, fconst(a, 1.0), erf, ""),
                         "");
  }
  case FZ_OP_SILU: {
    LLVMValueRef s = sigmoid(e, a);
    return s ? LLVMBuildFMul(b, a, s, "") : NULL;
  }
  case FZ_OP_FLOOR:
    return fz_emit_intrinsic1(e, "llvm.floor", a);
  case FZ_OP_CEIL:
    return fz_emit_intrinsic1(e, "llvm.ceil", a);
  case FZ_OP_ROUND:
    return fz_emit_intrinsic1(e, "llvm.roundeven", a);
  case FZ_OP_TRUNC:
    return fz_emit_intrinsic1(e, "llvm.trunc", a);
  case FZ_OP_SIGN:
    return float_sign(e, a);
  case FZ_OP_FRAC: { /* exact: a and trunc(a) share their leading bits */
    LLVMValueRef t = fz_emit_intrinsic1(e, "llvm.trunc", a);
    return t ? LLVMBuildFSub(b, a, t, "") : NULL;
  }
  case FZ_OP_ISINF:
  case FZ_OP_ISFINITE:
  case FZ_OP_SIGNBIT:
    *raw = FZ_BOOL;
    return float_test(e, code, a);
  case FZ_OP_ISNAN:
    *raw = FZ_BOOL;
    return LLVMBuildFCmp(b, LLVMRealUNO, a, a, "");
  case FZ_OP_ADD:
    return LLVMBuildFAdd(b, a, y, "");
  case FZ_OP_SUB:
    return LLVMBuildFSub(b, a, y, "");
  case FZ_OP_MUL:
    return LLVMBuildFMul(b, a, y, "");
  case FZ_OP_DIV:
    return LLVMBuildFDiv(b, a, y, "");
  case FZ_OP_POW: {
    /* x^2 is one exact product, cheaper and closer than powf */
    if (is_const_fp(y, 2.0))
      return LLVMBuildFMul(b, a, a, "");
    LLVMValueRef args[2] = {a, y};
    return fz_emit_libdevice(e, "pow", args, 2);
  }
  case FZ_OP_MAX:
    return fz_emit_intrinsic2(e, "llvm.maximum", a, y);
  case FZ_OP_MIN:
    return fz_emit_intrinsic2(e, "llvm.minimum", a, y);
  case FZ_OP_MOD:
    return float_mod(e, a, y);
  case FZ_OP_EQ:
  case FZ_OP_NE:
  case FZ_OP_LT:
  case FZ_OP_LE:
  case FZ_OP_GT:
  case FZ_OP_GE: {
    /* ne is unordered (NaN != NaN), the rest ordered, as in C */
    static const LLVMRealPredicate pred[] = {
        [FZ_OP_EQ] = LLVMRealOEQ, [FZ_OP_NE] = LLVMRealUNE,
        [FZ_OP_LT] = LLVMRealOLT, [FZ_OP_LE] = LLVMRealOLE,
        [FZ_OP_GT] = LLVMRealOGT, [FZ_OP_GE] = LLVMRealOGE};
    *raw = FZ_BOOL;
    return LLVMBuildFCmp(b, pred[code], a, y, "");
  }
  case FZ_OP_WHERE:
    return LLVMBuildSelect(b, a, y, z, "");
  case FZ_OP_FMA: {
    /* fma in f64 and rounded once, as the interpreter does (a float fma
     * would round once from the exact value instead) */
    *raw = FZ_F64;
    LLVMValueRef args[3] = {to_f64(e, a), to_f64(e, y), to_f64(e, z)};
    LLVMTypeRef t = e->t_f64;
    return fz_emit_intrinsic(e, "llvm.fma", &t, 1, args, 3);
  }
  case FZ_OP_CLAMP: {
    LLVMValueRef lo = fz_emit_intrinsic2(e, "llvm.maximum", a, y);
    return lo ? fz_emit_intrinsic2(e, "llvm.minimum", lo, z) : NULL;
  }
  default:
    return fz_emit_fail(e, FZ_ERR_UNSUPPORTED,
                        "lowering has no float form of op %s",
                        fz_op_table[code].name);
  }
}

/* ---- integers ------------------------------------------------------------ */

static LLVMValueRef iconst(LLVMValueRef like, long long v) {
  return LLVMConstInt(LLVMTypeOf(like), (unsigned long long)v, 1);
}

/* a^n by squaring, in a loop that ends when the exponent runs out of bits;
 * a negative exponent gives 0, except for a base of 1 or -1. */
static LLVMValueRef int_pow(fz_emit *e, LLVMValueRef a, LLVMValueRef n) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef zero = iconst(a, 0), one = iconst(a, 1);
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, n, zero, "");
  LLVMValueRef n0 = LLVMBuildSelect(b, neg, zero, n, "");

  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "pow");
  LLVMBasicBlockRef body =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "pow.step");
  LLVMBasicBlockRef done =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "pow.done");
  LLVMBuildBr(b, head);

  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef r = LLVMBuildPhi(b, LLVMTypeOf(a), "pow.r");
  LLVMValueRef base = LLVMBuildPhi(b, LLVMTypeOf(a), "pow.base");
  LLVMValueRef exp = LLVMBuildPhi(b, LLVMTypeOf(a), "pow.n");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, exp, zero, ""), done, body);

  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef bit =
      LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, exp, one, ""), zero, "");
  LLVMValueRef r2 =
      LLVMBuildSelect(b, bit, LLVMBuildMul(b, r, base, ""), r, "");
  LLVMValueRef base2 = LLVMBuildMul(b, base, base, "");
  LLVMValueRef exp2 = LLVMBuildLShr(b, exp, one, "");
  LLVMBuildBr(b, head);

  LLVMValueRef r_in[2] = {one, r2}, base_in[2] = {a, base2},
               exp_in[2] = {n0, exp2};
  LLVMBasicBlockRef from[2] = {pre, body};
  LLVMAddIncoming(r, r_in, from, 2);
  LLVMAddIncoming(base, base_in, from, 2);
  LLVMAddIncoming(exp, exp_in, from, 2);

  LLVMPositionBuilderAtEnd(b, done);
  LLVMValueRef minus_one = iconst(a, -1);
  LLVMValueRef odd =
      LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, n, one, ""), zero, "");
  LLVMValueRef of_m1 = LLVMBuildSelect(b, odd, minus_one, one, "");
  LLVMValueRef r_neg = LLVMBuildSelect(
      b, LLVMBuildICmp(b, LLVMIntEQ, a, one, ""), one,
      LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, a, minus_one, ""), of_m1,
                      zero, ""),
      "");
  return LLVMBuildSelect(b, neg, r_neg, r, "");
}

/* PyTorch's remainder on integers: the sign of the divisor; 0 for a divisor
 * of 0, and of -1 (which also keeps INT_MIN % -1 out of srem). */
static LLVMValueRef int_mod(fz_emit *e, LLVMValueRef a, LLVMValueRef d) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef zero = iconst(a, 0);
  LLVMValueRef trivial =
      LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, d, zero, ""),
                  LLVMBuildICmp(b, LLVMIntEQ, d, iconst(a, -1), ""), "");
  LLVMValueRef safe = LLVMBuildSelect(b, trivial, iconst(a, 1), d, "");
  LLVMValueRef r = LLVMBuildSRem(b, a, safe, "");
  LLVMValueRef signs_differ =
      LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildXor(b, r, d, ""), zero, "");
  LLVMValueRef adjust = LLVMBuildAnd(
      b, LLVMBuildICmp(b, LLVMIntNE, r, zero, ""), signs_differ, "");
  return LLVMBuildSelect(b, adjust, LLVMBuildAdd(b, r, d, ""), r, "");
}

/* C's truncated remainder (PyTorch's fmod on integers); 0 for a divisor of
 * 0, as mod gives, and of -1, which keeps INT_MIN % -1 out of srem. */
static LLVMValueRef int_fmod(fz_emit *e, LLVMValueRef a, LLVMValueRef d) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef trivial =
      LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, d, iconst(a, 0), ""),
                  LLVMBuildICmp(b, LLVMIntEQ, d, iconst(a, -1), ""), "");
  LLVMValueRef safe = LLVMBuildSelect(b, trivial, iconst(a, 1), d, "");
  return LLVMBuildSelect(b, trivial, iconst(a, 0),
                         LLVMBuildSRem(b, a, safe, ""), "");
}

/* PyTorch's CUDA shifts: a left shift by a count outside [0, width) is 0;
 * a right shift by one outside [0, width - 1) shifts by width - 1, leaving
 * the sign. The unsigned compare catches negative counts. */
static LLVMValueRef int_shift(fz_emit *e, fz_opcode code, LLVMValueRef a,
                              LLVMValueRef n) {
  LLVMBuilderRef b = e->b;
  long long width = (long long)LLVMGetIntTypeWidth(LLVMTypeOf(a));
  if (code == FZ_OP_SHL) {
    LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, n, iconst(a, width), "");
    LLVMValueRef safe = LLVMBuildSelect(b, ok, n, iconst(a, 0), "");
    return LLVMBuildSelect(b, ok, LLVMBuildShl(b, a, safe, ""), iconst(a, 0),
                           "");
  }
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, n, iconst(a, width - 1), "");
  LLVMValueRef count = LLVMBuildSelect(b, ok, n, iconst(a, width - 1), "");
  return LLVMBuildAShr(b, a, count, "");
}

static LLVMValueRef int_sign(fz_emit *e, LLVMValueRef a) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef zero = iconst(a, 0);
  LLVMValueRef neg = LLVMBuildSelect(
      b, LLVMBuildICmp(b, LLVMIntSLT, a, zero, ""), iconst(a, -1), zero, "");
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, a, zero, ""),
                         iconst(a, 1), neg, "");
}

static LLVMValueRef int_op(fz_emit *e, fz_opcode code, fz_dtype cd,
                           LLVMValueRef *x, fz_dtype *raw) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef a = x[0], y = x[1], z = x[2];
  *raw = cd;
  switch (code) {
  case FZ_OP_NEG:
    return LLVMBuildNeg(b, a, "");
  case FZ_OP_ABS: {
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef args[2] = {a, LLVMConstInt(e->t_i1, 0, 0)};
    return fz_emit_intrinsic(e, "llvm.abs", &t, 1, args, 2);
  }
  case FZ_OP_RELU:
    return fz_emit_intrinsic2(e, "llvm.smax", a, iconst(a, 0));
  case FZ_OP_FLOOR:
  case FZ_OP_CEIL:
  case FZ_OP_ROUND:
  case FZ_OP_TRUNC:
    return a;
  case FZ_OP_SIGN:
    return int_sign(e, a);
  case FZ_OP_ISNAN:
  case FZ_OP_ISINF:
  case FZ_OP_ISFINITE:
    *raw = FZ_BOOL;
    return LLVMConstInt(e->t_i1, code == FZ_OP_ISFINITE, 0);
  case FZ_OP_SIGNBIT:
    *raw = FZ_BOOL;
    return LLVMBuildICmp(b, LLVMIntSLT, a, iconst(a, 0), "");
  case FZ_OP_BITWISE_NOT:
    return LLVMBuildNot(b, a, "");
  case FZ_OP_BITWISE_AND:
    return LLVMBuildAnd(b, a, y, "");
  case FZ_OP_BITWISE_OR:
    return LLVMBuildOr(b, a, y, "");
  case FZ_OP_BITWISE_XOR:
    return LLVMBuildXor(b, a, y, "");
  case FZ_OP_SHL:
  case FZ_OP_SHR:
    return int_shift(e, code, a, y);
  case FZ_OP_FMOD:
    return int_fmod(e, a, y);
  case FZ_OP_ADD:
    return LLVMBuildAdd(b, a, y, "");
  case FZ_OP_SUB:
    return LLVMBuildSub(b, a, y, "");
  case FZ_OP_MUL:
    return LLVMBuildMul(b, a, y, "");
  case FZ_OP_POW:
    return int_pow(e, a, y);
  case FZ_OP_MAX:
    return fz_emit_intrinsic2(e, "llvm.smax", a, y);
  case FZ_OP_MIN:
    return fz_emit_intrinsic2(e, "llvm.smin", a, y);
  case FZ_OP_MOD:
    return int_mod(e, a, y);
  case FZ_OP_EQ:
  case FZ_OP_NE:
  case FZ_OP_LT:
  case FZ_OP_LE:
  case FZ_OP_GT:
  case FZ_OP_GE: {
    static const LLVMIntPredicate pred[] = {
        [FZ_OP_EQ] = LLVMIntEQ,  [FZ_OP_NE] = LLVMIntNE,
        [FZ_OP_LT] = LLVMIntSLT, [FZ_OP_LE] = LLVMIntSLE,
        [FZ_OP_GT] = LLVMIntSGT, [FZ_OP_GE] = LLVMIntSGE};
    *raw = FZ_BOOL;
    return LLVMBuildICmp(b, pred[code], a, y, "");
  }
  case FZ_OP_WHERE:
    return LLVMBuildSelect(b, a, y, z, "");
  case FZ_OP_FMA:
    return LLVMBuildAdd(b, LLVMBuildMul(b, a, y, ""), z, "");
  case FZ_OP_CLAMP: {
    LLVMValueRef lo = fz_emit_intrinsic2(e, "llvm.smax", a, y);
    return lo ? fz_emit_intrinsic2(e, "llvm.smin", lo, z) : NULL;
  }
  default:
    return fz_emit_fail(e, FZ_ERR_UNSUPPORTED,
                        "lowering has no integer form of op %s",
                        fz_op_table[code].name);
  }
}

/* ---- nodes --------------------------------------------------------------- */

/* Ops whose f32 result, rounded again to f16/bf16, could differ from the
 * f64 result rounded once, unless their operands are f16/bf16 values. */
static bool rounds_twice(fz_opcode code) {
  switch (code) {
  case FZ_OP_ADD:
  case FZ_OP_SUB:
  case FZ_OP_MUL:
  case FZ_OP_DIV:
  case FZ_OP_SQRT:
  case FZ_OP_RECIPROCAL:
  case FZ_OP_MOD:
  case FZ_OP_POW: /* its x^2 shortcut */
    return true;
  default:
    return false;
  }
}

/* Whether an operand (dtype d, converted to f32 as x) holds a value of the
 * narrow dtype: known from its dtype, or from its value for a constant. */
static bool holds_narrow(fz_dtype d, LLVMValueRef x, fz_dtype narrow) {
  if (d == narrow || d == FZ_I8 || d == FZ_BOOL)
    return true;
  if (!LLVMIsAConstantFP(x))
    return false;
  LLVMBool loses = 0;
  double v = LLVMConstRealGetDouble(x, &loses);
  return isnan(v) || fz_round_to_dtype(v, narrow) == v;
}

/* Whether node i is computed from symbols (at least one) and literals
 * alone, within a few ops: a kernel parameter, the same at every point (a
 * mean's count, the product of its axes' symbols). */
static bool from_symbols(const fz_plan *p, int i, int depth, bool *symbol) {
  const fz_plan_node *n = &p->nodes[i];
  if (n->kind == FZ_NODE_SYMBOL)
    return *symbol = true;
  if (n->kind == FZ_NODE_LITERAL)
    return true;
  if (n->kind != FZ_NODE_OP || depth == 0)
    return false;
  for (int k = 0; k < n->num_operands; k++)
    if (!from_symbols(p, n->operands[k], depth - 1, symbol))
      return false;
  return true;
}

/* Whether node n's divisor is the same at every point a thread computes
 * n at: a literal or a value of symbols, or, for a full-space node of a
 * persistent plan, a row value (after the row's reductions) or a column
 * value. */
static bool divisor_is_uniform(const fz_plan *p, const fz_plan_node *n) {
  const fz_plan_node *d = &p->nodes[n->operands[1]];
  bool symbol = false;
  if (d->kind == FZ_NODE_LITERAL ||
      (from_symbols(p, n->operands[1], 3, &symbol) && symbol))
    return true;
  return n->space == FZ_SPACE_FULL && d->space != FZ_SPACE_FULL;
}

/* x / d for a d shared by the points a thread computes (a row's sum): the
 * reciprocal r is one division per row (the unrolled points each build
 * the same fdiv, and LLVM keeps one), and each point costs a multiply and
 * two fma instead of a division (div.rn.f32 is a dozen instructions with
 * a slow path). q = x*r is within an ulp of x/d; the remainder x - q*d is
 * exact in an fma, and q + rem*r is then the correctly rounded quotient
 * (Markstein's theorem: r correctly rounded, q faithful), except where r
 * or the quotient is subnormal, which can leave it an ulp off. Where the
 * remainder is not finite (d or x zero or infinite, or q overflowed) q is
 * already the IEEE quotient. */
static LLVMValueRef fma3(fz_emit *e, LLVMValueRef a, LLVMValueRef b,
                         LLVMValueRef c) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef args[3] = {a, b, c};
  return fz_emit_intrinsic(e, "llvm.fma", &t, 1, args, 3);
}

static LLVMValueRef uniform_divide(fz_emit *e, LLVMValueRef x, LLVMValueRef d) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef r = LLVMBuildFDiv(b, fconst(d, 1.0), d, "");
  LLVMValueRef q = LLVMBuildFMul(b, x, r, "");
  LLVMValueRef rem = fma3(e, LLVMBuildFNeg(b, q, ""), d, x);
  LLVMValueRef fixed = rem ? fma3(e, rem, r, q) : NULL;
  LLVMValueRef mag = rem ? fz_emit_intrinsic1(e, "llvm.fabs", rem) : NULL;
  if (!fixed || !mag)
    return NULL;
  LLVMValueRef finite =
      LLVMBuildFCmp(b, LLVMRealOLT, mag, fconst(rem, INFINITY), "");
  return LLVMBuildSelect(b, finite, fixed, q, "");
}

/* exp(x) whose f32 result is rounded at once to f16 or bf16: ex2.approx of
 * x*log2(e). Its error (ex2.approx's 2^-22 plus the product's rounding,
 * at most |x|*2^-24 relative, 5e-6 at the edge of the f32 range) is far
 * under an f16 or bf16 ulp (2^-11, 2^-8), where libdevice's expf spends
 * ten instructions a point on an f32 accuracy the rounding discards.
 * The non-ftz form keeps subnormal results, which bf16 shares with f32. */
static LLVMValueRef narrow_exp(fz_emit *e, LLVMValueRef x) {
  LLVMValueRef t = LLVMBuildFMul(e->b, x, fconst(x, 1.4426950408889634), "");
  return fz_emit_intrinsic(e, "llvm.nvvm.ex2.approx.f", NULL, 0, &t, 1);
}

LLVMValueRef fz_emit_op_node(fz_emit *e, const fz_plan_node *n,
                             const LLVMValueRef *args) {
  const fz_plan *p = e->plan;
  LLVMBuilderRef b = e->b;
  fz_dtype in[3];
  for (int k = 0; k < n->num_operands; k++)
    in[k] = p->nodes[n->operands[k]].dtype;
  fz_dtype cd = fz_node_compute_dtype(p, n);
  LLVMValueRef x[3] = {NULL, NULL, NULL};
  for (int k = 0; k < n->num_operands; k++) {
    bool cond = n->code == FZ_OP_WHERE && k == 0;
    if (!(x[k] = fz_emit_convert(e, args[k], in[k], cond ? FZ_BOOL : cd)))
      return NULL;
  }
  switch (n->code) {
  case FZ_OP_CAST:
    return fz_emit_convert(e, x[0], cd, n->dtype);
  case FZ_OP_NOT:
    return fz_emit_convert(e, LLVMBuildNot(b, x[0], ""), FZ_BOOL, n->dtype);
  case FZ_OP_AND:
  case FZ_OP_OR:
  case FZ_OP_XOR: {
    LLVMValueRef r = n->code == FZ_OP_AND  ? LLVMBuildAnd(b, x[0], x[1], "")
                     : n->code == FZ_OP_OR ? LLVMBuildOr(b, x[0], x[1], "")
                                           : LLVMBuildXor(b, x[0], x[1], "");
    return fz_emit_convert(e, r, FZ_BOOL, n->dtype);
  }
  case FZ_OP_BITWISE_NOT: /* on bool, logical not, as in PyTorch */
    if (cd == FZ_BOOL)
      return fz_emit_convert(e, LLVMBuildNot(b, x[0], ""), FZ_BOOL, n->dtype);
    break;
  default:
    break;
  }

  /* bool arithmetic is int64 arithmetic rounded back with != 0; an
   * f16/bf16 result from wider operands is computed in f64 */
  fz_dtype work = cd == FZ_BOOL ? FZ_I64 : cd;
  if (cd == FZ_F32 && (n->dtype == FZ_F16 || n->dtype == FZ_BF16) &&
      rounds_twice(n->code)) {
    for (int k = 0; k < n->num_operands; k++)
      if (!holds_narrow(in[k], x[k], n->dtype))
        work = FZ_F64;
  }
  for (int k = 0; k < n->num_operands; k++)
    if (!(n->code == FZ_OP_WHERE && k == 0))
      x[k] = fz_emit_convert(e, x[k], cd, work);
  if (n->code == FZ_OP_DIV && fz_dtype_is_float(work) &&
      divisor_is_uniform(p, n))
  {
    LLVMValueRef q = uniform_divide(e, x[0], x[1]);
    return q ? fz_emit_convert(e, q, work, n->dtype) : NULL;
  }
  if (n->code == FZ_OP_EXP && work == FZ_F32 &&
      (n->dtype == FZ_F16 || n->dtype == FZ_BF16))
  {
    LLVMValueRef y = narrow_exp(e, x[0]);
    return y ? fz_emit_convert(e, y, FZ_F32, n->dtype) : NULL;
  }
  fz_dtype raw;
  LLVMValueRef r = fz_dtype_is_float(work) ? float_op(e, n->code, work, x, &raw)
                                           : int_op(e, n->code, work, x, &raw);
  return fz_emit_convert(e, r, raw, n->dtype);
}

LLVMValueRef fz_emit_literal(fz_emit *e, const fz_plan_node *n) {
  return fz_emit_scalar_const(e, n->dtype, n->literal);
}

/* start + index * step, in f64 for float dtypes (two roundings, then one
 * more to the dtype, as the interpreter's double arithmetic) and in
 * wrapping int64 otherwise. */
LLVMValueRef fz_emit_iota(fz_emit *e, const fz_plan_node *n,
                          LLVMValueRef index) {
  LLVMBuilderRef b = e->b;
  if (fz_dtype_is_float(n->dtype)) {
    LLVMValueRef i = LLVMBuildSIToFP(b, index, e->t_f64, "");
    LLVMValueRef v = LLVMBuildFAdd(
        b, LLVMConstReal(e->t_f64, n->literal.f),
        LLVMBuildFMul(b, i, LLVMConstReal(e->t_f64, n->step.f), ""), "");
    return fz_emit_convert(e, v, FZ_F64, n->dtype);
  }
  LLVMValueRef v = LLVMBuildAdd(
      b, LLVMConstInt(e->t_i64, (unsigned long long)n->literal.i, 1),
      LLVMBuildMul(b, index,
                   LLVMConstInt(e->t_i64, (unsigned long long)n->step.i, 1),
                   ""),
      "");
  return fz_emit_convert(e, v, FZ_I64, n->dtype);
}
