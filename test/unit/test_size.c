/* test_size.c - checked products of sizes (lib/ir/size.c), and the places
 * where run-time sizes enter: binding a fusion's symbols from its inputs,
 * and the strides of the interpreter's host tensors. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static const int64_t P62 = INT64_C(1) << 62, P40 = INT64_C(1) << 40;

#define ck_assert_fails(st, err, want_status, needle)                          \
  do {                                                                         \
    ck_assert_int_eq((st), (want_status));                                     \
    ck_assert_int_eq((err).status, (want_status));                             \
    ck_assert_msg(strstr((err).message, (needle)) != NULL,                     \
                  "message '%s' lacks '%s'", (err).message, (needle));         \
  } while (0)

START_TEST(counts_and_bytes) {
  fz_error err = {0};
  int64_t n = -1, bytes = -1;
  const int64_t sizes[3] = {3, 5, 7};
  ck_assert_int_eq(fz_size_of(3, sizes, FZ_F64, "t", FZ_ERR_INVALID, &n,
                              &bytes, &err),
                   FZ_OK);
  ck_assert_int_eq(n, 105);
  ck_assert_int_eq(bytes, 840);
  ck_assert_int_eq(fz_size_of(0, NULL, FZ_I8, "t", FZ_ERR_INVALID, &n, &bytes,
                              &err),
                   FZ_OK);
  ck_assert_int_eq(n, 1);
  ck_assert_int_eq(bytes, 1);
  /* the largest that fits */
  const int64_t most[2] = {INT64_MAX / 4, 4};
  ck_assert_int_eq(fz_size_of(2, most, FZ_I8, "t", FZ_ERR_INVALID, &n, NULL,
                              &err),
                   FZ_OK);
  ck_assert_int_eq(n, INT64_MAX / 4 * 4);
}
END_TEST

START_TEST(overflow_is_named) {
  fz_error err = {0};
  int64_t n;
  const int64_t sizes[2] = {P62, 4};
  fz_status st =
      fz_size_of(2, sizes, FZ_F32, "%x", FZ_ERR_ARGUMENT, &n, NULL, &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT,
                  "%x: extent product 4611686018427387904 x 4 overflows "
                  "int64");
  const int64_t fits[1] = {P62};
  st = fz_size_of(1, fits, FZ_F32, "%y", FZ_ERR_INVALID, &n, NULL, &err);
  ck_assert_fails(st, err, FZ_ERR_INVALID,
                  "%y: 4611686018427387904 elements x 4 bytes overflows "
                  "int64");
  /* Empty, but the dense strides of the other axes would still overflow. */
  const int64_t empty[3] = {P62, 0, 4};
  st = fz_size_of(3, empty, FZ_I8, "e", FZ_ERR_INVALID, &n, NULL, &err);
  ck_assert_fails(st, err, FZ_ERR_INVALID, "e: extent product");
  const int64_t empty_ok[3] = {1024, 0, 4};
  ck_assert_int_eq(fz_size_of(3, empty_ok, FZ_I8, "e", FZ_ERR_INVALID, &n,
                              NULL, &err),
                   FZ_OK);
  ck_assert_int_eq(n, 0);
  const int64_t negative[2] = {4, -1};
  st = fz_size_of(2, negative, FZ_I8, "n", FZ_ERR_ARGUMENT, &n, NULL, &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT, "n: axis 1 has negative size -1");
}
END_TEST

START_TEST(spans_of_strided_views) {
  fz_error err = {0};
  int64_t span;
  const int64_t sizes[2] = {3, 4}, dense[2] = {4, 1}, gapped[2] = {10, 2};
  ck_assert_int_eq(fz_size_span(2, sizes, dense, FZ_F32, "t", FZ_ERR_ARGUMENT,
                                &span, &err),
                   FZ_OK);
  ck_assert_int_eq(span, 12);
  ck_assert_int_eq(fz_size_span(2, sizes, gapped, FZ_F32, "t",
                                FZ_ERR_ARGUMENT, &span, &err),
                   FZ_OK);
  ck_assert_int_eq(span, 1 + 2 * 10 + 3 * 2);
  const int64_t broadcast[2] = {0, 0};
  ck_assert_int_eq(fz_size_span(2, sizes, broadcast, FZ_F32, "t",
                                FZ_ERR_ARGUMENT, &span, &err),
                   FZ_OK);
  ck_assert_int_eq(span, 1);
  /* A stride times an extent past int64, in elements or in bytes. */
  const int64_t far[2] = {P62, 1};
  fz_status st = fz_size_span(2, sizes, far, FZ_F32, "input 0",
                              FZ_ERR_ARGUMENT, &span, &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT,
                  "input 0: axis 0 (size 3, stride 4611686018427387904) "
                  "reaches past int64 elements");
  const int64_t bytes[2] = {P62 / 4, 1};
  st = fz_size_span(2, sizes, bytes, FZ_F64, "t", FZ_ERR_ARGUMENT, &span,
                    &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT, "bytes overflows int64");
  const int64_t most_negative[2] = {INT64_MIN, 1};
  st = fz_size_span(2, sizes, most_negative, FZ_I8, "t", FZ_ERR_ARGUMENT,
                    &span, &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT, "reaches past int64");
}
END_TEST

START_TEST(binding_checks_every_value) {
  /* Each input fits; their outer product does not. */
  fz_fusion *f = test_parse("fusion @t(%a: f32[N, b1], %b: f32[b1, M]) {\n"
                            "  %p = mul %a, %b : f32[N, M]\n"
                            "  return %p\n}\n");
  fz_host_tensor in[2] = {
      {.dtype = FZ_F32, .rank = 2, .sizes = {P40, 1}, .strides = {1, 1}},
      {.dtype = FZ_F32, .rank = 2, .sizes = {1, P40}, .strides = {1, 1}}};
  fz_bindings b = {0};
  fz_error err = {0};
  fz_status st = fz_bind_inputs(f, in, 2, &b, &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT,
                  "%p: extent product 1099511627776 x 1099511627776 "
                  "overflows int64");
  ck_assert_ptr_null(b.values);
  int64_t values[2] = {P40, P40};
  st = fz_check_sizes(f, values, FZ_ERR_ARGUMENT, &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT, "%p: extent product");
  values[1] = 1024;
  ck_assert_int_eq(fz_check_sizes(f, values, FZ_ERR_ARGUMENT, &err), FZ_OK);
  values[0] = -3;
  st = fz_check_sizes(f, values, FZ_ERR_ARGUMENT, &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT, "%a: axis 0 has negative size -3");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(interpreter_refuses_strides_past_int64) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N, 2]) {\n"
                            "  %y = neg %x : f32[N, 2]\n"
                            "  return %y\n}\n");
  float x[4] = {1, 2, 3, 4}, y[4];
  fz_host_tensor in = {.dtype = FZ_F32, .rank = 2, .sizes = {2, 2},
                       .strides = {INT64_MAX / 2, 1}, .data = x};
  fz_host_tensor out = {.dtype = FZ_F32, .rank = 2, .sizes = {2, 2},
                        .strides = {2, 1}, .data = y};
  fz_error err = {0};
  fz_status st = fz_interpret(f, &in, 1, &out, 1, &err);
  ck_assert_fails(st, err, FZ_ERR_ARGUMENT, "input 0: ");
  in.strides[0] = 2;
  ck_assert_int_eq(fz_interpret(f, &in, 1, &out, 1, &err), FZ_OK);
  ck_assert(y[3] == -4.0f);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(dense_strides_follow_the_allocation_order) {
  /* [N, C, H] allocated (N, H, C): C innermost; size-1 axes take no room. */
  fz_type t = {.dtype = FZ_F32, .rank = 3, .has_layout = true,
               .alloc_order = {0, 2, 1}};
  int64_t sizes[3] = {5, 3, 7}, strides[3];
  fz_type_dense_strides(&t, sizes, strides);
  ck_assert_int_eq(strides[0], 21);
  ck_assert_int_eq(strides[1], 1);
  ck_assert_int_eq(strides[2], 3);
  sizes[1] = 1;
  fz_type_dense_strides(&t, sizes, strides);
  ck_assert_int_eq(strides[0], 7);
  ck_assert_int_eq(strides[1], 1);
  ck_assert_int_eq(strides[2], 1);
  /* Without a layout: logical order, whatever alloc_order holds. */
  t.has_layout = false;
  sizes[1] = 3;
  fz_type_dense_strides(&t, sizes, strides);
  ck_assert_int_eq(strides[0], 21);
  ck_assert_int_eq(strides[1], 7);
  ck_assert_int_eq(strides[2], 1);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("size");
  TCase *tc = tcase_create("size");
  tcase_add_test(tc, counts_and_bytes);
  tcase_add_test(tc, overflow_is_named);
  tcase_add_test(tc, spans_of_strided_views);
  tcase_add_test(tc, binding_checks_every_value);
  tcase_add_test(tc, interpreter_refuses_strides_past_int64);
  tcase_add_test(tc, dense_strides_follow_the_allocation_order);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
