/* test_resize.c - slice, pad and cat: the interpreter against
 * hand-computed values (PyTorch's x[a:b:c], F.pad, torch.cat), the
 * builder and handle calls, clone and cse, and the resize-pushdown pass,
 * which must keep every output's value.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/pass.h"
#include "test_util.h"

static void run(fz_fusion *f, fz_host_tensor *in, int nin, fz_host_tensor *out,
                int nout) {
  fz_error err = {0};
  fz_status st = fz_interpret(f, in, nin, out, nout, &err);
  ck_assert_msg(st == FZ_OK, "interpret failed: %s", err.message);
}

static void run_text(const char *text, fz_host_tensor *in, int nin,
                     fz_host_tensor *out, int nout) {
  fz_fusion *f = test_parse(text);
  run(f, in, nin, out, nout);
  fz_fusion_destroy(f);
}

static void expect_floats(const float *got, const float *want, int n) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                  "element %d: %g, want %g", i, got[i], want[i]);
}

/* x = [[0, 1, ..., 7], [10, ..., 17], [20, ..., 27]] */
static void rows(float *x) {
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 8; c++)
      x[r * 8 + c] = (float)(10 * r + c);
}

START_TEST(slice_takes_start_stop_step) {
  float x[24], y[2 * 3];
  rows(x);
  fz_host_tensor in = test_host_tensor(FZ_F32, x, 2, 3, 8),
                 out = test_host_tensor(FZ_F32, y, 2, 2, 3);
  /* x[1:3, 1:8:3] */
  run_text("fusion @f(%x: f32[3, 8]) {\n"
           "  %s = slice %x start(1, 1) stop(3, 8) step(1, 3) : f32[2, 3]\n"
           "  return %s\n}\n",
           &in, 1, &out, 1);
  const float want[] = {11, 14, 17, 21, 24, 27};
  expect_floats(y, want, 6);
}
END_TEST

START_TEST(slice_of_a_symbolic_axis_takes_it_whole) {
  float x[24], y[3 * 2];
  rows(x);
  fz_host_tensor in = test_host_tensor(FZ_F32, x, 2, 3, 8),
                 out = test_host_tensor(FZ_F32, y, 2, 3, 2);
  run_text("fusion @f(%x: f32[N, 8]) {\n"
           "  %s = slice %x start(0, 6) stop(N, 8) : f32[N, 2]\n"
           "  return %s\n}\n",
           &in, 1, &out, 1);
  const float want[] = {6, 7, 16, 17, 26, 27};
  expect_floats(y, want, 6);
}
END_TEST

START_TEST(pad_fills_and_crops) {
  float x[24], y[4 * 7];
  rows(x);
  fz_host_tensor in = test_host_tensor(FZ_F32, x, 2, 3, 8),
                 out = test_host_tensor(FZ_F32, y, 2, 4, 7);
  /* F.pad(x, (-2, 1, 1, 0), value=-1): one row of -1 on top, two columns
   * cropped on the left, one column of -1 on the right */
  run_text("fusion @f(%x: f32[3, 8]) {\n"
           "  %p = pad %x low(1, -2) high(0, 1) value(-1.0) : f32[4, 7]\n"
           "  return %p\n}\n",
           &in, 1, &out, 1);
  const float want[] = {-1, -1, -1, -1, -1, -1, -1, /**/ 2, 3, 4, 5, 6, 7, -1,
                        12, 13, 14, 15, 16, 17, -1, /**/ 22, 23, 24, 25, 26,
                        27, -1};
  expect_floats(y, want, 28);
}
END_TEST

START_TEST(pad_value_is_converted_to_the_dtype) {
  int32_t x[2] = {5, 6}, y[4];
  fz_host_tensor in = test_host_tensor(FZ_I32, x, 1, 2),
                 out = test_host_tensor(FZ_I32, y, 1, 4);
  run_text("fusion @f(%x: i32[2]) {\n"
           "  %p = pad %x low(1) high(1) value(-7) : i32[4]\n"
           "  return %p\n}\n",
           &in, 1, &out, 1);
  ck_assert_int_eq(y[0], -7);
  ck_assert_int_eq(y[1], 5);
  ck_assert_int_eq(y[2], 6);
  ck_assert_int_eq(y[3], -7);
}
END_TEST

START_TEST(cat_joins_along_inner_and_outer_axes) {
  float a[2 * 1] = {1, 2}, b[2 * 2] = {3, 4, 5, 6}, c[2 * 1] = {7, 8};
  float y[2 * 4], z[5 * 1];
  fz_host_tensor in[3] = {test_host_tensor(FZ_F32, a, 2, 2, 1),
                          test_host_tensor(FZ_F32, b, 2, 2, 2),
                          test_host_tensor(FZ_F32, c, 2, 2, 1)};
  fz_host_tensor out[2] = {test_host_tensor(FZ_F32, y, 2, 2, 4),
                           test_host_tensor(FZ_F32, z, 2, 5, 1)};
  run_text("fusion @f(%a: f32[2, 1], %b: f32[2, 2], %c: f32[2, 1]) {\n"
           "  %y = cat %a, %b, %c dims(-1) : f32[2, 4]\n"
           "  %z = cat %c, %a, %c dims(0) : f32[6, 1]\n"
           "  %zz = slice %z start(1, 0) stop(6, 1) : f32[5, 1]\n"
           "  return %y, %zz\n}\n",
           in, 3, out, 2);
  const float want_y[] = {1, 3, 4, 7, 2, 5, 6, 8};
  expect_floats(y, want_y, 8);
  const float want_z[] = {8, 1, 2, 7, 8};
  expect_floats(z, want_z, 5);
}
END_TEST

START_TEST(rotate_half) {
  /* rot = cat(-x[..., 2:], x[..., :2]) */
  float x[4] = {1, 2, 3, 4}, y[4];
  fz_host_tensor in = test_host_tensor(FZ_F32, x, 1, 4),
                 out = test_host_tensor(FZ_F32, y, 1, 4);
  run_text("fusion @f(%x: f32[4]) {\n"
           "  %h = slice %x start(2) stop(4) : f32[2]\n"
           "  %l = slice %x start(0) stop(2) : f32[2]\n"
           "  %n = neg %h : f32[2]\n"
           "  %r = cat %n, %l dims(0) : f32[4]\n"
           "  return %r\n}\n",
           &in, 1, &out, 1);
  const float want[] = {-3, -4, 1, 2};
  expect_floats(y, want, 4);
}
END_TEST

START_TEST(handle_calls_build_the_ops) {
  fz_fusion *f = fz_fusion_create("h");
  fz_error err = {0};
  int64_t ext[2] = {FZ_EXTENT_SYMBOL, 6};
  const char *sym[2] = {"N", NULL};
  fz_value *x = fz_fusion_add_tensor(f, "x", FZ_F32, 2, ext, sym, NULL, NULL,
                                     &err);
  ck_assert_ptr_nonnull(x);
  int64_t start[2] = {0, 1}, stop[2] = {FZ_SLICE_END, FZ_SLICE_END},
          step[2] = {1, 2};
  fz_value *s = fz_build_slice(f, x, start, stop, step, &err);
  ck_assert_msg(s, "%s", err.message);
  ck_assert_int_eq(s->type.axes[1].extent.value, 3);
  ck_assert_int_eq(s->type.axes[0].extent.symbol, x->type.axes[0].extent.symbol);
  int64_t low[2] = {0, 2}, high[2] = {0, -1};
  fz_value *p = fz_build_pad(f, s, low, high, 0.25, &err);
  ck_assert_msg(p, "%s", err.message);
  ck_assert_int_eq(p->type.axes[1].extent.value, 4);
  fz_value *parts[4] = {x, s, s, x};
  fz_value *c = fz_build_cat(f, 4, parts, -1, &err);
  ck_assert_msg(c, "%s", err.message);
  ck_assert_int_eq(c->type.axes[1].extent.value, 18);
  ck_assert_int_eq(c->def->num_operands, 4);
  ck_assert_ptr_eq(c->def->operands[3], x);
  /* a failed call adds nothing and says why */
  int before = f->num_ops;
  int64_t bad[2] = {1, 0};
  ck_assert_ptr_null(fz_build_slice(f, x, bad, stop, NULL, &err));
  ck_assert_ptr_nonnull(strstr(err.message, "symbolic extent N"));
  ck_assert_ptr_null(fz_build_cat(f, 0, parts, 0, &err));
  int64_t rows[2] = {1, 0};
  ck_assert_ptr_null(fz_build_pad(f, x, rows, high, 0.0, &err));
  ck_assert_int_eq(f->num_ops, before);
  ck_assert_int_eq(fz_add_output(f, c, &err), FZ_OK);
  ck_assert_int_eq(fz_add_output(f, p, &err), FZ_OK);
  ck_assert_int_eq(fz_verify(f, &err), FZ_OK);
  /* the clone copies cat's operand array, not a pointer to it */
  fz_fusion *g = fz_fusion_clone(f, &err);
  ck_assert_ptr_nonnull(g);
  const fz_op *gc = g->outputs[0]->def;
  ck_assert_int_eq(gc->num_operands, 4);
  ck_assert_ptr_ne(gc->operands, c->def->operands);
  ck_assert_ptr_eq(gc->operands[0], g->inputs[0]);
  char *a = fz_print(f), *b = fz_print(g);
  ck_assert_str_eq(a, b);
  free(a);
  free(b);
  fz_fusion_destroy(g);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(cse_tells_windows_apart) {
  fz_fusion *f = test_parse(
      "fusion @f(%x: f32[8]) {\n"
      "  %a = slice %x start(0) stop(4) : f32[4]\n"
      "  %b = slice %x start(4) stop(8) : f32[4]\n"
      "  %c = slice %x start(0) stop(4) : f32[4]\n"
      "  %p = pad %x low(1) high(0) value(0.0) : f32[9]\n"
      "  %q = pad %x low(1) high(0) value(1.0) : f32[9]\n"
      "  return %a, %b, %c, %p, %q\n}\n");
  fz_error err = {0};
  ck_assert_int_eq(fz_run_pass(f, "cse", &err), FZ_OK);
  ck_assert_ptr_eq(f->outputs[0], f->outputs[2]);
  ck_assert_ptr_ne(f->outputs[0], f->outputs[1]);
  ck_assert_ptr_ne(f->outputs[3], f->outputs[4]);
  fz_fusion_destroy(f);
}
END_TEST

/* The outputs of text before and after resize-pushdown, on the same
 * inputs: equal bit for bit. */
static void pushdown_keeps_values(const char *text, fz_host_tensor *in,
                                  int nin, float *before, float *after,
                                  fz_host_tensor out) {
  fz_host_tensor o = out;
  o.data = before;
  run_text(text, in, nin, &o, 1);
  fz_fusion *f = test_parse(text);
  fz_error err = {0};
  ck_assert_msg(fz_run_pass(f, "resize-pushdown", &err) == FZ_OK, "%s",
                err.message);
  for (int i = 0; i < f->num_ops; i++)
    if (f->ops[i]->code == FZ_OP_SLICE || f->ops[i]->code == FZ_OP_PAD ||
        f->ops[i]->code == FZ_OP_CAT) {
      const fz_value *x = f->ops[i]->operands[0];
      while (x->kind == FZ_VALUE_RESULT &&
             (x->def->code == FZ_OP_SLICE || x->def->code == FZ_OP_PAD))
        x = x->def->operands[0];
      ck_assert_msg(x->kind == FZ_VALUE_INPUT,
                    "a resize op was left on a computed value");
    }
  o.data = after;
  run(f, in, nin, &o, 1);
  fz_fusion_destroy(f);
  int64_t n = 1;
  for (int k = 0; k < out.rank; k++)
    n *= out.sizes[k];
  expect_floats(after, before, (int)n);
}

START_TEST(pushdown_pads_with_the_value_not_f_of_it) {
  float x[24], before[5 * 11], after[5 * 11];
  rows(x);
  fz_host_tensor in = test_host_tensor(FZ_F32, x, 2, 3, 8);
  pushdown_keeps_values(
      "fusion @f(%x: f32[3, 8]) {\n"
      "  %e = add %x, 100.0 : f32[3, 8]\n"
      "  %p = pad %e low(1, 2) high(1, 1) value(-1.0) : f32[5, 11]\n"
      "  return %p\n}\n",
      &in, 1, before, after, test_host_tensor(FZ_F32, NULL, 2, 5, 11));
  ck_assert(before[0] == -1.0f && before[1 * 11 + 2] == 100.0f);
}
END_TEST

START_TEST(pushdown_cat_slices_and_broadcasts) {
  float x[24], w[8] = {1, 2, 3, 4, 5, 6, 7, 8}, before[3 * 8], after[3 * 8];
  rows(x);
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, x, 2, 3, 8),
                          test_host_tensor(FZ_F32, w, 1, 8)};
  /* rotate-half of (x * rowsum(x) * w), sliced with a step */
  pushdown_keeps_values(
      "fusion @f(%x: f32[3, 8], %w: f32[8]) {\n"
      "  %s = sum %x dims(1) keepdim : f32[3, b1]\n"
      "  %se = expand %s : f32[3, b1->8]\n"
      "  %wb = broadcast %w dims(0) : f32[b1, 8]\n"
      "  %y0 = mul %x, %se : f32[3, 8]\n"
      "  %y = mul %y0, %wb : f32[3, 8]\n"
      "  %hi = slice %y start(0, 4) stop(3, 8) : f32[3, 4]\n"
      "  %lo = slice %y start(0, 0) stop(3, 8) step(1, 2) : f32[3, 4]\n"
      "  %n = neg %hi : f32[3, 4]\n"
      "  %r = cat %n, %lo dims(1) : f32[3, 8]\n"
      "  return %r\n}\n",
      in, 2, before, after, test_host_tensor(FZ_F32, NULL, 2, 3, 8));
}
END_TEST

START_TEST(pushdown_leaves_a_slice_of_a_reduction) {
  fz_fusion *f = test_parse("fusion @f(%x: f32[6, N]) {\n"
                            "  %s = sum %x dims(1) : f32[6]\n"
                            "  %t = slice %s start(1) stop(5) : f32[4]\n"
                            "  return %t\n}\n");
  fz_error err = {0};
  ck_assert_int_eq(fz_run_pass(f, "resize-pushdown", &err), FZ_OK);
  ck_assert_int_eq(f->num_ops, 2);
  ck_assert_int_eq(f->outputs[0]->def->code, FZ_OP_SLICE);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("resize");
  TCase *tc = tcase_create("resize");
  tcase_add_test(tc, slice_takes_start_stop_step);
  tcase_add_test(tc, slice_of_a_symbolic_axis_takes_it_whole);
  tcase_add_test(tc, pad_fills_and_crops);
  tcase_add_test(tc, pad_value_is_converted_to_the_dtype);
  tcase_add_test(tc, cat_joins_along_inner_and_outer_axes);
  tcase_add_test(tc, rotate_half);
  tcase_add_test(tc, handle_calls_build_the_ops);
  tcase_add_test(tc, cse_tells_windows_apart);
  tcase_add_test(tc, pushdown_pads_with_the_value_not_f_of_it);
  tcase_add_test(tc, pushdown_cat_slices_and_broadcasts);
  tcase_add_test(tc, pushdown_leaves_a_slice_of_a_reduction);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
