/* test_runtime_args.c - the runtime API checks its arguments first.
 *
 * A bad call is the caller's error whatever the machine has: these calls
 * must answer FZ_ERR_ARGUMENT before they load the driver or touch the
 * device. So they run everywhere, without a GPU, and the executor calls get
 * a zeroed device that would crash on first use: a check that came after
 * any driver call fails the test.
 */
#include "test_util.h"

#include "runtime/cuda.h"

#include <string.h>

#define ck_assert_argument(st, err, needle)                                    \
  do {                                                                         \
    ck_assert_int_eq((st), FZ_ERR_ARGUMENT);                                   \
    ck_assert_int_eq((err).status, FZ_ERR_ARGUMENT);                           \
    ck_assert_msg(strstr((err).message, (needle)) != NULL,                     \
                  "message '%s' lacks '%s'", (err).message, (needle));         \
  } while (0)

/* An executor on a device that is never touched: every call below must
 * fail its checks first. */
typedef struct fixture {
  fz_device dev;
  fz_fusion *f;
  fz_executor *ex;
} fixture;

static void open_fixture(fixture *x, const char *text) {
  memset(&x->dev, 0, sizeof x->dev);
  x->f = test_parse(text);
  fz_error err = {0};
  fz_status st = fz_executor_create(x->f, &x->dev, &x->ex, &err);
  ck_assert_msg(st == FZ_OK, "%s", err.message);
}

static void close_fixture(fixture *x) {
  fz_executor_destroy(x->ex);
  fz_fusion_destroy(x->f);
}

static fz_device_tensor tensor(int64_t rows, int64_t cols, int64_t row_stride,
                               int64_t col_stride) {
  return (fz_device_tensor){.dtype = FZ_F32,
                            .rank = 2,
                            .sizes = {rows, cols},
                            .strides = {row_stride, col_stride},
                            .data = 0x10000};
}

START_TEST(executor_checks_sizes_where_they_arrive) {
  fixture x;
  open_fixture(&x, "fusion @t(%a: f32[N, b1], %b: f32[b1, M]) {\n"
                   "  %p = mul %a, %b : f32[N, M]\n"
                   "  return %p\n}\n");
  fz_error err = {0};
  fz_device_tensor out = {0};
  /* strides that reach past int64 */
  fz_device_tensor in[2] = {tensor(3, 1, INT64_C(1) << 62, 1),
                            tensor(1, 4, 4, 1)};
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "input %a: axis 0 (size 3, stride 4611686018427387904) "
                     "reaches past int64 elements");
  /* inputs that fit, an output that cannot exist */
  in[0] = tensor(INT64_C(1) << 40, 1, 1, 1);
  in[1] = tensor(1, INT64_C(1) << 40, 1, 1);
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "%p: extent product 1099511627776 x 1099511627776 "
                     "overflows int64");
  ck_assert_argument(fz_executor_output_layout(x.ex, in, 2, 0, &out, &err),
                     err, "%p: extent product");
  ck_assert(out.data == 0);
  close_fixture(&x);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("runtime_args");
  TCase *tc = tcase_create("runtime_args");
  tcase_add_test(tc, executor_checks_sizes_where_they_arrive);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
