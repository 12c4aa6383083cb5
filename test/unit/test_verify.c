/* test_verify.c - the verifier: a fusion built through the builder passes,
 * and each invariant, broken by hand the way a buggy pass would break it,
 * is reported with a message naming the value and the op. */
#include "test_util.h"
#include "type_spec.h"

/* fusion @t(%x: f32[N, 128], %w: f32[b1, 128]) {
 *   %m = mul %x, %w : f32[N, 128]
 *   %s = sum %m dims(1) : f32[N]
 *   return %s, %m
 * } */
typedef struct sample {
  fz_fusion *f;
  fz_value *x, *w, *m, *s;
} sample;

static sample make_sample(void) {
  sample t;
  fz_error err = {0};
  t.f = fz_fusion_create("t");
  t.x = ts_input(t.f, "x", "f32[N, 128]");
  t.w = ts_input(t.f, "w", "f32[b1, 128]");
  t.m = fz_binary(t.f, FZ_OP_MUL, t.x, t.w, &err);
  ck_assert_msg(t.m != NULL, "%s", err.message);
  t.m->name = "m";
  int d1[] = {1};
  t.s = fz_reduce(t.f, FZ_OP_SUM, t.m, 1, d1, false, &err);
  ck_assert_msg(t.s != NULL, "%s", err.message);
  t.s->name = "s";
  ck_assert_int_eq(fz_add_output(t.f, t.s, &err), FZ_OK);
  ck_assert_int_eq(fz_add_output(t.f, t.m, &err), FZ_OK);
  return t;
}

static void expect_invalid(const fz_fusion *f, const char *needle) {
  fz_error err = {0};
  ck_assert_int_eq(fz_verify(f, &err), FZ_ERR_INVALID);
  ck_assert_err(err, needle);
}

static void expect_valid(const fz_fusion *f) {
  fz_error err = {0};
  fz_status st = fz_verify(f, &err);
  ck_assert_msg(st == FZ_OK, "verify failed: %s", err.message);
}

/* ---- valid fusions ---- */

START_TEST(built_fusion_is_valid) {
  sample t = make_sample();
  expect_valid(t.f);
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(every_op_family_verifies) {
  fz_fusion *f = fz_fusion_create("all");
  fz_error err = {0};
  fz_value *x = ts_input(f, "x", "f32[N, 8]");
  fz_value *c = ts_input(f, "c", "bool[N, 8]");
  fz_value *eps = ts_input(f, "eps", "f64");
  int d1[] = {1}, perm[] = {1, 0};
  fz_value *v[20];
  int n = 0;
  v[n++] = fz_unary(f, FZ_OP_EXP, x, &err);
  v[n++] = fz_binary(f, FZ_OP_ADD, x, eps, &err);
  v[n++] = fz_ternary(f, FZ_OP_WHERE, c, x, fz_literal_float(f, 0.0), &err);
  v[n++] = fz_cast(f, x, FZ_BF16, &err);
  fz_value *k = v[n++] = fz_reduce(f, FZ_OP_SUM, x, 1, d1, true, &err);
  fz_type to = ts(f, "f32[N, b1->8]");
  fz_value *e = v[n++] = fz_expand(f, k, &to, &err);
  v[n++] = fz_squeeze(f, k, 1, d1, &err);
  int d0[] = {0};
  v[n++] = fz_broadcast(f, eps, 1, d0, &err);
  v[n++] = fz_permute(f, e, perm, &err);
  fz_type flat = ts(f, "f32[8, N]");
  v[n++] = fz_reshape(f, x, &flat, &err);
  v[n++] = fz_set(f, x, &err);
  fz_type ft = ts(f, "i32[4, N]");
  v[n++] = fz_full(f, &ft, (fz_scalar){.i = 7}, &err);
  fz_type it = ts(f, "i64[N]");
  fz_attrs ia = {.shape = &it};
  v[n++] = fz_build(f, FZ_OP_IOTA, 0, NULL, &ia, &err);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(v[i] != NULL, "op %d: %s", i, err.message);
    ck_assert_int_eq(fz_add_output(f, v[i], &err), FZ_OK);
  }
  int order[] = {1, 0};
  ck_assert_int_eq(fz_value_set_layout(v[0], order, NULL, &err), FZ_OK);
  expect_valid(f);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(input_can_be_an_output) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  fz_value *x = ts_input(f, "x", "f32[N]");
  ck_assert_int_eq(fz_add_output(f, x, &err), FZ_OK);
  expect_valid(f);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(null_fusion_is_an_argument_error) {
  fz_error err = {0};
  ck_assert_int_eq(fz_verify(NULL, &err), FZ_ERR_ARGUMENT);
}
END_TEST

/* ---- symbols and extents ---- */

START_TEST(symbol_out_of_range) {
  sample t = make_sample();
  t.x->type.axes[0].extent = fz_symbol_extent(99);
  expect_invalid(t.f, "%x axis 0 uses symbol 99 but the fusion has 1 symbols");
  fz_fusion_destroy(t.f);
}
END_TEST

/* A pass that renumbers symbols must keep symbol reads pointing at one. */
START_TEST(symbol_read_of_no_symbol) {
  sample t = make_sample();
  fz_error err = {0};
  fz_value *n = fz_read_symbol(t.f, 0, &err);
  ck_assert_msg(n != NULL, "%s", err.message);
  n->name = "n";
  expect_valid(t.f);
  n->def->symbol = 7;
  expect_invalid(t.f, "%n: symbol: symbol 7 is not a symbol of the fusion "
                      "(it has 1)");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(negative_extent) {
  sample t = make_sample();
  t.m->type.axes[1].extent = fz_const_extent(-2);
  expect_invalid(t.f, "%m: mul axis 1 has negative extent -2");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(broadcast_extent_must_be_one) {
  sample t = make_sample();
  t.w->type.axes[0].extent = fz_const_extent(4);
  expect_invalid(t.f, "%w axis 0 is a broadcast axis whose extent is not the "
                      "constant 1");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(no_reduction_axes_in_values) {
  sample t = make_sample();
  t.m->type.axes[1].kind = FZ_AXIS_REDUCE;
  expect_invalid(t.f, "%m: mul axis 1 is a reduction axis");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(duplicate_symbol_names) {
  sample t = make_sample();
  fz_fusion_symbol(t.f, "M");
  t.f->symbols[1].name = "N";
  expect_invalid(t.f, "symbol N is defined more than once");
  fz_fusion_destroy(t.f);
}
END_TEST

/* ---- layouts ---- */

START_TEST(inputs_need_layouts) {
  sample t = make_sample();
  t.w->type.has_layout = false;
  expect_invalid(t.f, "%w: input 1 has no layout");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(layout_must_be_a_permutation) {
  sample t = make_sample();
  t.x->type.alloc_order[1] = 0;
  expect_invalid(t.f, "%x layout is not a permutation of its 2 axes");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(result_layout_must_be_a_permutation) {
  sample t = make_sample();
  t.m->type.has_layout = true;
  t.m->type.alloc_order[0] = 1;
  t.m->type.alloc_order[1] = 5;
  expect_invalid(t.f, "%m: mul layout is not a permutation");
  fz_fusion_destroy(t.f);
}
END_TEST

/* ---- SSA order and definitions ---- */

START_TEST(use_before_definition) {
  sample t = make_sample();
  fz_op *tmp = t.f->ops[0];
  t.f->ops[0] = t.f->ops[1];
  t.f->ops[1] = tmp;
  expect_invalid(t.f, "%s: sum: operand 0 (%m) is not defined before this op");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(operand_from_another_fusion) {
  sample t = make_sample();
  fz_fusion *g = fz_fusion_create("g");
  fz_value *y = ts_input(g, "y", "f32[N, 128]");
  t.f->ops[0]->operands[0] = y;
  expect_invalid(t.f, "%m: mul: operand 0 (%y) is not defined before this op");
  fz_fusion_destroy(g);
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(literal_from_another_fusion) {
  /* Ids cannot catch it (literals are in no table); after g is destroyed
   * the operand would dangle. */
  sample t = make_sample();
  fz_fusion *g = fz_fusion_create("g");
  t.f->ops[0]->operands[1] = fz_literal_float(g, 2.0);
  expect_invalid(t.f, "%m: mul: operand 1 is a literal of another fusion");
  t.f->ops[0]->operands[1] = fz_literal_float(t.f, 2.0);
  expect_valid(t.f);
  t.m->owner = g;
  expect_invalid(t.f, "%m: mul: the value belongs to another fusion");
  fz_fusion_destroy(g);
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(constant_extents_that_overflow) {
  sample t = make_sample();
  /* f32[2^62, 128]: what a pass multiplying extents could leave */
  t.x->type.axes[0].extent = fz_const_extent(INT64_C(1) << 62);
  expect_invalid(t.f, "%x: extent product 4611686018427387904 x 128 "
                      "overflows int64");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(value_defined_twice) {
  sample t = make_sample();
  /* A pass that forgot to give a copied op its own result. */
  fz_op *copy = fz_arena_alloc(t.f->arena, sizeof *copy);
  *copy = *t.f->ops[0];
  fz_arena_push(t.f->arena, (void ***)&t.f->ops, &t.f->num_ops,
                &t.f->cap_ops, copy);
  expect_invalid(t.f, "%m: mul: the result is not marked as this op's result");
  t.m->def = copy;
  expect_invalid(t.f, "%m: mul: the result is not marked");
  t.m->def = t.f->ops[0];
  copy->result = t.s;
  expect_invalid(t.f, "%s: mul: the result is not marked");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(duplicate_value_ids) {
  sample t = make_sample();
  t.s->id = t.m->id;
  expect_invalid(t.f, "%s: sum: defined twice");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(invalid_literal_operand) {
  sample t = make_sample();
  fz_value *lit = fz_literal_float(t.f, 2.0);
  lit->type.dtype = FZ_F32;
  t.f->ops[0]->operands[1] = lit;
  expect_invalid(t.f, "%m: mul: operand 1 is a literal that is not a rank-0 "
                      "f64, i64 or bool");
  fz_fusion_destroy(t.f);
}
END_TEST

/* ---- ops ---- */

START_TEST(arity_must_match_the_op_table) {
  sample t = make_sample();
  t.f->ops[0]->num_operands = 1;
  expect_invalid(t.f, "%m: mul: has 1 operands but takes 2");
  fz_fusion_destroy(t.f);
}
END_TEST

/* A pass that turned an op into one its operands' dtypes do not allow,
 * and one that left a reduction reducing nothing. */
START_TEST(op_must_allow_its_operand_dtypes) {
  sample t = make_sample();
  t.f->ops[0]->code = FZ_OP_BITWISE_AND;
  expect_invalid(t.f, "%m: bitwise_and: is only defined on integer and bool "
                      "operands, not f32 (as in PyTorch)");
  t.f->ops[0]->code = FZ_OP_MUL;
  t.f->ops[1]->num_dims = 0;
  expect_invalid(t.f, "%s: sum: needs at least one dim to reduce");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(result_type_must_match_inference) {
  sample t = make_sample();
  t.s->type.dtype = FZ_F16;
  expect_invalid(t.f, "%s: sum: result type f16[N] does not match the "
                      "inferred type f32[N]");
  t.s->type.dtype = FZ_F32;
  /* A pass that changed the reduced dims without fixing the type. */
  t.f->ops[1]->dims[0] = 0;
  expect_invalid(t.f, "%s: sum: result type f32[N] does not match the "
                      "inferred type f32[128]");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(broadcast_kind_must_match_inference) {
  sample t = make_sample();
  /* mul of [N, 128] and [b1, 128] is [N, 128], not [b1->N, 128]. */
  fz_axis *a = &t.m->type.axes[0];
  a->kind = FZ_AXIS_BROADCAST;
  a->expanded = true;
  a->expanded_to = a->extent;
  a->extent = fz_const_extent(1);
  expect_invalid(t.f, "%m: mul: result type f32[b1->N, 128] does not match the "
                      "inferred type f32[N, 128]");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(shape_rule_errors_name_the_value) {
  sample t = make_sample();
  t.f->ops[0]->operands[1] = t.s; /* f32[N] against f32[N, 128] */
  expect_invalid(t.f, "%m: mul: operand 1 (%s) is not defined before this op");
  fz_value *y = ts_input(t.f, "y", "f32[N, 64]");
  t.f->ops[0]->operands[1] = y;
  expect_invalid(t.f, "%m: mul: operand 1 axis 1 has extent 64 but operand 0 "
                      "has extent 128");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(op_attributes_are_checked) {
  sample t = make_sample();
  t.f->ops[1]->num_dims = 2;
  t.f->ops[1]->dims[0] = 1;
  t.f->ops[1]->dims[1] = 1;
  expect_invalid(t.f, "%s: sum: dims must be sorted and unique");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(generator_result_types_are_checked) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  fz_type it = ts(f, "i64[N]");
  fz_attrs ia = {.shape = &it};
  fz_value *i = fz_build(f, FZ_OP_IOTA, 0, NULL, &ia, &err);
  ck_assert_ptr_nonnull(i);
  ck_assert_int_eq(fz_add_output(f, i, &err), FZ_OK);
  i->type.dtype = FZ_BOOL;
  char want[80];
  snprintf(want, sizeof want, "%%%d: iota: result dtype must be an integer",
           i->id);
  expect_invalid(f, want);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(unnamed_values_are_named_by_id) {
  sample t = make_sample();
  t.m->name = NULL;
  t.m->type.dtype = FZ_I32;
  char want[80];
  snprintf(want, sizeof want, "%%%d: mul: result type i32[N, 128]", t.m->id);
  expect_invalid(t.f, want);
  fz_fusion_destroy(t.f);
}
END_TEST

/* ---- names ---- */

START_TEST(value_names_are_unique) {
  sample t = make_sample();
  t.s->name = "x";
  expect_invalid(t.f, "%x: the name is used by more than one value");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(value_names_use_the_text_charset) {
  sample t = make_sample();
  t.s->name = "a b";
  expect_invalid(t.f, "%a b: sum: invalid name");
  t.s->name = "";
  expect_invalid(t.f, "invalid name");
  t.s->name = "s.1_x";
  expect_valid(t.f);
  fz_fusion_destroy(t.f);
}
END_TEST

/* ---- outputs ---- */

START_TEST(at_least_one_output) {
  sample t = make_sample();
  t.f->num_outputs = 0;
  expect_invalid(t.f, "fusion @t has no outputs");
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(output_must_not_be_a_literal) {
  sample t = make_sample();
  fz_value *lit = fz_literal_int(t.f, 1);
  t.f->outputs[0] = lit;
  char want[80];
  snprintf(want, sizeof want, "%%%d: output 0 is a literal", lit->id);
  expect_invalid(t.f, want);
  fz_fusion_destroy(t.f);
}
END_TEST

START_TEST(output_must_be_defined_here) {
  sample t = make_sample();
  /* A pass removed the op but not the output. */
  t.f->num_ops = 1;
  expect_invalid(t.f, "%s: output 0 is not defined in this fusion");
  fz_fusion_destroy(t.f);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("verify");
  TCase *tc = tcase_create("verify");
  tcase_add_test(tc, built_fusion_is_valid);
  tcase_add_test(tc, every_op_family_verifies);
  tcase_add_test(tc, input_can_be_an_output);
  tcase_add_test(tc, null_fusion_is_an_argument_error);
  tcase_add_test(tc, symbol_out_of_range);
  tcase_add_test(tc, symbol_read_of_no_symbol);
  tcase_add_test(tc, negative_extent);
  tcase_add_test(tc, broadcast_extent_must_be_one);
  tcase_add_test(tc, no_reduction_axes_in_values);
  tcase_add_test(tc, duplicate_symbol_names);
  tcase_add_test(tc, inputs_need_layouts);
  tcase_add_test(tc, layout_must_be_a_permutation);
  tcase_add_test(tc, result_layout_must_be_a_permutation);
  tcase_add_test(tc, use_before_definition);
  tcase_add_test(tc, operand_from_another_fusion);
  tcase_add_test(tc, literal_from_another_fusion);
  tcase_add_test(tc, constant_extents_that_overflow);
  tcase_add_test(tc, value_defined_twice);
  tcase_add_test(tc, duplicate_value_ids);
  tcase_add_test(tc, invalid_literal_operand);
  tcase_add_test(tc, arity_must_match_the_op_table);
  tcase_add_test(tc, op_must_allow_its_operand_dtypes);
  tcase_add_test(tc, result_type_must_match_inference);
  tcase_add_test(tc, broadcast_kind_must_match_inference);
  tcase_add_test(tc, shape_rule_errors_name_the_value);
  tcase_add_test(tc, op_attributes_are_checked);
  tcase_add_test(tc, generator_result_types_are_checked);
  tcase_add_test(tc, unnamed_values_are_named_by_id);
  tcase_add_test(tc, value_names_are_unique);
  tcase_add_test(tc, value_names_use_the_text_charset);
  tcase_add_test(tc, at_least_one_output);
  tcase_add_test(tc, output_must_not_be_a_literal);
  tcase_add_test(tc, output_must_be_defined_here);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
