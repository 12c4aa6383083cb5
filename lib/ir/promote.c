/* promote.c - PyTorch type promotion.
 *
 * PyTorch ranks operands twice: by category (bool < integer < float) and by
 * priority (dimensioned tensors > zero-dim tensors > Python scalars, which
 * fz calls literals). The category of the result is the highest category
 * present; its dtype is the widest dtype of that category among the
 * operands of the highest priority that has the category. A category seen
 * only in literals gives its default dtype (f32, i64, bool), which is why
 * i32[N] + 2.5 is f32 and not f64. Kept apart from the shape rules because
 * the interpreter and the lowering ask the same questions.
 */
#include "fz/ir.h"

enum { CAT_BOOL, CAT_INT, CAT_FLOAT };
enum { PRIO_LITERAL, PRIO_ZERO_DIM, PRIO_DIMENSIONED, NUM_PRIO };

static int category(fz_dtype d) {
  if (fz_dtype_is_float(d))
    return CAT_FLOAT;
  return fz_dtype_is_integer(d) ? CAT_INT : CAT_BOOL;
}

static int priority(const fz_value *v) {
  if (v->kind == FZ_VALUE_LITERAL)
    return PRIO_LITERAL;
  return v->type.rank > 0 ? PRIO_DIMENSIONED : PRIO_ZERO_DIM;
}

/* Widest of two dtypes of one category. f16 and bf16 have no common
 * 16-bit type, so they meet at f32 as in PyTorch. */
static fz_dtype widen(fz_dtype a, fz_dtype b) {
  if (a == b)
    return a;
  if (category(a) == CAT_FLOAT) {
    if (a == FZ_F64 || b == FZ_F64)
      return FZ_F64;
    return FZ_F32; /* f32 with anything smaller, or f16 with bf16 */
  }
  return fz_dtype_size(a) >= fz_dtype_size(b) ? a : b;
}

fz_dtype fz_promote(int num_operands, fz_value *const *operands) {
  int cat = CAT_BOOL;
  for (int i = 0; i < num_operands; i++) {
    int c = category(operands[i]->type.dtype);
    if (c > cat)
      cat = c;
  }
  for (int prio = NUM_PRIO - 1; prio > PRIO_LITERAL; prio--) {
    bool found = false;
    fz_dtype d = FZ_BOOL;
    for (int i = 0; i < num_operands; i++) {
      const fz_value *v = operands[i];
      if (priority(v) != prio || category(v->type.dtype) != cat)
        continue;
      d = found ? widen(d, v->type.dtype) : v->type.dtype;
      found = true;
    }
    if (found)
      return d;
  }
  switch (cat) {
  case CAT_FLOAT:
    return FZ_F32;
  case CAT_INT:
    return FZ_I64;
  default:
    return FZ_BOOL;
  }
}

fz_dtype fz_op_result_dtype(fz_opcode code, fz_dtype promoted) {
  unsigned flags = fz_op_table[code].flags;
  if (flags & FZ_F_TO_BOOL)
    return FZ_BOOL;
  if (flags & FZ_F_ARG)
    return FZ_I64;
  if ((flags & FZ_F_TO_FLOAT) && !fz_dtype_is_float(promoted))
    return FZ_F32;
  if ((flags & FZ_F_INT_TO_I64) && !fz_dtype_is_float(promoted))
    return FZ_I64;
  return promoted;
}
