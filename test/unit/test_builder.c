/* test_builder.c - the C builder: shape and dtype inference of every op
 * family, and its error messages. One test per rule; error tests check the
 * message by substring and that a rejected op leaves the fusion unchanged. */
#include "test_util.h"
#include "type_spec.h"

/* Builds with fz_build and expects failure with `needle` in the message,
 * and no change to the fusion. */
static void expect_build_error(fz_fusion *f, fz_opcode code, int n,
                               fz_value *const *ops, const fz_attrs *attrs,
                               const char *needle) {
  int num_ops = f->num_ops, next_id = f->next_value_id;
  fz_error err = {0};
  fz_value *v = fz_build(f, code, n, ops, attrs, &err);
  ck_assert_ptr_null(v);
  ck_assert_err(err, needle);
  ck_assert_int_eq(f->num_ops, num_ops);
  ck_assert_int_eq(f->next_value_id, next_id);
}

static fz_value *ok(fz_value *v, const fz_error *err) {
  ck_assert_msg(v != NULL, "build failed: %s", err->message);
  return v;
}

/* ---- the result value and the op ---- */

START_TEST(build_appends_op_and_result) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, 128]");
  fz_value *y = ts_input(f, "y", "f32[N, 128]");
  fz_error err = {0};
  int id = f->next_value_id;
  fz_value *r = ok(fz_binary(f, FZ_OP_ADD, x, y, &err), &err);
  ck_assert_type(f, r, "f32[N, 128]");
  ck_assert_int_eq(f->num_ops, 1);
  ck_assert_ptr_eq(f->ops[0]->result, r);
  ck_assert_ptr_eq(r->def, f->ops[0]);
  ck_assert_int_eq(f->ops[0]->code, FZ_OP_ADD);
  ck_assert_int_eq(f->ops[0]->num_operands, 2);
  ck_assert_ptr_eq(f->ops[0]->operands[0], x);
  ck_assert_ptr_eq(f->ops[0]->operands[1], y);
  ck_assert_int_eq(r->kind, FZ_VALUE_RESULT);
  ck_assert_int_eq(r->id, id);
  ck_assert_int_eq(f->next_value_id, id + 1);
  ck_assert_ptr_null(r->name);
  ck_assert(!r->type.has_layout);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(result_layout_is_undeclared_even_for_copies) {
  fz_fusion *f = fz_fusion_create("t");
  fz_type t = ts(f, "f32[4, 8]");
  fz_type_set_row_major(&t);
  t.alloc_order[0] = 1;
  t.alloc_order[1] = 0;
  fz_value *x = fz_add_input(f, "x", &t);
  fz_error err = {0};
  fz_value *s = ok(fz_set(f, x, &err), &err);
  ck_assert(!s->type.has_layout);
  ck_assert(!ok(fz_cast(f, x, FZ_F16, &err), &err)->type.has_layout);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(literals_are_weak_scalars_outside_the_op_list) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *a = fz_literal_float(f, 2.5);
  fz_value *b = fz_literal_int(f, -3);
  fz_value *c = fz_literal_bool(f, true);
  ck_assert_int_eq(a->kind, FZ_VALUE_LITERAL);
  ck_assert_int_eq(a->type.dtype, FZ_F64);
  ck_assert_int_eq(a->type.rank, 0);
  ck_assert(a->literal.f == 2.5);
  ck_assert_int_eq(b->type.dtype, FZ_I64);
  ck_assert_int_eq(b->literal.i, -3);
  ck_assert_int_eq(c->type.dtype, FZ_BOOL);
  ck_assert_int_eq(c->literal.i, 1);
  ck_assert_int_ne(a->id, b->id);
  ck_assert_int_ne(b->id, c->id);
  ck_assert_int_eq(f->num_ops, 0);
  ck_assert_int_eq(f->num_inputs, 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(wrong_operand_count_is_an_error) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N]");
  fz_value *ops[3] = {x, x, x};
  expect_build_error(f, FZ_OP_ADD, 1, ops, NULL,
                     "add: takes 2 operands but was given 1");
  expect_build_error(f, FZ_OP_EXP, 2, ops, NULL,
                     "exp: takes 1 operand but was given 2");
  fz_value *nul[2] = {x, NULL};
  expect_build_error(f, FZ_OP_MUL, 2, nul, NULL, "mul: operand 1 is NULL");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- pointwise shapes ---- */

START_TEST(rank0_operands_broadcast) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, 4]");
  fz_value *s = ts_input(f, "s", "f32");
  fz_error err = {0};
  ck_assert_type(f, fz_binary(f, FZ_OP_MUL, s, x, &err), "f32[N, 4]");
  ck_assert_type(f, fz_binary(f, FZ_OP_MUL, x, fz_literal_float(f, 2.0), &err),
                 "f32[N, 4]");
  ck_assert_type(f, fz_binary(f, FZ_OP_MUL, s, s, &err), "f32");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(rank_mismatch_is_an_error) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *ops[2] = {ts_input(f, "x", "f32[N, 4]"), ts_input(f, "y", "f32[4]")};
  expect_build_error(f, FZ_OP_ADD, 2, ops, NULL,
                     "add: operand 1 has rank 1 but operand 0 has rank 2");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(extent_mismatch_is_an_error) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *ops[2] = {ts_input(f, "x", "f32[64]"), ts_input(f, "y", "f32[128]")};
  expect_build_error(f, FZ_OP_ADD, 2, ops, NULL,
                     "add: operand 1 axis 0 has extent 128 but operand 0 has "
                     "extent 64");
  fz_value *sym[2] = {ts_input(f, "a", "f32[4, N]"),
                      ts_input(f, "b", "f32[4, M]")};
  expect_build_error(f, FZ_OP_SUB, 2, sym, NULL,
                     "sub: operand 1 axis 1 has extent M but operand 0 has "
                     "extent N");
  /* Constant 1 is not a broadcast: the IR broadcasts only b1 axes. */
  fz_value *one[2] = {ts_input(f, "c", "f32[1]"), ts_input(f, "d", "f32[8]")};
  expect_build_error(f, FZ_OP_MUL, 2, one, NULL,
                     "mul: operand 1 axis 0 has extent 8 but operand 0 has "
                     "extent 1");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(b1_against_extent_gives_iter_axis) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *w = ts_input(f, "w", "f32[b1, 128]");
  fz_value *x = ts_input(f, "x", "f32[N, 128]");
  fz_error err = {0};
  fz_value *r = ok(fz_binary(f, FZ_OP_MUL, w, x, &err), &err);
  ck_assert_type(f, r, "f32[N, 128]");
  ck_assert_int_eq(r->type.axes[0].kind, FZ_AXIS_ITER);
  ck_assert_type(f, fz_binary(f, FZ_OP_MUL, x, w, &err), "f32[N, 128]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(two_b1_axes_give_b1) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *a = ts_input(f, "a", "f32[b1, 8]");
  fz_value *b = ts_input(f, "b", "f32[b1, 8]");
  fz_error err = {0};
  fz_value *r = ok(fz_binary(f, FZ_OP_ADD, a, b, &err), &err);
  ck_assert_type(f, r, "f32[b1, 8]");
  ck_assert_int_eq(r->type.axes[0].kind, FZ_AXIS_BROADCAST);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(expanded_broadcasts) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *e = ts_input(f, "e", "f32[b1->N, 8]");
  fz_value *e2 = ts_input(f, "e2", "f32[b1->N, 8]");
  fz_value *x = ts_input(f, "x", "f32[N, 8]");
  fz_value *b = ts_input(f, "b", "f32[b1, 8]");
  fz_error err = {0};
  /* All operands expanded the same way: the result stays expanded. */
  ck_assert_type(f, fz_binary(f, FZ_OP_ADD, e, e2, &err), "f32[b1->N, 8]");
  ck_assert_type(f, fz_unary(f, FZ_OP_EXP, e, &err), "f32[b1->N, 8]");
  /* Against a real extent or a b1: an ordinary axis of extent N. */
  fz_value *r = ok(fz_binary(f, FZ_OP_ADD, e, x, &err), &err);
  ck_assert_type(f, r, "f32[N, 8]");
  ck_assert_int_eq(r->type.axes[0].kind, FZ_AXIS_ITER);
  ck_assert_type(f, fz_binary(f, FZ_OP_ADD, b, e, &err), "f32[N, 8]");
  /* The expanded extent must match the others. */
  fz_value *m[2] = {e, ts_input(f, "y", "f32[M, 8]")};
  expect_build_error(f, FZ_OP_ADD, 2, m, NULL,
                     "add: operand 1 axis 0 has extent M but operand 0 has "
                     "extent N");
  fz_value *bm[2] = {ts_input(f, "z", "f32[b1->M, 8]"), e};
  expect_build_error(f, FZ_OP_ADD, 2, bm, NULL,
                     "operand 1 axis 0 has extent N but operand 0 has extent M");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(ternary_shapes_combine_all_operands) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *c = ts_input(f, "c", "bool[N, b1]");
  fz_value *a = ts_input(f, "a", "f32[b1, 8]");
  fz_error err = {0};
  ck_assert_type(f, fz_ternary(f, FZ_OP_WHERE, c, a, fz_literal_float(f, 0.0),
                               &err),
                 "f32[N, 8]");
  fz_value *bad[3] = {c, a, ts_input(f, "b", "f32[N, 9]")};
  expect_build_error(f, FZ_OP_WHERE, 3, bad, NULL,
                     "where: operand 2 axis 1 has extent 9 but operand 1 has "
                     "extent 8");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- bool and integer rules ---- */

/* neg of bool is an error; abs of bool is the value, as in PyTorch. */
START_TEST(neg_of_bool_is_an_error) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *b[1] = {ts_input(f, "b", "bool[N]")};
  expect_build_error(f, FZ_OP_NEG, 1, b, NULL, "neg: is not defined on bool");
  fz_value *lit[1] = {fz_literal_bool(f, true)};
  expect_build_error(f, FZ_OP_NEG, 1, lit, NULL, "neg: is not defined on bool");
  fz_error err = {0};
  ck_assert_type(f, fz_unary(f, FZ_OP_ABS, b[0], &err), "bool[N]");
  ck_assert_type(f, fz_unary(f, FZ_OP_NEG, ts_input(f, "i", "i8[N]"), &err),
                 "i8[N]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(sub_of_bools_is_an_error) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *b = ts_input(f, "b", "bool[N]");
  fz_value *ops[2] = {b, b};
  expect_build_error(f, FZ_OP_SUB, 2, ops, NULL,
                     "sub: subtraction of bool values is not supported");
  fz_error err = {0};
  ck_assert_type(f, fz_binary(f, FZ_OP_ADD, b, b, &err), "bool[N]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(logical_ops_accept_any_dtype) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N]");
  fz_value *i = ts_input(f, "i", "i32[N]");
  fz_error err = {0};
  ck_assert_type(f, fz_unary(f, FZ_OP_NOT, x, &err), "bool[N]");
  ck_assert_type(f, fz_binary(f, FZ_OP_AND, x, i, &err), "bool[N]");
  ck_assert_type(f, fz_binary(f, FZ_OP_OR, i, fz_literal_int(f, 0), &err),
                 "bool[N]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(where_condition_must_be_bool) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N]");
  fz_value *ops[3] = {x, x, x};
  expect_build_error(f, FZ_OP_WHERE, 3, ops, NULL,
                     "where: condition (operand 0) must be bool, not f32");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(to_float_ops_on_ints) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *i = ts_input(f, "i", "i32[N]");
  fz_value *h = ts_input(f, "h", "bf16[N]");
  fz_error err = {0};
  ck_assert_type(f, fz_unary(f, FZ_OP_SQRT, i, &err), "f32[N]");
  ck_assert_type(f, fz_unary(f, FZ_OP_SQRT, h, &err), "bf16[N]");
  ck_assert_type(f, fz_unary(f, FZ_OP_RELU, i, &err), "i32[N]");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- reductions ---- */

START_TEST(reduction_removes_axes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f16[N, 128, M]");
  fz_error err = {0};
  int d1[] = {1}, d02[] = {0, 2};
  ck_assert_type(f, fz_reduce(f, FZ_OP_SUM, x, 1, d1, false, &err), "f16[N, M]");
  ck_assert_type(f, fz_reduce(f, FZ_OP_AMAX, x, 2, d02, false, &err),
                 "f16[128]");
  int all[] = {0, 1, 2};
  ck_assert_type(f, fz_reduce(f, FZ_OP_PROD, x, 3, all, false, &err), "f16");
  ck_assert_int_eq(f->ops[1]->num_dims, 2);
  ck_assert_int_eq(f->ops[1]->dims[1], 2);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reduction_keepdim_gives_b1) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, 128]");
  fz_error err = {0};
  int d1[] = {1};
  fz_value *k = ok(fz_reduce(f, FZ_OP_SUM, x, 1, d1, true, &err), &err);
  ck_assert_type(f, k, "f32[N, b1]");
  ck_assert_int_eq(k->type.axes[1].kind, FZ_AXIS_BROADCAST);
  ck_assert(!k->type.axes[1].expanded);
  ck_assert(f->ops[0]->keepdim);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reducing_broadcast_axes_is_allowed) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[b1, b1->N, 4]");
  fz_error err = {0};
  int d01[] = {0, 1};
  ck_assert_type(f, fz_reduce(f, FZ_OP_SUM, x, 2, d01, false, &err), "f32[4]");
  int d2[] = {2};
  /* Kept axes are copied unchanged, expanded ones included. */
  ck_assert_type(f, fz_reduce(f, FZ_OP_SUM, x, 1, d2, false, &err),
                 "f32[b1, b1->N]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reduction_dims_errors) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x[1] = {ts_input(f, "x", "f32[N, 128]")};
  fz_attrs out = {.num_dims = 1, .dims = {2}};
  expect_build_error(f, FZ_OP_SUM, 1, x, &out,
                     "sum: dim 2 is out of range for an operand of rank 2");
  fz_attrs neg = {.num_dims = 1, .dims = {-3}};
  expect_build_error(f, FZ_OP_AMIN, 1, x, &neg,
                     "amin: dim -3 is out of range for an operand of rank 2");
  fz_attrs dup = {.num_dims = 2, .dims = {1, 1}};
  expect_build_error(f, FZ_OP_SUM, 1, x, &dup, "sum: dims name axis 1 twice");
  fz_attrs wrapped_dup = {.num_dims = 2, .dims = {1, -1}};
  expect_build_error(f, FZ_OP_SUM, 1, x, &wrapped_dup,
                     "sum: dims name axis 1 twice");
  fz_value *s[1] = {ts_input(f, "s", "f32")};
  fz_attrs d1 = {.num_dims = 1, .dims = {1}};
  expect_build_error(f, FZ_OP_SUM, 1, s, &d1,
                     "sum: dim 1 is out of range for a rank-0 operand");
  fz_attrs both = {.num_dims = 2, .dims = {0, -1}};
  expect_build_error(f, FZ_OP_AMAX, 1, s, &both, "amax: dims name axis 0 twice");
  fz_fusion_destroy(f);
}
END_TEST

/* As in PyTorch: an empty dim list reduces every axis, and a rank-0
 * operand (dims 0 or -1, or none) has nothing to reduce, so the builder
 * gives its value in the reduction's result dtype, as a copy or cast. */
START_TEST(reductions_over_no_dims) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, 4]");
  fz_error err = {0};
  fz_value *all = ok(fz_reduce(f, FZ_OP_SUM, x, 0, NULL, false, &err), &err);
  ck_assert_type(f, all, "f32");
  ck_assert_int_eq(all->def->code, FZ_OP_SUM);
  ck_assert_int_eq(all->def->num_dims, 2);
  ck_assert_type(f, ok(fz_reduce(f, FZ_OP_AMAX, x, 0, NULL, true, &err), &err),
                 "f32[b1, b1]");
  fz_value *s = ts_input(f, "s", "f32");
  int minus1[] = {-1};
  fz_value *same = ok(fz_reduce(f, FZ_OP_SUM, s, 1, minus1, true, &err), &err);
  ck_assert_type(f, same, "f32");
  ck_assert_int_eq(same->def->code, FZ_OP_SET);
  fz_value *b = ts_input(f, "b", "bool");
  fz_value *widened = ok(fz_reduce(f, FZ_OP_SUM, b, 0, NULL, false, &err), &err);
  ck_assert_type(f, widened, "i64");
  ck_assert_int_eq(widened->def->code, FZ_OP_CAST);
  ck_assert_int_eq(fz_add_output(f, widened, &err), FZ_OK);
  ck_assert_int_eq(fz_verify(f, &err), FZ_OK);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- broadcast and squeeze ---- */

START_TEST(broadcast_inserts_b1_axes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N]");
  fz_error err = {0};
  int d1[] = {1}, d02[] = {0, 2};
  ck_assert_type(f, fz_broadcast(f, x, 1, d1, &err), "f32[N, b1]");
  ck_assert_type(f, fz_broadcast(f, x, 2, d02, &err), "f32[b1, N, b1]");
  int d0[] = {0};
  ck_assert_type(f, fz_broadcast(f, fz_literal_float(f, 1.0), 1, d0, &err),
                 "f64[b1]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(broadcast_errors) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x[1] = {ts_input(f, "x", "f32[N]")};
  fz_attrs out = {.num_dims = 1, .dims = {2}};
  expect_build_error(f, FZ_OP_BROADCAST, 1, x, &out,
                     "broadcast: dim 2 is out of range for the result of "
                     "rank 2");
  fz_attrs dup = {.num_dims = 2, .dims = {0, 0}};
  expect_build_error(f, FZ_OP_BROADCAST, 1, x, &dup,
                     "broadcast: dims name axis 0 twice");
  fz_attrs low = {.num_dims = 1, .dims = {-3}};
  expect_build_error(f, FZ_OP_BROADCAST, 1, x, &low,
                     "broadcast: dim -3 is out of range for the result of "
                     "rank 2");
  fz_attrs big = {.num_dims = FZ_MAX_RANK, .dims = {0, 1, 2, 3, 4, 5, 6, 7}};
  expect_build_error(f, FZ_OP_BROADCAST, 1, x, &big,
                     "broadcast: result would have rank 9");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(squeeze_removes_size_one_axes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[b1, N, 1, b1]");
  fz_error err = {0};
  int d[] = {0, 2, 3};
  ck_assert_type(f, fz_squeeze(f, x, 3, d, &err), "f32[N]");
  int d3[] = {3};
  ck_assert_type(f, fz_squeeze(f, x, 1, d3, &err), "f32[b1, N, 1]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(squeeze_errors) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x[1] = {ts_input(f, "x", "f32[N, 64, b1->N]")};
  fz_attrs d1 = {.num_dims = 1, .dims = {1}};
  expect_build_error(f, FZ_OP_SQUEEZE, 1, x, &d1,
                     "squeeze: operand axis 1 has extent 64; only b1 axes");
  fz_attrs d0 = {.num_dims = 1, .dims = {0}};
  expect_build_error(f, FZ_OP_SQUEEZE, 1, x, &d0,
                     "squeeze: operand axis 0 has extent N");
  fz_attrs d2 = {.num_dims = 1, .dims = {2}};
  expect_build_error(f, FZ_OP_SQUEEZE, 1, x, &d2,
                     "squeeze: operand axis 2 is an expanded broadcast (b1->N)");
  fz_attrs d3 = {.num_dims = 1, .dims = {3}};
  expect_build_error(f, FZ_OP_SQUEEZE, 1, x, &d3,
                     "squeeze: dim 3 is out of range for an operand of rank 3");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- expand ---- */

START_TEST(expand_b1_axes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, b1, b1]");
  fz_error err = {0};
  fz_type to = ts(f, "f64[N, b1->128, b1]");
  fz_value *e = ok(fz_expand(f, x, &to, &err), &err);
  /* The dtype is the operand's; the shape's dtype is not read. */
  ck_assert_type(f, e, "f32[N, b1->128, b1]");
  ck_assert(e->type.axes[1].expanded);
  /* An expanded axis may stay as it is. */
  fz_type same = ts(f, "f32[N, b1->128, b1->M]");
  ck_assert_type(f, fz_expand(f, e, &same, &err), "f32[N, b1->128, b1->M]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(expand_errors) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x[1] = {ts_input(f, "x", "f32[N, b1, b1->4]")};
  fz_type rank = ts(f, "f32[N, b1->8]");
  fz_attrs a_rank = {.shape = &rank};
  expect_build_error(f, FZ_OP_EXPAND, 1, x, &a_rank,
                     "expand: target has rank 2 but the operand has rank 3");
  fz_type iter = ts(f, "f32[M, b1->8, b1->4]");
  fz_attrs a_iter = {.shape = &iter};
  expect_build_error(f, FZ_OP_EXPAND, 1, x, &a_iter,
                     "expand: target axis 0 is M but operand axis 0 is N; only "
                     "b1 axes can be expanded");
  fz_type plain = ts(f, "f32[N, 8, b1->4]");
  fz_attrs a_plain = {.shape = &plain};
  expect_build_error(f, FZ_OP_EXPAND, 1, x, &a_plain,
                     "expand: target axis 1 is 8 but an expanded b1 axis must "
                     "be written b1->8");
  fz_type again = ts(f, "f32[N, b1, b1->8]");
  fz_attrs a_again = {.shape = &again};
  expect_build_error(f, FZ_OP_EXPAND, 1, x, &a_again,
                     "expand: target axis 2 is b1->8 but operand axis 2 is "
                     "b1->4");
  fz_attrs a_none = {0};
  expect_build_error(f, FZ_OP_EXPAND, 1, x, &a_none,
                     "expand: needs a target shape");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- permute ---- */

START_TEST(permute_reorders_axes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, 128, b1]");
  fz_error err = {0};
  int perm[] = {1, 2, 0};
  fz_value *p = ok(fz_permute(f, x, perm, &err), &err);
  ck_assert_type(f, p, "f32[128, b1, N]");
  ck_assert_int_eq(f->ops[0]->perm[0], 1);
  ck_assert_int_eq(f->ops[0]->perm[2], 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(permute_invalid) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x[1] = {ts_input(f, "x", "f32[N, 128]")};
  fz_attrs dup = {.perm = {1, 1}};
  expect_build_error(f, FZ_OP_PERMUTE, 1, x, &dup,
                     "permute: perm is not a permutation: axis 1 appears twice");
  fz_attrs out = {.perm = {0, 2}};
  expect_build_error(f, FZ_OP_PERMUTE, 1, x, &out,
                     "permute: perm entry 1 is 2, out of range for an operand "
                     "of rank 2");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- reshape ---- */

START_TEST(reshape_splits_and_merges) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[128, N]");
  fz_error err = {0};
  fz_type split = ts(f, "bf16[16, 8, N]");
  /* dtype from the operand */
  ck_assert_type(f, fz_reshape(f, x, &split, &err), "f32[16, 8, N]");
  fz_type merged = ts(f, "f32[N, b1, 2, 64]");
  ck_assert_type(f, fz_reshape(f, x, &merged, &err), "f32[N, b1, 2, 64]");
  /* Broadcast axes count with their logical extent. */
  fz_value *e = ts_input(f, "e", "f32[b1->4, N, b1]");
  fz_type flat = ts(f, "f32[N, 4]");
  ck_assert_type(f, fz_reshape(f, e, &flat, &err), "f32[N, 4]");
  /* Zero elements on both sides are equal whatever the symbols. */
  fz_value *z = ts_input(f, "z", "f32[0, N]");
  fz_type zt = ts(f, "f32[M, 0]");
  ck_assert_type(f, fz_reshape(f, z, &zt, &err), "f32[M, 0]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reshape_count_mismatch) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x[1] = {ts_input(f, "x", "f32[128, N]")};
  fz_type bad = ts(f, "f32[16, 4, N]");
  fz_attrs a = {.shape = &bad};
  expect_build_error(f, FZ_OP_RESHAPE, 1, x, &a,
                     "reshape: cannot prove the element counts equal: operand "
                     "f32[128, N] has 128*N elements, target f32[16, 4, N] has "
                     "64*N");
  fz_type sym = ts(f, "f32[128, M]");
  fz_attrs b = {.shape = &sym};
  expect_build_error(f, FZ_OP_RESHAPE, 1, x, &b,
                     "cannot prove the element counts equal");
  fz_type unknown = ts(f, "f32[?, 128]");
  fz_attrs c = {.shape = &unknown};
  expect_build_error(f, FZ_OP_RESHAPE, 1, x, &c,
                     "target f32[?, 128] has 128*?");
  fz_type exp = ts(f, "f32[b1->128, N]");
  fz_attrs d = {.shape = &exp};
  expect_build_error(f, FZ_OP_RESHAPE, 1, x, &d,
                     "reshape: target axis 0 is an expanded broadcast");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(shape_attribute_is_checked) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x[1] = {ts_input(f, "x", "f32[4]")};
  fz_type bad = ts(f, "f32[4]");
  bad.axes[0].extent = fz_symbol_extent(42);
  fz_attrs a = {.shape = &bad};
  expect_build_error(f, FZ_OP_RESHAPE, 1, x, &a,
                     "reshape: target shape axis 0 uses symbol 42");
  fz_type neg = ts(f, "f32[4]");
  neg.axes[0].extent = fz_const_extent(-4);
  fz_attrs b = {.shape = &neg};
  expect_build_error(f, FZ_OP_FULL, 0, NULL, &b,
                     "full: result shape axis 0 has negative extent -4");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- set, cast, full, iota ---- */

START_TEST(set_and_cast_keep_the_shape) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, b1->8]");
  fz_error err = {0};
  ck_assert_type(f, fz_set(f, x, &err), "f32[N, b1->8]");
  ck_assert_type(f, fz_cast(f, x, FZ_BF16, &err), "bf16[N, b1->8]");
  fz_value *ops[1] = {x};
  expect_build_error(f, FZ_OP_CAST, 1, ops, NULL,
                     "cast: needs a target dtype");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(full_takes_shape_and_fill) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  fz_type t = ts(f, "f16[4, N]");
  fz_value *v = ok(fz_full(f, &t, (fz_scalar){.f = 0.5}, &err), &err);
  ck_assert_type(f, v, "f16[4, N]");
  ck_assert(f->ops[0]->fill.f == 0.5);
  ck_assert_int_eq(f->ops[0]->num_operands, 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(iota_defaults_and_rules) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  fz_type it = ts(f, "i64[N]");
  fz_attrs ai = {.shape = &it};
  ck_assert_type(f, fz_build(f, FZ_OP_IOTA, 0, NULL, &ai, &err), "i64[N]");
  ck_assert_int_eq(f->ops[0]->iota_start.i, 0);
  ck_assert_int_eq(f->ops[0]->iota_step.i, 1);
  fz_type ft = ts(f, "f32[8]");
  fz_attrs af = {.shape = &ft,
                 .iota_start = {.f = 2.0},
                 .has_iota_start = true};
  ck_assert_type(f, fz_build(f, FZ_OP_IOTA, 0, NULL, &af, &err), "f32[8]");
  ck_assert(f->ops[1]->iota_start.f == 2.0);
  ck_assert(f->ops[1]->iota_step.f == 1.0);

  fz_type r2 = ts(f, "i64[N, 2]");
  fz_attrs a2 = {.shape = &r2};
  expect_build_error(f, FZ_OP_IOTA, 0, NULL, &a2,
                     "iota: result must have rank 1, not 2");
  fz_type b = ts(f, "bool[N]");
  fz_attrs ab = {.shape = &b};
  expect_build_error(f, FZ_OP_IOTA, 0, NULL, &ab,
                     "iota: result dtype must be an integer or float, not "
                     "bool");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- layouts ---- */

START_TEST(set_layout_declares_result_layout) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, 8]");
  fz_error err = {0};
  fz_value *e = ok(fz_unary(f, FZ_OP_EXP, x, &err), &err);
  int order[] = {1, 0};
  ck_assert_int_eq(fz_value_set_layout(e, order, NULL, &err), FZ_OK);
  ck_assert(e->type.has_layout);
  ck_assert_int_eq(e->type.alloc_order[0], 1);
  ck_assert(e->type.contiguous[0] && e->type.contiguous[1]);
  bool contig[] = {true, false};
  ck_assert_int_eq(fz_value_set_layout(e, order, contig, &err), FZ_OK);
  ck_assert(!e->type.contiguous[1]);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(set_layout_rejects_non_permutations) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, 8]");
  fz_error err = {0};
  fz_value *e = ok(fz_unary(f, FZ_OP_EXP, x, &err), &err);
  int dup[] = {0, 0};
  ck_assert_int_eq(fz_value_set_layout(e, dup, NULL, &err), FZ_ERR_INVALID);
  char want[64];
  snprintf(want, sizeof want, "%%%d layout is not a permutation", e->id);
  ck_assert_err(err, want);
  ck_assert(!e->type.has_layout);
  int out[] = {0, 2};
  ck_assert_int_eq(fz_value_set_layout(x, out, NULL, &err), FZ_ERR_INVALID);
  ck_assert_err(err, "%x layout is not a permutation");
  ck_assert_int_eq(x->type.alloc_order[1], 1);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- operands of another fusion ---- */

/* A refused call: NULL, FZ_ERR_ARGUMENT naming the cause, nothing added. */
static void expect_refused(fz_fusion *f, fz_value *v, const fz_error *err,
                           int num_ops, int next_id) {
  ck_assert_ptr_null(v);
  ck_assert_int_eq(err->status, FZ_ERR_ARGUMENT);
  ck_assert_msg(strstr(err->message, "belongs to another fusion, not @b"),
                "message: %s", err->message);
  ck_assert_int_eq(f->num_ops, num_ops);
  ck_assert_int_eq(f->next_value_id, next_id);
}

START_TEST(operands_of_another_fusion_are_refused) {
  fz_fusion *a = fz_fusion_create("a"), *b = fz_fusion_create("b");
  fz_value *x = ts_input(a, "x", "f32[4, 1]");
  fz_value *lit = fz_literal_float(a, 2.0);
  fz_value *y = ts_input(b, "y", "f32[4, 1]");
  fz_error err = {0};
  fz_value *own = ok(fz_unary(b, FZ_OP_NEG, y, &err), &err);
  int ops = b->num_ops, ids = b->next_value_id;
  expect_refused(b, fz_unary(b, FZ_OP_EXP, x, &err), &err, ops, ids);
  expect_refused(b, fz_binary(b, FZ_OP_ADD, y, x, &err), &err, ops, ids);
  expect_refused(b, fz_binary(b, FZ_OP_MUL, y, lit, &err), &err, ops, ids);
  expect_refused(b, fz_ternary(b, FZ_OP_FMA, y, y, x, &err), &err, ops, ids);
  expect_refused(b, fz_cast(b, x, FZ_F16, &err), &err, ops, ids);
  int d0[] = {0}, d1[] = {1}, perm[] = {1, 0};
  expect_refused(b, fz_reduce(b, FZ_OP_SUM, x, 1, d0, false, &err), &err, ops,
                 ids);
  expect_refused(b, fz_broadcast(b, x, 1, d0, &err), &err, ops, ids);
  expect_refused(b, fz_squeeze(b, x, 1, d1, &err), &err, ops, ids);
  expect_refused(b, fz_permute(b, x, perm, &err), &err, ops, ids);
  expect_refused(b, fz_set(b, x, &err), &err, ops, ids);
  fz_type same = x->type;
  expect_refused(b, fz_expand(b, x, &same, &err), &err, ops, ids);
  expect_refused(b, fz_reshape(b, x, &same, &err), &err, ops, ids);
  fz_value *operands[1] = {x};
  expect_refused(b, fz_build(b, FZ_OP_ABS, 1, operands, NULL, &err), &err,
                 ops, ids);

  ck_assert_int_eq(fz_add_output(b, x, &err), FZ_ERR_ARGUMENT);
  ck_assert_msg(strstr(err.message, "belongs to another fusion"), "%s",
                err.message);
  ck_assert_int_eq(b->num_outputs, 0);
  ck_assert_int_eq(fz_add_output(b, own, &err), FZ_OK);

  /* Nothing of a is left in b: printing it after a is gone reads no freed
   * memory (ASan checks this). */
  fz_fusion_destroy(a);
  char *text = fz_print(b);
  ck_assert_ptr_nonnull(text);
  ck_assert_msg(strstr(text, "%x") == NULL, "%s", text);
  free(text);
  ck_assert_int_eq(fz_verify(b, &err), FZ_OK);
  fz_fusion_destroy(b);
}
END_TEST

START_TEST(null_fusion_is_an_argument_error) {
  fz_fusion *a = fz_fusion_create("a");
  fz_value *x = ts_input(a, "x", "f32[4]");
  fz_error err = {0};
  ck_assert_ptr_null(fz_unary(NULL, FZ_OP_EXP, x, &err));
  ck_assert_int_eq(err.status, FZ_ERR_ARGUMENT);
  ck_assert_ptr_null(fz_literal_int(NULL, 1));
  ck_assert_int_eq(fz_add_output(NULL, x, &err), FZ_ERR_ARGUMENT);
  fz_fusion_destroy(a);
}
END_TEST

/* ---- dims counted from the end ---- */

START_TEST(negative_dims_count_from_the_end) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "f32[N, 8, b1]");
  fz_error err = {0};
  int last[] = {-1}, mixed[] = {-1, 0}, perm[] = {-1, 0, -2};
  fz_value *s = ok(fz_reduce(f, FZ_OP_SUM, x, 2, mixed, false, &err), &err);
  ck_assert_type(f, s, "f32[8]");
  ck_assert_int_eq(s->def->dims[0], 0); /* stored wrapped and sorted */
  ck_assert_int_eq(s->def->dims[1], 2);
  fz_value *q = ok(fz_squeeze(f, x, 1, last, &err), &err);
  ck_assert_type(f, q, "f32[N, 8]");
  ck_assert_int_eq(q->def->dims[0], 2);
  /* broadcast's dims are positions in the result (rank 4 here) */
  fz_value *b = ok(fz_broadcast(f, x, 1, last, &err), &err);
  ck_assert_type(f, b, "f32[N, 8, b1, b1]");
  ck_assert_int_eq(b->def->dims[0], 3);
  fz_value *p = ok(fz_permute(f, x, perm, &err), &err);
  ck_assert_type(f, p, "f32[b1, N, 8]");
  ck_assert_int_eq(p->def->perm[0], 2);
  ck_assert_int_eq(p->def->perm[2], 1);
  ck_assert_int_eq(fz_add_output(f, s, &err), FZ_OK);
  ck_assert_int_eq(fz_verify(f, &err), FZ_OK);

  int bad_perm[] = {-4, 0, 1};
  ck_assert_ptr_null(fz_permute(f, x, bad_perm, &err));
  ck_assert_err(err, "permute: perm entry 0 is -4, out of range");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- sizes ---- */

START_TEST(constant_sizes_must_fit_int64) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  /* a shape attribute: 2^62 x 4 elements */
  fz_type huge = ts(f, "f32[4611686018427387904, 4]");
  int ops = f->num_ops, ids = f->next_value_id;
  ck_assert_ptr_null(fz_full(f, &huge, (fz_scalar){.f = 0}, &err));
  ck_assert_err(err, "full: result shape: extent product 4611686018427387904 "
                     "x 4 overflows int64");
  /* 2^61 elements fit, 2^64 bytes of f64 do not */
  fz_type wide = ts(f, "f64[2305843009213693952, N]");
  ck_assert_ptr_null(fz_full(f, &wide, (fz_scalar){.f = 0}, &err));
  ck_assert_err(err, "2305843009213693952 elements x 8 bytes overflows int64");
  ck_assert_int_eq(f->num_ops, ops);
  ck_assert_int_eq(f->next_value_id, ids);

  /* Operands that fit can meet in a result that does not. */
  fz_value *col = ts_input(f, "col", "f32[1099511627776, b1]");
  fz_value *row = ts_input(f, "row", "f32[b1, 1099511627776]");
  ck_assert_ptr_null(fz_binary(f, FZ_OP_ADD, col, row, &err));
  ck_assert_err(err, "add: result: extent product 1099511627776 x "
                     "1099511627776 overflows int64");
  /* ... and a cast can widen past it. */
  fz_value *bytes = ts_input(f, "bytes", "i8[4611686018427387904]");
  ck_assert_ptr_null(fz_cast(f, bytes, FZ_F32, &err));
  ck_assert_err(err, "cast: result: 4611686018427387904 elements x 4 bytes "
                     "overflows int64");
  /* An empty tensor still needs its other strides to fit. */
  fz_type empty = ts(f, "f32[0, 4611686018427387904, 4]");
  ck_assert_ptr_null(fz_full(f, &empty, (fz_scalar){.f = 0}, &err));
  ck_assert_err(err, "overflows int64");
  fz_fusion_destroy(f);
}
END_TEST

/* ---- literal ranges ---- */

START_TEST(fill_and_iota_values_must_fit_integer_dtypes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  fz_type i8 = ts(f, "i8[4]");
  fz_attrs a = {.shape = &i8, .fill.i = INT64_MAX};
  expect_build_error(f, FZ_OP_FULL, 0, NULL, &a,
                     "full: fill value 9223372036854775807 is out of range "
                     "of i8 [-128, 127]");
  a.fill.i = -129;
  expect_build_error(f, FZ_OP_FULL, 0, NULL, &a, "-129 is out of range of i8");
  a.fill.i = -128;
  ok(fz_build(f, FZ_OP_FULL, 0, NULL, &a, &err), &err);
  fz_type b = ts(f, "bool[4]");
  fz_attrs ab = {.shape = &b, .fill.i = 2};
  expect_build_error(f, FZ_OP_FULL, 0, NULL, &ab,
                     "full: fill value 2 is out of range of bool [0, 1]");
  /* float dtypes follow IEEE conversion: 1e300 becomes inf in f32 */
  fz_type f32 = ts(f, "f32[4]");
  ok(fz_full(f, &f32, (fz_scalar){.f = 1e300}, &err), &err);
  fz_attrs ai = {.shape = &i8, .iota_start.i = 300, .has_iota_start = true};
  expect_build_error(f, FZ_OP_IOTA, 0, NULL, &ai,
                     "iota: start 300 is out of range of i8 [-128, 127]");
  fz_attrs as = {.shape = &i8, .iota_step.i = -200, .has_iota_step = true};
  expect_build_error(f, FZ_OP_IOTA, 0, NULL, &as,
                     "iota: step -200 is out of range of i8");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(integer_literals_must_fit_the_dtype_they_compute_in) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = ts_input(f, "x", "i8[4]");
  fz_value *w = ts_input(f, "w", "i32[4]");
  fz_value *c = ts_input(f, "c", "bool[4]");
  fz_error err = {0};
  fz_value *ops[3] = {x, fz_literal_int(f, 300)};
  expect_build_error(f, FZ_OP_ADD, 2, ops, NULL,
                     "add: operand 1, the literal 300, is out of range of i8 "
                     "[-128, 127], the dtype it computes in");
  /* comparisons compute in the promoted dtype */
  expect_build_error(f, FZ_OP_LT, 2, ops, NULL, "lt: operand 1, the literal "
                                                "300, is out of range of i8");
  fz_value *where[3] = {c, x, fz_literal_int(f, -1000)};
  expect_build_error(f, FZ_OP_WHERE, 3, where, NULL,
                     "where: operand 2, the literal -1000");
  /* in range, or converted to a float or a wider dtype: fine */
  ok(fz_binary(f, FZ_OP_ADD, x, fz_literal_int(f, -128), &err), &err);
  ok(fz_binary(f, FZ_OP_ADD, w, fz_literal_int(f, 300), &err), &err);
  ok(fz_binary(f, FZ_OP_DIV, x, fz_literal_int(f, 1000), &err), &err);
  ok(fz_binary(f, FZ_OP_ADD, x, fz_literal_float(f, 1e300), &err), &err);
  ok(fz_binary(f, FZ_OP_AND, x, fz_literal_int(f, 1000), &err), &err);
  ok(fz_binary(f, FZ_OP_ADD, fz_literal_int(f, 1000), fz_literal_int(f, 1),
               &err),
     &err);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("builder");
  TCase *tc = tcase_create("builder");
  tcase_add_test(tc, build_appends_op_and_result);
  tcase_add_test(tc, result_layout_is_undeclared_even_for_copies);
  tcase_add_test(tc, literals_are_weak_scalars_outside_the_op_list);
  tcase_add_test(tc, wrong_operand_count_is_an_error);
  tcase_add_test(tc, rank0_operands_broadcast);
  tcase_add_test(tc, rank_mismatch_is_an_error);
  tcase_add_test(tc, extent_mismatch_is_an_error);
  tcase_add_test(tc, b1_against_extent_gives_iter_axis);
  tcase_add_test(tc, two_b1_axes_give_b1);
  tcase_add_test(tc, expanded_broadcasts);
  tcase_add_test(tc, ternary_shapes_combine_all_operands);
  tcase_add_test(tc, neg_of_bool_is_an_error);
  tcase_add_test(tc, sub_of_bools_is_an_error);
  tcase_add_test(tc, logical_ops_accept_any_dtype);
  tcase_add_test(tc, where_condition_must_be_bool);
  tcase_add_test(tc, to_float_ops_on_ints);
  tcase_add_test(tc, reduction_removes_axes);
  tcase_add_test(tc, reduction_keepdim_gives_b1);
  tcase_add_test(tc, reducing_broadcast_axes_is_allowed);
  tcase_add_test(tc, reduction_dims_errors);
  tcase_add_test(tc, reductions_over_no_dims);
  tcase_add_test(tc, broadcast_inserts_b1_axes);
  tcase_add_test(tc, broadcast_errors);
  tcase_add_test(tc, squeeze_removes_size_one_axes);
  tcase_add_test(tc, squeeze_errors);
  tcase_add_test(tc, expand_b1_axes);
  tcase_add_test(tc, expand_errors);
  tcase_add_test(tc, permute_reorders_axes);
  tcase_add_test(tc, permute_invalid);
  tcase_add_test(tc, reshape_splits_and_merges);
  tcase_add_test(tc, reshape_count_mismatch);
  tcase_add_test(tc, shape_attribute_is_checked);
  tcase_add_test(tc, set_and_cast_keep_the_shape);
  tcase_add_test(tc, full_takes_shape_and_fill);
  tcase_add_test(tc, iota_defaults_and_rules);
  tcase_add_test(tc, set_layout_declares_result_layout);
  tcase_add_test(tc, set_layout_rejects_non_permutations);
  tcase_add_test(tc, operands_of_another_fusion_are_refused);
  tcase_add_test(tc, null_fusion_is_an_argument_error);
  tcase_add_test(tc, negative_dims_count_from_the_end);
  tcase_add_test(tc, constant_sizes_must_fit_int64);
  tcase_add_test(tc, fill_and_iota_values_must_fit_integer_dtypes);
  tcase_add_test(tc, integer_literals_must_fit_the_dtype_they_compute_in);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
