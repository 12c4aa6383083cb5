/* test_locations.c - errors about one op carry the op's location.
 *
 * A fusion parsed from text records where each op is (fz_op.loc); an error
 * about an op, from the verifier, a pass, a scheduler, segmentation or the
 * interpreter, reports it in fz_error's line and col, so that tools can
 * print "file:line:col: error: ...". Errors about nothing in particular
 * have none, and every new error starts without the previous one's.
 */
#include <string.h>

#include "sched/plan.h"
#include "sched/segment.h"
#include "test_util.h"

/* The ops sit at different columns so that a wrong op's location, or a
 * location that is not the op's, shows. */
static const char sample[] =
    "fusion @t(%x: f32[N, 4]) {\n"    /* line 1 */
    "  %a = neg %x : f32[N, 4]\n"     /* line 2, col 3 */
    "    %b = exp %a : f32[N, 4]\n"   /* line 3, col 5 */
    " %s = sum %b dims(1) : f32[N]\n" /* line 4, col 2 */
    "  return %s, %b\n"
    "}\n";

static fz_op *op_named(fz_fusion *f, const char *name) {
  for (int i = 0; i < f->num_ops; i++)
    if (f->ops[i]->result->name && strcmp(f->ops[i]->result->name, name) == 0)
      return f->ops[i];
  ck_abort_msg("no op %%%s", name);
  return NULL;
}

static void ck_located(const fz_error *err, int line, int col) {
  ck_assert_msg(err->line == line && err->col == col,
                "error at %d:%d, want %d:%d: %s", err->line, err->col, line,
                col, err->message);
}

START_TEST(parser_records_op_locations) {
  fz_fusion *f = test_parse(sample);
  ck_assert_int_eq(op_named(f, "a")->loc.line, 2);
  ck_assert_int_eq(op_named(f, "a")->loc.col, 3);
  ck_assert_int_eq(op_named(f, "b")->loc.line, 3);
  ck_assert_int_eq(op_named(f, "b")->loc.col, 5);
  ck_assert_int_eq(op_named(f, "s")->loc.line, 4);
  ck_assert_int_eq(op_named(f, "s")->loc.col, 2);
  fz_fusion_destroy(f);
}
END_TEST

/* A parse error's location is in its message and in the fields. */
START_TEST(parse_errors_are_located) {
  const char *text = "fusion @t(%x: f32[4]) {\n"
                     "  %y = frob %x : f32[4]\n"
                     "  return %y\n"
                     "}\n";
  fz_fusion *f = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_parse_at("p.fz", 10, text, strlen(text), &f, &err),
                   FZ_ERR_PARSE);
  ck_assert_ptr_null(f);
  ck_located(&err, 11, 8);
  ck_assert_msg(strncmp(err.message, "p.fz:11:8: error: ", 18) == 0, "%s",
                err.message);
}
END_TEST

/* A stale result type (what a buggy pass leaves) is reported at its op;
 * the message itself stays as it was, naming the value. */
START_TEST(verify_points_at_the_op) {
  fz_fusion *f = test_parse(sample);
  fz_error err = {0};
  ck_assert_int_eq(fz_verify(f, &err), FZ_OK);
  op_named(f, "b")->result->type.dtype = FZ_F16;
  ck_assert_int_eq(fz_verify(f, &err), FZ_ERR_INVALID);
  ck_located(&err, 3, 5);
  ck_assert_msg(strncmp(err.message, "%b: exp: result type f16[N, 4]", 30) == 0,
                "%s", err.message);

  /* an operand used before its definition: the using op's location */
  fz_op *a = op_named(f, "a"), *b = op_named(f, "b");
  b->result->type.dtype = FZ_F32;
  f->ops[0] = b;
  f->ops[1] = a;
  ck_assert_int_eq(fz_verify(f, &err), FZ_ERR_INVALID);
  ck_located(&err, 3, 5);
  ck_assert_msg(strstr(err.message, "is not defined before this op"), "%s",
                err.message);
  fz_fusion_destroy(f);
}
END_TEST

/* Errors about no op have no location, even on a parsed fusion, and a new
 * error never keeps the last one's. */
START_TEST(unlocated_errors_clear_the_location) {
  fz_fusion *f = test_parse(sample);
  fz_error err = {0};
  op_named(f, "s")->result->type.dtype = FZ_I32;
  ck_assert_int_eq(fz_verify(f, &err), FZ_ERR_INVALID);
  ck_located(&err, 4, 2);
  op_named(f, "s")->result->type.dtype = FZ_F32;
  f->outputs[1] = fz_literal_float(f, 1.0);
  ck_assert_int_eq(fz_verify(f, &err), FZ_ERR_INVALID);
  ck_located(&err, 0, 0);
  ck_assert_msg(strstr(err.message, "output 1 is a literal"), "%s",
                err.message);

  err.line = err.col = 7;
  ck_assert_int_eq(fz_error_set(&err, FZ_ERR_IO, "x"), FZ_ERR_IO);
  ck_located(&err, 0, 0);
  fz_fusion_destroy(f);
}
END_TEST

/* The same fusion built through the API has no locations to give. */
START_TEST(built_ops_have_no_location) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  int64_t ext[] = {FZ_EXTENT_SYMBOL, 4};
  const char *syms[] = {"N", NULL};
  fz_value *x =
      fz_fusion_add_tensor(f, "x", FZ_F32, 2, ext, syms, NULL, NULL, &err);
  fz_value *y = fz_unary(f, FZ_OP_EXP, x, &err);
  ck_assert_ptr_nonnull(y);
  ck_assert_int_eq(fz_add_output(f, y, &err), FZ_OK);
  y->type.dtype = FZ_F16;
  ck_assert_int_eq(fz_verify(f, &err), FZ_ERR_INVALID);
  ck_located(&err, 0, 0);
  fz_fusion_destroy(f);
}
END_TEST

/* A pass's own refusal, and the verifier's verdict on what a pass left,
 * point at the op. */
START_TEST(pass_errors_point_at_the_op) {
  fz_fusion *f = test_parse(sample);
  fz_error err = {0};
  fz_op *s = op_named(f, "s");
  s->num_dims = 2;
  s->dims[0] = 1;
  s->dims[1] = 0; /* not sorted: alloc-order refuses before changing */
  ck_assert_int_eq(fz_run_pass(f, "alloc-order", &err), FZ_ERR_INVALID);
  ck_located(&err, 4, 2);
  ck_assert_msg(strstr(err.message, "alloc-order: sum does not fit"), "%s",
                err.message);
  s->num_dims = 1;
  s->dims[0] = 1;

  op_named(f, "a")->result->type.dtype = FZ_F64;
  ck_assert_int_eq(fz_run_pass(f, "cse", &err), FZ_ERR_INTERNAL);
  ck_located(&err, 2, 3);
  ck_assert_msg(strstr(err.message, "pass 'cse' produced invalid IR: %a: "),
                "%s", err.message);
  fz_fusion_destroy(f);
}
END_TEST

/* The interpreter's refusal of an op is at the op. */
START_TEST(interpreter_errors_point_at_the_op) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N, 4]) {\n"
                            "  %e = exp %x : f32[N, 4]\n"
                            "      %m = amax %e dims(0) : f32[4]\n"
                            "  return %m\n"
                            "}\n");
  float x[1], m[4];
  fz_host_tensor in = {.dtype = FZ_F32,
                       .rank = 2,
                       .sizes = {0, 4},
                       .strides = {4, 1},
                       .data = x};
  fz_host_tensor out = {
      .dtype = FZ_F32, .rank = 1, .sizes = {4}, .strides = {1}, .data = m};
  fz_error err = {0};
  ck_assert_int_eq(fz_interpret(f, &in, 1, &out, 1, &err), FZ_ERR_INVALID);
  ck_located(&err, 3, 7);
  ck_assert_msg(strstr(err.message, "cannot take amax over an empty axis"),
                "%s", err.message);
  fz_fusion_destroy(f);
}
END_TEST

/* No scheduler takes a reshape that regroups a column-major tensor's
 * axes: the whole-fusion error points at the op the first reason about an
 * op names, and segmentation's at the op no scheduler takes alone (found
 * in the segmenter's own copy of the fusion, which keeps the locations). */
START_TEST(scheduler_errors_point_at_the_op) {
  fz_fusion *f = test_parse("fusion @bad(%x: f32[6, 4] layout(1, 0)) {\n"
                            "  %n = neg %x : f32[6, 4]\n"
                            "   %r = reshape %n : f32[4, 6]\n"
                            "  %s = sum %r dims(1) : f32[4]\n"
                            "  return %s\n"
                            "}\n");
  fz_error err = {0};
  ck_assert_int_eq(fz_run_pass(f, "alloc-order", &err), FZ_OK);
  fz_tensor_desc in = {.dtype = FZ_F32,
                       .rank = 2,
                       .sizes = {6, 4},
                       .strides = {1, 6},
                       .align = 16};
  fz_tensor_desc out = {
      .dtype = FZ_F32, .rank = 1, .sizes = {4}, .strides = {1}, .align = 16};
  int64_t none[1] = {0};
  fz_problem pb = {.fusion = f,
                   .inputs = &in,
                   .outputs = &out,
                   .symbols = none,
                   .device = fz_device_info_default(90)};
  fz_arena *arena = fz_arena_create();
  fz_plan *plan = NULL;
  ck_assert_int_eq(fz_schedule(&pb, arena, &plan, &err), FZ_ERR_UNSUPPORTED);
  ck_located(&err, 3, 4);
  ck_assert_msg(strstr(err.message, "no scheduler accepts fusion @bad"), "%s",
                err.message);
  fz_reason why;
  ck_assert(!fz_reduction_try(&pb, arena, &plan, &why));
  ck_assert_ptr_null(plan);
  ck_assert_msg(why.loc.line == 3 && why.loc.col == 4, "reason at %d:%d: %s",
                why.loc.line, why.loc.col, why.text);
  ck_assert_msg(strstr(why.text, "reshape %r splits"), "%s", why.text);
  /* "%s is a reduction" is about the kind of fusion, not a fault of %s */
  ck_assert(!fz_pointwise_try(&pb, arena, &plan, &why));
  ck_assert_msg(why.loc.line == 0 && why.loc.col == 0, "reason at %d:%d: %s",
                why.loc.line, why.loc.col, why.text);
  fz_arena_destroy(arena);

  fz_segmentation *seg = NULL;
  ck_assert_int_eq(fz_segment_fusion(&pb, &seg, &err), FZ_ERR_UNSUPPORTED);
  ck_located(&err, 3, 4);
  ck_assert_msg(strstr(err.message, "no scheduler accepts %r (reshape) even "
                                    "as a segment of its own"),
                "%s", err.message);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("locations");
  TCase *tc = tcase_create("locations");
  tcase_add_test(tc, parser_records_op_locations);
  tcase_add_test(tc, parse_errors_are_located);
  tcase_add_test(tc, verify_points_at_the_op);
  tcase_add_test(tc, unlocated_errors_clear_the_location);
  tcase_add_test(tc, built_ops_have_no_location);
  tcase_add_test(tc, pass_errors_point_at_the_op);
  tcase_add_test(tc, interpreter_errors_point_at_the_op);
  tcase_add_test(tc, scheduler_errors_point_at_the_op);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
