/* test_promote.c - PyTorch type promotion (promote.c) and the result dtype
 * of each op family, directly and through the builder. */
#include "test_util.h"
#include "type_spec.h"

static fz_dtype promote2(fz_value *a, fz_value *b) {
  fz_value *ops[2] = {a, b};
  return fz_promote(2, ops);
}

#define ck_assert_dtype(got, want)                                             \
  ck_assert_str_eq(fz_dtype_name(got), fz_dtype_name(want))

/* ---- the examples of the promotion rules ---- */

START_TEST(tensor_f16_with_float_literal_stays_f16) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f16[N]");
  ck_assert_dtype(promote2(x, fz_literal_float(f, 2.5)), FZ_F16);
  ck_assert_dtype(promote2(fz_literal_float(f, 2.5), x), FZ_F16);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(tensor_i32_with_float_literal_is_default_f32) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "i32[N]");
  ck_assert_dtype(promote2(x, fz_literal_float(f, 2.5)), FZ_F32);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(tensor_i32_with_f64_scalar_input_is_f64) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "i32[N]");
  fz_value *s = ts_input(f, "s", "f64");
  ck_assert_dtype(promote2(x, s), FZ_F64);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(tensor_f32_with_f64_scalar_input_stays_f32) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N]");
  fz_value *s = ts_input(f, "s", "f64");
  ck_assert_dtype(promote2(x, s), FZ_F32);
  ck_assert_dtype(promote2(s, x), FZ_F32);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(f16_with_bf16_is_f32) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *a = ts_input(f, "a", "f16[N]");
  fz_value *b = ts_input(f, "b", "bf16[N]");
  ck_assert_dtype(promote2(a, b), FZ_F32);
  /* Also between zero-dim values. */
  fz_value *c = ts_input(f, "c", "f16");
  fz_value *d = ts_input(f, "d", "bf16");
  ck_assert_dtype(promote2(c, d), FZ_F32);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(widest_dimensioned_tensor_wins_within_a_category) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *h = ts_input(f, "h", "f16[N]");
  fz_value *s = ts_input(f, "s", "f32[N]");
  fz_value *d = ts_input(f, "d", "f64[N]");
  fz_value *i8 = ts_input(f, "i8", "i8[N]");
  fz_value *i32 = ts_input(f, "i32", "i32[N]");
  fz_value *i64 = ts_input(f, "i64", "i64[N]");
  ck_assert_dtype(promote2(h, s), FZ_F32);
  ck_assert_dtype(promote2(s, d), FZ_F64);
  ck_assert_dtype(promote2(i8, i32), FZ_I32);
  ck_assert_dtype(promote2(i64, i32), FZ_I64);
  /* Category beats width: i64 with f16 is f16. */
  ck_assert_dtype(promote2(i64, h), FZ_F16);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(zero_dim_value_outranks_literal_but_not_tensor) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "i8[N]");
  fz_value *s = ts_input(f, "s", "i64");
  fz_value *h = ts_input(f, "h", "f16");
  /* Same category: the dimensioned tensor decides. */
  ck_assert_dtype(promote2(x, s), FZ_I8);
  /* Zero-dim f16 with a float literal: the zero-dim value decides. */
  ck_assert_dtype(promote2(h, fz_literal_float(f, 1.0)), FZ_F16);
  /* A rank-0 op result counts as zero-dim, not as a literal. */
  fz_error err = {0};
  fz_value *r = fz_binary(f, FZ_OP_MUL, h, h, &err);
  ck_assert_ptr_nonnull(r);
  ck_assert_dtype(promote2(r, fz_literal_float(f, 1.0)), FZ_F16);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(literals_alone_give_default_dtypes) {
  fz_fusion *f = fz_fusion_create("t");
  ck_assert_dtype(promote2(fz_literal_int(f, 2), fz_literal_float(f, 2.5)),
                  FZ_F32);
  ck_assert_dtype(promote2(fz_literal_int(f, 2), fz_literal_int(f, 3)),
                  FZ_I64);
  ck_assert_dtype(promote2(fz_literal_bool(f, true), fz_literal_bool(f, false)),
                  FZ_BOOL);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(bool_tensor_with_int_literal_is_i64) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *b = ts_input(f, "b", "bool[N]");
  ck_assert_dtype(promote2(b, fz_literal_int(f, 3)), FZ_I64);
  ck_assert_dtype(promote2(b, fz_literal_bool(f, true)), FZ_BOOL);
  fz_value *i = ts_input(f, "i", "i32[N]");
  ck_assert_dtype(promote2(i, fz_literal_int(f, 3)), FZ_I32);
  ck_assert_dtype(promote2(i, b), FZ_I32);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- op result dtypes ---- */

START_TEST(op_result_dtype_by_flag) {
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_EXP, FZ_I32), FZ_F32);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_EXP, FZ_BOOL), FZ_F32);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_EXP, FZ_F16), FZ_F16);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_DIV, FZ_I64), FZ_F32);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_DIV, FZ_F64), FZ_F64);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_LT, FZ_F32), FZ_BOOL);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_ISNAN, FZ_F16), FZ_BOOL);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_NOT, FZ_I32), FZ_BOOL);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_SUM, FZ_I32), FZ_I64);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_PROD, FZ_BOOL), FZ_I64);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_SUM, FZ_BF16), FZ_BF16);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_AMAX, FZ_I32), FZ_I32);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_ADD, FZ_I8), FZ_I8);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_FLOOR, FZ_I32), FZ_I32);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_ERFINV, FZ_I8), FZ_F32);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_ATAN2, FZ_I64), FZ_F32);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_LGAMMA, FZ_BF16), FZ_BF16);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_SIGNBIT, FZ_F32), FZ_BOOL);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_ISINF, FZ_I32), FZ_BOOL);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_XOR, FZ_I8), FZ_BOOL);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_TRUNC, FZ_I32), FZ_I32);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_SIGN, FZ_BOOL), FZ_BOOL);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_FMOD, FZ_I8), FZ_I8);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_BITWISE_AND, FZ_BOOL), FZ_BOOL);
  ck_assert_dtype(fz_op_result_dtype(FZ_OP_SHL, FZ_I32), FZ_I32);
}
END_TEST

/* bool shifted by an integer literal computes in i64, the literal's
 * default dtype, as in PyTorch (bool << bool is refused). */
START_TEST(bool_shifted_by_int_literal_is_i64) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *b = ts_input(f, "b", "bool[N]");
  fz_error err = {0};
  ck_assert_type(f,
                 fz_binary(f, FZ_OP_SHL, b, fz_literal_int(f, 1), &err),
                 "i64[N]");
  ck_assert_ptr_null(fz_binary(f, FZ_OP_SHL, b, b, &err));
  ck_assert_ptr_null(
      fz_binary(f, FZ_OP_BITWISE_OR, b, fz_literal_float(f, 1.0), &err));
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(sum_of_i32_is_i64) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "i32[N, 8]");
  fz_error err = {0};
  int dims[] = {1};
  ck_assert_type(f, fz_reduce(f, FZ_OP_SUM, x, 1, dims, false, &err), "i64[N]");
  ck_assert_type(f, fz_reduce(f, FZ_OP_AMAX, x, 1, dims, false, &err), "i32[N]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(div_of_ints_is_f32) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *a = ts_input(f, "a", "i32[N]");
  fz_value *b = ts_input(f, "b", "i64[N]");
  fz_error err = {0};
  ck_assert_type(f, fz_binary(f, FZ_OP_DIV, a, b, &err), "f32[N]");
  ck_assert_type(f, fz_binary(f, FZ_OP_DIV, a, fz_literal_int(f, 2), &err),
                 "f32[N]");
  ck_assert_type(f, fz_binary(f, FZ_OP_ADD, a, b, &err), "i64[N]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(comparisons_are_bool) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *a = ts_input(f, "a", "f16[N]");
  fz_value *b = ts_input(f, "b", "f32[N]");
  fz_error err = {0};
  fz_opcode cmps[] = {FZ_OP_EQ, FZ_OP_NE, FZ_OP_LT,
                      FZ_OP_LE, FZ_OP_GT, FZ_OP_GE};
  for (size_t i = 0; i < sizeof cmps / sizeof cmps[0]; i++)
    ck_assert_type(f, fz_binary(f, cmps[i], a, b, &err), "bool[N]");
  ck_assert_type(f, fz_binary(f, FZ_OP_AND, a, b, &err), "bool[N]");
  ck_assert_type(f, fz_unary(f, FZ_OP_ISNAN, a, &err), "bool[N]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(where_promotes_only_the_values) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *c = ts_input(f, "c", "bool[N]");
  fz_value *a = ts_input(f, "a", "f16[N]");
  fz_value *i = ts_input(f, "i", "i32[N]");
  fz_error err = {0};
  ck_assert_type(f, fz_ternary(f, FZ_OP_WHERE, c, a, fz_literal_float(f, 0.0),
                               &err),
                 "f16[N]");
  ck_assert_type(f, fz_ternary(f, FZ_OP_WHERE, c, i, fz_literal_int(f, 0), &err),
                 "i32[N]");
  /* The bool condition does not pull an int pair to bool or beyond. */
  ck_assert_type(f, fz_ternary(f, FZ_OP_WHERE, c, fz_literal_int(f, 1),
                               fz_literal_int(f, 0), &err),
                 "i64[N]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(fma_and_clamp_promote_all_operands) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *a = ts_input(f, "a", "f16[N]");
  fz_value *b = ts_input(f, "b", "bf16[N]");
  fz_value *i = ts_input(f, "i", "i32[N]");
  fz_error err = {0};
  ck_assert_type(f, fz_ternary(f, FZ_OP_FMA, a, b, a, &err), "f32[N]");
  ck_assert_type(f, fz_ternary(f, FZ_OP_CLAMP, i, fz_literal_float(f, 0.5),
                               fz_literal_int(f, 3), &err),
                 "f32[N]");
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("promote");
  TCase *tc = tcase_create("promote");
  tcase_add_test(tc, tensor_f16_with_float_literal_stays_f16);
  tcase_add_test(tc, tensor_i32_with_float_literal_is_default_f32);
  tcase_add_test(tc, tensor_i32_with_f64_scalar_input_is_f64);
  tcase_add_test(tc, tensor_f32_with_f64_scalar_input_stays_f32);
  tcase_add_test(tc, f16_with_bf16_is_f32);
  tcase_add_test(tc, widest_dimensioned_tensor_wins_within_a_category);
  tcase_add_test(tc, zero_dim_value_outranks_literal_but_not_tensor);
  tcase_add_test(tc, literals_alone_give_default_dtypes);
  tcase_add_test(tc, bool_tensor_with_int_literal_is_i64);
  tcase_add_test(tc, op_result_dtype_by_flag);
  tcase_add_test(tc, bool_shifted_by_int_literal_is_i64);
  tcase_add_test(tc, sum_of_i32_is_i64);
  tcase_add_test(tc, div_of_ints_is_f32);
  tcase_add_test(tc, comparisons_are_bool);
  tcase_add_test(tc, where_promotes_only_the_values);
  tcase_add_test(tc, fma_and_clamp_promote_all_operands);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
