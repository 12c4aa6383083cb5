/* interp_argreduce.c - what argmax and argmin compute (docs/format.md).
 *
 * Each result element keeps a running (value, position) pair. The
 * position of a source element is row-major over the reduced axes in
 * their logical order, so it is walked as a third tensor of the loop nest
 * whose "offset" is that position: the nest may then visit the elements
 * in memory order, because the pair that wins does not depend on the
 * order they come in (a greater value wins; equal values and NaNs, which
 * win over every number, go to the smaller position). That is also what
 * lets the kernels combine partial pairs in any tree.
 */
#include "interp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Whether (x, ix) replaces the running pair (acc, iacc). */
static bool wins_f(bool max, double x, int64_t ix, double acc, int64_t iacc) {
  if (isnan(acc))
    return isnan(x) && ix < iacc;
  if (isnan(x))
    return true;
  if (x == acc)
    return ix < iacc;
  return max ? x > acc : x < acc;
}

static bool wins_i(bool max, int64_t x, int64_t ix, int64_t acc,
                   int64_t iacc) {
  if (x == acc)
    return ix < iacc;
  return max ? x > acc : x < acc;
}

fz_status fz_interp_arg_reduce(fz_opcode code, const fz_iview *src,
                               const bool *reduced, const int64_t *out_strides,
                               fz_iview *res, fz_error *err) {
  bool max = code == FZ_OP_ARGMAX;
  bool fl = fz_dtype_is_float(src->dtype);
  fz_dtype load_as = fz_iexact_dtype(src->dtype);
  int64_t n = fz_iview_count(res);
  fz_scalar *best = malloc(sizeof *best * (size_t)(n ? n : 1));
  if (!best)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "%s: no memory for %lld running values",
                        fz_op_table[code].name, (long long)n);
  fz_scalar *pos = res->buf->data;
  for (int64_t e = 0; e < n; e++) {
    if (fl)
      best[e].f = max ? -INFINITY : INFINITY;
    else
      best[e].i = max ? INT64_MIN : INT64_MAX;
    pos[e].i = INT64_MAX; /* any real position wins a tie with it */
  }
  /* the position's stride along each source axis */
  int64_t position[FZ_MAX_RANK] = {0}, span = 1;
  for (int d = src->rank - 1; d >= 0; d--)
    if (reduced[d]) {
      position[d] = span;
      span *= src->sizes[d];
    }
  fz_loop_nest l;
  fz_loop_nest_init(&l, src->rank, src->sizes);
  fz_loop_nest_add(&l, src->offset, src->strides);
  fz_loop_nest_add(&l, 0, out_strides);
  fz_loop_nest_add(&l, 0, position);
  fz_loop_nest_optimize(&l, 0);
  fz_scalar x[FZ_INTERP_CHUNK];
  fz_chunk_cursor c;
  fz_chunk_cursor_start(&c, &l);
  while (fz_chunk_cursor_next(&c)) {
    fz_iload(src, c.off[0], c.step[0], c.len, load_as, x);
    for (int64_t i = 0; i < c.len; i++) {
      int64_t e = c.off[1] + i * c.step[1];
      int64_t ix = c.off[2] + i * c.step[2];
      bool take = fl ? wins_f(max, x[i].f, ix, best[e].f, pos[e].i)
                     : wins_i(max, x[i].i, ix, best[e].i, pos[e].i);
      if (take) {
        best[e] = x[i];
        pos[e].i = ix;
      }
    }
  }
  free(best);
  return FZ_OK;
}
