/* test_output_layouts.c - fz_executor_output_layouts, every output at once.
 *
 * It must answer what fz_executor_output_layout answers output by output
 * (declared layouts, propagated ones, an input returned as it is), and
 * fail as it does, leaving outputs[] untouched. Layouts need no device:
 * the executor gets a zeroed one that would crash on first use.
 */
#include "test_util.h"

#include "runtime/cuda.h"

#include <string.h>

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

/* %x is column-major; %y declares row-major, %e and %s follow %x, %w is
 * an input returned as it is. */
static const char *four_outputs =
    "fusion @t(%x: f32[N, M] layout(1, 0), %w: f32[M]) {\n"
    "  %b = broadcast %w dims(0) : f32[b1, M]\n"
    "  %y = mul %x, %b : f32[N, M] layout(0, 1)\n"
    "  %e = exp %x : f32[N, M]\n"
    "  %s = sum %x dims(1) keepdim : f32[N, b1]\n"
    "  %c = cast %s : f64[N, b1]\n"
    "  return %y, %e, %c, %w\n}\n";

static void set_inputs(fz_device_tensor in[2], int64_t n, int64_t m) {
  in[0] = (fz_device_tensor){.dtype = FZ_F32,
                             .rank = 2,
                             .sizes = {n, m},
                             .strides = {1, n},
                             .data = 0x10000};
  in[1] = (fz_device_tensor){.dtype = FZ_F32,
                             .rank = 1,
                             .sizes = {m},
                             .strides = {1},
                             .data = 0x20000};
}

static void assert_layout(const fz_device_tensor *t, fz_dtype dtype, int rank,
                          const int64_t *sizes, const int64_t *strides) {
  ck_assert_int_eq(t->dtype, dtype);
  ck_assert_int_eq(t->rank, rank);
  for (int k = 0; k < rank; k++) {
    ck_assert_int_eq(t->sizes[k], sizes[k]);
    ck_assert_int_eq(t->strides[k], strides[k]);
  }
  ck_assert(t->data == 0);
}

START_TEST(every_output_as_one_at_a_time) {
  fixture x;
  open_fixture(&x, four_outputs);
  fz_error err = {0};
  fz_device_tensor in[2], all[4], one;
  set_inputs(in, 3, 5);
  memset(all, 0x5a, sizeof all);
  fz_status st = fz_executor_output_layouts(x.ex, in, 2, all, 4, &err);
  ck_assert_msg(st == FZ_OK, "%s", err.message);
  assert_layout(&all[0], FZ_F32, 2, (int64_t[]){3, 5}, (int64_t[]){5, 1});
  assert_layout(&all[1], FZ_F32, 2, (int64_t[]){3, 5}, (int64_t[]){1, 3});
  assert_layout(&all[2], FZ_F64, 2, (int64_t[]){3, 1}, (int64_t[]){1, 3});
  assert_layout(&all[3], FZ_F32, 1, (int64_t[]){5}, (int64_t[]){1});
  for (int i = 0; i < 4; i++) {
    memset(&one, 0x5a, sizeof one);
    st = fz_executor_output_layout(x.ex, in, 2, i, &one, &err);
    ck_assert_msg(st == FZ_OK, "%s", err.message);
    ck_assert_msg(memcmp(&one, &all[i], sizeof one) == 0,
                  "output %d differs from fz_executor_output_layout's", i);
  }
  close_fixture(&x);
}
END_TEST

START_TEST(failures_leave_the_outputs_alone) {
  fixture x;
  open_fixture(&x, four_outputs);
  fz_error err = {0}, one_err = {0};
  fz_device_tensor in[2], all[4], before[4], one;
  set_inputs(in, 3, 5);
  in[1].sizes[0] = 6; /* M is 5 in %x */
  memset(all, 0x5a, sizeof all);
  memcpy(before, all, sizeof all);
  ck_assert_int_eq(fz_executor_output_layouts(x.ex, in, 2, all, 4, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_int_eq(fz_executor_output_layout(x.ex, in, 2, 0, &one, &one_err),
                   FZ_ERR_ARGUMENT);
  ck_assert_str_eq(err.message, one_err.message);
  ck_assert(memcmp(all, before, sizeof all) == 0);

  set_inputs(in, 3, 5);
  ck_assert_int_eq(fz_executor_output_layouts(x.ex, in, 2, all, 3, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_str_eq(err.message, "fusion @t has 4 outputs but was given 3");
  ck_assert_int_eq(fz_executor_output_layouts(x.ex, in, 1, all, 4, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_str_eq(err.message, "fusion @t takes 2 inputs but was given 1");
  ck_assert(memcmp(all, before, sizeof all) == 0);

  ck_assert_int_eq(fz_executor_output_layouts(NULL, in, 2, all, 4, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_str_eq(err.message,
                   "fz_executor_output_layouts: the executor is NULL");
  ck_assert_int_eq(fz_executor_output_layouts(x.ex, NULL, 2, all, 4, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_str_eq(err.message, "fz_executor_output_layouts: inputs is NULL");
  ck_assert_int_eq(fz_executor_output_layouts(x.ex, in, 2, NULL, 4, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_str_eq(err.message, "fz_executor_output_layouts: outputs is NULL");
  close_fixture(&x);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("output_layouts");
  TCase *tc = tcase_create("output_layouts");
  tcase_add_test(tc, every_output_as_one_at_a_time);
  tcase_add_test(tc, failures_leave_the_outputs_alone);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
