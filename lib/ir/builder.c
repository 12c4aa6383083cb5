/* builder.c - the C builder: create ops and literals with inferred types.
 *
 * Every op goes through fz_build, which asks infer.c for the result type
 * first and only then allocates, so a rejected op leaves the fusion exactly
 * as it was (no half-built op, no value id consumed). The per-op wrappers
 * only pack attributes; all shape and dtype knowledge is in infer.c, which
 * the verifier shares.
 */
#include "fz/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Iota's start and step live in the result's dtype class (.f for floats,
 * .i otherwise); absent ones default to 0 and 1. */
static void set_iota_defaults(fz_op *op, const fz_attrs *attrs,
                              fz_dtype dtype) {
  bool is_float = fz_dtype_is_float(dtype);
  op->iota_start = attrs->iota_start;
  op->iota_step = attrs->iota_step;
  if (!attrs->has_iota_start) {
    if (is_float)
      op->iota_start.f = 0.0;
    else
      op->iota_start.i = 0;
  }
  if (!attrs->has_iota_step) {
    if (is_float)
      op->iota_step.f = 1.0;
    else
      op->iota_step.i = 1;
  }
}

static int cmp_int(const void *x, const void *y) {
  int a = *(const int *)x, b = *(const int *)y;
  return (a > b) - (a < b);
}

int fz_wrap_axes(int count, int *axes, int rank) {
  int bad = -1;
  for (int i = 0; i < count; i++) {
    if (axes[i] < -rank || axes[i] >= rank) {
      if (bad < 0)
        bad = i;
    } else if (axes[i] < 0) {
      axes[i] += rank;
    }
  }
  return bad;
}

/* Dims and perm as callers give them (negative entries count from the
 * end, as in PyTorch; dims in any order) to the form ops store: wrapped,
 * and dims sorted. Out-of-range entries are left for fz_infer_type to
 * report; a repeated dim is reported here, where it is still the caller's
 * spelling. */
static bool normalize_axes(const char *name, fz_op_kind kind,
                           const fz_value *a, fz_attrs *attrs, fz_error *err) {
  if (!a || attrs->num_dims < 0 || attrs->num_dims > FZ_MAX_RANK)
    return true;
  int rank = a->type.rank;
  if (kind == FZ_KIND_PERMUTE && rank >= 0 && rank <= FZ_MAX_RANK) {
    fz_wrap_axes(rank, attrs->perm, rank);
    return true;
  }
  if (kind != FZ_KIND_REDUCTION && kind != FZ_KIND_SQUEEZE &&
      kind != FZ_KIND_BROADCAST && kind != FZ_KIND_CAT &&
      kind != FZ_KIND_GATHER)
    return true;
  if (kind == FZ_KIND_BROADCAST)
    rank += attrs->num_dims; /* new axes are positions in the result */
  fz_wrap_axes(attrs->num_dims, attrs->dims, rank);
  qsort(attrs->dims, (size_t)attrs->num_dims, sizeof attrs->dims[0], cmp_int);
  for (int i = 1; i < attrs->num_dims; i++)
    if (attrs->dims[i] == attrs->dims[i - 1] && attrs->dims[i] >= 0) {
      fz_error_set(err, FZ_ERR_INVALID, "%s: dims name axis %d twice", name,
                   attrs->dims[i]);
      return false;
    }
  return true;
}

/* The variance of the one element of a rank-0 operand: (a - a)^2, 0 for a
 * finite value and NaN for inf or NaN, over max(0, 1 - correction), as
 * torch.var computes it. */
static fz_value *var_of_one(fz_fusion *f, fz_value *a, const fz_attrs *attrs,
                            fz_error *err) {
  if (!isfinite(attrs->correction)) {
    fz_error_set(err, FZ_ERR_INVALID,
                 "var: correction %g must be a finite number",
                 attrs->correction);
    return NULL;
  }
  double divisor = 1 - attrs->correction;
  fz_value *d = fz_binary(f, FZ_OP_SUB, a, a, err);
  fz_value *m2 = d ? fz_binary(f, FZ_OP_MUL, d, d, err) : NULL;
  return m2 ? fz_binary(f, FZ_OP_DIV, m2,
                        fz_literal_float(f, divisor > 0 ? divisor : 0), err)
            : NULL;
}

/* PyTorch's reductions over no dims: an empty dim list reduces every axis
 * (torch.sum(x, dim=[]), torch.amax(x, dim=())), and a rank-0 operand,
 * whose only dims are 0 and -1, has nothing to reduce: the result is the
 * value, in the reduction's result dtype (sum of a bool is i64), or for an
 * arg-reduction the position 0 (an i64 full). Rewritten
 * here so that a reduction op always reduces at least one axis. Returns
 * true with *out set (NULL on error) when the call was rewritten to a cast
 * or copy. */
static bool reduce_nothing(fz_fusion *f, fz_opcode code, fz_value *a,
                           fz_attrs *attrs, fz_value **out, fz_error *err) {
  const char *name = fz_op_table[code].name;
  /* var and mean of an integer: fz_infer_type says why not */
  if ((fz_op_table[code].flags & FZ_F_FLOAT_ONLY) &&
      !fz_dtype_is_float(a->type.dtype))
    return false;
  if (a->type.rank > 0) {
    if (attrs->num_dims == 0) {
      attrs->num_dims = a->type.rank;
      for (int i = 0; i < a->type.rank; i++)
        attrs->dims[i] = i;
    }
    return false;
  }
  *out = NULL;
  for (int i = 0; i < attrs->num_dims; i++) {
    if (attrs->dims[i] != 0 && attrs->dims[i] != -1) {
      fz_error_set(err, FZ_ERR_INVALID,
                   "%s: dim %d is out of range for a rank-0 operand (only 0 "
                   "and -1 name its one position, as in PyTorch)",
                   name, attrs->dims[i]);
      return true;
    }
    if (i > 0) {
      fz_error_set(err, FZ_ERR_INVALID, "%s: dims name axis 0 twice", name);
      return true;
    }
  }
  if (code == FZ_OP_VAR) {
    *out = var_of_one(f, a, attrs, err);
    return true;
  }
  fz_dtype dtype = fz_op_result_dtype(code, fz_promote(1, &a));
  if (fz_op_table[code].flags & FZ_F_ARG) { /* a scalar's one position */
    fz_type zero = {.dtype = FZ_I64};
    *out = fz_full(f, &zero, (fz_scalar){.i = 0}, err);
    return true;
  }
  *out = dtype == a->type.dtype ? fz_set(f, a, err) : fz_cast(f, a, dtype, err);
  return true;
}

fz_value *fz_build(fz_fusion *f, fz_opcode code, int num_operands,
                   fz_value *const *operands, const fz_attrs *attrs,
                   fz_error *err) {
  static const fz_attrs none;
  if (!attrs)
    attrs = &none;
  const char *name =
      (unsigned)code < FZ_NUM_OPCODES ? fz_op_table[code].name : "op";
  if (!f) {
    fz_error_set(err, FZ_ERR_ARGUMENT, "%s: fusion is NULL", name);
    return NULL;
  }
  bool variadic = (unsigned)code < FZ_NUM_OPCODES && fz_op_table[code].arity < 0;
  if (num_operands < 0 || (num_operands > 3 && !variadic) ||
      (num_operands && !operands)) {
    fz_error_set(err, FZ_ERR_INVALID, "%s: %d operands is not supported",
                 name, num_operands);
    return NULL;
  }
  /* O(1): a value knows its fusion. Another fusion's value would dangle
   * once that fusion is destroyed. */
  for (int k = 0; k < num_operands; k++)
    if (operands[k] && operands[k]->owner != f) {
      fz_error_set(err, FZ_ERR_ARGUMENT,
                   "%s: operand %d belongs to another fusion, not @%s", name,
                   k, f->name);
      return NULL;
    }
  fz_attrs normalized = *attrs;
  fz_value *rewritten;
  if ((unsigned)code < FZ_NUM_OPCODES &&
      fz_op_table[code].kind == FZ_KIND_REDUCTION && num_operands == 1 &&
      operands[0] && normalized.num_dims >= 0 &&
      normalized.num_dims <= FZ_MAX_RANK &&
      reduce_nothing(f, code, operands[0], &normalized, &rewritten, err))
    return rewritten;
  if ((unsigned)code < FZ_NUM_OPCODES &&
      !normalize_axes(name, fz_op_table[code].kind,
                      num_operands > 0 ? operands[0] : NULL, &normalized,
                      err))
    return NULL;
  attrs = &normalized;
  fz_type type;
  if (fz_infer_type(f, code, num_operands, operands, attrs, &type, err))
    return NULL;

  fz_op *op = fz_arena_alloc(f->arena, sizeof *op);
  op->code = code;
  op->num_operands = num_operands;
  op->operands = fz_arena_alloc(
      f->arena, sizeof *op->operands * (size_t)(num_operands ? num_operands : 1));
  for (int k = 0; k < num_operands; k++)
    op->operands[k] = operands[k];
  switch (fz_op_table[code].kind) {
  case FZ_KIND_REDUCTION:
    op->keepdim = attrs->keepdim;
    op->correction = code == FZ_OP_VAR ? attrs->correction : 0;
    /* fall through */
  case FZ_KIND_BROADCAST:
  case FZ_KIND_SQUEEZE:
  case FZ_KIND_GATHER:
    op->num_dims = attrs->num_dims;
    memcpy(op->dims, attrs->dims, sizeof op->dims[0] * (size_t)attrs->num_dims);
    break;
  case FZ_KIND_PERMUTE:
    memcpy(op->perm, attrs->perm, sizeof op->perm[0] * (size_t)type.rank);
    break;
  case FZ_KIND_FULL:
    op->fill = attrs->fill;
    break;
  case FZ_KIND_IOTA:
    set_iota_defaults(op, attrs, type.dtype);
    break;
  case FZ_KIND_SYMBOL:
    op->symbol = attrs->symbol;
    break;
  case FZ_KIND_PAD:
    op->fill = attrs->fill;
    /* fall through */
  case FZ_KIND_SLICE:
    op->resize = attrs->resize;
    break;
  case FZ_KIND_CAT:
    op->num_dims = 1;
    op->dims[0] = attrs->dims[0];
    break;
  default:
    break;
  }

  fz_value *v = fz_arena_alloc(f->arena, sizeof *v);
  v->kind = FZ_VALUE_RESULT;
  v->owner = f;
  v->id = f->next_value_id++;
  v->type = type;
  v->def = op;
  op->result = v;
  fz_arena_push(f->arena, (void ***)&f->ops, &f->num_ops, &f->cap_ops, op);
  return v;
}

/* Literals are weak scalars (PyTorch's Python numbers): f64, i64 or bool,
 * rank 0. They are not listed in the fusion; ops point at them. */
static fz_value *literal(fz_fusion *f, fz_dtype dtype, fz_scalar value) {
  if (!f)
    return NULL;
  fz_value *v = fz_arena_alloc(f->arena, sizeof *v);
  v->kind = FZ_VALUE_LITERAL;
  v->owner = f;
  v->id = f->next_value_id++;
  v->type.dtype = dtype;
  fz_type_set_row_major(&v->type);
  v->literal = value;
  return v;
}

fz_value *fz_literal_float(fz_fusion *f, double v) {
  return literal(f, FZ_F64, (fz_scalar){.f = v});
}

fz_value *fz_literal_int(fz_fusion *f, int64_t v) {
  return literal(f, FZ_I64, (fz_scalar){.i = v});
}

fz_value *fz_literal_bool(fz_fusion *f, bool v) {
  return literal(f, FZ_BOOL, (fz_scalar){.i = v ? 1 : 0});
}

/* ---- convenience wrappers ------------------------------------------------ */

fz_value *fz_unary(fz_fusion *f, fz_opcode code, fz_value *a, fz_error *err) {
  fz_value *ops[1] = {a};
  return fz_build(f, code, 1, ops, NULL, err);
}

fz_value *fz_binary(fz_fusion *f, fz_opcode code, fz_value *a, fz_value *b,
                    fz_error *err) {
  fz_value *ops[2] = {a, b};
  return fz_build(f, code, 2, ops, NULL, err);
}

fz_value *fz_ternary(fz_fusion *f, fz_opcode code, fz_value *a, fz_value *b,
                     fz_value *c, fz_error *err) {
  fz_value *ops[3] = {a, b, c};
  return fz_build(f, code, 3, ops, NULL, err);
}

fz_value *fz_cast(fz_fusion *f, fz_value *a, fz_dtype dtype, fz_error *err) {
  fz_type target = {.dtype = dtype};
  fz_attrs attrs = {.shape = &target};
  return fz_build(f, FZ_OP_CAST, 1, &a, &attrs, err);
}

/* Copies dims into attrs, rejecting counts that do not fit. */
static bool pack_dims(fz_attrs *attrs, const char *op, int num_dims,
                      const int *dims, fz_error *err) {
  if (num_dims < 0 || num_dims > FZ_MAX_RANK || (num_dims > 0 && !dims)) {
    fz_error_set(err, FZ_ERR_INVALID, "%s: invalid dims (count %d)", op,
                 num_dims);
    return false;
  }
  attrs->num_dims = num_dims;
  if (num_dims > 0)
    memcpy(attrs->dims, dims, sizeof dims[0] * (size_t)num_dims);
  return true;
}

fz_value *fz_reduce(fz_fusion *f, fz_opcode code, fz_value *a, int num_dims,
                    const int *dims, bool keepdim, fz_error *err) {
  fz_attrs attrs = {.keepdim = keepdim};
  const char *name =
      (unsigned)code < FZ_NUM_OPCODES ? fz_op_table[code].name : "reduce";
  if (!pack_dims(&attrs, name, num_dims, dims, err))
    return NULL;
  if ((unsigned)code < FZ_NUM_OPCODES &&
      fz_op_table[code].kind != FZ_KIND_REDUCTION) {
    fz_error_set(err, FZ_ERR_INVALID, "%s is not a reduction", name);
    return NULL;
  }
  if (code == FZ_OP_VAR) {
    fz_error_set(err, FZ_ERR_INVALID,
                 "var takes a correction: build it with fz_var");
    return NULL;
  }
  return fz_build(f, code, 1, &a, &attrs, err);
}

fz_value *fz_broadcast(fz_fusion *f, fz_value *a, int num_dims,
                       const int *dims, fz_error *err) {
  fz_attrs attrs = {0};
  if (!pack_dims(&attrs, "broadcast", num_dims, dims, err))
    return NULL;
  return fz_build(f, FZ_OP_BROADCAST, 1, &a, &attrs, err);
}

fz_value *fz_squeeze(fz_fusion *f, fz_value *a, int num_dims, const int *dims,
                     fz_error *err) {
  fz_attrs attrs = {0};
  if (!pack_dims(&attrs, "squeeze", num_dims, dims, err))
    return NULL;
  return fz_build(f, FZ_OP_SQUEEZE, 1, &a, &attrs, err);
}

fz_value *fz_expand(fz_fusion *f, fz_value *a, const fz_type *shape,
                    fz_error *err) {
  fz_attrs attrs = {.shape = shape};
  return fz_build(f, FZ_OP_EXPAND, 1, &a, &attrs, err);
}

fz_value *fz_permute(fz_fusion *f, fz_value *a, const int *perm,
                     fz_error *err) {
  fz_attrs attrs = {0};
  int rank = a ? a->type.rank : 0;
  if (rank > 0 && !perm) {
    fz_error_set(err, FZ_ERR_INVALID, "permute: perm is NULL");
    return NULL;
  }
  if (rank > 0 && rank <= FZ_MAX_RANK)
    memcpy(attrs.perm, perm, sizeof perm[0] * (size_t)rank);
  return fz_build(f, FZ_OP_PERMUTE, 1, &a, &attrs, err);
}

fz_value *fz_reshape(fz_fusion *f, fz_value *a, const fz_type *shape,
                     fz_error *err) {
  fz_attrs attrs = {.shape = shape};
  return fz_build(f, FZ_OP_RESHAPE, 1, &a, &attrs, err);
}

fz_value *fz_set(fz_fusion *f, fz_value *a, fz_error *err) {
  return fz_build(f, FZ_OP_SET, 1, &a, NULL, err);
}

fz_value *fz_full(fz_fusion *f, const fz_type *shape, fz_scalar fill,
                  fz_error *err) {
  fz_attrs attrs = {.shape = shape, .fill = fill};
  return fz_build(f, FZ_OP_FULL, 0, NULL, &attrs, err);
}

fz_value *fz_read_symbol(fz_fusion *f, int symbol, fz_error *err) {
  fz_attrs attrs = {.symbol = symbol};
  return fz_build(f, FZ_OP_SYMBOL, 0, NULL, &attrs, err);
}

fz_status fz_value_set_layout(fz_value *value, const int *alloc_order,
                              const bool *contiguous, fz_error *err) {
  if (!value || (!alloc_order && value->type.rank > 0))
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_value_set_layout: value or alloc_order is NULL");
  fz_type t = value->type;
  t.has_layout = true;
  for (int i = 0; i < t.rank; i++) {
    t.alloc_order[i] = alloc_order[i];
    t.contiguous[i] = contiguous ? contiguous[i] : true;
  }
  char what[64];
  fz_value_label(value, what, sizeof what);
  fz_status st = fz_check_layout(&t, what, err);
  if (st)
    return st;
  value->type = t;
  return FZ_OK;
}

fz_value *fz_var(fz_fusion *f, fz_value *a, int num_dims, const int *dims,
                 double correction, bool keepdim, fz_error *err) {
  fz_attrs attrs = {.keepdim = keepdim, .correction = correction};
  if (!pack_dims(&attrs, "var", num_dims, dims, err))
    return NULL;
  return fz_build(f, FZ_OP_VAR, 1, &a, &attrs, err);
}
