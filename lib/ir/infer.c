/* infer.c - the shape and dtype rules of every op, in one place.
 *
 * fz_infer_type computes an op's result type from its operands and
 * attributes, or explains in one sentence why the operands do not fit. The
 * builder calls it before creating anything, and the verifier calls it on
 * every existing op and compares with the stored result type, so the two
 * can never disagree about what an op means. Rules are dispatched on the
 * op's kind from ops.def; dtype rules come from promote.c.
 *
 * Messages start with the op keyword and name operands by position and
 * axes by index: "add: operand 1 axis 0 has extent 128 but operand 0 has
 * extent 64". The helpers that format types for messages live here too, so
 * that the verifier and the parser can say what they expected.
 */
#include "fz/ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- formatting for messages ------------------------------------------- */

const char *fz_format_extent(const fz_fusion *f, fz_extent e, char *buf,
                             size_t size) {
  if (e.symbol < 0)
    snprintf(buf, size, "%" PRId64, e.value);
  else if (!f || e.symbol >= f->num_symbols)
    snprintf(buf, size, "<symbol %d>", (int)e.symbol);
  else if (f->symbols[e.symbol].name)
    snprintf(buf, size, "%s", f->symbols[e.symbol].name);
  else
    snprintf(buf, size, "?");
  return buf;
}

static const char *format_axis(const fz_fusion *f, const fz_axis *a,
                               char *buf, size_t size) {
  char e[64];
  if (a->kind == FZ_AXIS_BROADCAST && a->expanded)
    snprintf(buf, size, "b1->%s",
             fz_format_extent(f, a->expanded_to, e, sizeof e));
  else if (a->kind == FZ_AXIS_BROADCAST)
    snprintf(buf, size, "b1");
  else if (a->kind == FZ_AXIS_REDUCE)
    snprintf(buf, size, "r%s", fz_format_extent(f, a->extent, e, sizeof e));
  else
    fz_format_extent(f, a->extent, buf, size);
  return buf;
}

const char *fz_format_type(const fz_fusion *f, const fz_type *t, char *buf,
                           size_t size) {
  size_t n = (size_t)snprintf(buf, size, "%s", fz_dtype_name(t->dtype));
  if (t->rank <= 0 || t->rank > FZ_MAX_RANK)
    return buf;
  for (int i = 0; i < t->rank && n < size; i++) {
    char a[80];
    n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "[",
                          format_axis(f, &t->axes[i], a, sizeof a));
  }
  if (n < size)
    snprintf(buf + n, size - n, "]");
  return buf;
}

/* ---- type checks ------------------------------------------------------- */

static fz_status check_extent(const fz_fusion *f, fz_extent e,
                              const char *what, int axis, fz_error *err) {
  if (e.symbol >= 0 && e.symbol >= f->num_symbols)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s axis %d uses symbol %d but the fusion has %d "
                        "symbols",
                        what, axis, (int)e.symbol, f->num_symbols);
  if (e.symbol < 0 && e.value < 0)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s axis %d has negative extent %" PRId64, what, axis,
                        e.value);
  return FZ_OK;
}

/* The constant extents must leave room for any symbol values: their
 * product, in bytes, fits int64 (size.c). */
static fz_status check_constant_size(const fz_type *t, const char *what,
                                     fz_error *err) {
  int64_t constants[FZ_MAX_RANK];
  int n = 0;
  for (int i = 0; i < t->rank; i++) {
    fz_extent e = fz_axis_extent(&t->axes[i]);
    if (e.symbol < 0)
      constants[n++] = e.value;
  }
  return fz_size_of(n, constants, t->dtype, what, FZ_ERR_INVALID, NULL, NULL,
                    err);
}

fz_status fz_check_type(const fz_fusion *f, const fz_type *t,
                        const char *what, fz_error *err) {
  if ((unsigned)t->dtype >= FZ_NUM_DTYPES)
    return fz_error_set(err, FZ_ERR_INVALID, "%s has invalid dtype %d", what,
                        (int)t->dtype);
  if (t->rank < 0 || t->rank > FZ_MAX_RANK)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s has rank %d, outside [0, %d]", what, t->rank,
                        FZ_MAX_RANK);
  for (int i = 0; i < t->rank; i++) {
    const fz_axis *a = &t->axes[i];
    fz_status st;
    switch (a->kind) {
    case FZ_AXIS_ITER:
      if (a->expanded)
        return fz_error_set(err, FZ_ERR_INVALID,
                            "%s axis %d is marked expanded but is not a "
                            "broadcast axis",
                            what, i);
      if ((st = check_extent(f, a->extent, what, i, err)))
        return st;
      break;
    case FZ_AXIS_BROADCAST:
      if (a->extent.symbol >= 0 || a->extent.value != 1)
        return fz_error_set(err, FZ_ERR_INVALID,
                            "%s axis %d is a broadcast axis whose extent is "
                            "not the constant 1",
                            what, i);
      if (a->expanded && (st = check_extent(f, a->expanded_to, what, i, err)))
        return st;
      break;
    case FZ_AXIS_REDUCE:
      return fz_error_set(err, FZ_ERR_INVALID,
                          "%s axis %d is a reduction axis; only kernel plans "
                          "carry those, values never do",
                          what, i);
    default:
      return fz_error_set(err, FZ_ERR_INVALID,
                          "%s axis %d has invalid kind %d", what, i,
                          (int)a->kind);
    }
  }
  return check_constant_size(t, what, err);
}

fz_status fz_check_layout(const fz_type *t, const char *what, fz_error *err) {
  if (!t->has_layout)
    return FZ_OK;
  bool seen[FZ_MAX_RANK] = {0};
  for (int i = 0; i < t->rank; i++) {
    int p = t->alloc_order[i];
    if (p < 0 || p >= t->rank || seen[p])
      return fz_error_set(err, FZ_ERR_INVALID,
                          "%s layout is not a permutation of its %d axes "
                          "(position %d is %d)",
                          what, t->rank, i, p);
    seen[p] = true;
  }
  return FZ_OK;
}

static bool axis_equal(const fz_axis *a, const fz_axis *b) {
  if (a->kind != b->kind)
    return false;
  if (a->kind != FZ_AXIS_BROADCAST)
    return fz_extent_equal(a->extent, b->extent);
  if (a->expanded != b->expanded)
    return false;
  return !a->expanded || fz_extent_equal(a->expanded_to, b->expanded_to);
}

bool fz_type_same_shape(const fz_type *a, const fz_type *b) {
  if (a->dtype != b->dtype || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (!axis_equal(&a->axes[i], &b->axes[i]))
      return false;
  return true;
}

/* ---- helpers for the rules ---------------------------------------------- */

typedef struct infer_ctx {
  const fz_fusion *f;
  const char *op; /* keyword, for messages */
  fz_error *err;
} infer_ctx;

static fz_status fail(infer_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static fz_status fail(infer_ctx *c, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fz_error_set(c->err, FZ_ERR_INVALID, "%s: %s", c->op, msg);
}

static bool is_b1(const fz_axis *a) {
  return a->kind == FZ_AXIS_BROADCAST && !a->expanded;
}

static fz_axis b1_axis(void) {
  return (fz_axis){.kind = FZ_AXIS_BROADCAST, .extent = fz_const_extent(1)};
}

/* Sorted, unique, within [0, limit). */
static fz_status check_dims(infer_ctx *c, int num_dims, const int *dims,
                            int limit, const char *against) {
  if (num_dims < 0 || num_dims > FZ_MAX_RANK)
    return fail(c, "has %d dims, outside [0, %d]", num_dims, FZ_MAX_RANK);
  for (int i = 0; i < num_dims; i++) {
    if (dims[i] < 0 || dims[i] >= limit)
      return fail(c, "dim %d is out of range for %s of rank %d", dims[i],
                  against, limit);
    if (i > 0 && dims[i] <= dims[i - 1])
      return fail(c, "dims must be sorted and unique, but %d follows %d",
                  dims[i], dims[i - 1]);
  }
  return FZ_OK;
}

static fz_status need_shape(infer_ctx *c, const fz_attrs *attrs,
                            const char *what) {
  if (!attrs->shape)
    return fail(c, "needs a %s (attrs->shape is NULL)", what);
  char what_buf[96];
  snprintf(what_buf, sizeof what_buf, "%s: %s", c->op, what);
  return fz_check_type(c->f, attrs->shape, what_buf, c->err);
}

/* ---- the rules, by kind ------------------------------------------------- */

/* Unary, binary and ternary ops: rank-0 operands broadcast; the others
 * must agree axis by axis, with an unexpanded broadcast axis stretching to
 * the other operands' extent. */
static fz_status infer_pointwise_shape(infer_ctx *c, int n,
                                       fz_value *const *ops, fz_type *out) {
  int ref = -1;
  for (int k = 0; k < n; k++) {
    if (ops[k]->type.rank == 0)
      continue;
    if (ref < 0)
      ref = k;
    else if (ops[k]->type.rank != ops[ref]->type.rank)
      return fail(c,
                  "operand %d has rank %d but operand %d has rank %d (only "
                  "rank-0 operands broadcast implicitly)",
                  k, ops[k]->type.rank, ref, ops[ref]->type.rank);
  }
  out->rank = ref < 0 ? 0 : ops[ref]->type.rank;
  for (int i = 0; i < out->rank; i++) {
    int src = -1;
    bool all_expanded = true;
    for (int k = 0; k < n; k++) {
      if (ops[k]->type.rank == 0)
        continue;
      const fz_axis *a = &ops[k]->type.axes[i];
      if (is_b1(a)) {
        all_expanded = false;
        continue;
      }
      if (a->kind != FZ_AXIS_BROADCAST)
        all_expanded = false;
      if (src < 0) {
        src = k;
      } else {
        fz_extent e = fz_axis_extent(a);
        fz_extent want = fz_axis_extent(&ops[src]->type.axes[i]);
        if (!fz_extent_equal(e, want)) {
          char b1[64], b2[64];
          return fail(c, "operand %d axis %d has extent %s but operand %d "
                         "has extent %s",
                      k, i, fz_format_extent(c->f, e, b1, sizeof b1), src,
                      fz_format_extent(c->f, want, b2, sizeof b2));
        }
      }
    }
    if (src < 0) {
      out->axes[i] = b1_axis();
    } else if (all_expanded) {
      out->axes[i] = ops[src]->type.axes[i];
    } else {
      out->axes[i] = (fz_axis){.kind = FZ_AXIS_ITER,
                               .extent =
                                   fz_axis_extent(&ops[src]->type.axes[i])};
    }
  }
  return FZ_OK;
}

/* The dtype an op converts its literal operands to before computing (as
 * the interpreter does): comparisons their promoted dtype, the logical ops
 * and the tests of a value (isnan, isinf, isfinite, signbit) none that
 * could not hold a literal (they look at nonzero-ness or the value
 * itself), every other op its result dtype. */
static fz_dtype literal_target(fz_opcode code, fz_dtype promoted,
                               fz_dtype result) {
  switch (code) {
  case FZ_OP_NOT:
  case FZ_OP_AND:
  case FZ_OP_OR:
  case FZ_OP_XOR:
  case FZ_OP_ISNAN:
  case FZ_OP_ISINF:
  case FZ_OP_ISFINITE:
  case FZ_OP_SIGNBIT:
    return FZ_F64;
  default:
    return fz_op_table[code].flags & FZ_F_TO_BOOL ? promoted : result;
  }
}

/* An integer literal converted to an integer dtype must fit it: PyTorch
 * refuses int8_tensor + 300 ("value cannot be converted to type int8_t
 * without overflow") rather than wrap it. Float dtypes take any literal
 * by IEEE conversion (1e300 in an f32 op is inf). */
static fz_status check_literal_ranges(infer_ctx *c, fz_opcode code, int n,
                                      fz_value *const *ops, fz_dtype promoted,
                                      fz_dtype result) {
  fz_dtype target = literal_target(code, promoted, result);
  int64_t min, max;
  if (!fz_dtype_is_integer(target) || !fz_dtype_int_range(target, &min, &max))
    return FZ_OK;
  for (int k = 0; k < n; k++) {
    const fz_value *v = ops[k];
    if (v->kind == FZ_VALUE_LITERAL && v->type.dtype == FZ_I64 &&
        (v->literal.i < min || v->literal.i > max))
      return fail(c,
                  "operand %d, the literal %" PRId64 ", is out of range of "
                  "%s [%" PRId64 ", %" PRId64 "], the dtype it computes in",
                  k, v->literal.i, fz_dtype_name(target), min, max);
  }
  return FZ_OK;
}

static fz_status infer_pointwise(infer_ctx *c, fz_opcode code, int n,
                                 fz_value *const *ops, fz_type *out) {
  fz_status st = infer_pointwise_shape(c, n, ops, out);
  if (st)
    return st;
  fz_value *const *promoted_ops = ops;
  int num_promoted = n;
  if (code == FZ_OP_WHERE) {
    if (ops[0]->type.dtype != FZ_BOOL)
      return fail(c, "condition (operand 0) must be bool, not %s",
                  fz_dtype_name(ops[0]->type.dtype));
    promoted_ops = ops + 1;
    num_promoted = n - 1;
  }
  fz_dtype p = fz_promote(num_promoted, promoted_ops);
  unsigned flags = fz_op_table[code].flags;
  if ((flags & FZ_F_FLOAT_ONLY) && !fz_dtype_is_float(p))
    return fail(c, "is only defined on floating-point operands, not %s (as "
                   "in PyTorch); cast them first",
                fz_dtype_name(p));
  if ((flags & FZ_F_INT_ONLY) && fz_dtype_is_float(p))
    return fail(c, "is only defined on integer and bool operands, not %s (as "
                   "in PyTorch)",
                fz_dtype_name(p));
  if (p == FZ_BOOL && (flags & FZ_F_NO_BOOL))
    return fail(c, "is not defined on bool operands (as in PyTorch); cast "
                   "them to an integer dtype first");
  /* abs of bool is the value itself, as in PyTorch; neg has no meaning */
  if (p == FZ_BOOL && code == FZ_OP_NEG)
    return fail(c, "is not defined on bool (use not for logical negation)");
  if (p == FZ_BOOL && code == FZ_OP_SUB)
    return fail(c, "subtraction of bool values is not supported (as in "
                   "PyTorch); use ne or a cast");
  out->dtype = fz_op_result_dtype(code, p);
  return check_literal_ranges(c, code, n, ops, p, out->dtype);
}

/* What PyTorch refuses of an arg-reduction: a bool operand (its CUDA
 * kernels take numbers only), and an empty reduced axis, which has no
 * position to give: one of constant extent 0 is an error here (a symbolic
 * one when sizes are bound). */
static fz_status check_arg(infer_ctx *c, fz_opcode code, const fz_value *a,
                           const fz_attrs *attrs) {
  if (!(fz_op_table[code].flags & FZ_F_ARG))
    return FZ_OK;
  if (a->type.dtype == FZ_BOOL)
    return fail(c, "operand is bool (PyTorch's argmax and argmin take "
                   "numbers: cast it first)");
  for (int i = 0; i < attrs->num_dims; i++) {
    fz_extent e = fz_axis_extent(&a->type.axes[attrs->dims[i]]);
    if (e.symbol < 0 && e.value == 0)
      return fail(c, "cannot reduce axis %d of extent 0 (no position to "
                  "return)", attrs->dims[i]);
  }
  return FZ_OK;
}

static fz_status infer_reduction(infer_ctx *c, fz_opcode code,
                                 const fz_value *a, const fz_attrs *attrs,
                                 fz_type *out) {
  if ((fz_op_table[code].flags & FZ_F_FLOAT_ONLY) &&
      !fz_dtype_is_float(a->type.dtype))
    return fail(c, "is only defined on floating-point operands, not %s (as "
                   "in PyTorch); cast them first",
                fz_dtype_name(a->type.dtype));
  if (code == FZ_OP_VAR && !isfinite(attrs->correction))
    return fail(c, "correction %g must be a finite number", attrs->correction);
  if (attrs->num_dims == 0)
    return fail(c, "needs at least one dim to reduce");
  fz_status st =
      check_dims(c, attrs->num_dims, attrs->dims, a->type.rank, "an operand");
  if (st)
    return st;
  if ((st = check_arg(c, code, a, attrs)))
    return st;
  int d = 0;
  out->rank = 0;
  for (int i = 0; i < a->type.rank; i++) {
    bool reduced = d < attrs->num_dims && attrs->dims[d] == i;
    d += reduced;
    if (!reduced)
      out->axes[out->rank++] = a->type.axes[i];
    else if (attrs->keepdim)
      out->axes[out->rank++] = b1_axis();
  }
  fz_value *const operands[1] = {(fz_value *)a};
  out->dtype = fz_op_result_dtype(code, fz_promote(1, operands));
  return FZ_OK;
}

static fz_status infer_broadcast(infer_ctx *c, const fz_value *a,
                                 const fz_attrs *attrs, fz_type *out) {
  int rank = a->type.rank + attrs->num_dims;
  if (attrs->num_dims < 0 || rank > FZ_MAX_RANK)
    return fail(c, "result would have rank %d, more than %d", rank,
                FZ_MAX_RANK);
  fz_status st = check_dims(c, attrs->num_dims, attrs->dims, rank,
                            "the result");
  if (st)
    return st;
  out->dtype = a->type.dtype;
  out->rank = rank;
  int d = 0, k = 0;
  for (int i = 0; i < rank; i++) {
    if (d < attrs->num_dims && attrs->dims[d] == i) {
      out->axes[i] = b1_axis();
      d++;
    } else {
      out->axes[i] = a->type.axes[k++];
    }
  }
  return FZ_OK;
}

static fz_status infer_squeeze(infer_ctx *c, const fz_value *a,
                               const fz_attrs *attrs, fz_type *out) {
  fz_status st =
      check_dims(c, attrs->num_dims, attrs->dims, a->type.rank, "an operand");
  if (st)
    return st;
  out->dtype = a->type.dtype;
  out->rank = 0;
  int d = 0;
  for (int i = 0; i < a->type.rank; i++) {
    const fz_axis *ax = &a->type.axes[i];
    if (!(d < attrs->num_dims && attrs->dims[d] == i)) {
      out->axes[out->rank++] = *ax;
      continue;
    }
    d++;
    if (is_b1(ax))
      continue;
    if (ax->kind == FZ_AXIS_ITER && ax->extent.symbol < 0 &&
        ax->extent.value == 1)
      continue;
    char buf[80];
    if (ax->kind == FZ_AXIS_BROADCAST)
      return fail(c, "operand axis %d is an expanded broadcast (%s) and "
                     "cannot be squeezed",
                  i, format_axis(c->f, ax, buf, sizeof buf));
    return fail(c, "operand axis %d has extent %s; only b1 axes and "
                   "axes of constant extent 1 can be squeezed",
                i, format_axis(c->f, ax, buf, sizeof buf));
  }
  return FZ_OK;
}

static fz_status infer_expand(infer_ctx *c, const fz_value *a,
                              const fz_attrs *attrs, fz_type *out) {
  fz_status st = need_shape(c, attrs, "target shape");
  if (st)
    return st;
  const fz_type *s = attrs->shape;
  if (s->rank != a->type.rank)
    return fail(c, "target has rank %d but the operand has rank %d", s->rank,
                a->type.rank);
  out->dtype = a->type.dtype;
  out->rank = s->rank;
  for (int i = 0; i < s->rank; i++) {
    const fz_axis *from = &a->type.axes[i], *to = &s->axes[i];
    bool ok = is_b1(from) ? to->kind == FZ_AXIS_BROADCAST
                          : axis_equal(from, to);
    if (!ok) {
      char b1[80], b2[80];
      format_axis(c->f, from, b1, sizeof b1);
      format_axis(c->f, to, b2, sizeof b2);
      if (is_b1(from))
        return fail(c, "target axis %d is %s but an expanded b1 axis must be "
                       "written b1->%s",
                    i, b2, b2);
      return fail(c, "target axis %d is %s but operand axis %d is %s; only "
                     "b1 axes can be expanded",
                  i, b2, i, b1);
    }
    out->axes[i] = *to;
  }
  return FZ_OK;
}

static fz_status infer_permute(infer_ctx *c, const fz_value *a,
                               const fz_attrs *attrs, fz_type *out) {
  bool seen[FZ_MAX_RANK] = {0};
  out->dtype = a->type.dtype;
  out->rank = a->type.rank;
  for (int i = 0; i < a->type.rank; i++) {
    int p = attrs->perm[i];
    if (p < 0 || p >= a->type.rank)
      return fail(c, "perm entry %d is %d, out of range for an operand of "
                     "rank %d",
                  i, p, a->type.rank);
    if (seen[p])
      return fail(c, "perm is not a permutation: axis %d appears twice", p);
    seen[p] = true;
    out->axes[i] = a->type.axes[p];
  }
  return FZ_OK;
}

/* Element counts are compared as monomials (symbol_expr.c): products and
 * quotients of symbols, derived ones expanded into their base symbols. */
static void format_count(const fz_fusion *f, const fz_monomial *n, char *buf,
                         size_t size) {
  fz_buf b = {0};
  fz_monomial_format(f, n, &b);
  char *text = fz_buf_take(&b);
  snprintf(buf, size, "%s", text ? text : "?");
  free(text);
}

static fz_status infer_reshape(infer_ctx *c, const fz_value *a,
                               const fz_attrs *attrs, fz_type *out) {
  fz_status st = need_shape(c, attrs, "target shape");
  if (st)
    return st;
  const fz_type *s = attrs->shape;
  for (int i = 0; i < s->rank; i++)
    if (s->axes[i].kind == FZ_AXIS_BROADCAST && s->axes[i].expanded)
      return fail(c, "target axis %d is an expanded broadcast; a reshape "
                     "target may only use plain extents and b1",
                  i);
  fz_monomial from, to;
  fz_monomial_init(&from);
  fz_monomial_init(&to);
  fz_monomial_mul_type(c->f, &from, &a->type, 1);
  fz_monomial_mul_type(c->f, &to, s, 1);
  if (from.overflow || to.overflow)
    return fail(c, "the element count overflows 64 bits");
  if (!fz_monomial_equal(&from, &to)) {
    char t1[256], t2[256], n1[128], n2[128];
    format_count(c->f, &from, n1, sizeof n1);
    format_count(c->f, &to, n2, sizeof n2);
    return fail(c, "cannot prove the element counts equal: operand %s has "
                   "%s elements, target %s has %s",
                fz_format_type(c->f, &a->type, t1, sizeof t1), n1,
                fz_format_type(c->f, s, t2, sizeof t2), n2);
  }
  out->dtype = a->type.dtype;
  out->rank = s->rank;
  memcpy(out->axes, s->axes, sizeof out->axes[0] * (size_t)s->rank);
  return FZ_OK;
}

static fz_status infer_full(infer_ctx *c, fz_opcode code,
                            const fz_attrs *attrs, fz_type *out) {
  fz_status st = need_shape(c, attrs, "result shape");
  if (st)
    return st;
  const fz_type *s = attrs->shape;
  if (code == FZ_OP_IOTA) {
    if (s->rank != 1)
      return fail(c, "result must have rank 1, not %d", s->rank);
    if (s->dtype == FZ_BOOL)
      return fail(c, "result dtype must be an integer or float, not bool");
    if (s->axes[0].kind != FZ_AXIS_ITER)
      return fail(c, "result axis must not be a broadcast axis");
  }
  /* Integer results hold their fill, start and step in their range
   * (bool: 0 or 1); float ones convert them by IEEE rounding. */
  char what[64];
  if (code == FZ_OP_FULL) {
    snprintf(what, sizeof what, "%s: fill value", c->op);
    if (!fz_dtype_is_float(s->dtype))
      st = fz_check_int_in_dtype(attrs->fill.i, s->dtype, what, c->err);
  } else if (!fz_dtype_is_float(s->dtype)) {
    snprintf(what, sizeof what, "%s: start", c->op);
    if (attrs->has_iota_start)
      st = fz_check_int_in_dtype(attrs->iota_start.i, s->dtype, what,
                                  c->err);
    snprintf(what, sizeof what, "%s: step", c->op);
    if (!st && attrs->has_iota_step)
      st = fz_check_int_in_dtype(attrs->iota_step.i, s->dtype, what, c->err);
  }
  if (st)
    return st;
  out->dtype = s->dtype;
  out->rank = s->rank;
  memcpy(out->axes, s->axes, sizeof out->axes[0] * (size_t)s->rank);
  return FZ_OK;
}

/* A symbol read is an i64 scalar. Only a named symbol can be read: the
 * text names it (`symbol N`), and an anonymous one (`?`) has no name to
 * print. */
static fz_status infer_symbol(infer_ctx *c, const fz_attrs *attrs,
                              fz_type *out) {
  int num_symbols = c->f ? c->f->num_symbols : 0;
  if (attrs->symbol < 0 || attrs->symbol >= num_symbols)
    return fail(c, "symbol %d is not a symbol of the fusion (it has %d)",
                attrs->symbol, num_symbols);
  if (!c->f->symbols[attrs->symbol].name)
    return fail(c, "symbol %d is anonymous (`?`); only a named symbol can "
                   "be read",
                attrs->symbol);
  out->dtype = FZ_I64;
  out->rank = 0;
  return FZ_OK;
}

/* rand and randn: a float result of the declared shape, from two i64
 * scalars (seed, offset). An expanded broadcast axis would repeat one
 * value along a run of elements that have distinct indices, so only
 * iteration axes and b1 are allowed. */
static fz_status infer_random(infer_ctx *c, fz_value *const *operands,
                              const fz_attrs *attrs, fz_type *out) {
  static const char *const names[2] = {"seed", "offset"};
  for (int k = 0; k < 2; k++) {
    const fz_type *t = &operands[k]->type;
    if (t->rank != 0 || t->dtype != FZ_I64) {
      char buf[256];
      return fail(c, "operand %d (the %s) must be an i64 scalar, not %s", k,
                  names[k], fz_format_type(c->f, t, buf, sizeof buf));
    }
  }
  fz_status st = need_shape(c, attrs, "result shape");
  if (st)
    return st;
  const fz_type *s = attrs->shape;
  if (!fz_dtype_is_float(s->dtype))
    return fail(c, "result dtype must be a float (f16, bf16, f32, f64), not %s",
                fz_dtype_name(s->dtype));
  for (int i = 0; i < s->rank; i++)
    if (s->axes[i].kind == FZ_AXIS_BROADCAST && s->axes[i].expanded)
      return fail(c, "result axis %d must not be an expanded broadcast axis",
                  i);
  out->dtype = s->dtype;
  out->rank = s->rank;
  memcpy(out->axes, s->axes, sizeof out->axes[0] * (size_t)s->rank);
  return FZ_OK;
}

/* gather and index_select: the data operand x read along dims' one axis d
 * at coordinates an integer index gives. gather's index has x's rank and
 * the result's shape (the other axes are read at the result's coordinate,
 * so their extents must equal x's); index_select's is 1-D and replaces
 * axis d. */
static fz_status infer_gather(infer_ctx *c, fz_opcode code,
                              fz_value *const *operands,
                              const fz_attrs *attrs, fz_type *out) {
  const fz_value *x = operands[0], *index = operands[1];
  char b1[80], b2[80];
  if (x->type.rank == 0)
    return fail(c, "the data operand must have rank 1 or more, not 0");
  if (attrs->num_dims != 1)
    return fail(c, "needs exactly one axis in dims(...), not %d",
                attrs->num_dims);
  int d = attrs->dims[0];
  if (d < 0 || d >= x->type.rank)
    return fail(c, "dim %d is out of range for a data operand of rank %d", d,
                x->type.rank);
  if (index->type.dtype != FZ_I64 && index->type.dtype != FZ_I32)
    return fail(c, "the index must be i64 or i32, not %s",
                fz_dtype_name(index->type.dtype));
  out->dtype = x->type.dtype;
  if (code == FZ_OP_INDEX_SELECT) {
    if (index->type.rank != 1)
      return fail(c, "the index must have rank 1, not %d", index->type.rank);
    *out = x->type;
    out->axes[d] = index->type.axes[0];
    return FZ_OK;
  }
  if (index->type.rank != x->type.rank)
    return fail(c, "the index has rank %d but the data operand has rank %d; "
                   "they must be equal",
                index->type.rank, x->type.rank);
  for (int k = 0; k < x->type.rank; k++) {
    if (k == d)
      continue;
    const fz_axis *xa = &x->type.axes[k], *ia = &index->type.axes[k];
    if (!fz_extent_equal(fz_axis_extent(xa), fz_axis_extent(ia)))
      return fail(c, "index axis %d has extent %s but data axis %d has "
                     "extent %s; axes other than dim %d must agree",
                  k, format_axis(c->f, ia, b1, sizeof b1), k,
                  format_axis(c->f, xa, b2, sizeof b2), d);
  }
  /* the index's axes, except that the result varies where x does: an
   * index broadcast along an axis x spans still reads x's every point */
  out->rank = index->type.rank;
  for (int k = 0; k < x->type.rank; k++)
    out->axes[k] = k != d && x->type.axes[k].kind == FZ_AXIS_ITER
                       ? x->type.axes[k]
                       : index->type.axes[k];
  return FZ_OK;
}

/* ---- entry point -------------------------------------------------------- */

fz_status fz_infer_type(const fz_fusion *f, fz_opcode code, int num_operands,
                        fz_value *const *operands, const fz_attrs *attrs,
                        fz_type *out, fz_error *err) {
  memset(out, 0, sizeof *out);
  if ((unsigned)code >= FZ_NUM_OPCODES)
    return fz_error_set(err, FZ_ERR_INVALID, "invalid opcode %d", (int)code);
  const fz_op_info *info = &fz_op_table[code];
  infer_ctx c = {.f = f, .op = info->name, .err = err};
  if (info->arity < 0 && num_operands < 1)
    return fail(&c, "takes one operand or more but was given %d",
                num_operands);
  if (info->arity >= 0 && num_operands != info->arity)
    return fail(&c, "takes %d operand%s but was given %d", info->arity,
                info->arity == 1 ? "" : "s", num_operands);
  for (int k = 0; k < num_operands; k++)
    if (!operands[k])
      return fail(&c, "operand %d is NULL", k);
  static const fz_attrs none;
  if (!attrs)
    attrs = &none;
  fz_value *a = num_operands > 0 ? operands[0] : NULL;
  fz_status st = FZ_OK;
  switch (info->kind) {
  case FZ_KIND_UNARY:
  case FZ_KIND_BINARY:
  case FZ_KIND_TERNARY:
    st = infer_pointwise(&c, code, num_operands, operands, out);
    break;
  case FZ_KIND_CAST: {
    if (!attrs->shape)
      return fail(&c, "needs a target dtype (attrs->shape is NULL)");
    if ((unsigned)attrs->shape->dtype >= FZ_NUM_DTYPES)
      return fail(&c, "target dtype %d is invalid", (int)attrs->shape->dtype);
    *out = a->type;
    out->dtype = attrs->shape->dtype;
    break;
  }
  case FZ_KIND_REDUCTION:
    st = infer_reduction(&c, code, a, attrs, out);
    break;
  case FZ_KIND_BROADCAST:
    st = infer_broadcast(&c, a, attrs, out);
    break;
  case FZ_KIND_SQUEEZE:
    st = infer_squeeze(&c, a, attrs, out);
    break;
  case FZ_KIND_EXPAND:
    st = infer_expand(&c, a, attrs, out);
    break;
  case FZ_KIND_PERMUTE:
    st = infer_permute(&c, a, attrs, out);
    break;
  case FZ_KIND_RESHAPE:
    st = infer_reshape(&c, a, attrs, out);
    break;
  case FZ_KIND_SET:
    *out = a->type;
    break;
  case FZ_KIND_FULL:
  case FZ_KIND_IOTA:
    st = infer_full(&c, code, attrs, out);
    break;
  case FZ_KIND_SYMBOL:
    st = infer_symbol(&c, attrs, out);
    break;
  case FZ_KIND_RANDOM:
    st = infer_random(&c, operands, attrs, out);
    break;
  case FZ_KIND_GATHER:
    st = infer_gather(&c, code, operands, attrs, out);
    break;
  case FZ_KIND_SLICE:
  case FZ_KIND_PAD:
  case FZ_KIND_CAT:
    st = fz_infer_resize(f, code, num_operands, operands, attrs, out, err);
    break;
  }
  if (st)
    return st;
  /* Operands of checked sizes can still meet in a larger result (an
   * [N, b1] and a [b1, M] operand give [N, M]), and a cast widens. */
  char what[96];
  snprintf(what, sizeof what, "%s: result", info->name);
  if ((st = check_constant_size(out, what, err)))
    return st;
  /* Results start without a declared layout. */
  out->has_layout = false;
  memset(out->alloc_order, 0, sizeof out->alloc_order);
  memset(out->contiguous, 0, sizeof out->contiguous);
  return FZ_OK;
}
