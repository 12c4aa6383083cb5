/* test_host_tensor.c - the random host tensors of fuse-opt --run-reference
 * and fuse-run (lib/testing/host_tensor.c): layouts under both paddings,
 * the two value streams, the offset, and refusals of sizes past int64. */
#include "test_util.h"

#include "testing/host_tensor.h"
#include "testing/splitmix.h"

#include <stdlib.h>
#include <string.h>

static const fz_host_inputs DOUBLE = {.values = FZ_HOST_VALUES_SYMMETRIC,
                                      .padding = FZ_HOST_PAD_DOUBLE};
static const fz_host_inputs PAD3 = {.values = FZ_HOST_VALUES_REDRAWN,
                                    .padding = FZ_HOST_PAD_ELEMENTS,
                                    .pad = 3};

/* Strides and span of input `i` of the fusion, sizes given. */
static void layout(const fz_fusion *f, int i, const int64_t *sizes,
                   const fz_host_inputs *how, int64_t *strides,
                   int64_t *span) {
  fz_error err = {0};
  ck_assert_msg(fz_host_input_layout(&f->inputs[i]->type, sizes, how, "in",
                                     strides, span, &err) == FZ_OK,
                "%s", err.message);
}

START_TEST(noncontiguous_axes_get_their_gap) {
  /* column-major [4, 3], the outer allocated axis (1) not contiguous */
  fz_fusion *f = test_parse("fusion @t(%x: f32[4, 3] layout(1, 0) "
                            "noncontig(1)) {\n"
                            "  %y = neg %x : f32[4, 3]\n  return %y\n}\n");
  const int64_t sizes[2] = {4, 3};
  int64_t strides[2], span;
  layout(f, 0, sizes, &DOUBLE, strides, &span);
  ck_assert_int_eq(strides[0], 1);
  ck_assert_int_eq(strides[1], 8); /* twice the dense 4 */
  ck_assert_int_eq(span, 1 + 3 * 1 + 2 * 8);
  layout(f, 0, sizes, &PAD3, strides, &span);
  ck_assert_int_eq(strides[0], 1);
  ck_assert_int_eq(strides[1], 4 + 3); /* the dense 4 and 3 elements */
  ck_assert_int_eq(span, 1 + 3 * 1 + 2 * 7);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(broadcast_axes_read_one_element) {
  /* An expanded broadcast declared non-contiguous: the doubling padding
   * gives it no room and no gap; the element padding lays it out as size
   * 1, gap included. Both read it with stride 0. */
  fz_fusion *f = test_parse("fusion @t(%x: i32[2, b1->6] noncontig(1), "
                            "%u: bf16[b1, 5]) {\n"
                            "  return %x, %u\n}\n");
  const int64_t sizes[2] = {2, 6}, unexpanded[2] = {1, 5};
  int64_t strides[2], span;
  layout(f, 0, sizes, &DOUBLE, strides, &span);
  ck_assert_int_eq(strides[0], 1);
  ck_assert_int_eq(strides[1], 0);
  ck_assert_int_eq(span, 2);
  layout(f, 0, sizes, &PAD3, strides, &span);
  ck_assert_int_eq(strides[0], 1 + 3);
  ck_assert_int_eq(strides[1], 0);
  ck_assert_int_eq(span, 1 + 4);
  /* an unexpanded b1 is an ordinary size-1 axis to the doubling padding */
  layout(f, 1, unexpanded, &DOUBLE, strides, &span);
  ck_assert_int_eq(strides[0], 5);
  ck_assert_int_eq(strides[1], 1);
  layout(f, 1, unexpanded, &PAD3, strides, &span);
  ck_assert_int_eq(strides[0], 0);
  ck_assert_int_eq(strides[1], 1);
  ck_assert_int_eq(span, 5);
  fz_fusion_destroy(f);
}
END_TEST

/* Draws n values of dtype and checks they lie in [lo, hi], never 0, and
 * reach both ends. */
static void check_range(fz_host_values values, fz_dtype dtype, double lo,
                        double hi, bool zero_allowed) {
  uint64_t state = 42;
  bool saw_lo = false, saw_hi = false;
  for (int k = 0; k < 20000; k++) {
    double v = fz_host_random_value(values, dtype, &state);
    ck_assert_msg(v >= lo && v <= hi, "%s: %g outside [%g, %g]",
                  fz_dtype_name(dtype), v, lo, hi);
    ck_assert_msg(zero_allowed || v != 0, "%s: drew 0", fz_dtype_name(dtype));
    ck_assert_double_eq(fz_round_to_dtype(v, dtype), v);
    saw_lo |= v == lo;
    saw_hi |= v == hi;
  }
  ck_assert_msg(saw_lo && saw_hi, "%s: [%g, %g] not reached",
                fz_dtype_name(dtype), lo, hi);
}

START_TEST(value_streams_keep_their_ranges) {
  check_range(FZ_HOST_VALUES_SYMMETRIC, FZ_I32, -8, 8, false);
  check_range(FZ_HOST_VALUES_REDRAWN, FZ_I8, -8, 7, false);
  check_range(FZ_HOST_VALUES_SYMMETRIC, FZ_BOOL, 0, 1, true);
  check_range(FZ_HOST_VALUES_REDRAWN, FZ_BOOL, 0, 1, true);
  /* bf16 rounds about one draw in a thousand up to 1: kept by the
   * redrawn stream only */
  check_range(FZ_HOST_VALUES_REDRAWN, FZ_BF16, -1, 1, false);
  uint64_t state = 7;
  for (int k = 0; k < 20000; k++) {
    double v = fz_host_random_value(FZ_HOST_VALUES_SYMMETRIC, FZ_BF16, &state);
    ck_assert(v >= -1 && v < 1 && v != 0);
  }
  /* the booleans take different bits of the same draw */
  uint64_t a = 5, b = 5, c = 5;
  uint64_t draw = fz_splitmix64(&c);
  ck_assert_double_eq(fz_host_random_value(FZ_HOST_VALUES_SYMMETRIC, FZ_BOOL,
                                           &a),
                      (double)(draw >> 63));
  ck_assert_double_eq(fz_host_random_value(FZ_HOST_VALUES_REDRAWN, FZ_BOOL,
                                           &b),
                      (double)(draw & 1));
}
END_TEST

START_TEST(inputs_fill_the_offset_and_the_gaps) {
  fz_fusion *f = test_parse("fusion @t(%x: f16[3, 2] noncontig(0)) {\n"
                            "  %y = neg %x : f16[3, 2]\n  return %y\n}\n");
  const int64_t sizes[2] = {3, 2};
  fz_host_inputs how = PAD3;
  how.offset = 2;
  uint64_t state = 11, replay = 11;
  fz_host_tensor view;
  void *base;
  int64_t elements;
  fz_error err = {0};
  ck_assert_int_eq(fz_host_random_input(&f->inputs[0]->type, sizes, &how,
                                        "in", &state, &view, &base,
                                        &elements, &err),
                   FZ_OK);
  ck_assert_int_eq(view.strides[0], 2 + 3);
  ck_assert_int_eq(view.strides[1], 1);
  ck_assert_int_eq(elements, 2 + (1 + 2 * 5 + 1));
  ck_assert_ptr_eq(view.data, (char *)base + 2 * 2);
  ck_assert_int_eq(view.sizes[0], 3);
  ck_assert_int_eq(view.dtype, FZ_F16);
  for (int64_t e = 0; e < elements; e++) {
    double want = fz_host_random_value(how.values, FZ_F16, &replay);
    ck_assert_double_eq(fz_host_load(FZ_F16, (char *)base + e * 2), want);
  }
  ck_assert_uint_eq(state, replay);
  free(base);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(layouts_past_int64_are_refused) {
  fz_fusion *f = test_parse("fusion @t(%x: i8[2, N] noncontig(0)) {\n"
                            "  %y = neg %x : i8[2, N]\n  return %y\n}\n");
  const int64_t sizes[2] = {2, INT64_C(1) << 61};
  fz_host_tensor view;
  void *base = &view;
  uint64_t state = 0;
  fz_error err = {0};
  ck_assert_int_eq(fz_host_random_input(&f->inputs[0]->type, sizes, &DOUBLE,
                                        "input 0", &state, &view, &base, NULL,
                                        &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_str_eq(err.message, "input 0: its padded layout overflows int64");
  ck_assert_ptr_null(base);
  ck_assert_ptr_null(view.data);
  const int64_t small[2] = {2, 3};
  fz_host_inputs how = PAD3;
  how.offset = INT64_MAX;
  ck_assert_int_eq(fz_host_random_input(&f->inputs[0]->type, small, &how,
                                        "input 0", &state, &view, &base, NULL,
                                        &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_str_eq(err.message, "input 0: its offset overflows int64");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(loads_and_stores_round_trip) {
  unsigned char buf[8];
  const fz_dtype dtypes[] = {FZ_F64, FZ_F32, FZ_F16, FZ_BF16,
                             FZ_I64, FZ_I32, FZ_I8,  FZ_BOOL};
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
    double v = fz_round_to_dtype(-0.7, dtypes[d]);
    if (dtypes[d] == FZ_BOOL || !fz_dtype_is_float(dtypes[d]))
      v = dtypes[d] == FZ_BOOL ? 1 : -7;
    fz_host_store(dtypes[d], buf, v);
    ck_assert_double_eq(fz_host_load(dtypes[d], buf), v);
  }
  const int64_t sizes[3] = {4, 0, 5}, ones[2] = {3, 5};
  ck_assert_int_eq(fz_host_count(3, sizes), 0);
  ck_assert_int_eq(fz_host_count(2, ones), 15);
  ck_assert_int_eq(fz_host_count(0, NULL), 1);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("host_tensor");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, noncontiguous_axes_get_their_gap);
  tcase_add_test(tc, broadcast_axes_read_one_element);
  tcase_add_test(tc, value_streams_keep_their_ranges);
  tcase_add_test(tc, inputs_fill_the_offset_and_the_gaps);
  tcase_add_test(tc, layouts_past_int64_are_refused);
  tcase_add_test(tc, loads_and_stores_round_trip);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
