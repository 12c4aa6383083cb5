/* interp_ops.c - what each op does, for the reference interpreter.
 *
 * Pointwise ops and reductions compute new dense buffers a row chunk at a
 * time (interp_rows.c); shape ops make new views of their operand's
 * storage; generators fill (or, for full, alias) a buffer.
 *
 * Dtype rules. A pointwise op converts each operand to its compute dtype
 * (the promoted operand dtype, or the result dtype for ops that produce
 * floats; f16 and bf16 compute in f32, PyTorch's opmath, as on the GPU),
 * computes in double (int64 for integers), and rounds once to the result
 * dtype. So f32[N] == 0.1 compares with 0.1 rounded to f32, and
 * i32[N] + 2.5 converts the integers to f32 first, both as PyTorch does.
 * Reductions accumulate in double (int64 for integer results) and round
 * once, so that the oracle carries no rounding error of its own to compare
 * kernels with. Only the range is f32's for f32, f16 and bf16 results:
 * their kernels (and PyTorch's) accumulate sum and prod in f32, where a
 * partial result that leaves f32's range is inf from then on (NaN if an
 * inf of the other sign follows), so the interpreter turns its partial
 * result to inf as soon as it leaves f32's range. Partial results follow
 * the order of accumulation, memory order here and a tree on the GPU:
 * only partial results near FLT_MAX can tell the two orders apart.
 * Underflow is not mirrored: a partial product below f32's smallest
 * subnormal stays a tiny double where the kernel's becomes 0 (a result
 * within the absolute tolerance of 0 unless larger factors follow). f64
 * results accumulate in f64 alone.
 * not, and, or, xor, where's condition and casts to bool look only at
 * whether a value is nonzero (NaN is nonzero).
 */
#include "interp.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static bool is_float(fz_dtype d) { return fz_dtype_is_float(d); }

/* ---- pointwise ops ------------------------------------------------------- */

/* f16 and bf16 compute in f32, as the GPU does. */
static fz_dtype opmath(fz_dtype d) {
  return d == FZ_F16 || d == FZ_BF16 ? FZ_F32 : d;
}

/* The dtype operands are converted to before the op. Comparisons compute
 * in the promoted operand dtype, other ops in their result dtype (the
 * promoted one, or float for ops that turn integers into floats). */
static fz_dtype compute_dtype(const fz_op *op) {
  fz_dtype rd = op->result->type.dtype;
  switch (op->code) {
  case FZ_OP_CAST:
    return rd; /* straight to the target, no opmath detour */
  case FZ_OP_NOT:
  case FZ_OP_AND:
  case FZ_OP_OR:
  case FZ_OP_XOR:
    return FZ_BOOL;
  case FZ_OP_ISNAN:
  case FZ_OP_ISINF:
  case FZ_OP_ISFINITE:
  case FZ_OP_SIGNBIT:
    return FZ_F64; /* sees the value unchanged */
  default:
    if (fz_op_table[op->code].flags & FZ_F_TO_BOOL)
      return opmath(fz_promote(op->num_operands, op->operands));
    return opmath(rd);
  }
}

/* Computes one chunk of n elements from loaded operands x into r, as
 * doubles when ct is a float dtype, else as int64s. */
static void compute_chunk(const fz_op *op, fz_dtype ct, int64_t n,
                          fz_scalar x[3][FZ_INTERP_CHUNK], fz_scalar *r) {
  fz_opcode code = op->code;
  switch (code) {
  case FZ_OP_CAST:
    memcpy(r, x[0], sizeof r[0] * (size_t)n);
    return;
  case FZ_OP_NOT:
    for (int64_t i = 0; i < n; i++)
      r[i].i = !x[0][i].i;
    return;
  case FZ_OP_AND:
    for (int64_t i = 0; i < n; i++)
      r[i].i = x[0][i].i && x[1][i].i;
    return;
  case FZ_OP_OR:
    for (int64_t i = 0; i < n; i++)
      r[i].i = x[0][i].i || x[1][i].i;
    return;
  case FZ_OP_XOR:
    for (int64_t i = 0; i < n; i++)
      r[i].i = !x[0][i].i != !x[1][i].i;
    return;
  case FZ_OP_SHL:
  case FZ_OP_SHR:
    for (int64_t i = 0; i < n; i++)
      r[i].i = fz_interp_shift(code, x[0][i].i, x[1][i].i, ct);
    return;
  case FZ_OP_BITWISE_NOT:
    if (ct == FZ_BOOL) { /* logical not, as in PyTorch */
      for (int64_t i = 0; i < n; i++)
        r[i].i = !x[0][i].i;
      return;
    }
    break;
  case FZ_OP_WHERE:
    for (int64_t i = 0; i < n; i++)
      r[i] = x[0][i].i ? x[1][i] : x[2][i];
    return;
  default:
    break;
  }
  if (is_float(ct)) {
    for (int64_t i = 0; i < n; i++)
      r[i].f = fz_interp_float_op(code, x[0][i].f, x[1][i].f, x[2][i].f);
  } else {
    for (int64_t i = 0; i < n; i++)
      r[i].i = fz_interp_int_op(code, x[0][i].i, x[1][i].i, x[2][i].i);
  }
}

/* The operand to walk in memory order: the one with the most real axes
 * (not size 1, not stride 0), or -1 when all are scalars. */
static int pick_guide(const fz_iview *const *ops, int n,
                      int64_t strides[][FZ_MAX_RANK], int rank) {
  int best = -1, best_score = -1;
  for (int k = 0; k < n; k++) {
    if (ops[k]->rank != rank || ops[k]->st == FZ_IST_SCALAR)
      continue;
    int score = 0;
    for (int d = 0; d < rank; d++)
      score += ops[k]->sizes[d] > 1 && strides[k][d] != 0;
    if (score > best_score) {
      best = k;
      best_score = score;
    }
  }
  return best;
}

static fz_status eval_pointwise(fz_interp *in, const fz_op *op, fz_iview *res) {
  int n = op->num_operands, rank = op->result->type.rank;
  int64_t sizes[FZ_MAX_RANK];
  fz_status st =
      fz_interp_value_sizes(in->f, op->result, in->b, sizes, in->err);
  if (st)
    return st;
  fz_iview tmp[3];
  const fz_iview *ops[3];
  int64_t strides[3][FZ_MAX_RANK];
  for (int k = 0; k < n; k++) {
    const fz_iview *v = ops[k] =
        fz_interp_operand(in, op->operands[k], &tmp[k]);
    memset(strides[k], 0, sizeof strides[k]);
    if (v->rank != 0 && v->rank != rank)
      return fz_interp_invalid(in, op, "operand %d has rank %d, the result %d",
                               k, v->rank, rank);
    for (int d = 0; d < v->rank; d++) { /* size-1 axes stretch */
      if (v->sizes[d] == sizes[d])
        strides[k][d] = v->strides[d];
      else if (v->sizes[d] != 1)
        return fz_interp_invalid(in, op,
                                 "operand %d axis %d has size %" PRId64
                                 " but the result has %" PRId64,
                                 k, d, v->sizes[d], sizes[d]);
    }
  }
  int guide = pick_guide(ops, n, strides, rank);
  int order[FZ_MAX_RANK];
  if (guide >= 0)
    fz_imemory_order(rank, strides[guide], order);
  if ((st = fz_interp_new_dense(in, op->result, guide >= 0 ? order : NULL, -1,
                                res)))
    return st;

  fz_loop_nest l;
  fz_loop_nest_init(&l, rank, sizes);
  for (int k = 0; k < n; k++)
    fz_loop_nest_add(&l, ops[k]->offset, strides[k]);
  int out = fz_loop_nest_add(&l, 0, res->strides);
  fz_loop_nest_optimize(&l, out); /* res is laid out like the guide */

  fz_dtype ct = compute_dtype(op);
  /* where: the condition is loaded as bool, the values as ct */
  fz_dtype load_as[3] = {ct, ct, ct};
  if (op->code == FZ_OP_WHERE)
    load_as[0] = FZ_BOOL;
  /* Results are unrounded doubles (or int64s) until stored. */
  fz_dtype result_as = op->code == FZ_OP_ISNAN ? FZ_BOOL : fz_iexact_dtype(ct);
  bool isnan_of_int = op->code == FZ_OP_ISNAN && !is_float(ops[0]->dtype);

  fz_scalar x[3][FZ_INTERP_CHUNK], r[FZ_INTERP_CHUNK];
  fz_chunk_cursor c;
  fz_chunk_cursor_start(&c, &l);
  while (fz_chunk_cursor_next(&c)) {
    if (op->code == FZ_OP_ISNAN) {
      if (!isnan_of_int)
        fz_iload(ops[0], c.off[0], c.step[0], c.len, FZ_F64, x[0]);
      for (int64_t i = 0; i < c.len; i++)
        r[i].i = !isnan_of_int && isnan(x[0][i].f);
    } else {
      for (int k = 0; k < n; k++)
        fz_iload(ops[k], c.off[k], c.step[k], c.len, load_as[k], x[k]);
      compute_chunk(op, ct, c.len, x, r);
    }
    fz_istore(res, c.off[out], c.step[out], c.len, r, result_as);
  }
  return FZ_OK;
}

/* ---- reductions ---------------------------------------------------------- */

static fz_scalar identity(fz_opcode code, bool fl) {
  switch (code) {
  case FZ_OP_SUM:
    return fl ? (fz_scalar){.f = 0.0} : (fz_scalar){.i = 0};
  case FZ_OP_PROD:
    return fl ? (fz_scalar){.f = 1.0} : (fz_scalar){.i = 1};
  case FZ_OP_AMAX:
    return fl ? (fz_scalar){.f = -INFINITY} : (fz_scalar){.i = INT64_MIN};
  default:
    return fl ? (fz_scalar){.f = INFINITY} : (fz_scalar){.i = INT64_MAX};
  }
}

/* The smallest magnitude that rounds to inf in f32: halfway from FLT_MAX
 * to 2^128, a tie that rounds to the even neighbour, 2^128. */
#define F32_OVERFLOW 0x1.ffffffp127

/* f32_range: the kernels accumulate in f32, so a partial sum or product
 * out of its range becomes inf, as it does there. */
static void accumulate_f(fz_opcode code, bool f32_range, double *acc,
                         double x) {
  switch (code) {
  case FZ_OP_SUM:
    *acc += x;
    break;
  case FZ_OP_PROD:
    *acc *= x;
    break;
  default: /* amax, amin: NaN wins */
    if (isnan(*acc))
      return;
    if (isnan(x) || (code == FZ_OP_AMAX ? x > *acc : x < *acc))
      *acc = x;
    return;
  }
  if (f32_range && fabs(*acc) >= F32_OVERFLOW)
    *acc = copysign(INFINITY, *acc);
}

static void accumulate_i(fz_opcode code, int64_t *acc, int64_t x) {
  switch (code) {
  case FZ_OP_SUM:
    *acc = fz_interp_int_op(FZ_OP_ADD, *acc, x, 0); /* wraps, defined */
    break;
  case FZ_OP_PROD:
    *acc = fz_interp_int_op(FZ_OP_MUL, *acc, x, 0);
    break;
  default:
    if (code == FZ_OP_AMAX ? x > *acc : x < *acc)
      *acc = x;
  }
}

static fz_status eval_reduction(fz_interp *in, const fz_op *op, fz_iview *res) {
  fz_iview tmp;
  const fz_iview *src = fz_interp_operand(in, op->operands[0], &tmp);
  bool reduced[FZ_MAX_RANK] = {0};
  for (int i = 0; i < op->num_dims; i++) {
    if (op->dims[i] < 0 || op->dims[i] >= src->rank)
      return fz_interp_invalid(in, op, "dim %d is out of range", op->dims[i]);
    reduced[op->dims[i]] = true;
  }
  /* Result axis of each source axis (-1: reduced and dropped). */
  int to_res[FZ_MAX_RANK];
  for (int d = 0, j = 0; d < src->rank; d++)
    to_res[d] = reduced[d] && !op->keepdim ? -1 : j++;
  /* Lay the result out in the source's memory order. */
  int src_order[FZ_MAX_RANK], order[FZ_MAX_RANK], m = 0;
  fz_imemory_order(src->rank, src->strides, src_order);
  for (int i = 0; i < src->rank; i++)
    if (to_res[src_order[i]] >= 0)
      order[m++] = to_res[src_order[i]];
  if (m != op->result->type.rank)
    return fz_interp_invalid(in, op,
                             "result rank %d does not match the operand's "
                             "kept axes",
                             op->result->type.rank);
  fz_status st = fz_interp_new_dense(in, op->result, order, -1, res);
  if (st)
    return st;
  int64_t out_strides[FZ_MAX_RANK];
  bool empty = false;
  for (int d = 0; d < src->rank; d++) {
    if (reduced[d]) {
      out_strides[d] = 0;
      empty |= src->sizes[d] == 0;
    } else if (res->sizes[to_res[d]] != src->sizes[d]) {
      return fz_interp_invalid(in, op,
                               "result axis %d does not match operand axis %d",
                               to_res[d], d);
    } else {
      out_strides[d] = res->strides[to_res[d]];
    }
  }
  int64_t n = fz_iview_count(res);
  if (op->code == FZ_OP_VAR || op->code == FZ_OP_MEAN)
    return fz_interp_moments(in, op, src, reduced, out_strides, res);
  bool arg = fz_op_table[op->code].flags & FZ_F_ARG;
  if ((op->code == FZ_OP_AMAX || op->code == FZ_OP_AMIN || arg) && n > 0 &&
      empty)
    return fz_interp_invalid(in, op, "cannot take %s over an empty axis",
                             fz_op_table[op->code].name);
  if (arg)
    return fz_interp_arg_reduce(op->code, src, reduced, out_strides, res,
                                in->err);

  bool fl = is_float(res->dtype);
  bool f32_range = fl && res->dtype != FZ_F64;
  fz_dtype acc_dtype = fl ? FZ_F64 : FZ_I64;
  fz_scalar *acc = res->buf->data, init = identity(op->code, fl);
  for (int64_t e = 0; e < n; e++)
    acc[e] = init;
  fz_loop_nest l;
  fz_loop_nest_init(&l, src->rank, src->sizes);
  fz_loop_nest_add(&l, src->offset, src->strides);
  fz_loop_nest_add(&l, 0, out_strides);
  fz_loop_nest_optimize(&l, 0);
  fz_scalar x[FZ_INTERP_CHUNK];
  fz_chunk_cursor c;
  fz_chunk_cursor_start(&c, &l);
  while (fz_chunk_cursor_next(&c)) {
    fz_iload(src, c.off[0], c.step[0], c.len, acc_dtype, x);
    for (int64_t i = 0; i < c.len; i++) {
      fz_scalar *a = &acc[c.off[1] + i * c.step[1]];
      if (fl)
        accumulate_f(op->code, f32_range, &a->f, x[i].f);
      else
        accumulate_i(op->code, &a->i, x[i].i);
    }
  }
  fz_iconvert(acc, n, acc_dtype, res->dtype); /* round once */
  return FZ_OK;
}

/* ---- shape ops: new sizes and strides over the same storage -------------- */

static bool is_row_major(const fz_iview *v) {
  int64_t expect = 1;
  for (int d = v->rank - 1; d >= 0; d--) {
    if (v->sizes[d] == 0)
      return true;
    if (v->sizes[d] != 1 && v->strides[d] != expect)
      return false;
    expect *= v->sizes[d];
  }
  return true;
}

/* Reshape: a row-major view of the same elements, copied first when the
 * source is not row-major contiguous. */
static fz_status eval_reshape(fz_interp *in, const fz_op *op,
                              const fz_iview *src, fz_iview *r) {
  int64_t count;
  if (fz_size_of(r->rank, r->sizes, r->dtype, "reshape", FZ_ERR_INVALID,
                 &count, NULL, NULL) ||
      count != fz_iview_count(src))
    return fz_interp_invalid(in, op,
                             "the operand has %" PRId64 " elements, the "
                             "result a different number",
                             fz_iview_count(src));
  if (is_row_major(src)) {
    fz_interp_dense_strides(r->rank, r->sizes, NULL, r->strides);
    if (r->buf)
      r->buf->refs++;
    return FZ_OK;
  }
  fz_iview copy;
  fz_status st = fz_interp_new_dense(in, op->result, NULL, -1, &copy);
  if (st)
    return st;
  /* the result's buffer seen with the source's sizes, row-major */
  fz_iview flat = copy;
  flat.rank = src->rank;
  memcpy(flat.sizes, src->sizes, sizeof flat.sizes);
  fz_interp_dense_strides(src->rank, src->sizes, NULL, flat.strides);
  fz_icopy(src, &flat);
  *r = copy;
  return FZ_OK;
}

static fz_status eval_shape(fz_interp *in, const fz_op *op, fz_iview *res) {
  fz_iview tmp;
  const fz_iview *src = fz_interp_operand(in, op->operands[0], &tmp);
  int64_t sizes[FZ_MAX_RANK];
  fz_status st =
      fz_interp_value_sizes(in->f, op->result, in->b, sizes, in->err);
  if (st)
    return st;
  int rank = op->result->type.rank;
  fz_iview r = *src;
  r.rank = rank;
  memcpy(r.sizes, sizes, sizeof sizes);
  switch (fz_op_table[op->code].kind) {
  case FZ_KIND_SET:
    break;
  case FZ_KIND_BROADCAST:
    for (int d = 0, k = 0, j = 0; d < rank; d++) {
      if (k < op->num_dims && op->dims[k] == d) {
        r.strides[d] = 0;
        k++;
      } else {
        if (j >= src->rank)
          return fz_interp_invalid(in, op,
                                   "more kept axes than the operand has");
        r.strides[d] = src->strides[j++];
      }
    }
    break;
  case FZ_KIND_SQUEEZE:
    for (int d = 0, k = 0, j = 0; d < src->rank; d++) {
      if (k < op->num_dims && op->dims[k] == d) {
        if (src->sizes[d] != 1)
          return fz_interp_invalid(in, op, "squeezed axis %d has size %" PRId64,
                                   d, src->sizes[d]);
        k++;
      } else {
        if (j >= rank)
          return fz_interp_invalid(in, op,
                                   "more kept axes than the result has");
        r.strides[j++] = src->strides[d];
      }
    }
    break;
  case FZ_KIND_EXPAND:
  case FZ_KIND_PERMUTE:
    if (src->rank != rank)
      return fz_interp_invalid(in, op,
                               "operand rank %d differs from the result's %d",
                               src->rank, rank);
    for (int d = 0; d < rank; d++) {
      int from = op->code == FZ_OP_PERMUTE ? op->perm[d] : d;
      if (from < 0 || from >= rank)
        return fz_interp_invalid(in, op, "perm entry %d is out of range", d);
      if (src->sizes[from] == sizes[d])
        r.strides[d] = src->strides[from];
      else if (op->code == FZ_OP_EXPAND && src->sizes[from] == 1)
        r.strides[d] = 0;
      else
        return fz_interp_invalid(in, op,
                                 "axis %d has size %" PRId64
                                 " but the operand's has %" PRId64,
                                 d, sizes[d], src->sizes[from]);
    }
    break;
  case FZ_KIND_RESHAPE:
    if ((st = eval_reshape(in, op, src, &r)))
      return st;
    r.live = true;
    *res = r;
    return FZ_OK; /* eval_reshape took the buffer reference */
  default:
    FZ_DIE("not a shape op: %s", fz_op_table[op->code].name);
  }
  if (r.buf)
    r.buf->refs++;
  r.live = true;
  *res = r;
  return FZ_OK;
}

/* ---- generators ---------------------------------------------------------- */

static fz_status eval_generator(fz_interp *in, const fz_op *op, fz_iview *res) {
  bool fl = is_float(op->result->type.dtype);
  fz_dtype exact = fl ? FZ_F64 : FZ_I64;
  if (op->code == FZ_OP_FULL) {
    /* one element seen through zero strides, whatever the size */
    fz_status st = fz_interp_new_dense(in, op->result, NULL, 1, res);
    if (st)
      return st;
    memset(res->strides, 0, sizeof res->strides);
    fz_scalar v = op->fill;
    fz_istore(res, 0, 0, 1, &v, exact);
    return FZ_OK;
  }
  fz_status st = fz_interp_new_dense(in, op->result, NULL, -1, res);
  if (st)
    return st;
  int64_t n = fz_iview_count(res);
  fz_scalar *data = res->buf->data;
  for (int64_t e = 0; e < n; e++) {
    if (fl)
      data[e].f = op->iota_start.f + (double)e * op->iota_step.f;
    else
      data[e].i =
          fz_interp_int_op(FZ_OP_FMA, e, op->iota_step.i, op->iota_start.i);
  }
  fz_iconvert(data, n, exact, res->dtype);
  return FZ_OK;
}

/* The value bound to the symbol: fz_bind_inputs has checked that an input
 * binds every symbol a symbol op reads. */
static fz_status eval_symbol(fz_interp *in, const fz_op *op, fz_iview *res) {
  FZ_CHECK(op->symbol >= 0 && op->symbol < in->b->num_symbols &&
           in->b->values[op->symbol] >= 0);
  fz_status st = fz_interp_new_dense(in, op->result, NULL, 1, res);
  if (st)
    return st;
  fz_scalar v = {.i = in->b->values[op->symbol]};
  fz_istore(res, 0, 0, 1, &v, FZ_I64);
  return FZ_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

fz_status fz_interp_eval_op(fz_interp *in, const fz_op *op, fz_iview *res) {
  for (int k = 0; k < op->num_operands; k++) {
    const fz_value *v = op->operands[k];
    if (v->kind != FZ_VALUE_LITERAL && !in->views[v->id].live)
      return fz_interp_invalid(in, op,
                               "operand %d is used before it is defined", k);
  }
  switch (fz_op_table[op->code].kind) {
  case FZ_KIND_UNARY:
  case FZ_KIND_CAST:
  case FZ_KIND_BINARY:
  case FZ_KIND_TERNARY:
    return eval_pointwise(in, op, res);
  case FZ_KIND_REDUCTION:
    return eval_reduction(in, op, res);
  case FZ_KIND_FULL:
  case FZ_KIND_IOTA:
    return eval_generator(in, op, res);
  case FZ_KIND_SYMBOL:
    return eval_symbol(in, op, res);
  case FZ_KIND_RANDOM:
    return fz_interp_eval_random(in, op, res);
  case FZ_KIND_GATHER:
    return fz_interp_eval_gather(in, op, res);
  case FZ_KIND_SLICE:
  case FZ_KIND_PAD:
  case FZ_KIND_CAT:
    return fz_interp_eval_resize(in, op, res);
  default:
    return eval_shape(in, op, res);
  }
}
