/* interp_bind.c - binding symbolic extents to sizes from the inputs, and
 * checking the arguments of fz_interpret.
 *
 * Every symbol gets its value from the first input axis that uses it; any
 * later use must agree, and so must constant extents and b1 axes (size 1).
 * Errors name the input, the axis and, for a conflict, where the symbol
 * was bound first, because "size mismatch" alone sends users hunting.
 *
 * A symbol in an op's result that no input binds is an error here, before
 * anything runs, rather than a surprise halfway through, and so are sizes
 * that make any value's element count or byte size overflow int64
 * (fz_check_sizes): everything after binding multiplies sizes unchecked.
 */
#include "interp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *symbol_name(const fz_fusion *f, int32_t s) {
  return f->symbols[s].name ? f->symbols[s].name : "?";
}

fz_status fz_interp_value_sizes(const fz_fusion *f, const fz_value *v,
                                const fz_bindings *b, int64_t *sizes,
                                fz_error *err) {
  for (int i = 0; i < v->type.rank; i++) {
    fz_extent e = fz_axis_extent(&v->type.axes[i]);
    if (e.symbol < 0) {
      sizes[i] = e.value;
      continue;
    }
    if (e.symbol >= b->num_symbols || b->values[e.symbol] < 0) {
      char l[64];
      return fz_error_set(
          err, FZ_ERR_ARGUMENT, "%s axis %d: symbol %s is not bound",
          fz_value_label(v, l, sizeof l), i,
          e.symbol < f->num_symbols ? symbol_name(f, e.symbol) : "<invalid>");
    }
    sizes[i] = b->values[e.symbol];
  }
  return FZ_OK;
}

/* Where each symbol was bound, for messages. */
typedef struct origin {
  int input, axis;
} origin;

static fz_status bind_input(const fz_fusion *f, int index,
                            const fz_host_tensor *t, int64_t *values,
                            origin *origins, fz_error *err) {
  const fz_value *v = f->inputs[index];
  char l[64]; /* the label, made for a message only (every call binds) */
  if (t->dtype != v->type.dtype)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "input %d (%s): dtype %s does not match the declared "
                        "%s",
                        index, fz_value_label(v, l, sizeof l),
                        fz_dtype_name(t->dtype), fz_dtype_name(v->type.dtype));
  if (t->rank != v->type.rank)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "input %d (%s): rank %d does not match the declared "
                        "rank %d",
                        index, fz_value_label(v, l, sizeof l), t->rank,
                        v->type.rank);
  for (int i = 0; i < t->rank; i++) {
    int64_t size = t->sizes[i];
    const fz_axis *a = &v->type.axes[i];
    if (size < 0)
      return fz_error_set(err, FZ_ERR_ARGUMENT,
                          "input %d (%s) axis %d: negative size %" PRId64,
                          index, fz_value_label(v, l, sizeof l), i, size);
    if (a->kind == FZ_AXIS_BROADCAST && !a->expanded) {
      if (size != 1)
        return fz_error_set(err, FZ_ERR_ARGUMENT,
                            "input %d (%s) axis %d: size %" PRId64
                            " but the axis is declared b1 (size 1)",
                            index, fz_value_label(v, l, sizeof l), i, size);
      continue;
    }
    fz_extent e = fz_axis_extent(a);
    if (e.symbol < 0) {
      if (size != e.value)
        return fz_error_set(err, FZ_ERR_ARGUMENT,
                            "input %d (%s) axis %d: size %" PRId64
                            " does not match the declared extent %" PRId64,
                            index, fz_value_label(v, l, sizeof l), i, size,
                            e.value);
      continue;
    }
    if (e.symbol >= f->num_symbols)
      return fz_error_set(err, FZ_ERR_INVALID,
                          "input %d (%s) axis %d uses symbol %d but the "
                          "fusion has %d symbols",
                          index, fz_value_label(v, l, sizeof l), i,
                          (int)e.symbol, f->num_symbols);
    if (f->symbols[e.symbol].num_terms)
      continue; /* derived (`N*K`): bind_derived, once the bases are bound */
    if (values[e.symbol] < 0) {
      values[e.symbol] = size;
      origins[e.symbol] = (origin){index, i};
    } else if (values[e.symbol] != size) {
      const origin *o = &origins[e.symbol];
      char first[64];
      fz_value_label(f->inputs[o->input], first, sizeof first);
      return fz_error_set(
          err, FZ_ERR_ARGUMENT,
          "input %d (%s) axis %d: size %" PRId64 " but symbol %s is %" PRId64
          " (bound by input %d (%s) axis %d)",
          index, fz_value_label(v, l, sizeof l), i, size,
          symbol_name(f, e.symbol), values[e.symbol], o->input, first, o->axis);
    }
  }
  return FZ_OK;
}

/* The one unbound base symbol of a derived input extent, power 1, solved
 * from the axis's size: N in `N*K` with K bound elsewhere. *solved is
 * false when there is nothing to solve (no such base, or more than one);
 * an error when the size is no multiple of the rest. */
static fz_status solve_derived(const fz_fusion *f, int index, int axis,
                               int64_t size, int64_t *values, origin *origins,
                               bool *solved, fz_error *err) {
  const fz_symbol *d = &f->symbols[fz_axis_extent(
                                       &f->inputs[index]->type.axes[axis])
                                       .symbol];
  int unknown = -1, unbound = 0;
  int64_t top = size, bottom = d->num; /* unknown = top * den... / bottom */
  bool overflow = !fz_size_mul(top, d->den, &top);
  for (int k = 0; k < d->num_terms; k++) {
    const fz_symbol_term *t = &d->terms[k];
    if (values[t->symbol] < 0) {
      unbound++;
      unknown = t->power == 1 ? k : -1;
      continue;
    }
    for (int n = 0; n < abs(t->power); n++)
      overflow |= t->power > 0
                      ? !fz_size_mul(bottom, values[t->symbol], &bottom)
                      : !fz_size_mul(top, values[t->symbol], &top);
  }
  *solved = false;
  if (unbound != 1 || unknown < 0)
    return FZ_OK;
  char l[64];
  fz_value_label(f->inputs[index], l, sizeof l);
  if (overflow || bottom == 0 || top % bottom != 0)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "input %d (%s) axis %d: size %" PRId64
                        " is not %s for any integer %s",
                        index, l, axis, size, d->name,
                        symbol_name(f, d->terms[unknown].symbol));
  int32_t s = d->terms[unknown].symbol;
  values[s] = top / bottom;
  origins[s] = (origin){index, axis};
  *solved = true;
  return FZ_OK;
}

/* Inputs whose extents are derived symbols: bases no plain extent binds
 * are solved from them (repeatedly, as one solution may enable another),
 * then every derived symbol is computed (fz_symbols_derive) and each such
 * input axis must have its value. */
static fz_status bind_derived(const fz_fusion *f, const fz_host_tensor *inputs,
                              int64_t *values, origin *origins,
                              fz_error *err) {
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < f->num_inputs; i++)
      for (int k = 0; k < f->inputs[i]->type.rank; k++) {
        fz_extent e = fz_axis_extent(&f->inputs[i]->type.axes[k]);
        if (e.symbol < 0 || !f->symbols[e.symbol].num_terms)
          continue;
        bool solved;
        fz_status st = solve_derived(f, i, k, inputs[i].sizes[k], values,
                                     origins, &solved, err);
        if (st)
          return st;
        progress |= solved;
      }
  }
  fz_status st = fz_symbols_derive(f, values, err);
  if (st)
    return st;
  for (int i = 0; i < f->num_inputs; i++)
    for (int k = 0; k < f->inputs[i]->type.rank; k++) {
      fz_extent e = fz_axis_extent(&f->inputs[i]->type.axes[k]);
      if (e.symbol < 0 || !f->symbols[e.symbol].num_terms ||
          values[e.symbol] == inputs[i].sizes[k])
        continue;
      char l[64];
      fz_value_label(f->inputs[i], l, sizeof l);
      if (values[e.symbol] < 0)
        return fz_error_set(err, FZ_ERR_ARGUMENT,
                            "input %d (%s) axis %d: extent %s is not bound: "
                            "its symbols are not the sizes of other axes",
                            i, l, k, symbol_name(f, e.symbol));
      return fz_error_set(err, FZ_ERR_ARGUMENT,
                          "input %d (%s) axis %d: size %" PRId64
                          " but %s is %" PRId64,
                          i, l, k, inputs[i].sizes[k],
                          symbol_name(f, e.symbol), values[e.symbol]);
    }
  return FZ_OK;
}

/* Every symbol in an op result must be bound by now: shape inference
 * derives result extents from operands, except where the result's shape is
 * given (full, iota, expand), which may name a symbol no input has. So
 * must every symbol a symbol op reads. */
static fz_status check_results(const fz_fusion *f, const int64_t *values,
                               fz_error *err) {
  for (int k = 0; k < f->num_ops; k++) {
    const fz_value *v = f->ops[k]->result;
    int read = f->ops[k]->code == FZ_OP_SYMBOL ? f->ops[k]->symbol : -1;
    char r[64];
    if (read >= f->num_symbols)
      return fz_error_set(err, FZ_ERR_INVALID,
                          "%s reads symbol %d but the fusion has %d symbols",
                          fz_value_label(v, r, sizeof r), read,
                          f->num_symbols);
    if (read >= 0 && values[read] < 0)
      return fz_error_set(err, FZ_ERR_ARGUMENT,
                          "%s: symbol %s is not bound by any input",
                          fz_value_label(v, r, sizeof r), symbol_name(f, read));
    for (int i = 0; i < v->type.rank; i++) {
      fz_extent e = fz_axis_extent(&v->type.axes[i]);
      char l[64];
      if (e.symbol >= f->num_symbols)
        return fz_error_set(err, FZ_ERR_INVALID,
                            "%s axis %d uses symbol %d but the fusion has "
                            "%d symbols",
                            fz_value_label(v, l, sizeof l), i, (int)e.symbol,
                            f->num_symbols);
      if (e.symbol >= 0 && values[e.symbol] < 0)
        return fz_error_set(err, FZ_ERR_ARGUMENT,
                            "%s axis %d: symbol %s is not bound by any input",
                            fz_value_label(v, l, sizeof l), i,
                            symbol_name(f, e.symbol));
    }
  }
  return FZ_OK;
}

fz_status fz_bind_inputs(const fz_fusion *f, const fz_host_tensor *inputs,
                         int num_inputs, fz_bindings *out, fz_error *err) {
  if (!out)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_bind_inputs: out is NULL");
  out->num_symbols = 0;
  out->values = NULL;
  if (!f)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_bind_inputs: fusion is "
                        "NULL");
  if (num_inputs != f->num_inputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fusion @%s takes %d inputs but was given %d", f->name,
                        f->num_inputs, num_inputs);
  if (num_inputs > 0 && !inputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_bind_inputs: inputs is "
                        "NULL");
  size_t n = (size_t)(f->num_symbols > 0 ? f->num_symbols : 1);
  int64_t *values = malloc(n * sizeof *values);
  origin *origins = malloc(n * sizeof *origins);
  if (!values || !origins) {
    free(values);
    free(origins);
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "binding %d symbols",
                        f->num_symbols);
  }
  for (int s = 0; s < f->num_symbols; s++)
    values[s] = -1;
  fz_status st = FZ_OK;
  for (int i = 0; i < num_inputs && !st; i++)
    st = bind_input(f, i, &inputs[i], values, origins, err);
  if (!st)
    st = bind_derived(f, inputs, values, origins, err);
  if (!st)
    st = check_results(f, values, err);
  /* Sizes that fit each input can still meet in a larger value. */
  if (!st)
    st = fz_check_sizes(f, values, FZ_ERR_ARGUMENT, err);
  free(origins);
  if (st) {
    free(values);
    return st;
  }
  out->num_symbols = f->num_symbols;
  out->values = values;
  return FZ_OK;
}

void fz_bindings_free(fz_bindings *b) {
  if (!b)
    return;
  free(b->values);
  b->values = NULL;
  b->num_symbols = 0;
}

fz_status fz_output_sizes(const fz_fusion *f, int output, const fz_bindings *b,
                          int64_t sizes[FZ_MAX_RANK], fz_error *err) {
  if (!f || !b || !sizes)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_output_sizes: NULL argument");
  if (output < 0 || output >= f->num_outputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "output %d is out of range: fusion @%s has %d "
                        "outputs",
                        output, f->name, f->num_outputs);
  if (b->num_symbols != f->num_symbols)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "bindings have %d symbols but fusion @%s has %d",
                        b->num_symbols, f->name, f->num_symbols);
  return fz_interp_value_sizes(f, f->outputs[output], b, sizes, err);
}

/* ---- arguments of fz_interpret ------------------------------------------- */

static fz_status check_tensor_data(const fz_host_tensor *t, const char *what,
                                   int index, fz_error *err) {
  char label[64];
  snprintf(label, sizeof label, "%s %d", what, index);
  int64_t n;
  fz_status st = fz_size_span(t->rank, t->sizes, t->strides, t->dtype, label,
                              FZ_ERR_ARGUMENT, &n, err);
  if (st)
    return st;
  if (n > 0 && !t->data)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "%s %d: data is NULL", what,
                        index);
  return FZ_OK;
}

fz_status fz_interp_check_args(const fz_fusion *f, const fz_bindings *b,
                               const fz_host_tensor *inputs, int num_inputs,
                               const fz_host_tensor *outputs, int num_outputs,
                               fz_error *err) {
  if (num_outputs != f->num_outputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fusion @%s has %d outputs but was given %d", f->name,
                        f->num_outputs, num_outputs);
  if (num_outputs > 0 && !outputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_interpret: outputs is NULL");
  for (int i = 0; i < num_outputs; i++) {
    const fz_host_tensor *t = &outputs[i];
    const fz_value *v = f->outputs[i];
    char l[64];
    fz_value_label(v, l, sizeof l);
    if (t->dtype != v->type.dtype)
      return fz_error_set(
          err, FZ_ERR_ARGUMENT, "output %d (%s): dtype %s but the value is %s",
          i, l, fz_dtype_name(t->dtype), fz_dtype_name(v->type.dtype));
    if (t->rank != v->type.rank)
      return fz_error_set(err, FZ_ERR_ARGUMENT,
                          "output %d (%s): rank %d but the value has rank %d",
                          i, l, t->rank, v->type.rank);
    int64_t sizes[FZ_MAX_RANK];
    fz_status st = fz_output_sizes(f, i, b, sizes, err);
    if (st)
      return st;
    for (int d = 0; d < t->rank; d++)
      if (t->sizes[d] != sizes[d])
        return fz_error_set(err, FZ_ERR_ARGUMENT,
                            "output %d (%s) axis %d: size %" PRId64
                            " but the value has size %" PRId64,
                            i, l, d, t->sizes[d], sizes[d]);
    if ((st = check_tensor_data(t, "output", i, err)))
      return st;
  }
  for (int i = 0; i < num_inputs; i++) {
    fz_status st = check_tensor_data(&inputs[i], "input", i, err);
    if (st)
      return st;
  }
  return FZ_OK;
}
