/* interp_gather.c - what gather and index_select compute (docs/format.md):
 * every result element reads the data operand at the result's coordinate
 * with the coordinate along dims' axis replaced by an index value. An
 * index outside [0, extent) is an error, as in PyTorch (which refuses
 * negative indices as well), never a read elsewhere.
 */
#include "interp.h"

#include <inttypes.h>
#include <string.h>

fz_status fz_interp_eval_gather(fz_interp *in, const fz_op *op,
                                fz_iview *res) {
  fz_iview xt, it;
  const fz_iview *x = fz_interp_operand(in, op->operands[0], &xt);
  const fz_iview *index = fz_interp_operand(in, op->operands[1], &it);
  int d = op->dims[0];
  bool select = op->code == FZ_OP_INDEX_SELECT;
  fz_status st = fz_interp_new_dense(in, op->result, NULL, -1, res);
  if (st)
    return st;
  fz_dtype exact = fz_iexact_dtype(x->dtype);
  int rank = res->rank;
  int64_t n = fz_iview_count(res);
  int64_t coord[FZ_MAX_RANK] = {0};
  fz_scalar *out = res->buf->data;
  for (int64_t e = 0; e < n; e++) {
    int64_t ioff = index->offset, xoff = x->offset;
    if (select)
      ioff += coord[d] * index->strides[0];
    else
      for (int k = 0; k < rank; k++)
        ioff += coord[k] * index->strides[k];
    fz_scalar i;
    fz_iload(index, ioff, 0, 1, FZ_I64, &i);
    if (i.i < 0 || i.i >= x->sizes[d]) {
      char label[64];
      fz_value_label(op->operands[0], label, sizeof label);
      return fz_interp_invalid(in, op,
                               "index %" PRId64 " is out of range [0, %" PRId64
                               ") of axis %d of %s",
                               i.i, x->sizes[d], d, label);
    }
    for (int k = 0; k < rank; k++)
      xoff += (k == d ? i.i : coord[k]) * x->strides[k];
    fz_iload(x, xoff, 0, 1, exact, &out[e]);
    for (int k = rank - 1; k >= 0; k--) { /* row-major: the next element */
      if (++coord[k] < res->sizes[k])
        break;
      coord[k] = 0;
    }
  }
  fz_iconvert(out, n, exact, res->dtype);
  return FZ_OK;
}
