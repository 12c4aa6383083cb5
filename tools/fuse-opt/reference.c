/* reference.c - fuse-opt --run-reference: run the interpreter on seeded
 * random inputs and print a checksum per output.
 *
 * The point is a cheap, textual fingerprint of what a fusion computes, so a
 * lit test can pin it and a pass can be shown not to change it. Inputs come
 * from lib/testing/host_tensor.h: never zero (a zero hides a wrong operand
 * in a product), floats uniform in [-1, 1), integers in [-8, 8], bools
 * random; each allocated in its declared layout, every axis declared
 * noncontig with twice its dense stride, so the interpreter reads strides
 * as a GPU kernel would. The generator is splitmix64, so the numbers are
 * the same on every machine.
 */
#include "fuse-opt.h"

#include "testing/host_tensor.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FO_DEFAULT_EXTENT 8

/* The inputs lit tests pinned their checksums with (host_tensor.h). */
static const fz_host_inputs FO_INPUTS = {.values = FZ_HOST_VALUES_SYMMETRIC,
                                         .padding = FZ_HOST_PAD_DOUBLE};

static const char *symbol_label(const fz_fusion *f, int s, char *buf,
                                size_t size) {
  if (f->symbols[s].name)
    snprintf(buf, size, "%s", f->symbols[s].name);
  else
    snprintf(buf, size, "?%d", s); /* an anonymous `?` extent */
  return buf;
}

/* Symbol values from --bind, 8 otherwise; says which were defaulted. */
fz_status fo_bind_symbols(const fz_fusion *f, const fo_options *o, FILE *out,
                          int64_t **result, fz_error *err) {
  *result = NULL;
  int64_t *values = calloc((size_t)f->num_symbols + 1, sizeof *values);
  if (!values)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int s = 0; s < f->num_symbols; s++) {
    const char *name = f->symbols[s].name;
    bool bound = false;
    if (f->symbols[s].num_terms) {
      values[s] = -1; /* derived (`N*K`): computed from the others below */
      continue;
    }
    for (int b = 0; b < o->num_binds && name; b++) {
      if (strlen(name) == o->binds[b].symbol_len &&
          memcmp(name, o->binds[b].symbol, o->binds[b].symbol_len) == 0) {
        values[s] = o->binds[b].value;
        bound = true;
      }
    }
    if (!bound) {
      char label[64];
      values[s] = FO_DEFAULT_EXTENT;
      fprintf(out, "// %s = %d (default; set with --bind)\n",
              symbol_label(f, s, label, sizeof label), FO_DEFAULT_EXTENT);
    }
  }
  for (int b = 0; b < o->num_binds; b++) {
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)o->binds[b].symbol_len,
             o->binds[b].symbol);
    if (fz_fusion_find_symbol(f, name) < 0)
      fprintf(stderr, "fuse-opt: warning: --bind names '%s', which fusion "
                      "@%s does not use\n",
              name, f->name);
  }
  fz_status st = fz_symbols_derive(f, values, err);
  if (!st)
    st = fz_check_sizes(f, values, FZ_ERR_ARGUMENT, err);
  if (st) {
    free(values);
    return st;
  }
  *result = values;
  return FZ_OK;
}

/* ---- output ---------------------------------------------------------- */

/* t is dense row-major, of a size fz_check_sizes accepted. */
static void print_result(const fz_fusion *f, int i, const fz_host_tensor *t,
                         FILE *out) {
  const fz_value *v = f->outputs[i];
  int64_t count = fz_host_count(t->rank, t->sizes);
  size_t esize = fz_dtype_size(t->dtype);
  const char *data = t->data;
  double sum = 0, abs_sum = 0;
  for (int64_t k = 0; k < count; k++) {
    /* dense row-major: the sum runs in logical order */
    double x = fz_host_load(t->dtype, data + (size_t)k * esize);
    sum += x;
    abs_sum += fabs(x);
  }
  if (v->name)
    fprintf(out, "%%%s: %s", v->name, fz_dtype_name(t->dtype));
  else
    fprintf(out, "output %d: %s", i, fz_dtype_name(t->dtype));
  for (int d = 0; d < t->rank; d++)
    fprintf(out, "%s%" PRId64, d ? ", " : "[", t->sizes[d]);
  fprintf(out, "%s checksum=%.9g abs=%.9g\n", t->rank ? "]" : "", sum,
          abs_sum);
}

fz_status fo_run_reference(const fz_fusion *f, const fo_options *o, FILE *out,
                           fz_error *err) {
  int n_in = f->num_inputs, n_out = f->num_outputs;
  fz_host_tensor *inputs = calloc((size_t)n_in + 1, sizeof *inputs);
  fz_host_tensor *outputs = calloc((size_t)n_out + 1, sizeof *outputs);
  int64_t *values = NULL;
  fz_bindings bindings = {0};
  fz_status st = fo_bind_symbols(f, o, out, &values, err);
  if (st == FZ_OK && (!inputs || !outputs))
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  if (st != FZ_OK)
    goto done;
  uint64_t state = o->seed;
  for (int i = 0; i < n_in && st == FZ_OK; i++) {
    const fz_type *t = &f->inputs[i]->type;
    int64_t sizes[FZ_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
      sizes[d] = fz_axis_size(&t->axes[d], values);
    char what[32];
    snprintf(what, sizeof what, "input %d", i);
    void *base; /* inputs[i].data: the offset is 0 */
    st = fz_host_random_input(t, sizes, &FO_INPUTS, what, &state, &inputs[i],
                              &base, NULL, err);
  }
  if (st == FZ_OK)
    st = fz_bind_inputs(f, inputs, n_in, &bindings, err);
  for (int i = 0; i < n_out && st == FZ_OK; i++) {
    fz_host_tensor *h = &outputs[i];
    h->dtype = f->outputs[i]->type.dtype;
    h->rank = f->outputs[i]->type.rank;
    st = fz_output_sizes(f, i, &bindings, h->sizes, err);
    if (st != FZ_OK)
      break;
    /* Row-major whatever the output's layout, so that print_result sums
     * in logical order. */
    fz_type row_major = f->outputs[i]->type;
    row_major.has_layout = false;
    fz_type_dense_strides(&row_major, h->sizes, h->strides);
    int64_t count = fz_host_count(h->rank, h->sizes);
    size_t bytes = (size_t)(count > 0 ? count : 1) * fz_dtype_size(h->dtype);
    h->data = malloc(bytes);
    if (!h->data) {
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory allocating output %d", i);
      break;
    }
    /* Poison, so an element the interpreter forgets shows up as NaN. */
    memset(h->data, 0xff, bytes);
  }
  if (st == FZ_OK)
    st = fz_interpret(f, inputs, n_in, outputs, n_out, err);
  for (int i = 0; i < n_out && st == FZ_OK; i++)
    print_result(f, i, &outputs[i], out);
done:
  fz_bindings_free(&bindings);
  for (int i = 0; inputs && i < n_in; i++)
    free(inputs[i].data);
  for (int i = 0; outputs && i < n_out; i++)
    free(outputs[i].data);
  free(inputs);
  free(outputs);
  free(values);
  return st;
}
