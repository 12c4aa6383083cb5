/* interp_resize.c - slice, pad and cat in the reference interpreter, with
 * PyTorch's semantics (x[start:stop:step], torch.nn.functional.pad with a
 * constant, torch.cat).
 *
 * A slice is a view of its operand's storage (an offset and scaled
 * strides), as the shape ops are; pad and cat copy into a new dense
 * buffer, pad after filling it with its value.
 */
#include "interp.h"

#include <string.h>

static fz_status eval_slice(fz_interp *in, const fz_op *op,
                            const fz_iview *src, const int64_t *sizes,
                            fz_iview *res) {
  fz_iview r = *src;
  for (int k = 0; k < src->rank; k++) {
    if (sizes[k] > 0)
      r.offset += op->resize.start[k] * src->strides[k];
    r.strides[k] = src->strides[k] * op->resize.step[k];
    r.sizes[k] = sizes[k];
  }
  (void)in;
  if (r.buf)
    r.buf->refs++;
  r.live = true;
  *res = r;
  return FZ_OK;
}

static fz_status eval_pad(fz_interp *in, const fz_op *op, const fz_iview *src,
                          fz_iview *res) {
  fz_status st = fz_interp_new_dense(in, op->result, NULL, -1, res);
  if (st)
    return st;
  int64_t n = fz_iview_count(res);
  fz_scalar *data = res->buf->data;
  for (int64_t e = 0; e < n; e++)
    data[e] = op->fill;
  fz_iconvert(data, n, fz_iexact_dtype(res->dtype), res->dtype);
  /* The part of the operand that survives the crop, and where it goes. */
  fz_iview from = *src, to = *res;
  for (int k = 0; k < src->rank; k++) {
    int64_t lo = op->resize.low[k];
    int64_t skip = lo < 0 ? -lo : 0, at = lo > 0 ? lo : 0;
    int64_t count = src->sizes[k] - skip;
    if (res->sizes[k] - at < count)
      count = res->sizes[k] - at;
    if (count <= 0)
      return FZ_OK; /* nothing of the operand is left */
    from.offset += skip * src->strides[k];
    from.sizes[k] = count;
    to.offset += at * res->strides[k];
    to.sizes[k] = count;
  }
  fz_icopy(&from, &to);
  return FZ_OK;
}

static fz_status eval_cat(fz_interp *in, const fz_op *op, fz_iview *res) {
  fz_status st = fz_interp_new_dense(in, op->result, NULL, -1, res);
  if (st)
    return st;
  int axis = op->dims[0];
  int64_t at = 0;
  for (int i = 0; i < op->num_operands; i++) {
    fz_iview tmp;
    const fz_iview *src = fz_interp_operand(in, op->operands[i], &tmp);
    fz_iview to = *res;
    to.sizes[axis] = src->sizes[axis];
    to.offset += at * res->strides[axis];
    at += src->sizes[axis];
    if (fz_iview_count(src) > 0)
      fz_icopy(src, &to);
  }
  return FZ_OK;
}

fz_status fz_interp_eval_resize(fz_interp *in, const fz_op *op,
                                fz_iview *res) {
  if (op->code == FZ_OP_CAT)
    return eval_cat(in, op, res);
  fz_iview tmp;
  const fz_iview *src = fz_interp_operand(in, op->operands[0], &tmp);
  int64_t sizes[FZ_MAX_RANK];
  fz_status st =
      fz_interp_value_sizes(in->f, op->result, in->b, sizes, in->err);
  if (st)
    return st;
  if (src->rank != op->result->type.rank)
    return fz_interp_invalid(in, op, "operand rank %d differs from the "
                                     "result's %d",
                             src->rank, op->result->type.rank);
  if (op->code == FZ_OP_SLICE)
    return eval_slice(in, op, src, sizes, res);
  return eval_pad(in, op, src, res);
}
