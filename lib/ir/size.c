/* size.c - checked products of sizes.
 *
 * Extents come from users (the text, fz_fusion_add_tensor, --bind, the
 * sizes of the tensors handed to the interpreter or the executor), and fz
 * multiplies them everywhere: element counts, byte sizes, dense strides,
 * the span of a strided view. Signed overflow is undefined behaviour, and
 * a wrapped count allocates too little and then indexes past the end, so
 * sizes are checked here, once, where they enter: a value whose sizes
 * pass fz_size_of has every dense stride, element count and byte size,
 * in any axis order, below INT64_MAX, and the code that later multiplies
 * them needs no checks of its own.
 *
 * The bound is on the product of the *nonzero* sizes times the element
 * size, not on the element count alone: an empty tensor of [2^62, 4, 0]
 * has no elements, but its dense strides would still overflow.
 */
#include "fz/ir.h"

#include <inttypes.h>
#include <stdio.h>

bool fz_size_mul(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

fz_status fz_size_of(int rank, const int64_t *sizes, fz_dtype dtype,
                     const char *what, fz_status status, int64_t *elements,
                     int64_t *bytes, fz_error *err) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int i = 0; i < rank; i++) {
    if (sizes[i] < 0)
      return fz_error_set(err, status, "%s: axis %d has negative size %" PRId64,
                          what, i, sizes[i]);
    if (sizes[i] == 0) {
      empty = true;
      continue;
    }
    int64_t before = nonzero;
    if (!fz_size_mul(before, sizes[i], &nonzero))
      return fz_error_set(err, status,
                          "%s: extent product %" PRId64 " x %" PRId64
                          " overflows int64",
                          what, before, sizes[i]);
  }
  int64_t esize = (int64_t)fz_dtype_size(dtype), total;
  if (!fz_size_mul(nonzero, esize, &total))
    return fz_error_set(err, status,
                        "%s: %" PRId64 " elements x %" PRId64
                        " bytes overflows int64",
                        what, nonzero, esize);
  if (elements)
    *elements = empty ? 0 : nonzero;
  if (bytes)
    *bytes = empty ? 0 : total;
  return FZ_OK;
}

fz_status fz_size_span(int rank, const int64_t *sizes, const int64_t *strides,
                       fz_dtype dtype, const char *what, fz_status status,
                       int64_t *elements, fz_error *err) {
  int64_t span = 1;
  bool empty = false;
  for (int i = 0; i < rank; i++) {
    if (sizes[i] < 0)
      return fz_error_set(err, status, "%s: axis %d has negative size %" PRId64,
                          what, i, sizes[i]);
    empty |= sizes[i] == 0;
    if (sizes[i] <= 1)
      continue;
    /* |stride|: a view reaches as far behind its start as ahead. */
    int64_t step = strides[i] == INT64_MIN ? INT64_MAX
                   : strides[i] < 0        ? -strides[i]
                                           : strides[i];
    int64_t reach;
    if (strides[i] == INT64_MIN || !fz_size_mul(sizes[i] - 1, step, &reach) ||
        __builtin_add_overflow(span, reach, &span))
      return fz_error_set(err, status,
                          "%s: axis %d (size %" PRId64 ", stride %" PRId64
                          ") reaches past int64 elements",
                          what, i, sizes[i], strides[i]);
  }
  int64_t bytes;
  if (!fz_size_mul(span, (int64_t)fz_dtype_size(dtype), &bytes))
    return fz_error_set(err, status,
                        "%s: a span of %" PRId64 " elements x %zu bytes "
                        "overflows int64",
                        what, span, fz_dtype_size(dtype));
  *elements = empty ? 0 : span;
  return FZ_OK;
}

fz_status fz_type_sizes(const fz_type *type, const int64_t *symbol_values,
                        const char *what, fz_status status,
                        int64_t sizes[FZ_MAX_RANK], int64_t *elements,
                        int64_t *bytes, fz_error *err) {
  if (type->rank < 0 || type->rank > FZ_MAX_RANK)
    return fz_error_set(err, status, "%s: rank %d is outside [0, %d]", what,
                        type->rank, FZ_MAX_RANK);
  for (int i = 0; i < type->rank; i++)
    sizes[i] = fz_axis_size(&type->axes[i], symbol_values);
  return fz_size_of(type->rank, sizes, type->dtype, what, status, elements,
                    bytes, err);
}

fz_status fz_check_sizes(const fz_fusion *f, const int64_t *symbol_values,
                         fz_status status, fz_error *err) {
  int64_t sizes[FZ_MAX_RANK];
  char what[82]; /* "%" and at most 80 characters of a name */
  for (int i = 0; i < f->num_inputs + f->num_ops; i++) {
    const fz_value *v =
        i < f->num_inputs ? f->inputs[i] : f->ops[i - f->num_inputs]->result;
    /* every call of a fusion checks every value: the label is made only
     * for the message of one that fails */
    if (fz_type_sizes(&v->type, symbol_values, "", status, sizes, NULL, NULL,
                      NULL) == FZ_OK)
      continue;
    fz_value_label(v, what, sizeof what);
    return fz_type_sizes(&v->type, symbol_values, what, status, sizes, NULL,
                         NULL, err);
  }
  return FZ_OK;
}

void fz_type_dense_strides(const fz_type *t, const int64_t *sizes,
                           int64_t *strides) {
  int64_t stride = 1;
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->has_layout ? t->alloc_order[p] : p;
    strides[axis] = stride;
    stride *= sizes[axis] > 1 ? sizes[axis] : 1;
  }
}
