/* resize.c - the shape rules and builder calls of the resize ops: slice,
 * pad and cat (docs/format.md, "Resize ops").
 *
 * What a resize op can say about its result's extents decides what it
 * accepts: an axis it changes must have a constant extent (a symbol plus
 * or minus a constant is not an extent fz can write), while an axis it
 * leaves alone may be symbolic. So a slice takes a symbolic axis only
 * whole, a pad pads only constant axes, and cat joins along a constant
 * axis; the other axes are compared by extent, as pointwise ops compare
 * them. A broadcast axis that is sliced stays a broadcast of the new
 * extent (every element of it is the same value); one that is padded or
 * joined becomes an ordinary axis, since the fill or the other operands
 * differ along it.
 */
#include "fz/ir.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static fz_status fail(fz_error *err, const char *op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static fz_status fail(fz_error *err, const char *op, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fz_error_set(err, FZ_ERR_INVALID, "%s: %s", op, msg);
}

static fz_status need_tensor(const fz_value *a, int k, const char *op,
                             fz_error *err) {
  if (a->kind == FZ_VALUE_LITERAL || a->type.rank == 0)
    return fail(err, op, "operand %d is a scalar; %s needs a tensor of rank "
                         "1 or more", k, op);
  return FZ_OK;
}

static fz_axis iter_axis(int64_t n) {
  return (fz_axis){.kind = FZ_AXIS_ITER, .extent = fz_const_extent(n)};
}

static fz_status infer_slice(const fz_fusion *f, const fz_value *a,
                             const fz_resize *r, fz_type *out,
                             fz_error *err) {
  *out = (fz_type){.dtype = a->type.dtype, .rank = a->type.rank};
  for (int k = 0; k < a->type.rank; k++) {
    const fz_axis *ax = &a->type.axes[k];
    fz_extent e = fz_axis_extent(ax);
    char es[64];
    fz_format_extent(f, e, es, sizeof es);
    if (r->step[k] < 1)
      return fail(err, "slice", "axis %d: step %" PRId64 " must be 1 or more",
                  k, r->step[k]);
    if (r->start[k] < 0)
      return fail(err, "slice", "axis %d: start %" PRId64 " is negative", k,
                  r->start[k]);
    if (r->stop[k].symbol >= 0) {
      if (!fz_extent_equal(r->stop[k], e))
        return fail(err, "slice",
                    "axis %d: stop must be a constant or the axis's own "
                    "extent %s",
                    k, es);
      if (e.symbol >= 0 && (r->start[k] != 0 || r->step[k] != 1))
        return fail(err, "slice",
                    "axis %d has the symbolic extent %s: it can only be "
                    "taken whole (start 0, stop %s, step 1)",
                    k, es, es);
      out->axes[k] = *ax;
      continue;
    }
    if (e.symbol >= 0)
      return fail(err, "slice",
                  "axis %d has the symbolic extent %s: it can only be taken "
                  "whole (start 0, stop %s, step 1)",
                  k, es, es);
    int64_t stop = r->stop[k].value;
    if (stop < r->start[k] || stop > e.value)
      return fail(err, "slice",
                  "axis %d: start %" PRId64 " and stop %" PRId64
                  " must satisfy 0 <= start <= stop <= %" PRId64,
                  k, r->start[k], stop, e.value);
    int64_t n = (stop - r->start[k] + r->step[k] - 1) / r->step[k];
    if (ax->kind == FZ_AXIS_BROADCAST && n == 1)
      out->axes[k] = (fz_axis){.kind = FZ_AXIS_BROADCAST,
                               .extent = fz_const_extent(1)};
    else if (ax->kind == FZ_AXIS_BROADCAST && n > 1)
      out->axes[k] = (fz_axis){.kind = FZ_AXIS_BROADCAST,
                               .extent = fz_const_extent(1),
                               .expanded = true,
                               .expanded_to = fz_const_extent(n)};
    else
      out->axes[k] = iter_axis(n);
  }
  return FZ_OK;
}

static fz_status infer_pad(const fz_fusion *f, const fz_value *a,
                           const fz_resize *r, fz_scalar fill, fz_type *out,
                           fz_error *err) {
  *out = (fz_type){.dtype = a->type.dtype, .rank = a->type.rank};
  for (int k = 0; k < a->type.rank; k++) {
    const fz_axis *ax = &a->type.axes[k];
    if (r->low[k] == 0 && r->high[k] == 0) {
      out->axes[k] = *ax;
      continue;
    }
    fz_extent e = fz_axis_extent(ax);
    if (e.symbol >= 0) {
      char es[64];
      return fail(err, "pad",
                  "axis %d has the symbolic extent %s: only constant axes "
                  "can be padded",
                  k, fz_format_extent(f, e, es, sizeof es));
    }
    const int64_t big = INT64_MAX / 4; /* keeps the sum below from overflowing */
    if (r->low[k] < -e.value || r->high[k] < -e.value || r->low[k] > big ||
        r->high[k] > big || e.value + r->low[k] + r->high[k] < 0)
      return fail(err, "pad",
                  "axis %d: widths (%" PRId64 ", %" PRId64
                  ") crop more than its %" PRId64 " elements",
                  k, r->low[k], r->high[k], e.value);
    out->axes[k] = iter_axis(e.value + r->low[k] + r->high[k]);
  }
  if (!fz_dtype_is_float(a->type.dtype))
    return fz_check_int_in_dtype(fill.i, a->type.dtype, "pad: the value",
                                 err);
  return FZ_OK;
}

static bool same_axis(const fz_axis *x, const fz_axis *y) {
  return x->kind == y->kind && x->expanded == y->expanded &&
         fz_extent_equal(x->extent, y->extent) &&
         (!x->expanded || fz_extent_equal(x->expanded_to, y->expanded_to));
}

static fz_status infer_cat(const fz_fusion *f, int n,
                           fz_value *const *operands, const fz_attrs *attrs,
                           fz_type *out, fz_error *err) {
  const fz_value *a = operands[0];
  int rank = a->type.rank;
  if (attrs->num_dims != 1)
    return fail(err, "cat", "needs exactly one axis in dims, not %d",
                attrs->num_dims);
  int axis = attrs->dims[0];
  if (axis < 0 || axis >= rank)
    return fail(err, "cat", "axis %d is out of range for rank %d", axis,
                rank);
  *out = a->type;
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    const fz_value *b = operands[i];
    fz_status st = need_tensor(b, i, "cat", err);
    if (st)
      return st;
    if (b->type.rank != rank)
      return fail(err, "cat", "operand %d has rank %d but operand 0 has %d",
                  i, b->type.rank, rank);
    if (b->type.dtype != a->type.dtype)
      return fail(err, "cat", "operand %d has dtype %s but operand 0 has %s "
                              "(cast first)",
                  i, fz_dtype_name(b->type.dtype),
                  fz_dtype_name(a->type.dtype));
    for (int k = 0; k < rank; k++) {
      const fz_axis *x = &b->type.axes[k];
      fz_extent e = fz_axis_extent(x);
      char es[64], as[64];
      if (k == axis) {
        if (e.symbol >= 0)
          return fail(err, "cat",
                      "operand %d axis %d has the symbolic extent %s: cat "
                      "joins along constant axes only",
                      i, k, fz_format_extent(f, e, es, sizeof es));
        if (e.value > INT64_MAX / 4 - total)
          return fail(err, "cat", "the joined extent overflows");
        total += e.value;
        continue;
      }
      fz_extent want = fz_axis_extent(&out->axes[k]);
      if (!fz_extent_equal(e, want))
        return fail(err, "cat",
                    "operand %d axis %d has extent %s but operand 0 has %s",
                    i, k, fz_format_extent(f, e, es, sizeof es),
                    fz_format_extent(f, want, as, sizeof as));
      if (!same_axis(x, &out->axes[k]))
        out->axes[k] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = want};
    }
  }
  out->axes[axis] = iter_axis(total);
  return FZ_OK;
}

fz_status fz_infer_resize(const fz_fusion *f, fz_opcode code, int n,
                          fz_value *const *operands, const fz_attrs *attrs,
                          fz_type *out, fz_error *err) {
  const char *op = fz_op_table[code].name;
  fz_status st = need_tensor(operands[0], 0, op, err);
  if (st)
    return st;
  switch (code) {
  case FZ_OP_SLICE:
    return infer_slice(f, operands[0], &attrs->resize, out, err);
  case FZ_OP_PAD:
    return infer_pad(f, operands[0], &attrs->resize, attrs->fill, out, err);
  case FZ_OP_CAT:
    return infer_cat(f, n, operands, attrs, out, err);
  default:
    FZ_DIE("not a resize op: %s", op);
  }
}

/* ---- builder calls -------------------------------------------------------- */

fz_value *fz_slice(fz_fusion *f, fz_value *a, const int64_t *start,
                   const fz_extent *stop, const int64_t *step, fz_error *err) {
  fz_attrs attrs = {0};
  if (a && (!start || !stop) && a->type.rank > 0) {
    fz_error_set(err, FZ_ERR_INVALID, "slice: start or stop is NULL");
    return NULL;
  }
  for (int k = 0; a && k < a->type.rank && k < FZ_MAX_RANK; k++) {
    attrs.resize.start[k] = start[k];
    attrs.resize.stop[k] = stop[k];
    attrs.resize.step[k] = step ? step[k] : 1;
  }
  return fz_build(f, FZ_OP_SLICE, 1, &a, &attrs, err);
}

fz_value *fz_pad(fz_fusion *f, fz_value *a, const int64_t *low,
                 const int64_t *high, double value, fz_error *err) {
  fz_attrs attrs = {0};
  if (a && (!low || !high) && a->type.rank > 0) {
    fz_error_set(err, FZ_ERR_INVALID, "pad: low or high is NULL");
    return NULL;
  }
  for (int k = 0; a && k < a->type.rank && k < FZ_MAX_RANK; k++) {
    attrs.resize.low[k] = low[k];
    attrs.resize.high[k] = high[k];
  }
  if (a && fz_scalar_of_double(value, a->type.dtype, "pad: the value",
                               &attrs.fill, err))
    return NULL;
  return fz_build(f, FZ_OP_PAD, 1, &a, &attrs, err);
}

fz_value *fz_cat(fz_fusion *f, int num_operands, fz_value *const *operands,
                 int dim, fz_error *err) {
  fz_attrs attrs = {.num_dims = 1, .dims = {dim}};
  if (num_operands < 1 || !operands) {
    fz_error_set(err, FZ_ERR_INVALID, "cat: needs one operand or more");
    return NULL;
  }
  return fz_build(f, FZ_OP_CAT, num_operands, operands, &attrs, err);
}

/* ---- handle calls (fz.h) ---------------------------------------------------- */

fz_value *fz_build_slice(fz_fusion *f, fz_value *a, const int64_t *start,
                         const int64_t *stop, const int64_t *step,
                         fz_error *err) {
  if (!fz_check_handle_operand(f, a, "slice", err))
    return NULL;
  int rank = a->type.rank;
  if (rank > 0 && (!start || !stop)) {
    fz_error_set(err, FZ_ERR_INVALID, "slice: start or stop is NULL");
    return NULL;
  }
  fz_extent stops[FZ_MAX_RANK];
  for (int k = 0; k < rank && k < FZ_MAX_RANK; k++)
    stops[k] = stop[k] == FZ_SLICE_END ? fz_axis_extent(&a->type.axes[k])
                                       : fz_const_extent(stop[k]);
  return fz_slice(f, a, start, stops, step, err);
}

fz_value *fz_build_pad(fz_fusion *f, fz_value *a, const int64_t *low,
                       const int64_t *high, double value, fz_error *err) {
  if (!fz_check_handle_operand(f, a, "pad", err))
    return NULL;
  return fz_pad(f, a, low, high, value, err);
}

fz_value *fz_build_cat(fz_fusion *f, int num_operands,
                       fz_value *const *operands, int dim, fz_error *err) {
  if (!f) {
    fz_error_set(err, FZ_ERR_ARGUMENT, "cat: fusion is NULL");
    return NULL;
  }
  return fz_cat(f, num_operands, operands, dim, err);
}
