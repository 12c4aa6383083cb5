/* test_welford.c - var and mean: the interpreter's values by hand, and
 * the builder's rules (corrections, dtypes, rank-0 operands, fz_reduce).
 *
 * The interpreter is the oracle of the GPU's Welford states, so its
 * values are pinned here where a formula could go wrong: a large mean
 * (where E[x^2] - E[x]^2 in f32 loses everything), corrections of 0, 1,
 * fractional and reaching the count (inf, NaN), reductions over several
 * axes, keepdim, and f16 results rounded once.
 */
#include <math.h>
#include <string.h>

#include "test_util.h"

static fz_host_tensor tensor(fz_dtype dtype, void *data, int rank,
                             const int64_t *sizes) {
  fz_host_tensor t = {.dtype = dtype, .rank = rank, .data = data};
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    t.sizes[i] = sizes[i];
    t.strides[i] = s;
    s *= sizes[i];
  }
  return t;
}

static void run(const char *text, fz_host_tensor *in, int nin,
                fz_host_tensor *out, int nout) {
  fz_fusion *f = test_parse(text);
  fz_error err = {0};
  fz_status st = fz_interpret(f, in, nin, out, nout, &err);
  ck_assert_msg(st == FZ_OK, "interpret failed: %s", err.message);
  fz_fusion_destroy(f);
}

START_TEST(var_and_mean_of_rows) {
  const char *text = "fusion @t(%x: f64[2, 4]) {\n"
                     "  %v1 = var %x dims(1) : f64[2]\n"
                     "  %v0 = var %x dims(1) correction(0) : f64[2]\n"
                     "  %vh = var %x dims(1) correction(1.5) : f64[2]\n"
                     "  %m = mean %x dims(1) : f64[2]\n"
                     "  return %v1, %v0, %vh, %m\n"
                     "}\n";
  /* row 0: mean 2.5, squared distances 2.25 + 0.25 + 0.25 + 2.25 = 5;
   * row 1: a constant, m2 = 0 */
  double x[8] = {1, 2, 3, 4, 7, 7, 7, 7}, v1[2], v0[2], vh[2], m[2];
  int64_t xs[2] = {2, 4}, rs[1] = {2};
  fz_host_tensor in[1] = {tensor(FZ_F64, x, 2, xs)};
  fz_host_tensor out[4] = {
      tensor(FZ_F64, v1, 1, rs), tensor(FZ_F64, v0, 1, rs),
      tensor(FZ_F64, vh, 1, rs), tensor(FZ_F64, m, 1, rs)};
  run(text, in, 1, out, 4);
  ck_assert_double_eq(v1[0], 5.0 / 3.0);
  ck_assert_double_eq(v0[0], 5.0 / 4.0);
  ck_assert_double_eq(vh[0], 5.0 / 2.5);
  ck_assert_double_eq(m[0], 2.5);
  ck_assert_double_eq(v1[1], 0.0);
  ck_assert_double_eq(m[1], 7.0);
}
END_TEST

/* torch.var divides by max(0, count - correction): a positive m2 over 0
 * is inf, a constant row's 0 over 0 is NaN. */
START_TEST(correction_at_or_past_the_count) {
  const char *text = "fusion @t(%x: f32[2, 2]) {\n"
                     "  %a = var %x dims(1) correction(2) : f32[2]\n"
                     "  %b = var %x dims(1) correction(3.5) : f32[2]\n"
                     "  return %a, %b\n"
                     "}\n";
  float x[4] = {1, 2, 5, 5}, a[2], b[2];
  int64_t xs[2] = {2, 2}, rs[1] = {2};
  fz_host_tensor in[1] = {tensor(FZ_F32, x, 2, xs)};
  fz_host_tensor out[2] = {tensor(FZ_F32, a, 1, rs),
                           tensor(FZ_F32, b, 1, rs)};
  run(text, in, 1, out, 2);
  ck_assert_float_infinite(a[0]);
  ck_assert_float_infinite(b[0]);
  ck_assert_float_nan(a[1]);
  ck_assert_float_nan(b[1]);
}
END_TEST

/* Values 1e4 + {-1, 0, 1, 0}: variance 0.5 exactly; the f64 two-pass
 * reference gets it, as the GPU's f32 Welford state does. */
START_TEST(large_mean_keeps_the_variance) {
  const char *text = "fusion @t(%x: f32[8]) {\n"
                     "  %v = var %x dims(0) correction(0) : f32\n"
                     "  %m = mean %x dims(0) : f32\n"
                     "  return %v, %m\n"
                     "}\n";
  float x[8] = {9999, 10000, 10001, 10000, 9999, 10000, 10001, 10000};
  float v, m;
  int64_t xs[1] = {8};
  fz_host_tensor in[1] = {tensor(FZ_F32, x, 1, xs)};
  fz_host_tensor out[2] = {tensor(FZ_F32, &v, 0, NULL),
                           tensor(FZ_F32, &m, 0, NULL)};
  run(text, in, 1, out, 2);
  ck_assert_float_eq(v, 0.5f);
  ck_assert_float_eq(m, 10000.0f);
}
END_TEST

START_TEST(several_axes_keepdim_and_f16) {
  const char *text = "fusion @t(%x: f16[2, 2, 3]) {\n"
                     "  %v = var %x dims(0, 2) keepdim : f16[b1, 2, b1]\n"
                     "  %m = mean %x dims(0, 2) keepdim : f16[b1, 2, b1]\n"
                     "  return %v, %m\n"
                     "}\n";
  /* axis 1 = 0 gathers {0, 1, 2, 6, 7, 8}: mean 4, m2 = 16+9+4+4+9+16 =
   * 58, var 58/5 = 11.6 -> f16 11.6015625; axis 1 = 1 gathers {1, 1, 1,
   * 1, 1, 2}: mean 7/6 -> f16 1.1669921875, var (5/36 + 25/36)/5 = 1/6 ->
   * f16 0.1666259765625 */
  double vals[12] = {0, 1, 2, 1, 1, 1, 6, 7, 8, 1, 1, 2};
  uint16_t x[12], v[2], m[2];
  for (int i = 0; i < 12; i++)
    x[i] = fz_f16_from_double(vals[i]);
  int64_t xs[3] = {2, 2, 3}, rs[3] = {1, 2, 1};
  fz_host_tensor in[1] = {tensor(FZ_F16, x, 3, xs)};
  fz_host_tensor out[2] = {tensor(FZ_F16, v, 3, rs),
                           tensor(FZ_F16, m, 3, rs)};
  run(text, in, 1, out, 2);
  ck_assert_double_eq(fz_f16_to_double(v[0]), fz_round_to_dtype(11.6, FZ_F16));
  ck_assert_double_eq(fz_f16_to_double(m[0]), 4.0);
  ck_assert_double_eq(fz_f16_to_double(v[1]),
                      fz_round_to_dtype(1.0 / 6.0, FZ_F16));
  ck_assert_double_eq(fz_f16_to_double(m[1]),
                      fz_round_to_dtype(7.0 / 6.0, FZ_F16));
}
END_TEST

/* ---- the builder --------------------------------------------------------- */

static fz_value *f32_input(fz_fusion *f, int rank) {
  fz_type t = {.dtype = FZ_F32, .rank = rank};
  for (int i = 0; i < rank; i++)
    t.axes[i].extent = fz_const_extent(4 + i);
  fz_type_set_row_major(&t);
  return fz_add_input(f, "x", &t);
}

START_TEST(builder_checks_the_correction_and_dtype) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = f32_input(f, 2);
  int dims[1] = {-1};
  fz_error err = {0};
  ck_assert_ptr_null(fz_var(f, x, 1, dims, NAN, false, &err));
  ck_assert_str_eq(err.message, "var: correction nan must be a finite number");
  ck_assert_ptr_null(fz_var(f, x, 1, dims, INFINITY, false, &err));
  ck_assert_ptr_nonnull(strstr(err.message, "finite"));
  /* var needs its correction: fz_reduce refuses it rather than guess */
  ck_assert_ptr_null(fz_reduce(f, FZ_OP_VAR, x, 1, dims, false, &err));
  ck_assert_ptr_nonnull(strstr(err.message, "fz_var"));
  ck_assert_ptr_null(
      fz_build_reduction(f, "var", x, 1, dims, false, &err));
  ck_assert_int_eq(f->num_ops, 0);
  /* torch.var takes a negative correction: it divides by count + 1 */
  ck_assert_ptr_nonnull(fz_var(f, x, 1, dims, -1, false, &err));
  fz_value *i = fz_cast(f, x, FZ_I32, &err);
  ck_assert_ptr_nonnull(i);
  ck_assert_ptr_null(fz_build_reduction(f, "mean", i, 1, dims, false, &err));
  ck_assert_ptr_nonnull(strstr(err.message, "floating-point"));
  fz_value *v = fz_build_var(f, x, 1, dims, 1.5, true, &err);
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(v->def->code, FZ_OP_VAR);
  ck_assert_double_eq(v->def->correction, 1.5);
  ck_assert_int_eq(v->def->dims[0], 1);
  ck_assert_int_eq(v->type.rank, 2);
  fz_value *m = fz_build_reduction(f, "mean", x, 0, NULL, false, &err);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(m->type.rank, 0); /* no dims: every axis, as torch */
  ck_assert_int_eq(fz_add_output(f, v, &err), FZ_OK);
  ck_assert_msg(fz_verify(f, &err) == FZ_OK, "%s", err.message);
  fz_fusion_destroy(f);
}
END_TEST

/* A rank-0 operand: its mean is a copy, its var (x - x)^2 over
 * max(0, 1 - correction): NaN for the default correction, 0 for 0. */
START_TEST(rank0_operand) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = f32_input(f, 0);
  fz_error err = {0};
  int dims[1] = {0};
  fz_value *v1 = fz_var(f, x, 1, dims, 1, false, &err);
  fz_value *v0 = fz_var(f, x, 0, NULL, 0, false, &err);
  fz_value *m = fz_reduce(f, FZ_OP_MEAN, x, 1, dims, false, &err);
  ck_assert_ptr_nonnull(v1);
  ck_assert_ptr_nonnull(v0);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(m->def->code, FZ_OP_SET);
  ck_assert_int_eq(v1->def->code, FZ_OP_DIV);
  ck_assert_int_eq(fz_add_output(f, v1, &err), FZ_OK);
  ck_assert_int_eq(fz_add_output(f, v0, &err), FZ_OK);
  float xv = 3, a, b;
  fz_host_tensor in[1] = {{.dtype = FZ_F32, .data = &xv}};
  fz_host_tensor out[2] = {{.dtype = FZ_F32, .data = &a},
                           {.dtype = FZ_F32, .data = &b}};
  ck_assert_int_eq(fz_interpret(f, in, 1, out, 2, &err), FZ_OK);
  ck_assert_float_nan(a);
  ck_assert_float_eq(b, 0.0f);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("welford");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, var_and_mean_of_rows);
  tcase_add_test(tc, correction_at_or_past_the_count);
  tcase_add_test(tc, large_mean_keeps_the_variance);
  tcase_add_test(tc, several_axes_keepdim_and_f16);
  tcase_add_test(tc, builder_checks_the_correction_and_dtype);
  tcase_add_test(tc, rank0_operand);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
