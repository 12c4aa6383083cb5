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

START_TEST(device_open_checks_before_loading_the_driver) {
  fz_device *d = (fz_device *)&d;
  fz_error err = {0};
  ck_assert_argument(fz_device_open(-1, &d, &err), err,
                     "device ordinal -1 is negative");
  ck_assert_ptr_null(d);
  ck_assert_argument(fz_device_open(0, NULL, &err), err, "out is NULL");
}
END_TEST

START_TEST(memory_calls_check_their_arguments) {
  fz_error err = {0};
  uint64_t p = 1;
  ck_assert_argument(fz_device_memory_alloc(NULL, 16, &p, &err), err,
                     "device is NULL");
  ck_assert(p == 0);
  fz_device dev;
  memset(&dev, 0, sizeof dev);
  ck_assert_argument(fz_device_memory_alloc(&dev, 16, NULL, &err), err,
                     "out is NULL");
  ck_assert_argument(fz_device_memory_free(NULL, 0x1000, &err), err,
                     "device is NULL");
  char host[4];
  ck_assert_argument(
      fz_device_memory_copy_from_host(&dev, 0x1000, NULL, 4, &err), err,
      "the host source is NULL");
  ck_assert_argument(
      fz_device_memory_copy_to_host(&dev, NULL, 0x1000, 4, &err), err,
      "the host destination is NULL");
  ck_assert_argument(
      fz_device_memory_copy_to_host(NULL, host, 0x1000, 4, &err), err,
      "device is NULL");
}
END_TEST

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

START_TEST(executor_calls_check_their_arguments) {
  fixture x;
  open_fixture(&x, "fusion @t(%x: f32[N, 4]) {\n"
                   "  %y = neg %x : f32[N, 4]\n"
                   "  return %y\n}\n");
  fz_error err = {0};
  fz_executor *ex = (fz_executor *)&ex;
  ck_assert_argument(fz_executor_create(x.f, &x.dev, NULL, &err), err,
                     "out is NULL");
  ck_assert_argument(fz_executor_create(NULL, &x.dev, &ex, &err), err,
                     "fusion and device are required");
  ck_assert_ptr_null(ex);
  fz_device_tensor in = tensor(8, 4, 4, 1), out = {0};
  ck_assert_argument(fz_executor_run(NULL, &in, 1, &out, 1, NULL, &err), err,
                     "the executor is NULL");
  ck_assert_argument(fz_executor_run(x.ex, NULL, 1, &out, 1, NULL, &err), err,
                     "inputs is NULL");
  ck_assert_argument(fz_executor_run(x.ex, &in, 1, NULL, 1, NULL, &err), err,
                     "outputs is NULL");
  ck_assert_argument(
      fz_executor_output_layout(x.ex, &in, 1, 0, NULL, &err), err,
      "out is NULL");
  ck_assert_argument(
      fz_executor_output_layout(NULL, &in, 1, 0, &out, &err), err,
      "the executor is NULL");
  close_fixture(&x);
}
END_TEST

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

/* Every refusal of a tensor names it: the executor makes the label only
 * for a message (a call that passes its checks formats nothing), and the
 * message is the same. */
START_TEST(executor_names_the_tensors_it_refuses) {
  fixture x;
  open_fixture(&x, "fusion @t(%x: f32[N, 4], %w: f32[4]) {\n"
                   "  %wb = broadcast %w dims(0) : f32[b1, 4]\n"
                   "  %we = expand %wb : f32[b1->N, 4]\n"
                   "  %y = mul %x, %we : f32[N, 4]\n"
                   "  return %y\n}\n");
  fz_error err = {0};
  fz_device_tensor out = {0};
  fz_device_tensor w = {.dtype = FZ_F32, .rank = 1, .sizes = {4},
                        .strides = {1}, .data = 0x20000};
  fz_device_tensor in[2] = {tensor(8, 4, 4, 1), w};
  in[1].dtype = FZ_F16;
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "input %w: dtype f16, but the fusion declares f32");
  in[1] = w;
  in[1].rank = 2;
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "input %w: rank 2, but the fusion declares rank 1");
  in[1] = w;
  in[0].strides[0] = -4;
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "input %x: stride 0 is negative (-4)");
  in[0] = tensor(8, 4, 4, 1);
  in[0].sizes[1] = -1;
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "input %x: size 1 is negative");
  in[0] = tensor(8, 4, 4, 1);
  in[1].data = 0x20002;
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "input %w: address 0x20002 is not aligned to its 4-byte "
                     "elements");
  in[1].data = 0;
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "input %w: data is NULL");
  in[1] = w;
  in[1].sizes[0] = 5; /* binding: the declared extent */
  ck_assert_argument(fz_executor_run(x.ex, in, 2, &out, 1, NULL, &err), err,
                     "input 1 (%w) axis 0: size 5 does not match the "
                     "declared extent 4");
  close_fixture(&x);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("runtime_args");
  TCase *tc = tcase_create("runtime_args");
  tcase_add_test(tc, device_open_checks_before_loading_the_driver);
  tcase_add_test(tc, memory_calls_check_their_arguments);
  tcase_add_test(tc, executor_calls_check_their_arguments);
  tcase_add_test(tc, executor_checks_sizes_where_they_arrive);
  tcase_add_test(tc, executor_names_the_tensors_it_refuses);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
