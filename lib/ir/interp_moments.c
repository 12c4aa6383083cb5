/* interp_moments.c - the reference values of var and mean.
 *
 * The definition the GPU's Welford states are checked against, so it is
 * computed the plain way, in f64 and in two passes: the mean of each
 * kept point, then the sum of squared distances from it. The count is the
 * number of reduced points (the same for every kept point); mean of no
 * points is NaN, and var divides by max(0, count - correction), as
 * torch.var does (inf when correction >= count, NaN for a constant
 * input). Rounded once to the result dtype.
 */
#include "interp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Adds f(x, at) of every source element to acc[at], `at` being its kept
 * point (out_strides: the result's strides per source axis, 0 for the
 * reduced ones). */
static void accumulate(const fz_iview *src, const int64_t *out_strides,
                       double *acc, const double *mean) {
  fz_loop_nest l;
  fz_loop_nest_init(&l, src->rank, src->sizes);
  fz_loop_nest_add(&l, src->offset, src->strides);
  fz_loop_nest_add(&l, 0, out_strides);
  fz_loop_nest_optimize(&l, 0);
  fz_scalar x[FZ_INTERP_CHUNK];
  fz_chunk_cursor c;
  fz_chunk_cursor_start(&c, &l);
  while (fz_chunk_cursor_next(&c)) {
    fz_iload(src, c.off[0], c.step[0], c.len, FZ_F64, x);
    for (int64_t i = 0; i < c.len; i++) {
      int64_t at = c.off[1] + i * c.step[1];
      double d = mean ? x[i].f - mean[at] : x[i].f;
      acc[at] += mean ? d * d : d;
    }
  }
}

fz_status fz_interp_moments(fz_interp *in, const fz_op *op, const fz_iview *src,
                            const bool *reduced, const int64_t *out_strides,
                            fz_iview *res) {
  int64_t n = fz_iview_count(res), count = 1;
  for (int d = 0; d < src->rank; d++)
    if (reduced[d])
      count *= src->sizes[d];
  double *mean = calloc(n > 0 ? (size_t)n : 1, sizeof *mean);
  double *m2 = calloc(n > 0 ? (size_t)n : 1, sizeof *m2);
  if (!mean || !m2) {
    free(mean);
    free(m2);
    return fz_error_set(in->err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory for the moments of %d values",
                        (int)(n < INT32_MAX ? n : INT32_MAX));
  }
  accumulate(src, out_strides, mean, NULL);
  for (int64_t e = 0; e < n; e++)
    mean[e] = count > 0 ? mean[e] / (double)count : NAN;
  if (op->code == FZ_OP_VAR)
    accumulate(src, out_strides, m2, mean);
  fz_scalar *out = res->buf->data;
  double divisor = fmax(0.0, (double)count - op->correction);
  for (int64_t e = 0; e < n; e++)
    out[e].f = op->code == FZ_OP_MEAN ? mean[e] : m2[e] / divisor;
  free(mean);
  free(m2);
  fz_iconvert(out, n, FZ_F64, res->dtype); /* round once */
  return FZ_OK;
}
