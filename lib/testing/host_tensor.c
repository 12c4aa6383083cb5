/* host_tensor.c - random host tensors for the reference interpreter
 * (host_tensor.h). */
#include "testing/host_tensor.h"

#include "testing/splitmix.h"

#include <stdlib.h>
#include <string.h>

double fz_host_load(fz_dtype dtype, const void *p) {
  switch (dtype) {
  case FZ_F64: { double v; memcpy(&v, p, 8); return v; }
  case FZ_F32: { float v; memcpy(&v, p, 4); return v; }
  case FZ_F16: { uint16_t v; memcpy(&v, p, 2); return fz_f16_to_double(v); }
  case FZ_BF16: { uint16_t v; memcpy(&v, p, 2); return fz_bf16_to_double(v); }
  case FZ_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
  case FZ_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case FZ_I8: { int8_t v; memcpy(&v, p, 1); return v; }
  case FZ_BOOL: { uint8_t v; memcpy(&v, p, 1); return v != 0; }
  case FZ_NUM_DTYPES: break;
  }
  FZ_DIE("bad dtype %d", (int)dtype);
}

void fz_host_store(fz_dtype dtype, void *p, double v) {
  switch (dtype) {
  case FZ_F64: memcpy(p, &v, 8); return;
  case FZ_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
  case FZ_F16:
  case FZ_BF16: {
    uint16_t h = dtype == FZ_F16 ? fz_f16_from_double(v)
                                 : fz_bf16_from_double(v);
    memcpy(p, &h, 2);
    return;
  }
  case FZ_I64: { int64_t i = (int64_t)v; memcpy(p, &i, 8); return; }
  case FZ_I32: { int32_t i = (int32_t)v; memcpy(p, &i, 4); return; }
  case FZ_I8: { int8_t i = (int8_t)v; memcpy(p, &i, 1); return; }
  case FZ_BOOL: { uint8_t b = v != 0; memcpy(p, &b, 1); return; }
  case FZ_NUM_DTYPES: break;
  }
  FZ_DIE("bad dtype %d", (int)dtype);
}

int64_t fz_host_count(int rank, const int64_t *sizes) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= sizes[d]; /* bounded: fz_check_sizes accepted them */
  return n;
}

double fz_host_random_value(fz_host_values values, fz_dtype dtype,
                            uint64_t *state) {
  bool symmetric = values == FZ_HOST_VALUES_SYMMETRIC;
  if (dtype == FZ_BOOL)
    return (double)(symmetric ? fz_splitmix64(state) >> 63
                              : fz_splitmix64(state) & 1);
  if (fz_dtype_is_float(dtype)) {
    for (;;) {
      double u = (double)(fz_splitmix64(state) >> 11) * 0x1p-53; /* [0, 1) */
      double v = fz_round_to_dtype(2 * u - 1, dtype);
      if (v != 0 && (v < 1 || !symmetric))
        return v;
    }
  }
  for (;;) {
    int64_t v = (int64_t)(fz_splitmix64(state) % 16) - 8; /* [-8, 7] */
    if (symmetric)
      return (double)(v >= 0 ? v + 1 : v); /* [-8, 8] without 0 */
    if (v != 0)
      return (double)v;
  }
}

fz_status fz_host_input_layout(const fz_type *t, const int64_t *sizes,
                               const fz_host_inputs *how, const char *what,
                               int64_t *strides, int64_t *span,
                               fz_error *err) {
  bool doubled = how->padding == FZ_HOST_PAD_DOUBLE;
  /* The sizes the allocation spans: under FZ_HOST_PAD_ELEMENTS a broadcast
   * axis holds one element. */
  int64_t room[FZ_MAX_RANK];
  int64_t running = 1; /* the dense stride of the next axis out */
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->alloc_order[p];
    const fz_axis *a = &t->axes[axis];
    bool broadcast = a->kind == FZ_AXIS_BROADCAST;
    room[axis] = broadcast && !doubled ? 1 : sizes[axis];
    if (doubled && broadcast && a->expanded) {
      strides[axis] = 0;
      continue;
    }
    int64_t gap = t->contiguous[p] ? 0 : doubled ? running : how->pad;
    if (__builtin_add_overflow(running, gap, &strides[axis]) ||
        !fz_size_mul(strides[axis], room[axis] > 0 ? room[axis] : 1,
                     &running))
      return fz_error_set(err, FZ_ERR_ARGUMENT,
                          "%s: its padded layout overflows int64", what);
  }
  fz_status st = fz_size_span(t->rank, room, strides, t->dtype, what,
                              FZ_ERR_ARGUMENT, span, err);
  for (int d = 0; d < t->rank && !doubled; d++)
    if (t->axes[d].kind == FZ_AXIS_BROADCAST)
      strides[d] = 0; /* every index reads the one element */
  return st;
}

fz_status fz_host_random_input(const fz_type *t, const int64_t *sizes,
                               const fz_host_inputs *how, const char *what,
                               uint64_t *state, fz_host_tensor *view,
                               void **base, int64_t *elements, fz_error *err) {
  *base = NULL;
  *view = (fz_host_tensor){.dtype = t->dtype, .rank = t->rank};
  memcpy(view->sizes, sizes, sizeof *sizes * (size_t)t->rank);
  int64_t span, count;
  fz_status st = fz_host_input_layout(t, sizes, how, what, view->strides,
                                      &span, err);
  if (st)
    return st;
  if (__builtin_add_overflow(span, how->offset, &count))
    return fz_error_set(err, FZ_ERR_ARGUMENT, "%s: its offset overflows int64",
                        what);
  if ((st = fz_size_of(1, &count, t->dtype, what, FZ_ERR_ARGUMENT, NULL, NULL,
                       err)))
    return st;
  size_t esize = fz_dtype_size(t->dtype);
  unsigned char *data = calloc(count > 0 ? (size_t)count : 1, esize);
  if (!data)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory allocating %s", what);
  for (int64_t e = 0; e < count; e++)
    fz_host_store(t->dtype, data + (size_t)e * esize,
                  fz_host_random_value(how->values, t->dtype, state));
  view->data = data + (size_t)how->offset * esize;
  *base = data;
  if (elements)
    *elements = count;
  return FZ_OK;
}
