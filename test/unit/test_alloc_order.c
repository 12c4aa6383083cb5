/* test_alloc_order.c - allocation-order propagation: the order each kind
 * of op passes on (channels-last and transposed inputs in particular),
 * declared layouts left alone, and the interpreter's outputs unchanged by
 * the pass (layouts never change values). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "sched/pass.h"

/* ---- helpers ------------------------------------------------------------- */

static fz_value *val(const fz_fusion *f, const char *name) {
  for (int i = 0; i < f->num_inputs; i++)
    if (f->inputs[i]->name && strcmp(f->inputs[i]->name, name) == 0)
      return f->inputs[i];
  for (int i = 0; i < f->num_ops; i++)
    if (f->ops[i]->result->name && strcmp(f->ops[i]->result->name, name) == 0)
      return f->ops[i]->result;
  ck_abort_msg("no value %%%s", name);
  return NULL;
}

static fz_fusion *parse_and_run(const char *text) {
  fz_fusion *f = test_parse(text);
  fz_error err = {0};
  ck_assert_msg(fz_pass_alloc_order(f, &err) == FZ_OK, "%s", err.message);
  ck_assert_msg(fz_verify(f, &err) == FZ_OK, "%s", err.message);
  return f;
}

/* %name has exactly this allocation order, fully contiguous. */
static void order_is(const fz_fusion *f, const char *name, int rank, ...) {
  const fz_type *t = &val(f, name)->type;
  ck_assert_msg(t->has_layout, "%%%s has no layout", name);
  ck_assert_int_eq(t->rank, rank);
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) {
    int want = va_arg(ap, int);
    ck_assert_msg(t->alloc_order[i] == want,
                  "%%%s: alloc_order[%d] is %d, want %d", name, i,
                  t->alloc_order[i], want);
    ck_assert_msg(t->contiguous[i], "%%%s: position %d not contiguous", name,
                  i);
  }
  va_end(ap);
}

/* ---- per op kind ----------------------------------------------------- */

START_TEST(pointwise_follows_dominant_operand) {
  fz_fusion *f =
      parse_and_run("fusion @t(%x: f32[N, C, H, W] layout(0, 2, 3, 1), "
                    "%b: f32[b1, C, b1, b1], %r: f32[N, C, H, W]) {\n"
                    "  %be = expand %b : f32[b1->N, C, b1->H, b1->W]\n"
                    "  %y = add %be, %x : f32[N, C, H, W]\n"
                    "  %z = relu %y : f32[N, C, H, W]\n"
                    "  %h = cast %z : f16[N, C, H, W]\n"
                    "  %s = set %h : f16[N, C, H, W]\n"
                    "  %m = mul %x, %r : f32[N, C, H, W]\n"
                    "  %n = mul %r, %x : f32[N, C, H, W]\n"
                    "  %q = mul %z, 2.0 : f32[N, C, H, W]\n"
                    "  return %s, %m, %n, %q\n"
                    "}\n");
  /* %be has one allocated axis, %x four: the channels-last input wins
   * although it is the second operand. */
  order_is(f, "y", 4, 0, 2, 3, 1);
  order_is(f, "z", 4, 0, 2, 3, 1);
  order_is(f, "h", 4, 0, 2, 3, 1);
  order_is(f, "s", 4, 0, 2, 3, 1);
  order_is(f, "q", 4, 0, 2, 3, 1);
  /* equal sizes: the first operand decides */
  order_is(f, "m", 4, 0, 2, 3, 1);
  order_is(f, "n", 4, 0, 1, 2, 3);
  order_is(f, "be", 4, 0, 1, 2, 3); /* expand keeps %b's (row-major) order */
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(constant_sizes_pick_the_bigger_operand) {
  fz_fusion *f = parse_and_run(
      "fusion @t(%a: f32[2, b1] layout(1, 0), %b: f32[b1, 64]) {\n"
      "  %y = add %a, %b : f32[2, 64]\n"
      "  %z = add %b, %a : f32[2, 64]\n"
      "  return %y, %z\n"
      "}\n");
  order_is(f, "y", 2, 0, 1);
  order_is(f, "z", 2, 0, 1);
  fz_fusion_destroy(f);
  f = parse_and_run(
      "fusion @t(%a: f32[64, b1] layout(1, 0), %b: f32[b1, 2]) {\n"
      "  %y = add %b, %a : f32[64, 2]\n"
      "  return %y\n"
      "}\n");
  order_is(f, "y", 2, 1, 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(transposed_input_gives_transposed_results) {
  fz_fusion *f = parse_and_run("fusion @t(%x: f32[M, N] layout(1, 0)) {\n"
                               "  %e = exp %x : f32[M, N]\n"
                               "  %p = permute %e perm(1, 0) : f32[N, M]\n"
                               "  %q = neg %p : f32[N, M]\n"
                               "  return %e, %q\n"
                               "}\n");
  order_is(f, "e", 2, 1, 0);
  /* the transpose of a column-major tensor is row-major: same bytes */
  order_is(f, "p", 2, 0, 1);
  order_is(f, "q", 2, 0, 1);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(permute_carries_order_through_perm) {
  fz_fusion *f =
      parse_and_run("fusion @t(%x: f32[A, B, C] layout(2, 0, 1)) {\n"
                    "  %p = permute %x perm(1, 2, 0) : f32[B, C, A]\n"
                    "  return %p\n"
                    "}\n");
  /* memory: x's C, then A, then B = p's axes 1, 2, 0 */
  order_is(f, "p", 3, 1, 2, 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(broadcast_places_new_axes_like_unsqueeze) {
  fz_fusion *f =
      parse_and_run("fusion @t(%v: f32[N], %x: f32[M, N] layout(1, 0)) {\n"
                    "  %a = broadcast %v dims(1) : f32[N, b1]\n"
                    "  %b = broadcast %v dims(0, 2) : f32[b1, N, b1]\n"
                    "  %c = broadcast %x dims(1) : f32[M, b1, N]\n"
                    "  %d = broadcast %x dims(0) : f32[b1, M, N]\n"
                    "  %e = broadcast %x dims(2) : f32[M, N, b1]\n"
                    "  return %a, %b, %c, %d, %e\n"
                    "}\n");
  /* row-major stays row-major */
  order_is(f, "a", 2, 0, 1);
  order_is(f, "b", 3, 0, 1, 2);
  /* a new axis sits directly outside the axis that follows it */
  order_is(f, "c", 3, 1, 2, 0);
  order_is(f, "d", 3, 2, 0, 1);
  order_is(f, "e", 3, 1, 0, 2);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(squeeze_drops_axes) {
  fz_fusion *f =
      parse_and_run("fusion @t(%x: f32[A, b1, B, 1] layout(3, 2, 1, 0)) {\n"
                    "  %q = squeeze %x dims(1, 3) : f32[A, B]\n"
                    "  return %q\n"
                    "}\n");
  order_is(f, "q", 2, 1, 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reduction_keeps_relative_order_of_kept_axes) {
  fz_fusion *f = parse_and_run(
      "fusion @t(%x: f32[N, C, H, W] layout(0, 2, 3, 1), "
      "%y: f32[A, B, C2] layout(1, 2, 0), %t: f32[M, K] layout(1, 0)) {\n"
      "  %s1 = sum %x dims(2, 3) : f32[N, C]\n"
      "  %s2 = sum %x dims(1) : f32[N, H, W]\n"
      "  %s3 = amax %x dims(1) keepdim : f32[N, b1, H, W]\n"
      "  %s4 = sum %x dims(0) : f32[C, H, W]\n"
      "  %s5 = sum %y dims(2) : f32[A, B]\n"
      "  %s6 = sum %t dims(1) keepdim : f32[M, b1]\n"
      "  return %s1, %s2, %s3, %s4, %s5, %s6\n"
      "}\n");
  order_is(f, "s1", 2, 0, 1);
  order_is(f, "s2", 3, 0, 1, 2);
  order_is(f, "s3", 4, 0, 2, 3, 1);
  order_is(f, "s4", 3, 1, 2, 0); /* channels innermost still */
  order_is(f, "s5", 2, 1, 0);
  order_is(f, "s6", 2, 1, 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reshape_follows_when_derivable) {
  fz_fusion *f = parse_and_run(
      "fusion @t(%x: f32[2, 3, 4, 5] layout(0, 2, 3, 1), "
      "%c: f32[4, 6] layout(1, 0), %u: f32[2, 3, 4] layout(2, 0, 1), "
      "%w: f32[4, 1, 6] layout(2, 0, 1), %v: f32[2, 3, 4] layout(1, 0, 2), "
      "%r: f32[6, 4]) {\n"
      /* channels-last [N, C, H, W] -> [N, C, H*W]: H and W are adjacent
       * in memory, so the merge keeps channels innermost */
      "  %a = reshape %x : f32[2, 3, 20]\n"
      /* a split of the outer (column) axis of a column-major tensor */
      "  %b = reshape %c : f32[2, 2, 6]\n"
      "  %d = reshape %u : f32[6, 4]\n"
      "  %e = reshape %w : f32[4, 6, 1]\n"
      /* [2, 3] merge of axes whose memory order is reversed: no order of
       * the result matches the operand's memory; row-major */
      "  %g = reshape %v : f32[6, 4]\n"
      "  %h = reshape %r : f32[2, 3, 4]\n"
      "  return %a, %b, %d, %e, %g, %h\n"
      "}\n");
  order_is(f, "a", 3, 0, 2, 1);
  order_is(f, "b", 3, 2, 0, 1);
  order_is(f, "d", 2, 1, 0);
  order_is(f, "e", 3, 1, 0, 2);
  order_is(f, "g", 2, 0, 1);
  order_is(f, "h", 3, 0, 1, 2);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(generators_are_row_major) {
  fz_fusion *f = parse_and_run("fusion @t(%x: f32[N, 4] layout(1, 0)) {\n"
                               "  %z = full 0.5 : f32[N, 4]\n"
                               "  %i = iota : i64[N]\n"
                               "  %y = add %z, %x : f32[N, 4]\n"
                               "  return %y, %i\n"
                               "}\n");
  order_is(f, "z", 2, 0, 1);
  order_is(f, "i", 1, 0);
  order_is(f, "y", 2, 0, 1); /* equal sizes: the first operand */
  fz_fusion_destroy(f);
}
END_TEST

/* ---- what the pass must not touch --------------------------------------- */

START_TEST(declared_layouts_are_untouched) {
  fz_fusion *f = parse_and_run(
      "fusion @t(%x: f32[M, N] layout(1, 0) noncontig(0), %s: f32) {\n"
      "  %y = exp %x : f32[M, N] layout(0, 1)\n"
      "  %z = neg %y : f32[M, N]\n"
      "  %k = mul %s, 2.0 : f32\n"
      "  return %z, %k\n"
      "}\n");
  const fz_type *x = &val(f, "x")->type;
  ck_assert(x->alloc_order[0] == 1 && x->alloc_order[1] == 0);
  ck_assert(!x->contiguous[1] && x->contiguous[0]);
  order_is(f, "y", 2, 0, 1);
  order_is(f, "z", 2, 0, 1); /* follows y's declared order, not x's */
  ck_assert(!val(f, "k")->type.has_layout); /* rank 0: nothing to order */
  /* Running again changes nothing; the printed layouts parse back. */
  char *once = fz_print(f);
  fz_error err = {0};
  ck_assert_int_eq(fz_pass_alloc_order(f, &err), FZ_OK);
  char *twice = fz_print(f);
  ck_assert_str_eq(once, twice);
  fz_fusion *g = test_parse(once);
  char *again = fz_print(g);
  ck_assert_str_eq(once, again);
  free(once);
  free(twice);
  free(again);
  fz_fusion_destroy(g);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(undeclared_outputs_get_a_layout) {
  fz_fusion *f = parse_and_run("fusion @t(%x: f32[M, N] layout(1, 0)) {\n"
                               "  %y = mul %x, %x : f32[M, N]\n"
                               "  return %y\n"
                               "}\n");
  char *text = fz_print(f);
  ck_assert_msg(strstr(text, "%y = mul %x, %x : f32[M, N] layout(1, 0)"), "%s",
                text);
  free(text);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(malformed_ops_are_refused_before_any_change) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[4, 5]) {\n"
                            "  %y = neg %x : f32[4, 5]\n"
                            "  %p = permute %y perm(1, 0) : f32[5, 4]\n"
                            "  return %p\n"
                            "}\n");
  f->ops[1]->perm[1] = 1; /* not a permutation any more */
  fz_error err = {0};
  ck_assert_int_eq(fz_pass_alloc_order(f, &err), FZ_ERR_INVALID);
  ck_assert_msg(strstr(err.message, "permute"), "%s", err.message);
  ck_assert(!val(f, "y")->type.has_layout);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- values unchanged ------------------------------------------------ */

static uint64_t next_random(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return *state >> 33;
}

/* Inputs of f as row-major f32 tensors of random values (all inputs of
 * the fusion below are f32 with constant extents). */
static void make_inputs(const fz_fusion *f, fz_host_tensor *in) {
  uint64_t state = 42;
  for (int i = 0; i < f->num_inputs; i++) {
    const fz_type *t = &f->inputs[i]->type;
    in[i] = (fz_host_tensor){.dtype = t->dtype, .rank = t->rank};
    int64_t n = 1;
    for (int a = t->rank - 1; a >= 0; a--) {
      in[i].sizes[a] = fz_axis_size(&t->axes[a], NULL);
      in[i].strides[a] = t->axes[a].kind == FZ_AXIS_ITER ? n : 0;
      n *= t->axes[a].kind == FZ_AXIS_ITER ? in[i].sizes[a] : 1;
    }
    float *data = malloc(sizeof(float) * (size_t)n);
    for (int64_t k = 0; k < n; k++)
      data[k] = (float)((int)(next_random(&state) % 2001) - 1000) / 256.0f;
    in[i].data = data;
  }
}

static void run(const fz_fusion *f, const fz_host_tensor *in,
                fz_host_tensor *out, size_t *bytes) {
  fz_bindings bind = {0};
  fz_error err = {0};
  ck_assert_msg(fz_bind_inputs(f, in, f->num_inputs, &bind, &err) == FZ_OK,
                "%s", err.message);
  for (int o = 0; o < f->num_outputs; o++) {
    const fz_type *t = &f->outputs[o]->type;
    out[o] = (fz_host_tensor){.dtype = t->dtype, .rank = t->rank};
    ck_assert(fz_output_sizes(f, o, &bind, out[o].sizes, &err) == FZ_OK);
    int64_t n = 1;
    for (int a = t->rank - 1; a >= 0; a--) {
      out[o].strides[a] = n;
      n *= out[o].sizes[a];
    }
    bytes[o] = fz_dtype_size(t->dtype) * (size_t)n;
    out[o].data = malloc(bytes[o] ? bytes[o] : 1);
    memset(out[o].data, 0xA5, bytes[o]); /* poison */
  }
  fz_bindings_free(&bind);
  ck_assert_msg(fz_interpret(f, in, f->num_inputs, out, f->num_outputs, &err) ==
                    FZ_OK,
                "%s", err.message);
}

START_TEST(interpreter_results_unchanged) {
  static const char text[] =
      "fusion @t(%x: f32[2, 3, 4, 5] layout(0, 2, 3, 1), "
      "%w: f32[3], %t: f32[6, 4] layout(1, 0)) {\n"
      "  %wb = broadcast %w dims(0, 2, 3) : f32[b1, 3, b1, b1]\n"
      "  %we = expand %wb : f32[b1->2, 3, b1->4, b1->5]\n"
      "  %y = mul %x, %we : f32[2, 3, 4, 5]\n"
      "  %s = sum %y dims(1) keepdim : f32[2, b1, 4, 5]\n"
      "  %d = sub %y, %s : f32[2, 3, 4, 5]\n"
      "  %m = sum %d dims(2, 3) : f32[2, 3]\n"
      "  %r = reshape %d : f32[2, 3, 20]\n"
      "  %p = permute %r perm(2, 0, 1) : f32[20, 2, 3]\n"
      "  %e = exp %t : f32[6, 4]\n"
      "  %pt = permute %e perm(1, 0) : f32[4, 6]\n"
      "  %q = reshape %pt : f32[2, 2, 6]\n"
      "  %h = cast %q : bf16[2, 2, 6]\n"
      "  return %p, %m, %h, %s\n"
      "}\n";
  fz_fusion *before = test_parse(text);
  fz_fusion *after = parse_and_run(text);
  order_is(after, "y", 4, 0, 2, 3, 1);
  /* [HW, N, C]: N outermost, C innermost, as %x is stored */
  order_is(after, "p", 3, 1, 0, 2);
  fz_host_tensor in[3], out_a[4], out_b[4];
  size_t bytes_a[4], bytes_b[4];
  make_inputs(before, in);
  run(before, in, out_b, bytes_b);
  run(after, in, out_a, bytes_a);
  for (int o = 0; o < 4; o++) {
    ck_assert_uint_eq(bytes_a[o], bytes_b[o]);
    ck_assert_msg(memcmp(out_a[o].data, out_b[o].data, bytes_a[o]) == 0,
                  "output %d differs after alloc-order", o);
    free(out_a[o].data);
    free(out_b[o].data);
  }
  for (int i = 0; i < 3; i++)
    free(in[i].data);
  fz_fusion_destroy(before);
  fz_fusion_destroy(after);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("alloc_order");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, pointwise_follows_dominant_operand);
  tcase_add_test(tc, constant_sizes_pick_the_bigger_operand);
  tcase_add_test(tc, transposed_input_gives_transposed_results);
  tcase_add_test(tc, permute_carries_order_through_perm);
  tcase_add_test(tc, broadcast_places_new_axes_like_unsqueeze);
  tcase_add_test(tc, squeeze_drops_axes);
  tcase_add_test(tc, reduction_keeps_relative_order_of_kept_axes);
  tcase_add_test(tc, reshape_follows_when_derivable);
  tcase_add_test(tc, generators_are_row_major);
  tcase_add_test(tc, declared_layouts_are_untouched);
  tcase_add_test(tc, undeclared_outputs_get_a_layout);
  tcase_add_test(tc, malformed_ops_are_refused_before_any_change);
  tcase_add_test(tc, interpreter_results_unchanged);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
