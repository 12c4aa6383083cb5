/* interp.c - the reference interpreter: runs a fusion on host tensors.
 *
 * It is the oracle every GPU result is compared with, so it is written to
 * be obviously right first: one op at a time, in SSA order, each element
 * computed by the per-element rules of interp_scalar.c (what each op does
 * is in interp_ops.c; this file binds, allocates, schedules and writes).
 *
 * Every value is a view (interp.h): storage plus sizes and strides. An
 * input views the caller's memory through the caller's strides and is
 * never copied. Pointwise ops, reductions, iota and reshapes of
 * non-contiguous views write a new dense buffer, laid out in the memory
 * order of their main operand so that a column-major input keeps every
 * intermediate column-major and every loop sequential. Broadcast, expand,
 * squeeze, permute, set and contiguous reshapes only change sizes and
 * strides over the same buffer; full is one element seen through zero
 * strides. Buffers are reference counted and freed once the last op
 * reading any view of them has run; outputs are written the moment they
 * are computed (so outputs must not overlap inputs); ops whose results
 * reach no output are skipped.
 */
#include "interp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* No single buffer above this is attempted: allocators (and sanitizers)
 * may abort on absurd sizes instead of returning NULL. */
#define MAX_BUFFER_BYTES (INT64_C(1) << 39)

fz_status fz_interp_invalid(fz_interp *in, const fz_op *op, const char *fmt,
                            ...) {
  char msg[800], l[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fz_error_at(in->err, op->loc, FZ_ERR_INVALID, "%s = %s: %s",
                     fz_value_label(op->result, l, sizeof l),
                     fz_op_table[op->code].name, msg);
}

/* ---- buffers ------------------------------------------------------------- */

static void release(fz_iview *v) {
  if (!v->live)
    return;
  v->live = false;
  if (v->buf && --v->buf->refs == 0) {
    free(v->buf->data);
    free(v->buf);
  }
  v->buf = NULL;
}

/* Dense strides for sizes, laid out in `order` (outermost first; NULL for
 * row-major). */
void fz_interp_dense_strides(int rank, const int64_t *sizes, const int *order,
                             int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    int a = order ? order[i] : i;
    strides[a] = s;
    s *= sizes[a] > 0 ? sizes[a] : 1;
  }
}

/* A new dense view of value v laid out in `order`, backed by `count`
 * elements (v's own element count when count < 0). */
fz_status fz_interp_new_dense(fz_interp *in, const fz_value *v,
                              const int *order, int64_t count, fz_iview *out) {
  char l[64];
  memset(out, 0, sizeof *out);
  out->dtype = v->type.dtype;
  out->rank = v->type.rank;
  fz_status st = fz_interp_value_sizes(in->f, v, in->b, out->sizes, in->err);
  if (st)
    return st;
  int64_t n;
  fz_value_label(v, l, sizeof l);
  if ((st = fz_size_of(out->rank, out->sizes, out->dtype, l, FZ_ERR_ARGUMENT,
                       &n, NULL, in->err)))
    return st;
  if (n > MAX_BUFFER_BYTES / (int64_t)sizeof(fz_scalar))
    return fz_error_set(in->err, FZ_ERR_OUT_OF_MEMORY,
                        "%s: too many elements for the interpreter", l);
  if (count < 0)
    count = n;
  size_t bytes = (size_t)(count > 0 ? count : 1) * sizeof(fz_scalar);
  fz_ibuf *buf = malloc(sizeof *buf);
  fz_scalar *data = buf ? malloc(bytes) : NULL;
  if (!data) {
    free(buf);
    return fz_error_set(in->err, FZ_ERR_OUT_OF_MEMORY,
                        "%s: cannot allocate %zu bytes",
                        l, bytes);
  }
  buf->data = data;
  buf->refs = 1;
  out->live = true;
  out->st = FZ_IST_DENSE;
  out->data = data;
  out->buf = buf;
  fz_interp_dense_strides(out->rank, out->sizes, order, out->strides);
  return FZ_OK;
}

/* The view of an operand: a literal becomes a scalar view in *tmp. */
const fz_iview *fz_interp_operand(fz_interp *in, const fz_value *v,
                                  fz_iview *tmp) {
  if (v->kind != FZ_VALUE_LITERAL)
    return &in->views[v->id];
  memset(tmp, 0, sizeof *tmp);
  tmp->live = true;
  tmp->st = FZ_IST_SCALAR;
  tmp->dtype = v->type.dtype;
  tmp->scalar = v->literal;
  return tmp;
}

/* ---- driver -------------------------------------------------------------- */

static void write_output(const fz_iview *v, const fz_host_tensor *t) {
  fz_iview host = {.live = true,
                   .st = FZ_IST_HOST,
                   .dtype = t->dtype,
                   .data = t->data,
                   .rank = t->rank};
  memcpy(host.sizes, t->sizes, sizeof host.sizes);
  memcpy(host.strides, t->strides, sizeof host.strides);
  fz_loop_nest l;
  fz_loop_nest_init(&l, v->rank, v->sizes);
  fz_loop_nest_add(&l, v->offset, v->strides);
  fz_loop_nest_add(&l, 0, host.strides);
  fz_loop_nest_optimize(&l, 1); /* write in the output's memory order */
  fz_scalar x[FZ_INTERP_CHUNK];
  fz_dtype exact = fz_iexact_dtype(v->dtype);
  fz_chunk_cursor c;
  fz_chunk_cursor_start(&c, &l);
  while (fz_chunk_cursor_next(&c)) {
    fz_iload(v, c.off[0], c.step[0], c.len, exact, x);
    fz_istore(&host, c.off[1], c.step[1], c.len, x, exact);
  }
}

static void write_outputs_of(fz_interp *in, const fz_value *v,
                             const fz_host_tensor *outputs) {
  for (int i = in->first_output[v->id]; i >= 0; i = in->next_output[i])
    write_output(&in->views[v->id], &outputs[i]);
}

/* Which ops to run (their results reach an output) and, per value, the
 * last op that reads it. */
static fz_status plan(fz_interp *in, bool *run) {
  const fz_fusion *f = in->f;
  int nv = f->next_value_id;
  bool *needed = calloc((size_t)nv + 1, sizeof *needed);
  if (!needed)
    return fz_error_set(in->err, FZ_ERR_OUT_OF_MEMORY, "interpreter plan");
  for (int i = 0; i < nv; i++)
    in->last_use[i] = in->first_output[i] = -1;
  /* Outputs listed in order for each value: linked from the last. */
  for (int i = f->num_outputs - 1; i >= 0; i--) {
    int id = f->outputs[i]->id;
    needed[id] = true;
    in->next_output[i] = in->first_output[id];
    in->first_output[id] = i;
  }
  fz_status st = FZ_OK;
  for (int i = f->num_ops - 1; i >= 0 && !st; i--) {
    const fz_op *op = f->ops[i];
    run[i] = needed[op->result->id];
    for (int k = 0; k < op->num_operands && run[i]; k++) {
      const fz_value *v = op->operands[k];
      if (v->id < 0 || v->id >= nv) {
        char l[64];
        st = fz_error_set(in->err, FZ_ERR_INVALID,
                          "%s: operand %d has an id outside the fusion",
                          fz_value_label(op->result, l, sizeof l), k);
        break;
      }
      needed[v->id] = true;
      if (in->last_use[v->id] < i)
        in->last_use[v->id] = i;
    }
  }
  free(needed);
  return st;
}

static fz_status run(fz_interp *in, const fz_host_tensor *inputs,
                     const fz_host_tensor *outputs) {
  const fz_fusion *f = in->f;
  bool *run_op = calloc((size_t)f->num_ops + 1, sizeof *run_op);
  if (!run_op)
    return fz_error_set(in->err, FZ_ERR_OUT_OF_MEMORY, "interpreter plan");
  fz_status st = plan(in, run_op);
  for (int i = 0; i < f->num_inputs && !st; i++) {
    const fz_host_tensor *t = &inputs[i];
    fz_iview *v = &in->views[f->inputs[i]->id];
    *v = (fz_iview){.live = true,
                    .st = FZ_IST_HOST,
                    .dtype = t->dtype,
                    .data = t->data,
                    .rank = t->rank};
    memcpy(v->sizes, t->sizes, sizeof v->sizes);
    memcpy(v->strides, t->strides, sizeof v->strides);
    write_outputs_of(in, f->inputs[i], outputs);
  }
  for (int i = 0; i < f->num_ops && !st; i++) {
    const fz_op *op = f->ops[i];
    if (!run_op[i])
      continue;
    fz_iview *res = &in->views[op->result->id];
    if ((st = fz_interp_eval_op(in, op, res))) {
      fz_error_locate(in->err, op->loc); /* e.g. no memory for its result */
      break;
    }
    write_outputs_of(in, op->result, outputs);
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *v = op->operands[k];
      if (v->kind != FZ_VALUE_LITERAL && in->last_use[v->id] == i)
        release(&in->views[v->id]);
    }
    if (in->last_use[op->result->id] < i)
      release(res);
  }
  free(run_op);
  return st;
}

fz_status fz_interpret(const fz_fusion *f, const fz_host_tensor *inputs,
                       int num_inputs, fz_host_tensor *outputs, int num_outputs,
                       fz_error *err) {
  if (!f)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_interpret: fusion is NULL");
  fz_bindings b;
  fz_status st = fz_bind_inputs(f, inputs, num_inputs, &b, err);
  if (st)
    return st;
  st = fz_interp_check_args(f, &b, inputs, num_inputs, outputs, num_outputs,
                            err);
  if (st) {
    fz_bindings_free(&b);
    return st;
  }
  size_t nv = (size_t)f->next_value_id + 1;
  fz_interp in = {.f = f, .b = &b, .err = err};
  in.views = calloc(nv, sizeof *in.views);
  in.last_use = calloc(nv, sizeof *in.last_use);
  in.first_output = calloc(nv, sizeof *in.first_output);
  in.next_output = calloc((size_t)f->num_outputs + 1, sizeof *in.next_output);
  if (!in.views || !in.last_use || !in.first_output || !in.next_output)
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "interpreter state");
  else
    st = run(&in, inputs, outputs);
  for (size_t i = 0; in.views && i < nv; i++)
    release(&in.views[i]);
  free(in.views);
  free(in.last_use);
  free(in.first_output);
  free(in.next_output);
  fz_bindings_free(&b);
  return st;
}
