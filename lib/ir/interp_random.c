/* interp_random.c - rand and randn in the reference interpreter: every
 * element from its row-major linear index through philox.c, which is
 * what the GPU computes too (bit for bit for rand).
 */
#include "interp.h"

static int64_t scalar_operand(fz_interp *in, const fz_value *v) {
  fz_iview tmp;
  const fz_iview *view = fz_interp_operand(in, v, &tmp);
  fz_scalar s;
  fz_iload(view, view->offset, 0, 1, FZ_I64, &s);
  return s.i;
}

fz_status fz_interp_eval_random(fz_interp *in, const fz_op *op,
                                fz_iview *res) {
  if (op->num_operands != 2)
    return fz_interp_invalid(in, op, "takes 2 operands, not %d",
                             op->num_operands);
  for (int k = 0; k < 2; k++)
    if (op->operands[k]->type.rank != 0)
      return fz_interp_invalid(in, op, "operand %d is not a scalar", k);
  int64_t seed = scalar_operand(in, op->operands[0]);
  int64_t offset = scalar_operand(in, op->operands[1]);
  fz_status st = fz_interp_new_dense(in, op->result, NULL, -1, res);
  if (st)
    return st;
  int64_t n = fz_iview_count(res);
  fz_scalar *data = res->buf->data;
  fz_dtype dtype = op->result->type.dtype;
  for (int64_t e = 0; e < n; e++)
    data[e].f = fz_philox_value(op->code, dtype, seed, offset, e);
  fz_iconvert(data, n, FZ_F64, dtype);
  return FZ_OK;
}
