/* host_tensor.h - random host tensors for the reference interpreter: the
 * inputs fuse-opt --run-reference and fuse-run make (host_tensor.c).
 *
 * Part of fz_testing, not of libfz. An input is allocated in its declared
 * layout (allocation order, a gap after each non-contiguous axis, stride 0
 * along expanded broadcasts), so the interpreter reads the strides a
 * kernel would, and every element of the allocation, gaps included, is
 * drawn from splitmix64 in memory order: the same seed gives the same
 * bytes on every machine. Values are never 0 (a zero hides a wrong operand in a
 * product). f16 and bf16 elements are their bit patterns, bool one byte.
 *
 * The two tools draw their values and place their gaps differently, and
 * each way is pinned from outside: lit tests pin fuse-opt's checksums,
 * and a seed fuse-run printed for a failure repeats it only with the same
 * bytes. So the differences are parameters (fz_host_values,
 * fz_host_padding) rather than one rule.
 */
#ifndef FZ_TESTING_HOST_TENSOR_H
#define FZ_TESTING_HOST_TENSOR_H

#include "fz/ir.h"

/* The values drawn for each element. Floats come from u, uniform in
 * [0, 1) from the top 53 bits of a draw, as 2u - 1 rounded to the dtype. */
typedef enum fz_host_values {
  /* fuse-opt --run-reference: floats in [-1, 1), drawn again when the
   * rounding gives 0 or 1; integers in [-8, 8] without 0, one draw each;
   * bool the draw's top bit. */
  FZ_HOST_VALUES_SYMMETRIC,
  /* fuse-run: floats in [-1, 1] (1 where the rounding gives it), drawn
   * again when 0; integers in [-8, 7], drawn again when 0; bool the draw's
   * low bit. */
  FZ_HOST_VALUES_REDRAWN,
} fz_host_values;

/* Where an input's gaps go and how broadcast axes are laid out. */
typedef enum fz_host_padding {
  /* fuse-opt --run-reference: a non-contiguous axis gets twice its dense
   * stride (a gap as long as the dense step); an expanded broadcast takes
   * no room and no gap; an unexpanded one (size 1) is an ordinary axis. */
  FZ_HOST_PAD_DOUBLE,
  /* fuse-run: a non-contiguous axis gets its dense stride plus `pad`
   * elements; every broadcast axis is laid out as size 1 (gap included)
   * and then read with stride 0. */
  FZ_HOST_PAD_ELEMENTS,
} fz_host_padding;

typedef struct fz_host_inputs {
  fz_host_values values;
  fz_host_padding padding;
  int64_t pad;    /* FZ_HOST_PAD_ELEMENTS: the gap, in elements (>= 0) */
  int64_t offset; /* elements before the tensor's first one, to test
                     misaligned pointers (>= 0); filled like the rest */
} fz_host_inputs;

/* A random input of `type` (which has a layout, as every input does) at
 * these logical sizes (ones fz_check_sizes accepted), drawing from *state.
 * On success view->data points `offset` elements into *base, a malloc'd
 * allocation that the caller frees, of *elements elements (the span the
 * view reaches plus the offset; elements may be NULL). FZ_ERR_ARGUMENT,
 * naming `what`, when the padded layout or the offset overflows int64;
 * FZ_ERR_OUT_OF_MEMORY. Nothing is allocated on failure (*base and
 * view->data are NULL). */
fz_status fz_host_random_input(const fz_type *type, const int64_t *sizes,
                               const fz_host_inputs *how, const char *what,
                               uint64_t *state, fz_host_tensor *view,
                               void **base, int64_t *elements, fz_error *err);

/* The strides and span of fz_host_random_input's layout, alone. */
fz_status fz_host_input_layout(const fz_type *type, const int64_t *sizes,
                               const fz_host_inputs *how, const char *what,
                               int64_t *strides, int64_t *span,
                               fz_error *err);

/* One random value of dtype (already exact in it), advancing *state. */
double fz_host_random_value(fz_host_values values, fz_dtype dtype,
                            uint64_t *state);

/* Element `element` (a pointer to it) of dtype as a double: integers
 * exactly up to 2^53, f16 and bf16 through libfz's conversions. */
double fz_host_load(fz_dtype dtype, const void *element);
/* Stores v into the element, rounded to dtype as a GPU store rounds. */
void fz_host_store(fz_dtype dtype, void *element, double v);

/* The element count of sizes that fz_check_sizes accepted (0 when a size
 * is 0). */
int64_t fz_host_count(int rank, const int64_t *sizes);

#endif
