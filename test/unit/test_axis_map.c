/* test_axis_map.c - the axis union-find: one small fusion per join rule,
 * the reshape grouping, the extent and reduction-broadcast questions, the
 * printed form, and the layer norm backward of seed 000 before and after
 * canonicalize (where nvFuser lost the post-reduction broadcast). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lib/ is not on the unit tests' include path (only test/unit/llvm has it). */
#include "sched/axis_map.h"
#include "test_util.h"

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

static const fz_op *def(const fz_fusion *f, const char *name) {
  const fz_value *v = val(f, name);
  ck_assert_msg(v->kind == FZ_VALUE_RESULT, "%%%s is not an op result", name);
  return v->def;
}

/* Class of %name[axis]; fails the test when the axis has none. */
static int cls(const fz_axis_map *m, const fz_fusion *f, const char *name,
               int axis) {
  int c = fz_axis_map_class(m, val(f, name), axis);
  ck_assert_msg(c >= 0, "%%%s[%d] has no class", name, axis);
  return c;
}

#define SAME(m, f, a, i, b, j)                                                 \
  ck_assert_msg(cls(m, f, a, i) == cls(m, f, b, j),                            \
                "%%%s[%d] and %%%s[%d] should share a class", a, i, b, j)
#define APART(m, f, a, i, b, j)                                                \
  ck_assert_msg(cls(m, f, a, i) != cls(m, f, b, j),                            \
                "%%%s[%d] and %%%s[%d] should be in different classes", a, i,  \
                b, j)

static char *print_map(const fz_axis_map *m) {
  fz_buf b = {0};
  fz_axis_map_print(m, &b);
  char *s = fz_buf_take(&b);
  ck_assert_ptr_nonnull(s);
  return s;
}

static void assert_contains(const char *text, const char *needle) {
  ck_assert_msg(strstr(text, needle), "\"%s\" not in:\n%s", needle, text);
}

static bool is_red_bcast(const fz_axis_map *m, const fz_fusion *f,
                         const char *v, int axis, const char *red) {
  return fz_axis_map_is_reduction_broadcast(m, val(f, v), axis, def(f, red));
}

/* ---- join rules ------------------------------------------------------ */

START_TEST(pointwise_joins_positionally_but_not_stretched_b1) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N, 4], %b: f32[N, b1], "
                            "%c: f32[N, b1], %k: bool[N, 4]) {\n"
                            "  %y = add %x, %b : f32[N, 4]\n"
                            "  %z = mul %b, %c : f32[N, b1]\n"
                            "  %n = neg %y : f32[N, 4]\n"
                            "  %w = where %k, %n, 0.0 : f32[N, 4]\n"
                            "  %h = cast %w : f16[N, 4]\n"
                            "  %s = set %h : f16[N, 4]\n"
                            "  return %s, %z\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  SAME(m, f, "x", 0, "y", 0);
  SAME(m, f, "b", 0, "y", 0);
  SAME(m, f, "x", 1, "y", 1);
  for (const char *const *n =
           (const char *const[]){"n", "w", "h", "s", "k", NULL};
       *n; n++)
    SAME(m, f, "x", 1, *n, 1);
  /* b's b1 is only stretched to y's axis 1; two b1 axes join. */
  APART(m, f, "b", 1, "y", 1);
  SAME(m, f, "b", 1, "c", 1);
  SAME(m, f, "b", 1, "z", 1);
  char *s = print_map(m);
  char want[64];
  snprintf(want, sizeof want, "(broadcast to class %d)", cls(m, f, "y", 1));
  assert_contains(s, want);
  free(s);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(broadcast_inserts_fresh_axes) {
  fz_fusion *f = test_parse("fusion @t(%s: f32[N, M]) {\n"
                            "  %b = broadcast %s dims(0, 2) : "
                            "f32[b1, N, b1, M]\n"
                            "  return %b\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  SAME(m, f, "s", 0, "b", 1);
  SAME(m, f, "s", 1, "b", 3);
  APART(m, f, "b", 0, "b", 2);
  for (int a = 0; a < 2; a++) {
    APART(m, f, "b", 0, "s", a);
    APART(m, f, "b", 2, "s", a);
  }
  ck_assert_int_eq(fz_axis_map_num_classes(m), 4);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(squeeze_keeps_remaining_axes_in_order) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N, b1, M, 1]) {\n"
                            "  %q = squeeze %x dims(1, 3) : f32[N, M]\n"
                            "  return %q\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  SAME(m, f, "x", 0, "q", 0);
  SAME(m, f, "x", 2, "q", 1);
  APART(m, f, "x", 1, "q", 1);
  APART(m, f, "x", 3, "q", 1);
  ck_assert_int_eq(fz_axis_map_num_classes(m), 4);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(expand_joins_b1_with_its_expansion) {
  fz_fusion *f = test_parse("fusion @t(%v: f32[N, b1], %x: f32[N, 8]) {\n"
                            "  %e = expand %v : f32[N, b1->8]\n"
                            "  %y = add %e, %x : f32[N, 8]\n"
                            "  return %y\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  SAME(m, f, "v", 1, "e", 1);
  SAME(m, f, "v", 0, "e", 0);
  /* An expanded axis is a real loop: it joins the pointwise result. */
  SAME(m, f, "e", 1, "y", 1);
  SAME(m, f, "x", 1, "v", 1);
  /* The b1 of %v denotes the loop of extent 8 it was expanded to. */
  ck_assert(fz_axis_map_same_extent(m, val(f, "v"), 1, val(f, "x"), 1));
  ck_assert(!fz_axis_map_same_extent(m, val(f, "v"), 1, val(f, "x"), 0));
  char *s = print_map(m);
  assert_contains(s, "class 1: %v[1] %x[1] %e[1] %y[1] (expanded to 8)\n");
  free(s);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(permute_joins_through_perm) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[A, B, C]) {\n"
                            "  %p = permute %x perm(2, 0, 1) : f32[C, A, B]\n"
                            "  return %p\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  SAME(m, f, "p", 0, "x", 2);
  SAME(m, f, "p", 1, "x", 0);
  SAME(m, f, "p", 2, "x", 1);
  APART(m, f, "p", 0, "x", 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reshape_joins_pass_through_axes_only) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N, 6, 4], %y: f32[2, 3]) {\n"
                            "  %r = reshape %x : f32[N, 2, 3, 4]\n"
                            "  %t = reshape %y : f32[3, 2]\n"
                            "  return %r, %t\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  SAME(m, f, "x", 0, "r", 0);
  SAME(m, f, "x", 2, "r", 3);
  APART(m, f, "x", 1, "r", 1);
  APART(m, f, "x", 1, "r", 2);
  APART(m, f, "r", 1, "r", 2);
  /* [2, 3] -> [3, 2] is one merge-and-split group: nothing passes. */
  APART(m, f, "y", 0, "t", 1);
  APART(m, f, "y", 1, "t", 0);
  char *s = print_map(m);
  char want[64];
  snprintf(want, sizeof want, "%%r[1] (reshaped from class %d)",
           cls(m, f, "x", 1));
  assert_contains(s, want);
  snprintf(want, sizeof want, "%%t[0] (reshaped from class %d, class %d)",
           cls(m, f, "y", 0), cls(m, f, "y", 1));
  assert_contains(s, want);
  free(s);
  fz_fusion_destroy(f);
}
END_TEST

static fz_type shape(int rank, const int64_t *extents) {
  fz_type t = {.dtype = FZ_F32, .rank = rank};
  for (int i = 0; i < rank; i++)
    t.axes[i] =
        (fz_axis){.kind = FZ_AXIS_ITER, .extent = fz_const_extent(extents[i])};
  return t;
}

START_TEST(reshape_groups) {
  fz_reshape_group g[2 * FZ_MAX_RANK];
  /* [2, 1, 3] -> [6]: one merge group holding the size-1 axis. */
  fz_type a = shape(3, (int64_t[]){2, 1, 3}), b = shape(1, (int64_t[]){6});
  ck_assert_int_eq(fz_reshape_groups(NULL, &a, &b, g), 1);
  ck_assert_int_eq(g[0].num_from, 3);
  ck_assert_int_eq(g[0].num_to, 1);
  ck_assert(g[0].exact);
  /* [1, 6] -> [6, 1]: 1 alone, 6 passes through, 1 alone. */
  a = shape(2, (int64_t[]){1, 6});
  b = shape(2, (int64_t[]){6, 1});
  ck_assert_int_eq(fz_reshape_groups(NULL, &a, &b, g), 3);
  ck_assert(g[0].num_from == 1 && g[0].num_to == 0);
  ck_assert(g[1].num_from == 1 && g[1].num_to == 1 && g[1].from[0] == 1 &&
            g[1].to[0] == 0 && g[1].exact);
  ck_assert(g[2].num_from == 0 && g[2].num_to == 1 && g[2].to[0] == 1);
  /* [6, 2] -> [2, 3, 2]: a split, then a pass-through. */
  a = shape(2, (int64_t[]){6, 2});
  b = shape(3, (int64_t[]){2, 3, 2});
  ck_assert_int_eq(fz_reshape_groups(NULL, &a, &b, g), 2);
  ck_assert(g[0].num_from == 1 && g[0].num_to == 2);
  ck_assert(g[1].num_from == 1 && g[1].num_to == 1 && g[1].to[0] == 2);
  /* Symbols: [N, M, 4] -> [N, M, 2, 2]. */
  a = shape(3, (int64_t[]){0, 0, 4});
  a.axes[0].extent = fz_symbol_extent(0);
  a.axes[1].extent = fz_symbol_extent(1);
  b = shape(4, (int64_t[]){0, 0, 2, 2});
  b.axes[0].extent = fz_symbol_extent(0);
  b.axes[1].extent = fz_symbol_extent(1);
  ck_assert_int_eq(fz_reshape_groups(NULL, &a, &b, g), 3);
  ck_assert(g[0].num_from == 1 && g[0].num_to == 1 && g[0].exact);
  ck_assert(g[1].num_from == 1 && g[1].num_to == 1 && g[1].exact);
  ck_assert(g[2].num_from == 1 && g[2].num_to == 2 && g[2].exact);
  /* [N, M] -> [M, N]: counts equal, but not axis by axis. */
  a = shape(2, (int64_t[]){0, 0});
  a.axes[0].extent = fz_symbol_extent(0);
  a.axes[1].extent = fz_symbol_extent(1);
  b = a;
  b.axes[0].extent = fz_symbol_extent(1);
  b.axes[1].extent = fz_symbol_extent(0);
  ck_assert_int_eq(fz_reshape_groups(NULL, &a, &b, g), 1);
  ck_assert(g[0].num_from == 2 && g[0].num_to == 2 && g[0].exact);
}
END_TEST

START_TEST(reduction_keeps_axes_and_marks_reduced) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[A, B, C]) {\n"
                            "  %s = sum %x dims(1) : f32[A, C]\n"
                            "  %k = amax %x dims(0, 2) keepdim : "
                            "f32[b1, B, b1]\n"
                            "  return %s, %k\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  SAME(m, f, "x", 0, "s", 0);
  SAME(m, f, "x", 2, "s", 1);
  SAME(m, f, "x", 1, "k", 1);
  /* keepdim: the b1 left behind is an image of the reduced axis, not it. */
  APART(m, f, "x", 0, "k", 0);
  APART(m, f, "x", 2, "k", 2);
  ck_assert(fz_axis_map_class_is_reduced(m, cls(m, f, "x", 1)));
  ck_assert(fz_axis_map_class_is_reduced(m, cls(m, f, "x", 0)));
  ck_assert(!fz_axis_map_class_is_reduced(m, cls(m, f, "k", 0)));
  ck_assert(is_red_bcast(m, f, "k", 0, "k"));
  ck_assert(is_red_bcast(m, f, "k", 2, "k"));
  ck_assert(!is_red_bcast(m, f, "k", 0, "s"));
  char *s = print_map(m);
  assert_contains(s, "class 0: %x[0] %s[0] (reduced by %k)\n");
  assert_contains(s, "class 1: %x[1] %k[1] (reduced by %s)\n");
  assert_contains(s, "class 3: %k[0] (broadcast of class 0)\n");
  assert_contains(s, "class 4: %k[2] (broadcast of class 2)\n");
  free(s);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- questions ----------------------------------------------------------- */

START_TEST(same_extent_by_class_or_by_extent) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N, M], %y: f32[N, 8], "
                            "%z: f32[N, 8], %u: f32[M]) {\n"
                            "  %p = permute %x perm(1, 0) : f32[M, N]\n"
                            "  return %p, %y, %z, %u\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  ck_assert(fz_axis_map_same_extent(m, val(f, "x"), 0, val(f, "p"), 1));
  /* different classes, same constant or the same symbol */
  ck_assert(fz_axis_map_same_extent(m, val(f, "y"), 1, val(f, "z"), 1));
  ck_assert(fz_axis_map_same_extent(m, val(f, "u"), 0, val(f, "x"), 1));
  ck_assert(!fz_axis_map_same_extent(m, val(f, "x"), 0, val(f, "x"), 1));
  ck_assert(!fz_axis_map_same_extent(m, val(f, "x"), 1, val(f, "y"), 1));
  ck_assert(!fz_axis_map_same_extent(m, val(f, "x"), 2, val(f, "y"), 1));
  fz_fusion_destroy(f);
}
END_TEST

/* One b1 expanded to two extents merges two loops into a class: then the
 * class proves nothing and only the extents themselves answer. */
START_TEST(b1_expanded_two_ways_is_a_conflict) {
  fz_fusion *f = test_parse("fusion @t(%w: f32[b1], %x: f32[8], "
                            "%y: f32[16]) {\n"
                            "  %a = expand %w : f32[b1->8]\n"
                            "  %b = expand %w : f32[b1->16]\n"
                            "  %p = add %a, %x : f32[8]\n"
                            "  %q = add %b, %y : f32[16]\n"
                            "  %s = sum %p dims(0) : f32\n"
                            "  return %q, %s\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  SAME(m, f, "x", 0, "y", 0);
  ck_assert(!fz_axis_map_same_extent(m, val(f, "x"), 0, val(f, "y"), 0));
  ck_assert(!fz_axis_map_same_extent(m, val(f, "w"), 0, val(f, "x"), 0));
  ck_assert(fz_axis_map_same_extent(m, val(f, "a"), 0, val(f, "x"), 0));
  ck_assert(is_red_bcast(m, f, "a", 0, "s"));
  ck_assert(!is_red_bcast(m, f, "b", 0, "s"));
  char *s = print_map(m);
  assert_contains(s, "(conflicting extents)");
  free(s);
  fz_fusion_destroy(f);
}
END_TEST

/* A broadcast after a reduction, stretched by a pointwise op (no expand):
 * the b1 is an image of the reduced axis through its "broadcast to" edge. */
START_TEST(stretched_b1_is_reduction_broadcast) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N, 8], %o: f32[N, 8]) {\n"
                            "  %s = sum %x dims(1) : f32[N]\n"
                            "  %b = broadcast %s dims(1) : f32[N, b1]\n"
                            "  %y = sub %x, %b : f32[N, 8]\n"
                            "  %c = broadcast %s dims(0) : f32[b1, N]\n"
                            "  %t = sum %o dims(0) : f32[8]\n"
                            "  return %y, %c, %t\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  ck_assert(is_red_bcast(m, f, "b", 1, "s"));
  ck_assert(!is_red_bcast(m, f, "b", 0, "s"));
  ck_assert(!is_red_bcast(m, f, "b", 1, "t"));
  /* %c's b1 meets no loop and has no extent: nothing says it is. */
  ck_assert(!is_red_bcast(m, f, "c", 0, "s"));
  fz_fusion_destroy(f);
}
END_TEST

/* An expanded broadcast that is only stored never meets the reduction's
 * loop; its expanded extent is compared with the reduced extent. */
START_TEST(stored_expansion_compares_extents) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[4, N]) {\n"
                            "  %s = sum %x dims(1) : f32[4]\n"
                            "  %b = broadcast %s dims(1) : f32[4, b1]\n"
                            "  %e = expand %b : f32[4, b1->N]\n"
                            "  %g = expand %b : f32[4, b1->M]\n"
                            "  return %e\n"
                            "}\n");
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  /* %e and %g share %b's class, which then mixes N and M. */
  ck_assert(!is_red_bcast(m, f, "g", 1, "s"));
  fz_fusion_destroy(f);
  f = test_parse("fusion @t(%x: f32[4, N]) {\n"
                 "  %s = sum %x dims(1) : f32[4]\n"
                 "  %b = broadcast %s dims(1) : f32[4, b1]\n"
                 "  %e = expand %b : f32[4, b1->N]\n"
                 "  %h = broadcast %s dims(1) : f32[4, b1]\n"
                 "  %g = expand %h : f32[4, b1->M]\n"
                 "  return %e, %g\n"
                 "}\n");
  m = fz_axis_map_build(f, f->arena);
  ck_assert(is_red_bcast(m, f, "e", 1, "s"));
  ck_assert(is_red_bcast(m, f, "b", 1, "s"));
  ck_assert(!is_red_bcast(m, f, "g", 1, "s"));
  ck_assert(!is_red_bcast(m, f, "e", 0, "s"));
  fz_fusion_destroy(f);
}
END_TEST

/* ---- printing ------------------------------------------------------------ */

START_TEST(print_names_unnamed_values_like_fz_print) {
  fz_fusion *f = fz_fusion_create("t");
  fz_type t = {.dtype = FZ_F32, .rank = 2};
  t.axes[0] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = fz_const_extent(4)};
  t.axes[1] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = fz_const_extent(5)};
  fz_value *x = fz_add_input(f, NULL, &t);
  fz_value *y = fz_add_input(f, "0", &t); /* takes the number 0 */
  fz_error err = {0};
  fz_value *z = fz_binary(f, FZ_OP_ADD, x, y, &err);
  ck_assert_ptr_nonnull(z);
  fz_value *s = fz_reduce(f, FZ_OP_SUM, z, 1, (int[]){1}, false, &err);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(fz_add_output(f, s, &err), FZ_OK);
  char *text = fz_print(f);
  /* x is %1 (0 is a stored name), then z %2, s %3 */
  assert_contains(text, "%2 = add %1, %0");
  free(text);
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  char *p = print_map(m);
  ck_assert_str_eq(p, "class 0: %1[0] %0[0] %2[0] %3[0]\n"
                      "class 1: %1[1] %0[1] %2[1] (reduced by %3)\n");
  free(p);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- seed 000 ------------------------------------------------------------ */

static fz_fusion *load_seed000(void) {
  const char *path =
      test_source_path("examples/layer_norm_backward_seed000.fz");
  FILE *fp = fopen(path, "rb");
  ck_assert_msg(fp, "cannot open %s", path);
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, fp);
  fclose(fp);
  text[n] = '\0';
  return test_parse(text);
}

/* The axes of the seed's chain T19 = sum(T18) -> ... -> T31 that are
 * broadcast images of T19's reduced axis, and the column reductions they
 * must not be taken for. */
static void check_seed000(fz_fusion *f, const char *const *images) {
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  for (const char *const *v = images; *v; v++) {
    ck_assert_msg(is_red_bcast(m, f, *v, 1, "T19"),
                  "%%%s[1] is not seen as the image of T19's reduced axis", *v);
    ck_assert(is_red_bcast(m, f, *v, 1, "T10"));
    ck_assert(!is_red_bcast(m, f, *v, 1, "T34"));
    ck_assert(!is_red_bcast(m, f, *v, 0, "T19"));
    ck_assert(fz_axis_map_same_extent(m, val(f, *v), 1, val(f, "T18"), 1));
  }
  /* bS61{1 ex 8192} of the seed */
  SAME(m, f, "T31", 1, "T18", 1);
  /* weight's broadcast over rows is the image of the column sums */
  ck_assert(is_red_bcast(m, f, "T5", 0, "T34"));
  ck_assert(!is_red_bcast(m, f, "T5", 0, "T19"));
  char *a = print_map(m), *b = print_map(fz_axis_map_build(f, f->arena));
  ck_assert_str_eq(a, b);
  assert_contains(a, "(reduced by %T10, %T19) (expanded to 8192)\n");
  assert_contains(a, "(reduced by %T34, %T35) (expanded to 2048)\n");
  free(a);
  free(b);
}

START_TEST(seed000_raw) {
  fz_fusion *f = load_seed000();
  check_seed000(f, (const char *const[]){"T27", "T28", "T29", "T30", "T31",
                                         "T11", "T15", "T16", "T17", NULL});
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(seed000_canonicalized) {
  fz_fusion *f = load_seed000();
  fz_error err = {0};
  ck_assert_msg(fz_run_pass(f, "canonicalize", &err) == FZ_OK, "%s",
                err.message);
  /* The chain is now T19 -> broadcast -> expand -> T31. */
  check_seed000(f, (const char *const[]){"T30", "T31", "T11", "T16", NULL});
  fz_value *t30 = val(f, "T30");
  ck_assert_int_eq(t30->def->code, FZ_OP_EXPAND);
  const fz_value *bc = t30->def->operands[0];
  fz_axis_map *m = fz_axis_map_build(f, f->arena);
  ck_assert(fz_axis_map_is_reduction_broadcast(m, bc, 1, def(f, "T19")));
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("axis_map");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, pointwise_joins_positionally_but_not_stretched_b1);
  tcase_add_test(tc, broadcast_inserts_fresh_axes);
  tcase_add_test(tc, squeeze_keeps_remaining_axes_in_order);
  tcase_add_test(tc, expand_joins_b1_with_its_expansion);
  tcase_add_test(tc, permute_joins_through_perm);
  tcase_add_test(tc, reshape_joins_pass_through_axes_only);
  tcase_add_test(tc, reshape_groups);
  tcase_add_test(tc, reduction_keeps_axes_and_marks_reduced);
  tcase_add_test(tc, same_extent_by_class_or_by_extent);
  tcase_add_test(tc, b1_expanded_two_ways_is_a_conflict);
  tcase_add_test(tc, stretched_b1_is_reduction_broadcast);
  tcase_add_test(tc, stored_expansion_compares_extents);
  tcase_add_test(tc, print_names_unnamed_values_like_fz_print);
  tcase_add_test(tc, seed000_raw);
  tcase_add_test(tc, seed000_canonicalized);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
