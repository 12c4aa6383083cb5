/* test_symbol_expr.c - derived extents (`N*K`, `M/K`): canonical names,
 * monomial arithmetic, reshape proofs through them, values at bind time
 * (including a base symbol solved from an input's derived extent), the C
 * API's names, cloning and the axis map's reshape groups. */
#include <string.h>

#include "sched/axis_map.h"
#include "test_util.h"
#include "type_spec.h"

/* A message holding `needle`, whatever its status. */
#define ck_assert_msg_has(err, needle)                                         \
  ck_assert_msg(strstr((err).message, (needle)) != NULL,                       \
                "message '%s' lacks '%s'", (err).message, (needle))

static fz_extent expr(fz_fusion *f, const char *text, bool create) {
  fz_extent e;
  fz_error err = {0};
  ck_assert_msg(fz_parse_extent_expr(f, text, strlen(text), create, &e,
                                     &err) == FZ_OK,
                "%s: %s", text, err.message);
  return e;
}

static const char *name_of(const fz_fusion *f, fz_extent e) {
  ck_assert_int_ge(e.symbol, 0);
  return f->symbols[e.symbol].name;
}

START_TEST(canonical_names_make_one_symbol) {
  fz_fusion *f = fz_fusion_create("t");
  fz_extent nk = expr(f, "N*K", true);
  ck_assert_str_eq(name_of(f, nk), "K*N");
  ck_assert(fz_extent_equal(nk, expr(f, "K * N", false)));
  ck_assert_str_eq(name_of(f, expr(f, "M/4", true)), "M/4");
  ck_assert_str_eq(name_of(f, expr(f, "M/K", false)), "M/K");
  ck_assert_str_eq(name_of(f, expr(f, "3*M/6*4", false)), "2*M");
  /* what is a constant or one symbol is that */
  fz_extent six = expr(f, "2*3", false);
  ck_assert(six.symbol < 0 && six.value == 6);
  ck_assert_int_eq(expr(f, "N*K/K", false).symbol,
                   fz_fusion_find_symbol(f, "N"));
  ck_assert(expr(f, "N*0", false).value == 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(malformed_expressions_are_errors) {
  fz_fusion *f = fz_fusion_create("t");
  fz_extent e;
  fz_error err = {0};
  ck_assert_int_eq(fz_parse_extent_expr(f, "N*Q", 3, false, &e, &err),
                   FZ_ERR_INVALID);
  ck_assert_err(err, "symbol N is not an extent of any input");
  ck_assert_int_eq(f->num_symbols, 0); /* nothing created on failure */
  ck_assert_int_eq(fz_parse_extent_expr(f, "N/0", 3, true, &e, &err),
                   FZ_ERR_INVALID);
  ck_assert_err(err, "divides by zero");
  ck_assert_int_eq(fz_parse_extent_expr(f, "7/2", 3, true, &e, &err),
                   FZ_ERR_INVALID);
  ck_assert_err(err, "the extent 7/2 is not an integer");
  ck_assert_int_eq(fz_parse_extent_expr(f, "N**K", 4, true, &e, &err),
                   FZ_ERR_INVALID);
  ck_assert_err(err, "expected a symbol or an integer at offset 2");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(monomials_compare_and_divide) {
  fz_fusion *f = fz_fusion_create("t");
  fz_type x = ts(f, "f32[B, S, H]"), flat = ts(f, "f32[16, H]");
  flat.axes[0].extent = expr(f, "S*B", false);
  fz_monomial a, b, h;
  fz_monomial_init(&a);
  fz_monomial_init(&b);
  fz_monomial_init(&h);
  fz_monomial_mul_type(f, &a, &x, 1);
  fz_monomial_mul_type(f, &b, &flat, 1);
  fz_monomial_mul_extent(f, &h, x.axes[2].extent, 1);
  ck_assert(fz_monomial_equal(&a, &b));
  ck_assert(fz_monomial_divides(&h, &a));
  ck_assert(!fz_monomial_divides(&a, &h));
  fz_buf text = {0};
  fz_monomial_format(f, &a, &text);
  char *s = fz_buf_take(&text);
  ck_assert_str_eq(s, "1*B*H*S");
  free(s);
  /* a power past 64 is no extent (it bounds the work of binding) */
  for (int i = 0; i < 64; i++)
    fz_monomial_mul_extent(f, &h, x.axes[2].extent, 1);
  ck_assert(h.overflow);
  fz_extent e;
  fz_error err = {0};
  ck_assert_int_eq(fz_monomial_extent(f, &h, &e, &err), FZ_ERR_INVALID);
  fz_fusion_destroy(f);
}
END_TEST

static fz_host_tensor host(int rank, const int64_t *sizes) {
  fz_host_tensor t = {.dtype = FZ_F32, .rank = rank};
  memcpy(t.sizes, sizes, sizeof *sizes * (size_t)rank);
  return t;
}

START_TEST(values_are_derived_when_bound) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[M], %w: f32[K]) {\n"
                            "  %r = reshape %x : f32[M/K, K]\n"
                            "  return %r\n"
                            "}\n");
  fz_host_tensor in[2] = {host(1, (int64_t[]){42}), host(1, (int64_t[]){6})};
  fz_bindings b = {0};
  fz_error err = {0};
  ck_assert_int_eq(fz_bind_inputs(f, in, 2, &b, &err), FZ_OK);
  int q = fz_fusion_find_symbol(f, "M/K");
  ck_assert_int_eq(b.values[q], 7);
  fz_bindings_free(&b);
  in[1].sizes[0] = 5;
  ck_assert_int_eq(fz_bind_inputs(f, in, 2, &b, &err), FZ_ERR_ARGUMENT);
  ck_assert_msg_has(err, "%r = reshape of f32[M] to f32[M/K, K]: extent M/K is "
                     "not an integer at these sizes (K = 5, M = 42: 42 / 5)");
  in[1].sizes[0] = 0;
  ck_assert_int_eq(fz_bind_inputs(f, in, 2, &b, &err), FZ_ERR_ARGUMENT);
  ck_assert_msg_has(err, "42 / 0");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(an_input_extent_solves_its_free_symbol) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N*K], %w: f32[K]) {\n"
                            "  %r = reshape %x : f32[N, K]\n"
                            "  return %r\n"
                            "}\n");
  fz_host_tensor in[2] = {host(1, (int64_t[]){42}), host(1, (int64_t[]){6})};
  fz_bindings b = {0};
  fz_error err = {0};
  ck_assert_int_eq(fz_bind_inputs(f, in, 2, &b, &err), FZ_OK);
  ck_assert_int_eq(b.values[fz_fusion_find_symbol(f, "N")], 7);
  ck_assert_int_eq(b.values[fz_fusion_find_symbol(f, "K*N")], 42);
  int64_t sizes[FZ_MAX_RANK];
  ck_assert_int_eq(fz_output_sizes(f, 0, &b, sizes, &err), FZ_OK);
  ck_assert(sizes[0] == 7 && sizes[1] == 6);
  fz_bindings_free(&b);
  in[1].sizes[0] = 5;
  ck_assert_int_eq(fz_bind_inputs(f, in, 2, &b, &err), FZ_ERR_ARGUMENT);
  ck_assert_msg_has(err, "input 0 (%x) axis 0: size 42 is not K*N for any "
                     "integer N");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(c_api_names_products_in_op_targets) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  const char *names[3] = {"B", "S", "H"};
  fz_value *x = fz_fusion_add_tensor(
      f, "x", FZ_F32, 3,
      (int64_t[]){FZ_EXTENT_SYMBOL, FZ_EXTENT_SYMBOL, FZ_EXTENT_SYMBOL},
      names, NULL, NULL, &err);
  ck_assert_ptr_nonnull(x);
  const char *flat[2] = {"S*B", "H"};
  fz_value *r = fz_build_reshape(
      f, x, 2, (int64_t[]){FZ_EXTENT_SYMBOL, FZ_EXTENT_SYMBOL}, flat, &err);
  ck_assert_msg(r != NULL, "%s", err.message);
  ck_assert_type(f, r, "f32[B*S, H]");
  const char *bad[1] = {"B*Q"};
  ck_assert_ptr_null(fz_build_reshape(f, x, 1, (int64_t[]){FZ_EXTENT_SYMBOL},
                                      bad, &err));
  ck_assert_err(err, "symbol Q is not an extent of any input");
  const char *unproved[2] = {"B*S", "S"};
  ck_assert_ptr_null(fz_build_reshape(
      f, x, 2, (int64_t[]){FZ_EXTENT_SYMBOL, FZ_EXTENT_SYMBOL}, unproved,
      &err));
  ck_assert_err(err, "cannot prove the element counts equal");
  const char *derived_input[1] = {"B*S"};
  ck_assert_ptr_null(fz_fusion_add_tensor(f, "y", FZ_F32, 1,
                                          (int64_t[]){FZ_EXTENT_SYMBOL},
                                          derived_input, NULL, NULL, &err));
  ck_assert_err(err, "an input's extents are constants or symbols");
  fz_value *n = fz_build_symbol(f, "B*S", &err);
  ck_assert_ptr_nonnull(n);
  ck_assert_int_eq(fz_add_output(f, r, &err), FZ_OK);
  ck_assert_int_eq(fz_add_output(f, n, &err), FZ_OK);
  /* a clone keeps the derived symbol's terms: the reshape still proves */
  fz_fusion *c = fz_fusion_clone(f, &err);
  ck_assert_ptr_nonnull(c);
  ck_assert_msg(fz_verify(c, &err) == FZ_OK, "%s", err.message);
  int s = fz_fusion_find_symbol(c, "B*S");
  ck_assert_int_eq(c->symbols[s].num_terms, 2);
  fz_fusion_destroy(c);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reshape_groups_see_through_products) {
  fz_fusion *f = fz_fusion_create("t");
  fz_type x = ts(f, "f32[B, S, H]"), flat = ts(f, "f32[1, H]");
  flat.axes[0].extent = expr(f, "B*S", false);
  fz_reshape_group g[2 * FZ_MAX_RANK];
  ck_assert_int_eq(fz_reshape_groups(f, &x, &flat, g), 2);
  ck_assert(g[0].num_from == 2 && g[0].num_to == 1 && g[0].exact);
  ck_assert(g[1].num_from == 1 && g[1].num_to == 1 && g[1].exact &&
            g[1].from[0] == 2 && g[1].to[0] == 1);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("symbol_expr");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, canonical_names_make_one_symbol);
  tcase_add_test(tc, malformed_expressions_are_errors);
  tcase_add_test(tc, monomials_compare_and_divide);
  tcase_add_test(tc, values_are_derived_when_bound);
  tcase_add_test(tc, an_input_extent_solves_its_free_symbol);
  tcase_add_test(tc, c_api_names_products_in_op_targets);
  tcase_add_test(tc, reshape_groups_see_through_products);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
