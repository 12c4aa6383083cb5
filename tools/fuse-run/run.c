/* run.c - run one fusion on the GPU, validate it, time it.
 *
 * Inputs are fresh random numbers (never zeros) from the seed, laid out as
 * the fusion declares them (permuted, with gaps of `pad` elements on
 * non-contiguous axes, shifted by `offset` elements to test misaligned
 * pointers). Outputs are poisoned (all bytes 0xff: NaN for floats) before
 * the run, then compared element by element with the reference
 * interpreter. The median kernel time over `iters` runs (CUDA events,
 * after `warmup` runs) is reported with GB/s and the fraction of a
 * device-to-device copy measured in the same process.
 *
 * Tolerances are per dtype (exact for integers and bool), and the
 * absolute one grows with the square root of the longest reduction. With
 * scale_tolerance (random fusions) every element of an output may also be
 * off by rtol times the output's largest reference value: a random fusion
 * may subtract two nearly equal values, and what is left of them then
 * carries the rounding of the values, not its own. Wrong indexing or a
 * wrong op still shows as an error of the output's own size.
 */
#include "run.h"

#include "runtime/cuda.h"
#include "testing/host_tensor.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tensor {
  fz_dtype dtype;
  int rank;
  int64_t sizes[FZ_MAX_RANK], strides[FZ_MAX_RANK];
  int64_t span, offset; /* elements */
  unsigned char *host;   /* span + offset elements */
  uint64_t device;       /* base of the allocation */
} tensor;

/* Messages: to the log when there is one, else to `f`. */
static void say(const run_config *c, FILE *f, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void say(const run_config *c, FILE *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (c->log) {
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    fz_buf_puts(c->log, line);
  } else {
    vfprintf(f, fmt, ap);
  }
  va_end(ap);
}

/* t's sizes are a bound value's, which fz_check_sizes accepted. */
static int64_t numel(const tensor *t) {
  return fz_host_count(t->rank, t->sizes);
}

/* Logical index -> element offset, iterating in row-major logical order. */
static bool next_index(const tensor *t, int64_t *idx) {
  for (int k = t->rank - 1; k >= 0; k--) {
    if (++idx[k] < t->sizes[k])
      return true;
    idx[k] = 0;
  }
  return false;
}

static int64_t offset_of(const tensor *t, const int64_t *idx) {
  int64_t off = t->offset;
  for (int k = 0; k < t->rank; k++)
    off += idx[k] * t->strides[k];
  return off;
}

static void default_tolerance(fz_dtype d, double *rtol, double *atol) {
  switch (d) {
  case FZ_F64: *rtol = 1e-12; *atol = 1e-14; break;
  case FZ_F32: *rtol = 1e-5; *atol = 1e-6; break;
  case FZ_F16: *rtol = 2e-3; *atol = 1e-4; break;
  case FZ_BF16: *rtol = 1.6e-2; *atol = 1e-3; break;
  default: *rtol = 0; *atol = 0; break;
  }
}

static int compare_median(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Does t hold exactly the dense strides of allocation order `order`? */
static bool dense_in_order(const fz_device_tensor *t, int rank,
                           const int *order) {
  if (rank != t->rank)
    return false;
  int64_t stride = 1;
  for (int p = rank - 1; p >= 0; p--) {
    int axis = order[p];
    if (axis < 0 || axis >= rank || t->strides[axis] != stride)
      return false;
    stride *= t->sizes[axis] > 1 ? t->sizes[axis] : 1;
  }
  return true;
}

void run_error_text(const char *file, const fz_error *err, char *buf,
                    size_t size) {
  if (file && err->line > 0)
    snprintf(buf, size, "%s:%d:%d: error: %s", file, err->line, err->col,
             err->message);
  else
    snprintf(buf, size, "fuse-run: %s", err->message);
}

/* The phase marks of the last run's traced kernels (FZ_TRACE=phases),
 * if any. */
static fz_status print_trace(const run_config *c, fz_executor *ex,
                             fz_error *err) {
  char *text = NULL;
  fz_status st = fz_executor_last_trace(ex, &text, err);
  if (text)
    say(c, stdout, "%s", text);
  free(text);
  return st;
}

#define CHECK(expr)                                                            \
  do {                                                                         \
    if ((expr) != FZ_OK) {                                                     \
      char text_[sizeof err.message + 256];                                    \
      run_error_text(c->file, &err, text_, sizeof text_);                      \
      say(c, stderr, "%s\n", text_);                                           \
      rc = RUN_FAILED;                                                         \
      goto done;                                                               \
    }                                                                          \
  } while (0)

int run_fusion(fz_device *dev, const fz_fusion *f, const int64_t *symbols,
               uint64_t seed, const run_config *c) {
  fz_error err = {0};
  fz_executor *ex = NULL;
  tensor in[64] = {0}, out[64] = {0};
  fz_host_tensor hin[64], href[64];
  void *ref_data[64] = {0};
  fz_timer *timer = NULL;
  float *ms = NULL;
  int rc = RUN_PASSED;
  if (f->num_inputs > 64 || f->num_outputs > 64) {
    say(c, stderr, "fuse-run: fusion too large for fuse-run\n");
    return RUN_FAILED;
  }
  uint64_t rng = seed;

  /* Inputs: random host data in the declared layout, uploaded. */
  fz_device_tensor din[64], dout[64];
  double input_bytes = 0;
  for (int i = 0; i < f->num_inputs; i++) {
    const fz_value *v = f->inputs[i];
    tensor *t = &in[i];
    t->dtype = v->type.dtype;
    t->rank = v->type.rank;
    for (int k = 0; k < t->rank; k++)
      t->sizes[k] = fz_axis_size(&v->type.axes[k], symbols);
    char what[96];
    snprintf(what, sizeof what, "input %d", i);
    fz_host_inputs how = {.values = FZ_HOST_VALUES_REDRAWN,
                          .padding = FZ_HOST_PAD_ELEMENTS,
                          .pad = c->pad,
                          .offset = c->offset};
    void *base;
    int64_t elements;
    CHECK(fz_host_random_input(&v->type, t->sizes, &how, what, &rng, &hin[i],
                               &base, &elements, &err));
    t->host = base;
    memcpy(t->strides, hin[i].strides, sizeof t->strides);
    t->offset = c->offset;
    t->span = elements - t->offset;
    size_t esize = fz_dtype_size(t->dtype);
    size_t bytes = (size_t)elements * esize;
    input_bytes += (double)t->span * (double)esize;
    CHECK(fz_device_memory_alloc(dev, bytes ? bytes : 1, &t->device, &err));
    CHECK(fz_copy_to_device(dev, t->device, t->host, bytes, &err));
    din[i] = (fz_device_tensor){.dtype = t->dtype, .rank = t->rank,
                                .data = t->device + (uint64_t)t->offset * esize};
    memcpy(din[i].sizes, t->sizes, sizeof t->sizes);
    memcpy(din[i].strides, t->strides, sizeof t->strides);
  }

  CHECK(fz_executor_create(f, dev, &ex, &err));
  /* Outputs in the layout the executor chooses, poisoned. */
  double output_bytes = 0;
  for (int i = 0; i < f->num_outputs; i++) {
    CHECK(fz_executor_output_layout(ex, din, f->num_inputs, i, &dout[i], &err));
    for (int k = 0; k < c->num_expect; k++) {
      if (c->expect_output[k] != i ||
          dense_in_order(&dout[i], c->expect_rank[k], c->expect_order[k]))
        continue;
      char got[256], want[256];
      size_t g = 0, w = 0;
      for (int d = 0; d < dout[i].rank; d++)
        g += (size_t)snprintf(got + g, sizeof got - g, "%s%" PRId64,
                              d ? ", " : "", dout[i].strides[d]);
      for (int d = 0; d < c->expect_rank[k]; d++)
        w += (size_t)snprintf(want + w, sizeof want - w, "%s%d", d ? ", " : "",
                              c->expect_order[k][d]);
      say(c, stdout,
          "output %d: strides (%s) are not dense in the expected layout "
          "(%s)\nfuse-run: FAILED (seed %" PRIu64 ")\n",
          i, dout[i].rank ? got : "", want, seed);
      rc = RUN_FAILED;
      goto done;
    }
    tensor *t = &out[i];
    t->dtype = dout[i].dtype;
    t->rank = dout[i].rank;
    memcpy(t->sizes, dout[i].sizes, sizeof t->sizes);
    memcpy(t->strides, dout[i].strides, sizeof t->strides);
    t->span = numel(t);
    size_t bytes = (size_t)t->span * fz_dtype_size(t->dtype);
    output_bytes += (double)bytes;
    t->host = malloc(bytes ? bytes : 1);
    ref_data[i] = malloc(bytes ? bytes : 1);
    if (!t->host || !ref_data[i]) {
      say(c, stderr, "fuse-run: out of host memory\n");
      rc = RUN_FAILED;
      goto done;
    }
    CHECK(fz_device_memory_alloc(dev, bytes ? bytes : 1, &t->device, &err));
    CHECK(fz_device_memset8(dev, t->device, 0xff, bytes, &err));
    dout[i].data = t->device;
    href[i] = (fz_host_tensor){.dtype = t->dtype, .rank = t->rank,
                               .data = ref_data[i]};
    memcpy(href[i].sizes, t->sizes, sizeof t->sizes);
    memcpy(href[i].strides, t->strides, sizeof t->strides);
  }

  /* A fusion no scheduler takes, not even in segments: declined when
   * asked (random fusions), else a failure like any error. */
  fz_status st = fz_executor_run(ex, din, f->num_inputs, dout,
                                 f->num_outputs, NULL, &err);
  if (st == FZ_ERR_UNSUPPORTED && c->check_schedule) {
    say(c, stdout, "%s\n", err.message);
    rc = RUN_DECLINED;
    goto done;
  }
  CHECK(st);
  CHECK(fz_device_synchronize(dev, &err));
  if (c->print_plan)
    say(c, stdout, "%s", fz_executor_last_plan(ex));
  if (c->print_ptx)
    say(c, stdout, "%s", fz_executor_last_ptx(ex));
  for (int i = 0; i < f->num_outputs; i++)
    CHECK(fz_copy_to_host(dev, out[i].host, out[i].device,
                          (size_t)out[i].span * fz_dtype_size(out[i].dtype),
                          &err));

  /* Validate against the interpreter. */
  int bad_outputs = 0;
  if (c->validate)
    CHECK(fz_interpret(f, hin, f->num_inputs, href, f->num_outputs, &err));
  else
    say(c, stdout, "validation: SKIPPED (--no-validate): times only\n");
  /* Reductions accumulate in a different order than the interpreter's
   * f64 sums: the absolute tolerance grows with the square root of the
   * longest reduction (random-walk growth of rounding errors). */
  double reduce_len = 1;
  for (int i = 0; i < f->num_ops; i++) {
    const fz_op *op = f->ops[i];
    if (fz_op_table[op->code].kind != FZ_KIND_REDUCTION)
      continue;
    double len = 1;
    for (int d = 0; d < op->num_dims; d++)
      len *= (double)fz_axis_size(&op->operands[0]->type.axes[op->dims[d]],
                                  symbols);
    if (len > reduce_len)
      reduce_len = len;
  }
  for (int i = 0; i < f->num_outputs && c->validate; i++) {
    tensor *t = &out[i];
    double rtol, atol;
    default_tolerance(t->dtype, &rtol, &atol);
    atol *= sqrt(reduce_len);
    if (c->rtol >= 0)
      rtol = c->rtol;
    if (c->atol >= 0)
      atol = c->atol;
    size_t esize = fz_dtype_size(t->dtype);
    int64_t idx[FZ_MAX_RANK] = {0}, mismatches = 0, n = numel(t);
    const unsigned char *ref = ref_data[i];
    double scale = 0;
    for (int64_t e = 0; e < n && c->scale_tolerance; e++) {
      double r = fabs(fz_host_load(t->dtype, ref + (size_t)e * esize));
      if (isfinite(r) && r > scale)
        scale = r;
    }
    double max_err = 0;
    for (int64_t e = 0; e < n; e++) {
      int64_t off = offset_of(t, idx);
      double g = fz_host_load(t->dtype, t->host + (size_t)off * esize);
      double r = fz_host_load(t->dtype, ref + (size_t)off * esize);
      bool ok;
      if (isnan(r) || isnan(g))
        ok = isnan(r) && isnan(g);
      else if (isinf(r) || isinf(g))
        ok = g == r;
      else {
        double d = fabs(g - r);
        ok = d <= atol + rtol * (fabs(r) + scale);
        if (d > max_err)
          max_err = d;
      }
      if (!ok && mismatches++ < 5) {
        char at[256];
        size_t used = 0;
        for (int k = 0; k < t->rank && used < sizeof at; k++)
          used += (size_t)snprintf(at + used, sizeof at - used,
                                   "%s%" PRId64, k ? ", " : "", idx[k]);
        say(c, stdout, "  mismatch output %d at [%s]: gpu %.9g, reference "
                       "%.9g\n",
            i, t->rank ? at : "", g, r);
      }
      if (t->rank)
        next_index(t, idx);
    }
    const fz_value *v = f->outputs[i];
    say(c, stdout,
        "output %d %%%s %s: %" PRId64 " elements, %s (%" PRId64
        " mismatches, max abs error %.3g, rtol %.1g atol %.1g)\n",
        i, v->name ? v->name : "?", fz_dtype_name(t->dtype), n,
        mismatches ? "MISMATCH" : "ok", mismatches, max_err, rtol, atol);
    bad_outputs += mismatches > 0;
  }
  if (bad_outputs) {
    say(c, stdout, "fuse-run: FAILED (seed %" PRIu64 ")\n", seed);
    rc = RUN_FAILED;
    goto done;
  }
  if (c->iters <= 0) {
    CHECK(print_trace(c, ex, &err));
    goto done;
  }

  /* Timing: the fusion, then a device copy of the same bytes. */
  CHECK(fz_timer_create(dev, c->iters, &timer, &err));
  ms = malloc(sizeof(float) * (size_t)c->iters);
  if (!ms)
    goto done;
  for (int r = 0; r < c->warmup; r++)
    CHECK(fz_executor_run(ex, din, f->num_inputs, dout, f->num_outputs, NULL,
                          &err));
  fz_timer_set_written(timer, (size_t)output_bytes);
  for (int r = 0; r < c->iters; r++) {
    CHECK(fz_timer_start(timer, r, NULL, &err));
    CHECK(fz_executor_run(ex, din, f->num_inputs, dout, f->num_outputs, NULL,
                          &err));
    CHECK(fz_timer_stop(timer, r, &err));
  }
  CHECK(fz_timer_elapsed_ms(timer, ms, &err));
  CHECK(print_trace(c, ex, &err)); /* the last timed run's */
  qsort(ms, (size_t)c->iters, sizeof *ms, compare_median);
  double kernel_ms = ms[c->iters / 2];
  double moved = input_bytes + output_bytes;
  size_t copy_bytes = (size_t)(moved / 2) & ~(size_t)255;
  double copy_gbs = 0;
  if (copy_bytes >= 256) {
    uint64_t a = 0, b = 0;
    CHECK(fz_device_memory_alloc(dev, copy_bytes, &a, &err));
    CHECK(fz_device_memory_alloc(dev, copy_bytes, &b, &err));
    for (int r = 0; r < c->warmup + 1; r++)
      CHECK(fz_copy_device(dev, b, a, copy_bytes, &err));
    fz_timer_set_written(timer, copy_bytes);
    for (int r = 0; r < c->iters; r++) {
      CHECK(fz_timer_start(timer, r, NULL, &err));
      CHECK(fz_copy_device_async(dev, b, a, copy_bytes, NULL, &err));
      CHECK(fz_timer_stop(timer, r, &err));
    }
    CHECK(fz_timer_elapsed_ms(timer, ms, &err));
    qsort(ms, (size_t)c->iters, sizeof *ms, compare_median);
    copy_gbs = 2.0 * (double)copy_bytes / (ms[c->iters / 2] * 1e-3) / 1e9;
    fz_device_memory_free(dev, a, NULL);
    fz_device_memory_free(dev, b, NULL);
  }
  double gbs = moved / (kernel_ms * 1e-3) / 1e9;
  say(c, stdout, "time: median %.2f us over %d runs, %.3f MB moved, %.0f GB/s",
      kernel_ms * 1e3, c->iters, moved / 1e6, gbs);
  if (copy_gbs > 0)
    say(c, stdout, ", copy %.0f GB/s, %.1f%% of copy", copy_gbs,
        100.0 * gbs / copy_gbs);
  say(c, stdout, "\nfuse-run: %s\n",
      c->validate ? "PASSED" : "TIMED (not validated)");

done:
  free(ms);
  fz_timer_destroy(timer);
  fz_executor_destroy(ex);
  for (int i = 0; i < 64; i++) {
    if (in[i].device)
      fz_device_memory_free(dev, in[i].device, NULL);
    if (out[i].device)
      fz_device_memory_free(dev, out[i].device, NULL);
    free(in[i].host);
    free(out[i].host);
    free(ref_data[i]);
  }
  return rc;
}
