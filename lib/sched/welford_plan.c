/* welford_plan.c - what a plan needs to know of Welford partials.
 *
 * var and mean reduce to a state of three accumulators, (count, mean,
 * m2), so their partials in a split plan's workspace are three times as
 * wide as a sum's; lib/lower/welford.c combines them. */
#include "plan.h"

bool fz_reduce_is_welford(fz_opcode code) {
  return code == FZ_OP_VAR || code == FZ_OP_MEAN;
}

size_t fz_reduce_partial_bytes(fz_opcode code, fz_dtype result) {
  size_t acc = fz_dtype_size(fz_reduce_acc_dtype(result));
  return fz_reduce_is_welford(code) ? 3 * acc : acc;
}
