/* test_argreduce.c - argmax and argmin: building them (dtype, shape, what
 * is refused) and what the reference interpreter computes, against hand
 * values at the edges PyTorch defines: ties (the first position), NaN (the
 * first NaN, for both), -0.0 == 0.0, -inf only, integer extremes, and the
 * logical position of a permuted input. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"

/* A host tensor over data with these sizes, strides row-major or given. */
static fz_host_tensor tensor(fz_dtype dtype, void *data, int rank,
                             const int64_t *sizes, const int64_t *strides) {
  fz_host_tensor t = {.dtype = dtype, .rank = rank, .data = data};
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    t.sizes[i] = sizes[i];
    t.strides[i] = strides ? strides[i] : s;
    s *= sizes[i];
  }
  return t;
}

static fz_status run(const char *text, fz_host_tensor *in,
                     fz_host_tensor *out, int nout, fz_error *err) {
  fz_fusion *f = test_parse(text);
  fz_status st = fz_interpret(f, in, 1, out, nout, err);
  fz_fusion_destroy(f);
  return st;
}

static void run_ok(const char *text, fz_host_tensor *in, fz_host_tensor *out,
                   int nout) {
  fz_error err = {0};
  fz_status st = run(text, in, out, nout, &err);
  ck_assert_msg(st == FZ_OK, "interpret failed: %s", err.message);
}

static const char *ROWS_F32 = "fusion @t(%x: f32[R, 4]) {\n"
                              "  %a = argmax %x dims(1) : i64[R]\n"
                              "  %b = argmin %x dims(1) : i64[R]\n"
                              "  return %a, %b\n"
                              "}\n";

/* argmax and argmin of each 4-element row of x (rows of them). */
static void rows_f32(const float *x, int rows, int64_t *amax, int64_t *amin) {
  fz_host_tensor in = tensor(FZ_F32, (void *)x, 2, (int64_t[]){rows, 4}, NULL);
  fz_host_tensor out[2] = {tensor(FZ_I64, amax, 1, (int64_t[]){rows}, NULL),
                           tensor(FZ_I64, amin, 1, (int64_t[]){rows}, NULL)};
  run_ok(ROWS_F32, &in, out, 2);
}

START_TEST(ties_go_to_the_first_position) {
  float x[] = {1, 3, 3, 0,     /* max tie at 1, min at 3 */
               2, 2, 2, 2,     /* all equal: 0 and 0 */
               -1, 5, -1, 5,   /* max at 1, min at 0 */
               7, 1, 7, 1};    /* max at 0, min at 1 */
  int64_t a[4], b[4];
  rows_f32(x, 4, a, b);
  int64_t want_a[4] = {1, 0, 1, 0}, want_b[4] = {3, 0, 0, 1};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(a[i], want_a[i]);
    ck_assert_int_eq(b[i], want_b[i]);
  }
}
END_TEST

START_TEST(the_first_nan_wins_both) {
  float x[] = {1, NAN, 9, NAN,            /* NaN beats 9 and -inf alike */
               -INFINITY, 0, NAN, -5,     /* the only NaN */
               NAN, NAN, NAN, NAN,        /* all NaN: the first */
               INFINITY, -INFINITY, 1, 2}; /* no NaN */
  int64_t a[4], b[4];
  rows_f32(x, 4, a, b);
  int64_t want_a[4] = {1, 2, 0, 0}, want_b[4] = {1, 2, 0, 1};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(a[i], want_a[i]);
    ck_assert_int_eq(b[i], want_b[i]);
  }
}
END_TEST

START_TEST(signed_zeros_and_infinities) {
  float x[] = {-0.0f, 0.0f, -0.0f, 0.0f,                   /* all tie */
               -INFINITY, -INFINITY, -INFINITY, -INFINITY, /* all -inf */
               INFINITY, INFINITY, -INFINITY, -INFINITY,
               -1e-45f, 0.0f, 1e-45f, -0.0f};              /* denormals */
  int64_t a[4], b[4];
  rows_f32(x, 4, a, b);
  int64_t want_a[4] = {0, 0, 0, 2}, want_b[4] = {0, 0, 2, 0};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(a[i], want_a[i]);
    ck_assert_int_eq(b[i], want_b[i]);
  }
}
END_TEST

START_TEST(integers_at_their_extremes) {
  const char *text = "fusion @t(%x: i32[3, 3]) {\n"
                     "  %a = argmax %x dims(1) : i64[3]\n"
                     "  %b = argmin %x dims(1) : i64[3]\n"
                     "  return %a, %b\n"
                     "}\n";
  int32_t x[] = {INT32_MIN, INT32_MIN, INT32_MIN, /* all the identity */
                 5, INT32_MAX, INT32_MAX,
                 -3, 4, -3};
  int64_t a[3], b[3];
  fz_host_tensor in = tensor(FZ_I32, x, 2, (int64_t[]){3, 3}, NULL);
  fz_host_tensor out[2] = {tensor(FZ_I64, a, 1, (int64_t[]){3}, NULL),
                           tensor(FZ_I64, b, 1, (int64_t[]){3}, NULL)};
  run_ok(text, &in, out, 2);
  ck_assert_int_eq(a[0], 0);
  ck_assert_int_eq(b[0], 0);
  ck_assert_int_eq(a[1], 1);
  ck_assert_int_eq(b[1], 0);
  ck_assert_int_eq(a[2], 1);
  ck_assert_int_eq(b[2], 0);
}
END_TEST

/* Over every axis the position is the flat row-major index; over a set of
 * axes, the row-major index into those axes; both in logical order, also
 * when the input is stored transposed. */
START_TEST(positions_are_logical_and_row_major) {
  const char *text = "fusion @t(%x: f32[2, 3, 2]) {\n"
                     "  %all = argmax %x dims() : i64\n"
                     "  %outer = argmin %x dims(0, 2) keepdim : i64[b1, 3, b1]\n"
                     "  return %all, %outer\n"
                     "}\n";
  /* x[i][j][k], row-major */
  float x[12] = {0, 1, 2, 3, 4, 5, /* i = 0 */
                 6, 7, 8, 9, 10, -1 /* i = 1 */};
  x[7] = 11; /* x[1][0][1] is the largest: flat index 7 */
  int64_t all, outer[3];
  fz_host_tensor in = tensor(FZ_F32, x, 3, (int64_t[]){2, 3, 2}, NULL);
  fz_host_tensor out[2] = {tensor(FZ_I64, &all, 0, NULL, NULL),
                           tensor(FZ_I64, outer, 3, (int64_t[]){1, 3, 1},
                                  NULL)};
  run_ok(text, &in, out, 2);
  ck_assert_int_eq(all, 7);
  /* j = 0: {x000, x001, x100, x101} = {0, 1, 6, 11}: min at 0;
   * j = 1: {2, 3, 8, 9}: 0; j = 2: {4, 5, 10, -1}: (i=1, k=1) = 3 */
  ck_assert_int_eq(outer[0], 0);
  ck_assert_int_eq(outer[1], 0);
  ck_assert_int_eq(outer[2], 3);

  /* the same values stored with axis 0 innermost (a permuted layout) */
  float t[12];
  int64_t strides[3] = {1, 4, 2}; /* offset = i + 2k + 4j */
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 2; k++)
        t[i * strides[0] + j * strides[1] + k * strides[2]] = x[i * 6 + j * 2 + k];
  in = tensor(FZ_F32, t, 3, (int64_t[]){2, 3, 2}, strides);
  all = -1;
  run_ok(text, &in, out, 2);
  ck_assert_int_eq(all, 7);
  ck_assert_int_eq(outer[2], 3);
}
END_TEST

START_TEST(empty_axis_is_an_error_at_run_time) {
  const char *text = "fusion @t(%x: f32[2, N]) {\n"
                     "  %a = argmax %x dims(1) : i64[2]\n"
                     "  return %a\n"
                     "}\n";
  float x[1];
  int64_t a[2];
  fz_host_tensor in = tensor(FZ_F32, x, 2, (int64_t[]){2, 0}, NULL);
  fz_host_tensor out = tensor(FZ_I64, a, 1, (int64_t[]){2}, NULL);
  fz_error err = {0};
  ck_assert_int_eq(run(text, &in, &out, 1, &err), FZ_ERR_INVALID);
  ck_assert_msg(strstr(err.message, "cannot take argmax over an empty axis"),
                "%s", err.message);
}
END_TEST

/* ---- building ------------------------------------------------------------ */

static fz_value *input(fz_fusion *f, fz_dtype dtype, int rank,
                       const int64_t *extents) {
  fz_type t = {.dtype = dtype, .rank = rank};
  for (int i = 0; i < rank; i++)
    t.axes[i] = (fz_axis){.kind = FZ_AXIS_ITER,
                          .extent = fz_const_extent(extents[i])};
  fz_type_set_row_major(&t);
  return fz_add_input(f, "x", &t);
}

START_TEST(builder_types_and_refusals) {
  fz_error err = {0};
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = input(f, FZ_BF16, 2, (int64_t[]){3, 5});
  fz_value *a = fz_build_reduction(f, "argmax", x, 1, (int[]){-1}, true, &err);
  ck_assert_msg(a, "%s", err.message);
  ck_assert_int_eq(a->type.dtype, FZ_I64);
  ck_assert_int_eq(a->type.rank, 2);
  ck_assert_int_eq(a->type.axes[1].kind, FZ_AXIS_BROADCAST);
  /* no dims: every axis, to a rank-0 result */
  fz_value *all = fz_reduce(f, FZ_OP_ARGMIN, x, 0, NULL, false, &err);
  ck_assert_msg(all, "%s", err.message);
  ck_assert_int_eq(all->type.rank, 0);
  ck_assert_int_eq(all->def->num_dims, 2);

  /* a rank-0 operand's one position is 0 */
  fz_value *s = input(f, FZ_F32, 0, NULL);
  fz_value *zero = fz_reduce(f, FZ_OP_ARGMAX, s, 0, NULL, false, &err);
  ck_assert_msg(zero, "%s", err.message);
  ck_assert_int_eq(zero->def->code, FZ_OP_FULL);
  ck_assert_int_eq(zero->type.dtype, FZ_I64);
  ck_assert_int_eq(zero->def->fill.i, 0);

  fz_value *b = input(f, FZ_BOOL, 1, (int64_t[]){4});
  ck_assert_ptr_null(fz_reduce(f, FZ_OP_ARGMAX, b, 1, (int[]){0}, false, &err));
  ck_assert_msg(strstr(err.message, "argmax: operand is bool"), "%s",
                err.message);
  fz_value *e = input(f, FZ_F32, 2, (int64_t[]){4, 0});
  ck_assert_ptr_null(fz_reduce(f, FZ_OP_ARGMIN, e, 1, (int[]){1}, false, &err));
  ck_assert_msg(strstr(err.message, "argmin: cannot reduce axis 1 of extent 0"),
                "%s", err.message);
  /* reducing the kept axis of extent 4 is fine */
  ck_assert_ptr_nonnull(fz_reduce(f, FZ_OP_ARGMIN, e, 1, (int[]){0}, false,
                                  &err));
  fz_fusion_destroy(f);
}
END_TEST

/* The handle call: one axis, or every axis (dim=None), by keyword. */
START_TEST(arg_reduction_by_keyword) {
  fz_error err = {0};
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = input(f, FZ_I32, 3, (int64_t[]){2, 3, 4});
  fz_value *a = fz_build_arg_reduction(f, "argmax", x, -2, false, false, &err);
  ck_assert_msg(a, "%s", err.message);
  ck_assert_int_eq(a->def->code, FZ_OP_ARGMAX);
  ck_assert_int_eq(a->def->num_dims, 1);
  ck_assert_int_eq(a->def->dims[0], 1);
  ck_assert_int_eq(a->type.rank, 2);
  fz_value *all = fz_build_arg_reduction(f, "argmin", x, 99, true, true, &err);
  ck_assert_msg(all, "%s", err.message);
  ck_assert_int_eq(all->def->code, FZ_OP_ARGMIN);
  ck_assert_int_eq(all->def->num_dims, 3);
  ck_assert_int_eq(all->type.rank, 3);
  ck_assert_ptr_null(
      fz_build_arg_reduction(f, "amax", x, 0, false, false, &err));
  ck_assert_str_eq(err.message,
                   "amax is not an arg-reduction (argmax or argmin)");
  ck_assert_ptr_null(
      fz_build_arg_reduction(f, "argmax", x, 3, false, false, &err));
  ck_assert_msg(strstr(err.message, "out of range"), "%s", err.message);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("argreduce");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, ties_go_to_the_first_position);
  tcase_add_test(tc, the_first_nan_wins_both);
  tcase_add_test(tc, signed_zeros_and_infinities);
  tcase_add_test(tc, integers_at_their_extremes);
  tcase_add_test(tc, positions_are_logical_and_row_major);
  tcase_add_test(tc, empty_axis_is_an_error_at_run_time);
  tcase_add_test(tc, builder_types_and_refusals);
  tcase_add_test(tc, arg_reduction_by_keyword);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
