/* fuse-run - run a fusion on the GPU, validate it, time it.
 *
 *   fuse-run FILE [--size SYM=N,...] [--iters K] [--warmup W] [--seed S]
 *            [--offset E] [--pad P] [--no-canonicalize] [--print-plan]
 *            [--print-ptx] [--rtol R] [--atol A] [--no-validate]
 *
 * Inputs are fresh random numbers (never zeros) from a seed that is printed
 * (pass --seed to repeat a run), laid out as the fusion declares them
 * (permuted, with gaps of P elements on non-contiguous axes, shifted by E
 * elements to test misaligned pointers). Outputs are poisoned (all bytes
 * 0xff: NaN for floats) before the run, then compared element by element
 * with the reference interpreter. The median kernel time over K runs
 * (CUDA events, after W warm-up runs) is reported with GB/s and the
 * fraction of a device-to-device copy measured in the same process.
 *
 * Exit status: 0 all outputs match; 1 a mismatch or an error; 2 bad usage;
 * 77 no GPU (the run is skipped, not passed).
 */
#include "host_data.h"
#include "runtime/cuda.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EXIT_MISMATCH = 1, EXIT_USAGE = 2, EXIT_SKIP = 77 };

typedef struct options {
  const char *file;
  char *sizes[32];
  int num_sizes;
  int iters, warmup;
  uint64_t seed;
  bool seed_given;
  int64_t offset, pad;
  bool canonicalize, print_plan, print_ptx, validate;
  double rtol, atol;
} options;

typedef struct tensor {
  fz_dtype dtype;
  int rank;
  int64_t sizes[FZ_MAX_RANK], strides[FZ_MAX_RANK];
  int64_t span, offset; /* elements */
  unsigned char *host;   /* span + offset elements */
  uint64_t device;       /* base of the allocation */
} tensor;

static void usage(FILE *f) {
  fprintf(f,
          "usage: fuse-run FILE [--size SYM=N,...] [--iters K] [--warmup W]\n"
          "                [--seed S] [--offset E] [--pad P] "
          "[--no-canonicalize]\n"
          "                [--print-plan] [--print-ptx] [--rtol R] "
          "[--atol A]\n"
          "                [--no-validate]  (time only: for sizes the "
          "interpreter is too slow for)\n");
}

static bool parse_int(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end)
    return false;
  *out = v;
  return true;
}

static int parse_options(int argc, char **argv, options *o) {
  *o = (options){.iters = 50, .warmup = 5, .pad = 3, .canonicalize = true,
                 .validate = true,
                 .rtol = -1, .atol = -1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = NULL;
#define VALUE(name)                                                            \
  (strncmp(a, name "=", sizeof name) == 0                                      \
       ? (v = a + sizeof name)                                                 \
       : strcmp(a, name) == 0 && i + 1 < argc ? (v = argv[++i]) : NULL)
    int64_t n;
    if (VALUE("--size")) {
      if (o->num_sizes == 32)
        return fprintf(stderr, "fuse-run: too many --size\n"), EXIT_USAGE;
      o->sizes[o->num_sizes++] = (char *)v;
    } else if (VALUE("--iters")) {
      if (!parse_int(v, &n) || n < 1 || n > 100000)
        return fprintf(stderr, "fuse-run: bad --iters %s\n", v), EXIT_USAGE;
      o->iters = (int)n;
    } else if (VALUE("--warmup")) {
      if (!parse_int(v, &n) || n < 0 || n > 100000)
        return fprintf(stderr, "fuse-run: bad --warmup %s\n", v), EXIT_USAGE;
      o->warmup = (int)n;
    } else if (VALUE("--seed")) {
      if (!parse_int(v, &n))
        return fprintf(stderr, "fuse-run: bad --seed %s\n", v), EXIT_USAGE;
      o->seed = (uint64_t)n;
      o->seed_given = true;
    } else if (VALUE("--offset")) {
      if (!parse_int(v, &n) || n < 0 || n > 1024)
        return fprintf(stderr, "fuse-run: bad --offset %s\n", v), EXIT_USAGE;
      o->offset = n;
    } else if (VALUE("--pad")) {
      if (!parse_int(v, &n) || n < 0 || n > 1024)
        return fprintf(stderr, "fuse-run: bad --pad %s\n", v), EXIT_USAGE;
      o->pad = n;
    } else if (VALUE("--rtol")) {
      o->rtol = atof(v);
    } else if (VALUE("--atol")) {
      o->atol = atof(v);
    } else if (strcmp(a, "--no-validate") == 0) {
      o->validate = false;
    } else if (strcmp(a, "--no-canonicalize") == 0) {
      o->canonicalize = false;
    } else if (strcmp(a, "--print-plan") == 0) {
      o->print_plan = true;
    } else if (strcmp(a, "--print-ptx") == 0) {
      o->print_ptx = true;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "fuse-run: unknown option %s\n", a);
      usage(stderr);
      return EXIT_USAGE;
    } else if (!o->file) {
      o->file = a;
    } else {
      fprintf(stderr, "fuse-run: more than one input file\n");
      return EXIT_USAGE;
    }
#undef VALUE
  }
  if (!o->file) {
    usage(stderr);
    return EXIT_USAGE;
  }
  return 0;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap)
      break;
    char *grown = realloc(buf, cap * 2);
    if (!grown) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = grown;
    cap *= 2;
  }
  if (f != stdin)
    fclose(f);
  if (buf) {
    char *t = realloc(buf, n + 1);
    if (t)
      buf = t;
    buf[n] = 0;
    *len = n;
  }
  return buf;
}

/* Bind symbols from --size SYM=N,... */
static int bind_sizes(const options *o, const fz_fusion *f, int64_t *values) {
  for (int i = 0; i < f->num_symbols; i++)
    values[i] = -1;
  for (int s = 0; s < o->num_sizes; s++) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", o->sizes[s]);
    for (char *item = strtok(buf, ","); item; item = strtok(NULL, ",")) {
      char *eq = strchr(item, '=');
      int64_t n;
      if (!eq || !parse_int(eq + 1, &n) || n < 0) {
        fprintf(stderr, "fuse-run: bad --size item '%s' (want SYM=N)\n", item);
        return EXIT_USAGE;
      }
      *eq = 0;
      int sym = fz_fusion_find_symbol(f, item);
      if (sym < 0) {
        fprintf(stderr, "fuse-run: fusion @%s has no symbol '%s'\n", f->name,
                item);
        return EXIT_USAGE;
      }
      values[sym] = n;
    }
  }
  for (int i = 0; i < f->num_symbols; i++)
    if (values[i] < 0) {
      fprintf(stderr, "fuse-run: symbol %s is not bound: pass --size %s=N\n",
              f->symbols[i].name ? f->symbols[i].name : "?",
              f->symbols[i].name ? f->symbols[i].name : "?");
      return EXIT_USAGE;
    }
  return 0;
}

static int64_t numel(const tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->sizes[i];
  return n;
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

#define CHECK(expr)                                                            \
  do {                                                                         \
    if ((expr) != FZ_OK) {                                                     \
      fprintf(stderr, "fuse-run: %s\n", err.message);                         \
      rc = EXIT_MISMATCH;                                                      \
      goto done;                                                               \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, &o);
  if (rc)
    return rc;
  size_t len = 0;
  char *text = read_file(o.file, &len);
  if (!text) {
    fprintf(stderr, "fuse-run: cannot read %s: %s\n", o.file, strerror(errno));
    return EXIT_MISMATCH;
  }
  fz_error err = {0};
  fz_fusion *f = NULL;
  fz_device *dev = NULL;
  fz_executor *ex = NULL;
  tensor in[64] = {0}, out[64] = {0};
  fz_host_tensor hin[64], href[64];
  void *ref_data[64] = {0};
  int64_t symbols[64];
  fz_timer *timer = NULL;
  rc = 0;
  if (fz_parse(o.file, text, len, &f, &err) != FZ_OK) {
    fprintf(stderr, "%s\n", err.message);
    free(text);
    return EXIT_MISMATCH;
  }
  free(text);
  CHECK(fz_verify(f, &err));
  if (o.canonicalize)
    CHECK(fz_run_pass(f, "canonicalize", &err));
  if (f->num_inputs > 64 || f->num_outputs > 64 || f->num_symbols > 64) {
    fprintf(stderr, "fuse-run: fusion too large for fuse-run\n");
    rc = EXIT_MISMATCH;
    goto done;
  }
  if ((rc = bind_sizes(&o, f, symbols)))
    goto done;

  fz_status st = fz_device_open(0, &dev, &err);
  if (st == FZ_ERR_NO_DEVICE) {
    printf("fuse-run: %s: SKIPPED, no GPU (%s)\n", o.file, err.message);
    rc = EXIT_SKIP;
    goto done;
  }
  CHECK(st);
  if (!o.seed_given) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    o.seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
  }
  printf("fuse-run: %s on %s, seed %" PRIu64 "\n", o.file,
         fz_device_get_props(dev)->name, o.seed);
  uint64_t rng = o.seed;

  /* Inputs: random host data in the declared layout, uploaded. */
  fz_device_tensor din[64], dout[64];
  double input_bytes = 0;
  for (int i = 0; i < f->num_inputs; i++) {
    const fz_value *v = f->inputs[i];
    tensor *t = &in[i];
    t->dtype = v->type.dtype;
    t->rank = v->type.rank;
    int64_t alloc_sizes[FZ_MAX_RANK];
    for (int k = 0; k < t->rank; k++) {
      const fz_axis *ax = &v->type.axes[k];
      t->sizes[k] = fz_axis_size(ax, symbols);
      alloc_sizes[k] = ax->kind == FZ_AXIS_BROADCAST ? 1 : t->sizes[k];
    }
    t->span = host_layout(t->rank, alloc_sizes, v->type.alloc_order,
                          v->type.contiguous, o.pad, t->strides);
    for (int k = 0; k < t->rank; k++)
      if (v->type.axes[k].kind == FZ_AXIS_BROADCAST)
        t->strides[k] = 0; /* expanded inputs are stride-0 views */
    t->offset = o.offset;
    size_t esize = fz_dtype_size(t->dtype);
    size_t bytes = (size_t)(t->span + t->offset) * esize;
    t->host = malloc(bytes ? bytes : 1);
    if (!t->host) {
      fprintf(stderr, "fuse-run: out of host memory\n");
      rc = EXIT_MISMATCH;
      goto done;
    }
    for (int64_t e = 0; e < t->span + t->offset; e++)
      host_store(t->dtype, t->host + (size_t)e * esize,
                 host_random_value(t->dtype, &rng));
    input_bytes += (double)t->span * (double)esize;
    CHECK(fz_device_memory_alloc(dev, bytes ? bytes : 1, &t->device, &err));
    CHECK(fz_copy_to_device(dev, t->device, t->host, bytes, &err));
    din[i] = (fz_device_tensor){.dtype = t->dtype, .rank = t->rank,
                                .data = t->device + (uint64_t)t->offset * esize};
    memcpy(din[i].sizes, t->sizes, sizeof t->sizes);
    memcpy(din[i].strides, t->strides, sizeof t->strides);
    hin[i] = (fz_host_tensor){.dtype = t->dtype, .rank = t->rank,
                              .data = t->host + (size_t)t->offset * esize};
    memcpy(hin[i].sizes, t->sizes, sizeof t->sizes);
    memcpy(hin[i].strides, t->strides, sizeof t->strides);
  }

  CHECK(fz_executor_create(f, dev, &ex, &err));
  /* Outputs in the layout the executor chooses, poisoned. */
  double output_bytes = 0;
  for (int i = 0; i < f->num_outputs; i++) {
    CHECK(fz_executor_output_layout(ex, din, f->num_inputs, i, &dout[i], &err));
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
      fprintf(stderr, "fuse-run: out of host memory\n");
      rc = EXIT_MISMATCH;
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

  CHECK(fz_executor_run(ex, din, f->num_inputs, dout, f->num_outputs, NULL,
                        &err));
  CHECK(fz_device_synchronize(dev, &err));
  if (o.print_plan)
    printf("%s", fz_executor_last_plan(ex));
  if (o.print_ptx)
    printf("%s", fz_executor_last_ptx(ex));
  for (int i = 0; i < f->num_outputs; i++)
    CHECK(fz_copy_to_host(dev, out[i].host, out[i].device,
                          (size_t)out[i].span * fz_dtype_size(out[i].dtype),
                          &err));

  /* Validate against the interpreter. */
  int bad_outputs = 0;
  if (o.validate)
    CHECK(fz_interpret(f, hin, f->num_inputs, href, f->num_outputs, &err));
  else
    printf("validation: SKIPPED (--no-validate): times only\n");
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
  for (int i = 0; i < f->num_outputs && o.validate; i++) {
    tensor *t = &out[i];
    double rtol, atol;
    default_tolerance(t->dtype, &rtol, &atol);
    atol *= sqrt(reduce_len);
    if (o.rtol >= 0)
      rtol = o.rtol;
    if (o.atol >= 0)
      atol = o.atol;
    size_t esize = fz_dtype_size(t->dtype);
    int64_t idx[FZ_MAX_RANK] = {0}, mismatches = 0, n = numel(t);
    double max_err = 0;
    for (int64_t e = 0; e < n; e++) {
      int64_t off = offset_of(t, idx);
      double g = host_load(t->dtype, t->host + (size_t)off * esize);
      double r = host_load(t->dtype, (unsigned char *)ref_data[i] +
                                          (size_t)off * esize);
      bool ok;
      if (isnan(r) || isnan(g))
        ok = isnan(r) && isnan(g);
      else if (isinf(r) || isinf(g))
        ok = g == r;
      else {
        double d = fabs(g - r);
        ok = d <= atol + rtol * fabs(r);
        if (d > max_err)
          max_err = d;
      }
      if (!ok && mismatches++ < 5) {
        printf("  mismatch output %d at [", i);
        for (int k = 0; k < t->rank; k++)
          printf("%s%" PRId64, k ? ", " : "", idx[k]);
        printf("]: gpu %.9g, reference %.9g\n", g, r);
      }
      if (t->rank)
        next_index(t, idx);
    }
    const fz_value *v = f->outputs[i];
    printf("output %d %%%s %s: %" PRId64 " elements, %s (%" PRId64
           " mismatches, max abs error %.3g, rtol %.1g atol %.1g)\n",
           i, v->name ? v->name : "?", fz_dtype_name(t->dtype), n,
           mismatches ? "MISMATCH" : "ok", mismatches, max_err, rtol, atol);
    bad_outputs += mismatches > 0;
  }
  if (bad_outputs) {
    printf("fuse-run: FAILED (seed %" PRIu64 ")\n", o.seed);
    rc = EXIT_MISMATCH;
    goto done;
  }

  /* Timing: the fusion, then a device copy of the same bytes. */
  CHECK(fz_timer_create(dev, &timer, &err));
  float *ms = malloc(sizeof(float) * (size_t)o.iters);
  if (!ms)
    goto done;
  for (int r = 0; r < o.warmup; r++)
    CHECK(fz_executor_run(ex, din, f->num_inputs, dout, f->num_outputs, NULL,
                          &err));
  for (int r = 0; r < o.iters; r++) {
    CHECK(fz_timer_start(timer, NULL, &err));
    CHECK(fz_executor_run(ex, din, f->num_inputs, dout, f->num_outputs, NULL,
                          &err));
    CHECK(fz_timer_stop(timer, &err));
    CHECK(fz_timer_elapsed_ms(timer, &ms[r], &err));
  }
  qsort(ms, (size_t)o.iters, sizeof *ms, compare_median);
  double kernel_ms = ms[o.iters / 2];
  double moved = input_bytes + output_bytes;
  size_t copy_bytes = (size_t)(moved / 2) & ~(size_t)255;
  double copy_gbs = 0;
  if (copy_bytes >= 256) {
    uint64_t a = 0, b = 0;
    CHECK(fz_device_memory_alloc(dev, copy_bytes, &a, &err));
    CHECK(fz_device_memory_alloc(dev, copy_bytes, &b, &err));
    for (int r = 0; r < o.warmup + 1; r++)
      CHECK(fz_copy_device(dev, b, a, copy_bytes, &err));
    for (int r = 0; r < o.iters; r++) {
      CHECK(fz_timer_start(timer, NULL, &err));
      CHECK(fz_copy_device(dev, b, a, copy_bytes, &err));
      CHECK(fz_timer_stop(timer, &err));
      CHECK(fz_timer_elapsed_ms(timer, &ms[r], &err));
    }
    qsort(ms, (size_t)o.iters, sizeof *ms, compare_median);
    copy_gbs = 2.0 * (double)copy_bytes / (ms[o.iters / 2] * 1e-3) / 1e9;
    fz_device_memory_free(dev, a, NULL);
    fz_device_memory_free(dev, b, NULL);
  }
  free(ms);
  double gbs = moved / (kernel_ms * 1e-3) / 1e9;
  printf("time: median %.2f us over %d runs, %.3f MB moved, %.0f GB/s", kernel_ms * 1e3,
         o.iters, moved / 1e6, gbs);
  if (copy_gbs > 0)
    printf(", copy %.0f GB/s, %.1f%% of copy", copy_gbs, 100.0 * gbs / copy_gbs);
  printf("\nfuse-run: %s\n", o.validate ? "PASSED" : "TIMED (not validated)");

done:
  fz_timer_destroy(timer);
  fz_executor_destroy(ex);
  for (int i = 0; i < 64; i++) {
    if (dev && in[i].device)
      fz_device_memory_free(dev, in[i].device, NULL);
    if (dev && out[i].device)
      fz_device_memory_free(dev, out[i].device, NULL);
    free(in[i].host);
    free(out[i].host);
    free(ref_data[i]);
  }
  fz_device_close(dev);
  fz_fusion_destroy(f);
  return rc;
}
