/* The reference interpreter's gather and index_select, on hand values:
 * PyTorch's torch.gather and torch.index_select, and an error (never a
 * read elsewhere) for an index out of range, negative ones too. */
#include <string.h>

#include "test_util.h"

static fz_status interp(const char *text, fz_host_tensor *in, int nin,
                        fz_host_tensor *out, fz_error *err) {
  fz_fusion *f = test_parse(text);
  fz_status st = fz_interpret(f, in, nin, out, 1, err);
  fz_fusion_destroy(f);
  return st;
}

static const float X[2][3] = {{1, 2, 3}, {4, 5, 6}};

START_TEST(gather_along_the_inner_axis) {
  const char *text = "fusion @g(%x: f32[2, 3], %i: i64[2, 2]) {\n"
                     "  %g = gather %x, %i dims(1) : f32[2, 2]\n"
                     "  return %g\n}\n";
  int64_t idx[2][2] = {{2, 0}, {1, 1}};
  float out[2][2] = {{0}};
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, (void *)X, 2, 2, 3),
                          test_host_tensor(FZ_I64, idx, 2, 2, 2)};
  fz_host_tensor o = test_host_tensor(FZ_F32, out, 2, 2, 2);
  fz_error err = {0};
  ck_assert_msg(interp(text, in, 2, &o, &err) == FZ_OK, "%s", err.message);
  ck_assert(out[0][0] == 3 && out[0][1] == 1 && out[1][0] == 5 &&
            out[1][1] == 5);
}
END_TEST

START_TEST(gather_along_the_outer_axis_with_i32) {
  const char *text = "fusion @g(%x: f32[2, 3], %i: i32[1, 3]) {\n"
                     "  %g = gather %x, %i dims(0) : f32[1, 3]\n"
                     "  return %g\n}\n";
  int32_t idx[3] = {1, 0, 1};
  float out[3] = {0};
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, (void *)X, 2, 2, 3),
                          test_host_tensor(FZ_I32, idx, 2, 1, 3)};
  fz_host_tensor o = test_host_tensor(FZ_F32, out, 2, 1, 3);
  fz_error err = {0};
  ck_assert_msg(interp(text, in, 2, &o, &err) == FZ_OK, "%s", err.message);
  ck_assert(out[0] == 4 && out[1] == 2 && out[2] == 6);
}
END_TEST

/* The label pick of cross-entropy: a b1 index axis, one column per row. */
START_TEST(gather_with_a_broadcast_index) {
  const char *text = "fusion @g(%x: f32[2, 3], %l: i64[2]) {\n"
                     "  %b = broadcast %l dims(1) : i64[2, b1]\n"
                     "  %g = gather %x, %b dims(1) : f32[2, b1]\n"
                     "  %q = squeeze %g dims(1) : f32[2]\n"
                     "  return %q\n}\n";
  int64_t label[2] = {1, 2};
  float out[2] = {0};
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, (void *)X, 2, 2, 3),
                          test_host_tensor(FZ_I64, label, 1, 2)};
  fz_host_tensor o = test_host_tensor(FZ_F32, out, 1, 2);
  fz_error err = {0};
  ck_assert_msg(interp(text, in, 2, &o, &err) == FZ_OK, "%s", err.message);
  ck_assert(out[0] == 2 && out[1] == 6);
}
END_TEST

START_TEST(index_select_rows_and_columns) {
  const char *rows = "fusion @s(%x: f32[2, 3], %i: i64[3]) {\n"
                     "  %s = index_select %x, %i dims(0) : f32[3, 3]\n"
                     "  return %s\n}\n";
  int64_t r[3] = {1, 1, 0};
  float out[3][3] = {{0}};
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, (void *)X, 2, 2, 3),
                          test_host_tensor(FZ_I64, r, 1, 3)};
  fz_host_tensor o = test_host_tensor(FZ_F32, out, 2, 3, 3);
  fz_error err = {0};
  ck_assert_msg(interp(rows, in, 2, &o, &err) == FZ_OK, "%s", err.message);
  const float want[3][3] = {{4, 5, 6}, {4, 5, 6}, {1, 2, 3}};
  ck_assert(memcmp(out, want, sizeof want) == 0);

  const char *cols = "fusion @s(%x: f32[2, 3], %i: i32[2]) {\n"
                     "  %s = index_select %x, %i dims(-1) : f32[2, 2]\n"
                     "  return %s\n}\n";
  int32_t c[2] = {2, 0};
  float out2[2][2] = {{0}};
  fz_host_tensor in2[2] = {test_host_tensor(FZ_F32, (void *)X, 2, 2, 3),
                           test_host_tensor(FZ_I32, c, 1, 2)};
  fz_host_tensor o2 = test_host_tensor(FZ_F32, out2, 2, 2, 2);
  ck_assert_msg(interp(cols, in2, 2, &o2, &err) == FZ_OK, "%s", err.message);
  ck_assert(out2[0][0] == 3 && out2[0][1] == 1 && out2[1][0] == 6 &&
            out2[1][1] == 4);
}
END_TEST

/* torch.gather refuses an index past the end and a negative one alike. */
START_TEST(an_index_out_of_range_is_an_error) {
  const char *text = "fusion @g(%x: f32[2, 3], %i: i64[2, 1]) {\n"
                     "  %g = gather %x, %i dims(1) : f32[2, 1]\n"
                     "  return %g\n}\n";
  const int64_t bad[2][2] = {{0, 3}, {-1, 0}};
  const char *want[2] = {"%g = gather: index 3 is out of range [0, 3) of "
                         "axis 1 of %x",
                         "%g = gather: index -1 is out of range [0, 3) of "
                         "axis 1 of %x"};
  for (int k = 0; k < 2; k++) {
    int64_t idx[2] = {bad[k][0], bad[k][1]};
    float out[2] = {0};
    fz_host_tensor in[2] = {test_host_tensor(FZ_F32, (void *)X, 2, 2, 3),
                            test_host_tensor(FZ_I64, idx, 2, 2, 1)};
    fz_host_tensor o = test_host_tensor(FZ_F32, out, 2, 2, 1);
    fz_error err = {0};
    ck_assert_int_eq(interp(text, in, 2, &o, &err), FZ_ERR_INVALID);
    ck_assert_msg(strstr(err.message, want[k]), "message: %s", err.message);
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("interp_gather");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, gather_along_the_inner_axis);
  tcase_add_test(tc, gather_along_the_outer_axis_with_i32);
  tcase_add_test(tc, gather_with_a_broadcast_index);
  tcase_add_test(tc, index_select_rows_and_columns);
  tcase_add_test(tc, an_index_out_of_range_is_an_error);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
