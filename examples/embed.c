/* embed.c - embedding libfz in a program, start to finish.
 *
 * This is what a framework does with fz, in the order it does it:
 *   1. define a fusion with the C builder (no text, no IR structs):
 *        y[M, N] = gelu(x * w + b)   with the bias b[N] broadcast over rows
 *        s[M]    = sum(y, dim 1)     the row sums of y
 *      and run the passes a framework would run before executing;
 *   2. open device 0 and make an executor for the fusion;
 *   3. allocate device buffers itself, copy random inputs in (never zeros,
 *      which hide indexing bugs), poison the outputs (NaN) so that an
 *      element the kernel never writes cannot pass;
 *   4. run, copy back, and compare with a plain host computation;
 *   5. run again with the same shapes (the cached path) and check again;
 *   6. free everything, in reverse order.
 * Only the public headers are used (fz/fz.h, and fz/ir.h for the builder
 * calls that take handles). Every call's status is checked; the message in
 * fz_error says what went wrong.
 *
 * Exit status: 0 results match; 1 mismatch or error; 77 no GPU (skipped).
 * Usage: embed [M N]   (default 300 1000: odd sizes, to exercise tails)
 */
#include "fz/fz.h"
#include "fz/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    if ((call) != FZ_OK) {                                                     \
      fprintf(stderr, "embed: %s failed: %s: %s\n", #call,                     \
              fz_status_name(err.status), err.message);                        \
      goto done;                                                               \
    }                                                                          \
  } while (0)

#define CHECK_VALUE(v)                                                         \
  do {                                                                         \
    if (!(v)) {                                                                \
      fprintf(stderr, "embed: building %s failed: %s\n", #v, err.message);     \
      goto done;                                                               \
    }                                                                          \
  } while (0)

/* Uniform in [-2, -0.05] U [0.05, 2]: random, never zero. */
static float random_value(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  double u = (double)(*state >> 11) / (double)(1ull << 53); /* [0, 1) */
  double mag = 0.05 + 1.95 * u;
  return (float)((*state & 1) ? mag : -mag);
}

/* The fusion's semantics on the host: each op computes in double and
 * rounds its result to f32; the sum accumulates in double. */
static double gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

static void reference(int64_t m, int64_t n, const float *x, const float *w,
                      const float *b, float *y, float *s, double *s_scale) {
  for (int64_t i = 0; i < m; i++) {
    double acc = 0, scale = 0;
    for (int64_t j = 0; j < n; j++) {
      float t = (float)((double)x[i * n + j] * w[i * n + j]);
      float u = (float)((double)t + b[j]);
      float v = (float)gelu(u);
      y[i * n + j] = v;
      acc += v;
      scale += fabs(v);
    }
    s[i] = (float)acc;
    s_scale[i] = scale;
  }
}

/* Elementwise: f32 math on the GPU (fast erf) against double on the host
 * may differ by a few ulps. The row sum: a different summation order, so
 * the tolerance scales with the sum of magnitudes. */
static int compare(int64_t m, int64_t n, const float *y, const float *y_ref,
                   const float *s, const float *s_ref, const double *s_scale,
                   const char *what) {
  int64_t bad = 0;
  for (int64_t k = 0; k < m * n; k++) {
    double tol = 1e-5 * fabs(y_ref[k]) + 1e-6;
    if (!(fabs((double)y[k] - y_ref[k]) <= tol)) {
      if (bad++ < 5)
        fprintf(stderr, "embed: %s: y[%lld, %lld] = %.9g, expected %.9g\n",
                what, (long long)(k / n), (long long)(k % n), y[k], y_ref[k]);
    }
  }
  for (int64_t i = 0; i < m; i++) {
    double tol = 1e-4 * s_scale[i] + 1e-6;
    if (!(fabs((double)s[i] - s_ref[i]) <= tol)) {
      if (bad++ < 10)
        fprintf(stderr, "embed: %s: s[%lld] = %.9g, expected %.9g\n", what,
                (long long)i, s[i], s_ref[i]);
    }
  }
  if (bad)
    fprintf(stderr, "embed: %s: %lld mismatches\n", what, (long long)bad);
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  int64_t m = 300, n = 1000;
  if (argc == 3) {
    m = strtoll(argv[1], NULL, 10);
    n = strtoll(argv[2], NULL, 10);
  }
  if ((argc != 1 && argc != 3) || m <= 0 || n <= 0) {
    fprintf(stderr, "usage: embed [M N]\n");
    return 2;
  }

  int rc = 1;
  fz_error err = {0};
  fz_fusion *fusion = NULL;
  fz_device *device = NULL;
  fz_executor *executor = NULL;
  float *x = NULL, *w = NULL, *b = NULL, *y = NULL, *s = NULL;
  float *y_ref = NULL, *s_ref = NULL;
  double *s_scale = NULL;
  uint64_t dx = 0, dw = 0, db = 0, dy = 0, ds = 0;

  /* 1. The fusion. M and N are symbols: one compiled kernel serves every
   * size with the same heuristics. */
  fusion = fz_fusion_create("embed");
  const int64_t sym2[2] = {FZ_EXTENT_SYMBOL, FZ_EXTENT_SYMBOL};
  const char *mn[2] = {"M", "N"};
  const int64_t sym1[1] = {FZ_EXTENT_SYMBOL};
  const char *n_only[1] = {"N"};
  fz_value *vx = fz_fusion_add_tensor(fusion, "x", FZ_F32, 2, sym2, mn, NULL,
                                      NULL, &err);
  CHECK_VALUE(vx);
  fz_value *vw = fz_fusion_add_tensor(fusion, "w", FZ_F32, 2, sym2, mn, NULL,
                                      NULL, &err);
  CHECK_VALUE(vw);
  fz_value *vb = fz_fusion_add_tensor(fusion, "b", FZ_F32, 1, sym1, n_only,
                                      NULL, NULL, &err);
  CHECK_VALUE(vb);
  const int row_dim[1] = {0};
  fz_value *bias = fz_broadcast(fusion, vb, 1, row_dim, &err); /* [b1, N] */
  CHECK_VALUE(bias);
  fz_value *xw = fz_build_pointwise(fusion, "mul", 2,
                                    (fz_value *const[]){vx, vw}, &err);
  CHECK_VALUE(xw);
  fz_value *pre = fz_build_pointwise(fusion, "add", 2,
                                     (fz_value *const[]){xw, bias}, &err);
  CHECK_VALUE(pre);
  fz_value *vy = fz_build_pointwise(fusion, "gelu", 1,
                                    (fz_value *const[]){pre}, &err);
  CHECK_VALUE(vy);
  const int cols[1] = {-1};
  fz_value *vs = fz_build_reduction(fusion, "sum", vy, 1, cols, false, &err);
  CHECK_VALUE(vs);
  CHECK(fz_value_set_name(fusion, vy, "y", &err));
  CHECK(fz_value_set_name(fusion, vs, "s", &err));
  CHECK(fz_add_output(fusion, vy, &err));
  CHECK(fz_add_output(fusion, vs, &err));
  /* What a framework would do before handing the fusion over: fold what
   * can be folded, and let results follow their inputs' layouts. */
  CHECK(fz_run_pass(fusion, "canonicalize", &err));
  CHECK(fz_run_pass(fusion, "alloc-order", &err));
  char *text = fz_print(fusion);
  if (text)
    printf("%s", text);
  free(text);

  /* 2. The device. Without a driver or a GPU this is where we stop. */
  fz_status st = fz_device_open(0, &device, &err);
  if (st == FZ_ERR_NO_DEVICE) {
    printf("SKIPPED: no GPU (%s)\n", err.message);
    rc = 77;
    goto done;
  }
  CHECK(st);
  printf("embed: %s, M=%lld N=%lld\n", fz_device_get_props(device)->name,
         (long long)m, (long long)n);
  CHECK(fz_executor_create(fusion, device, &executor, &err));

  /* 3. Host data, device buffers, inputs copied in. */
  size_t mn_bytes = (size_t)(m * n) * sizeof(float);
  size_t m_bytes = (size_t)m * sizeof(float), n_bytes = (size_t)n * sizeof(float);
  x = malloc(mn_bytes);
  w = malloc(mn_bytes);
  b = malloc(n_bytes);
  y = malloc(mn_bytes);
  s = malloc(m_bytes);
  y_ref = malloc(mn_bytes);
  s_ref = malloc(m_bytes);
  s_scale = malloc((size_t)m * sizeof(double));
  if (!x || !w || !b || !y || !s || !y_ref || !s_ref || !s_scale) {
    fprintf(stderr, "embed: out of host memory\n");
    goto done;
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (int64_t k = 0; k < m * n; k++) {
    x[k] = random_value(&rng);
    w[k] = random_value(&rng);
  }
  for (int64_t j = 0; j < n; j++)
    b[j] = random_value(&rng);
  reference(m, n, x, w, b, y_ref, s_ref, s_scale);

  CHECK(fz_device_memory_alloc(device, mn_bytes, &dx, &err));
  CHECK(fz_device_memory_alloc(device, mn_bytes, &dw, &err));
  CHECK(fz_device_memory_alloc(device, n_bytes, &db, &err));
  CHECK(fz_device_memory_alloc(device, mn_bytes, &dy, &err));
  CHECK(fz_device_memory_alloc(device, m_bytes, &ds, &err));
  CHECK(fz_device_memory_copy_from_host(device, dx, x, mn_bytes, &err));
  CHECK(fz_device_memory_copy_from_host(device, dw, w, mn_bytes, &err));
  CHECK(fz_device_memory_copy_from_host(device, db, b, n_bytes, &err));

  /* Row-major tensors: strides in elements. */
  fz_device_tensor in[3] = {
      {.dtype = FZ_F32, .rank = 2, .sizes = {m, n}, .strides = {n, 1}, .data = dx},
      {.dtype = FZ_F32, .rank = 2, .sizes = {m, n}, .strides = {n, 1}, .data = dw},
      {.dtype = FZ_F32, .rank = 1, .sizes = {n}, .strides = {1}, .data = db},
  };
  fz_device_tensor out[2] = {
      {.dtype = FZ_F32, .rank = 2, .sizes = {m, n}, .strides = {n, 1}, .data = dy},
      {.dtype = FZ_F32, .rank = 1, .sizes = {m}, .strides = {1}, .data = ds},
  };

  /* 4 and 5: run twice, poisoning the outputs each time. */
  for (int round = 0; round < 2; round++) {
    memset(y, 0xff, mn_bytes); /* all-ones bytes: NaN */
    memset(s, 0xff, m_bytes);
    CHECK(fz_device_memory_copy_from_host(device, dy, y, mn_bytes, &err));
    CHECK(fz_device_memory_copy_from_host(device, ds, s, m_bytes, &err));
    CHECK(fz_executor_run(executor, in, 3, out, 2, NULL, &err));
    /* Copies on the legacy default stream wait for the run (also NULL). */
    CHECK(fz_device_memory_copy_to_host(device, y, dy, mn_bytes, &err));
    CHECK(fz_device_memory_copy_to_host(device, s, ds, m_bytes, &err));
    if (compare(m, n, y, y_ref, s, s_ref, s_scale,
                round == 0 ? "first run" : "cached run"))
      goto done;
  }
  if (fz_executor_last_plan(executor))
    printf("%s", fz_executor_last_plan(executor));
  printf("embed: OK (y and s match the host, first and cached run)\n");
  rc = 0;

done:
  /* 6. Reverse order; every free function accepts NULL/0. */
  if (device) {
    fz_device_memory_free(device, ds, NULL);
    fz_device_memory_free(device, dy, NULL);
    fz_device_memory_free(device, db, NULL);
    fz_device_memory_free(device, dw, NULL);
    fz_device_memory_free(device, dx, NULL);
  }
  fz_executor_destroy(executor);
  fz_device_close(device);
  fz_fusion_destroy(fusion);
  free(x);
  free(w);
  free(b);
  free(y);
  free(s);
  free(y_ref);
  free(s_ref);
  free(s_scale);
  return rc;
}
