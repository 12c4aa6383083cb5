/* main.c - a program outside fz using an installed libfz: it builds
 * y = exp(x) * 2 + 1 over x: f32[N] through the public handle API, checks
 * that a bad op name is reported as an error value, runs the reference
 * interpreter on the host and checks the result, and opens device 0 if
 * there is one (no GPU is needed: FZ_ERR_NO_DEVICE is fine). Prints
 * "consumer: OK" and exits 0 when everything holds.
 */
#include <fz/fz.h>
#include <fz/ir.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define FAIL(...)                                                              \
  do {                                                                         \
    fprintf(stderr, "consumer: " __VA_ARGS__);                                 \
    fputc('\n', stderr);                                                       \
    return 1;                                                                  \
  } while (0)

int main(void) {
  fz_error err = {0};
  fz_fusion *f = fz_fusion_create("consumer");
  const int64_t extents[1] = {FZ_EXTENT_SYMBOL};
  const char *names[1] = {"N"};
  fz_value *x =
      fz_fusion_add_tensor(f, "x", FZ_F32, 1, extents, names, NULL, NULL, &err);
  if (!x)
    FAIL("add_tensor: %s", err.message);
  fz_value *e = fz_build_pointwise(f, "exp", 1, &x, &err);
  fz_value *two = fz_literal_float(f, 2.0);
  fz_value *m = e ? fz_build_pointwise(f, "mul", 2,
                                       (fz_value *const[]){e, two}, &err)
                  : NULL;
  fz_value *one = fz_literal_float(f, 1.0);
  fz_value *y = m ? fz_build_pointwise(f, "add", 2,
                                       (fz_value *const[]){m, one}, &err)
                  : NULL;
  if (!y || fz_add_output(f, y, &err) != FZ_OK)
    FAIL("building: %s", err.message);
  if (fz_build_pointwise(f, "no_such_op", 1, &x, &err) ||
      err.status != FZ_ERR_INVALID)
    FAIL("an unknown op was not reported as FZ_ERR_INVALID");
  char *text = fz_print(f);
  if (!text)
    FAIL("fz_print returned NULL");
  printf("%s", text);
  free(text);

  float in[5] = {-2.0f, -0.5f, 0.25f, 1.0f, 3.0f}, out[5];
  fz_host_tensor hin = {.dtype = FZ_F32, .rank = 1, .sizes = {5},
                        .strides = {1}, .data = in};
  fz_host_tensor hout = {.dtype = FZ_F32, .rank = 1, .sizes = {5},
                         .strides = {1}, .data = out};
  if (fz_interpret(f, &hin, 1, &hout, 1, &err) != FZ_OK)
    FAIL("interpret: %s", err.message);
  for (int i = 0; i < 5; i++) {
    double want = (float)((float)exp(in[i]) * 2.0) + 1.0;
    if (fabs(out[i] - (float)want) > 1e-6 * fabs(want))
      FAIL("y[%d] = %.9g, expected %.9g", i, out[i], want);
  }

  fz_device *d = NULL;
  fz_status st = fz_device_open(0, &d, &err);
  if (st != FZ_OK && st != FZ_ERR_NO_DEVICE)
    FAIL("device: %s", err.message);
  printf("consumer: fz %s, device: %s\n", fz_version(),
         st == FZ_OK ? fz_device_get_props(d)->name : fz_status_name(st));
  fz_device_close(d);
  fz_fusion_destroy(f);
  printf("consumer: OK\n");
  return 0;
}
