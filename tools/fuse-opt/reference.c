/* reference.c - fuse-opt --run-reference: run the interpreter on seeded
 * random inputs and print a checksum per output.
 *
 * The point is a cheap, textual fingerprint of what a fusion computes, so a
 * lit test can pin it and a pass can be shown not to change it. Inputs are
 * never zero (a zero hides a wrong operand in a product): floats are
 * uniform in [-1, 1) without 0, integers in [-8, 8] without 0, bools are
 * random. Each input is allocated in its declared layout, with padding
 * after every axis declared noncontig, so the interpreter reads the same
 * strides a GPU kernel would. The generator is splitmix64, so the numbers
 * are the same on every machine.
 */
#include "fuse-opt.h"

#include "testing/splitmix.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FO_DEFAULT_EXTENT 8

/* ---- f16 and bf16 bits (the host has no such types) ------------------- */

/* v must be exactly representable in f16 and finite. */
static uint16_t f16_bits(double v) {
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double a = fabs(v);
  if (a == 0)
    return sign;
  int e;
  double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int biased = e - 1 + 15;
  if (biased >= 1)
    return (uint16_t)(sign | biased << 10 | (uint16_t)((2 * m - 1) * 1024));
  return (uint16_t)(sign | (uint16_t)(a * 0x1p24)); /* subnormal */
}

static double f16_value(uint16_t h) {
  int biased = h >> 10 & 31, frac = h & 1023;
  double sign = h & 0x8000 ? -1 : 1;
  if (biased == 0)
    return sign * frac * 0x1p-24;
  if (biased == 31)
    return frac ? NAN : sign * INFINITY;
  return sign * ldexp(1024 + frac, biased - 25);
}

static uint16_t bf16_bits(double v) {
  float f = (float)v; /* exact: v is representable in bf16 */
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16);
}

static double bf16_value(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* ---- elements ------------------------------------------------------------ */

static void store(void *data, int64_t index, fz_dtype dtype, double v) {
  switch (dtype) {
  case FZ_F64: ((double *)data)[index] = v; break;
  case FZ_F32: ((float *)data)[index] = (float)v; break;
  case FZ_F16: ((uint16_t *)data)[index] = f16_bits(v); break;
  case FZ_BF16: ((uint16_t *)data)[index] = bf16_bits(v); break;
  case FZ_I64: ((int64_t *)data)[index] = (int64_t)v; break;
  case FZ_I32: ((int32_t *)data)[index] = (int32_t)v; break;
  case FZ_I8: ((int8_t *)data)[index] = (int8_t)v; break;
  case FZ_BOOL: ((uint8_t *)data)[index] = v != 0; break;
  default: FZ_DIE("bad dtype %d", (int)dtype);
  }
}

static double load(const void *data, int64_t index, fz_dtype dtype) {
  switch (dtype) {
  case FZ_F64: return ((const double *)data)[index];
  case FZ_F32: return ((const float *)data)[index];
  case FZ_F16: return f16_value(((const uint16_t *)data)[index]);
  case FZ_BF16: return bf16_value(((const uint16_t *)data)[index]);
  case FZ_I64: return (double)((const int64_t *)data)[index];
  case FZ_I32: return ((const int32_t *)data)[index];
  case FZ_I8: return ((const int8_t *)data)[index];
  case FZ_BOOL: return ((const uint8_t *)data)[index] != 0;
  default: FZ_DIE("bad dtype %d", (int)dtype);
  }
}

static double random_element(uint64_t *state, fz_dtype dtype) {
  if (dtype == FZ_BOOL)
    return (double)(fz_splitmix64(state) >> 63);
  if (!fz_dtype_is_float(dtype)) {
    int64_t v = (int64_t)(fz_splitmix64(state) % 16) - 8; /* [-8, 7] */
    return (double)(v >= 0 ? v + 1 : v);                /* [-8, 8] \ 0 */
  }
  for (;;) {
    double u = (double)(fz_splitmix64(state) >> 11) * 0x1p-53; /* [0, 1) */
    double v = fz_round_to_dtype(2 * u - 1, dtype);
    if (v != 0 && v < 1)
      return v;
  }
}

/* ---- inputs --------------------------------------------------------------- */

/* Strides from the declared layout: dense except after noncontig axes,
 * which get twice the dense stride; expanded broadcast axes get 0. *span
 * is the number of elements the buffer needs. The padding can take a
 * tensor whose own size fits past int64, which is refused. */
static fz_status layout_strides(const fz_type *t, const int64_t *sizes,
                                const char *what, int64_t *strides,
                                int64_t *span, fz_error *err) {
  int64_t running = 1;
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->alloc_order[p];
    const fz_axis *a = &t->axes[axis];
    if (a->kind == FZ_AXIS_BROADCAST && a->expanded) {
      strides[axis] = 0;
      continue;
    }
    if (!fz_size_mul(running, t->contiguous[p] ? 1 : 2, &strides[axis]) ||
        !fz_size_mul(strides[axis], sizes[axis] > 0 ? sizes[axis] : 1,
                     &running))
      return fz_error_set(err, FZ_ERR_ARGUMENT,
                          "%s: its padded layout overflows int64", what);
  }
  return fz_size_span(t->rank, sizes, strides, t->dtype, what,
                      FZ_ERR_ARGUMENT, span, err);
}

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
  fz_status st = fz_check_sizes(f, values, FZ_ERR_ARGUMENT, err);
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
  int64_t count;
  fz_size_of(t->rank, t->sizes, t->dtype, "output", FZ_ERR_ARGUMENT, &count,
             NULL, NULL);
  double sum = 0, abs_sum = 0;
  for (int64_t k = 0; k < count; k++) {
    double x = load(t->data, k, t->dtype); /* dense row-major */
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

static void *alloc_elements(int64_t count, fz_dtype dtype) {
  size_t n = count > 0 ? (size_t)count : 1;
  return calloc(n, fz_dtype_size(dtype));
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
    fz_host_tensor *h = &inputs[i];
    h->dtype = t->dtype;
    h->rank = t->rank;
    for (int d = 0; d < t->rank; d++)
      h->sizes[d] = fz_axis_size(&t->axes[d], values);
    char what[32];
    snprintf(what, sizeof what, "input %d", i);
    int64_t span;
    if ((st = layout_strides(t, h->sizes, what, h->strides, &span, err)))
      break;
    h->data = alloc_elements(span, t->dtype);
    if (!h->data) {
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory allocating input %d", i);
      break;
    }
    for (int64_t k = 0; k < span; k++)
      store(h->data, k, t->dtype, random_element(&state, t->dtype));
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
    int64_t count = 1; /* fz_check_sizes bounds every dense stride */
    for (int d = h->rank - 1; d >= 0; d--) {
      h->strides[d] = count;
      count *= h->sizes[d] > 0 ? h->sizes[d] : 1;
    }
    fz_size_of(h->rank, h->sizes, h->dtype, "output", FZ_ERR_ARGUMENT, &count,
               NULL, NULL);
    h->data = alloc_elements(count, h->dtype);
    if (!h->data) {
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory allocating output %d", i);
      break;
    }
    /* Poison, so an element the interpreter forgets shows up as NaN. */
    memset(h->data, 0xff, (size_t)(count > 0 ? count : 1) *
                              fz_dtype_size(h->dtype));
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
