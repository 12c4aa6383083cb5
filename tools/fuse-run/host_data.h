/* host_data.h - typed host buffers for fuse-run: strided allocation in a
 * declared layout, random fill, reading elements back as doubles. */
#ifndef FZ_FUSE_RUN_HOST_DATA_H
#define FZ_FUSE_RUN_HOST_DATA_H

#include "fz/ir.h"

/* Element i (a raw pointer) of dtype as a double (ints exactly up to 2^53). */
double host_load(fz_dtype dtype, const void *p);
/* Store v (already representable, or rounded here) into element p. */
void host_store(fz_dtype dtype, void *p, double v);

/* Strides for sizes laid out in alloc_order (outermost first); axes listed
 * as non-contiguous get a gap of `pad` elements after each step. *span is
 * the number of elements the allocation must span. FZ_ERR_ARGUMENT, named
 * after `what`, when the padded layout overflows int64. */
fz_status host_layout(int rank, const int64_t *sizes, fz_dtype dtype,
                      const int *alloc_order, const bool *contiguous,
                      int64_t pad, const char *what, int64_t *strides,
                      int64_t *span, fz_error *err);

/* A random value for dtype: floats in [-1, 1) never 0; ints in [-8, 8)
 * never 0; bool random. Rounded to the dtype. */
double host_random_value(fz_dtype dtype, uint64_t *state);

#endif
