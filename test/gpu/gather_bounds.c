/* gather_bounds: a gather kernel given an index out of range reads
 * nothing outside its tensor, leaves the caller's inputs intact, and the
 * caller learns of it: at fz_executor_check, and at the next
 * fz_executor_run once the stream has passed the bad call; later good
 * calls run normally. Exits 77 (skipped) without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz/fz.h"

#define M 4
#define N 16
#define K 2

static const char *TEXT =
    "fusion @pick(%x: f32[4, 16], %i: i64[4, 2]) {\n"
    "  %g = gather %x, %i dims(1) : f32[4, 2]\n"
    "  return %g\n"
    "}\n";
static const char *WANT = "%g = gather: index 17 is out of range [0, 16) of "
                          "axis 1 of %x";

static int failures;

static void expect(int ok, const char *what, const fz_error *err) {
  if (!ok) {
    fprintf(stderr, "gather_bounds: FAILED: %s (%s)\n", what,
            err ? err->message : "");
    failures++;
  }
}

int main(void) {
  fz_error err = {0};
  fz_fusion *f = NULL;
  if (fz_parse("pick.fz", TEXT, strlen(TEXT), &f, &err) != FZ_OK) {
    fprintf(stderr, "gather_bounds: %s\n", err.message);
    return 1;
  }
  fz_device *dev = NULL;
  fz_status st = fz_device_open(0, &dev, &err);
  if (st == FZ_ERR_NO_DEVICE) {
    printf("gather_bounds: SKIPPED, no GPU (%s)\n", err.message);
    fz_fusion_destroy(f);
    return 77;
  }
  fz_executor *ex = NULL;
  if (st != FZ_OK || fz_executor_create(f, dev, &ex, &err) != FZ_OK) {
    fprintf(stderr, "gather_bounds: %s\n", err.message);
    return 1;
  }
  float x[M][N], back[M][N], out[M][K];
  for (int r = 0; r < M; r++)
    for (int c = 0; c < N; c++)
      x[r][c] = (float)(100 * r + c);
  int64_t good[M][K] = {{0, 15}, {3, 4}, {5, 6}, {7, 8}};
  int64_t bad[M][K] = {{0, 15}, {3, 17}, {5, 6}, {7, 8}};
  uint64_t dx = 0, di = 0, dout = 0;
  if (fz_device_memory_alloc(dev, sizeof x, &dx, &err) ||
      fz_device_memory_alloc(dev, sizeof good, &di, &err) ||
      fz_device_memory_alloc(dev, sizeof out, &dout, &err) ||
      fz_device_memory_copy_from_host(dev, dx, x, sizeof x, &err)) {
    fprintf(stderr, "gather_bounds: %s\n", err.message);
    return 1;
  }
  fz_device_tensor in[2] = {
      {.dtype = FZ_F32, .rank = 2, .sizes = {M, N}, .strides = {N, 1}, .data = dx},
      {.dtype = FZ_I64, .rank = 2, .sizes = {M, K}, .strides = {K, 1}, .data = di},
  };
  fz_device_tensor o = {
      .dtype = FZ_F32, .rank = 2, .sizes = {M, K}, .strides = {K, 1}, .data = dout};

  /* 1. A bad index, found by the explicit check. */
  fz_device_memory_copy_from_host(dev, di, bad, sizeof bad, &err);
  st = fz_executor_run(ex, in, 2, &o, 1, NULL, &err);
  expect(st == FZ_OK, "the bad call is queued", &err);
  st = fz_executor_check(ex, NULL, &err);
  expect(st == FZ_ERR_INVALID && strstr(err.message, WANT),
         "fz_executor_check reports the bad index", &err);
  expect(fz_executor_check(ex, NULL, &err) == FZ_OK,
         "a reported index is reported once", &err);
  fz_device_memory_copy_to_host(dev, back, dx, sizeof x, &err);
  expect(memcmp(back, x, sizeof x) == 0, "the input is intact", NULL);

  /* 2. A bad index, found by the next call once the stream passed it. */
  st = fz_executor_run(ex, in, 2, &o, 1, NULL, &err);
  expect(st == FZ_OK, "the second bad call is queued", &err);
  fz_device_memory_copy_to_host(dev, out, dout, sizeof out, &err); /* waits */
  fz_device_memory_copy_from_host(dev, di, good, sizeof good, &err);
  st = fz_executor_run(ex, in, 2, &o, 1, NULL, &err);
  expect(st == FZ_ERR_INVALID && strstr(err.message, WANT),
         "the next call reports the bad index", &err);

  /* 3. Good calls run as before. */
  memset(out, 0xff, sizeof out);
  fz_device_memory_copy_from_host(dev, dout, out, sizeof out, &err);
  st = fz_executor_run(ex, in, 2, &o, 1, NULL, &err);
  expect(st == FZ_OK, "a good call runs", &err);
  expect(fz_executor_check(ex, NULL, &err) == FZ_OK, "a good call checks",
         &err);
  fz_device_memory_copy_to_host(dev, out, dout, sizeof out, &err);
  for (int r = 0; r < M; r++)
    for (int k = 0; k < K; k++)
      expect(out[r][k] == x[r][good[r][k]], "a good call's values", NULL);

  fz_device_memory_free(dev, dx, NULL);
  fz_device_memory_free(dev, di, NULL);
  fz_device_memory_free(dev, dout, NULL);
  fz_executor_destroy(ex);
  fz_device_close(dev);
  fz_fusion_destroy(f);
  if (failures)
    return 1;
  printf("gather_bounds: passed\n");
  return 0;
}
