/* test_plan_symbols.c - symbol reads in kernel plans: a SYMBOL node's
 * value is a kernel parameter, appended after the accesses' strides and
 * offsets only when the plan reads a symbol, and it is not part of the
 * kernel's key, so that a fusion computing with a size (a mean's count)
 * compiles once for every size that schedules alike. */
#include <stdio.h>
#include <string.h>

#include "sched/plan.h"
#include "test_util.h"

static const char row_mean_symbol[] = "fusion @m(%x: f32[N, K]) {\n"
                                      "  %s = sum %x dims(1) : f32[N]\n"
                                      "  %k = symbol K : i64\n"
                                      "  %m = div %s, %k : f32[N]\n"
                                      "  return %m\n"
                                      "}\n";


typedef struct scheduled {
  fz_fusion *f;
  fz_arena *arena;
  fz_plan *plan;
  int64_t symbols[2];
} scheduled;

/* The plan of f32 %x[n, k] -> %m[n] (symbols N = n, K = k). */
static scheduled schedule(const char *text, int64_t n, int64_t k) {
  scheduled s = {.f = test_parse(text), .arena = fz_arena_create()};
  fz_tensor_desc in = {.dtype = FZ_F32, .rank = 2, .sizes = {n, k},
                       .strides = {k, 1}, .align = 16};
  fz_tensor_desc out = {.dtype = FZ_F32, .rank = 1, .sizes = {n},
                        .strides = {1}, .align = 16};
  s.symbols[0] = n;
  s.symbols[1] = k;
  fz_problem pb = {.fusion = s.f, .inputs = &in, .outputs = &out,
                   .symbols = s.symbols,
                   .device = fz_device_info_default(90)};
  fz_error err = {0};
  ck_assert_msg(fz_schedule(&pb, s.arena, &s.plan, &err) == FZ_OK, "%s",
                err.message);
  return s;
}

static void release(scheduled *s) {
  fz_arena_destroy(s->arena);
  fz_fusion_destroy(s->f);
}

/* The same mean with the count written in as a literal, as front ends
 * had to before symbol reads. */
static const char *literal_text(int64_t k) {
  static char buf[256];
  snprintf(buf, sizeof buf,
           "fusion @m(%%x: f32[N, K]) {\n"
           "  %%s = sum %%x dims(1) : f32[N]\n"
           "  %%m = div %%s, %d : f32[N]\n"
           "  return %%m\n"
           "}\n",
           (int)k);
  return buf;
}

START_TEST(one_kernel_for_two_sizes) {
  scheduled a = schedule(row_mean_symbol, 64, 1000);
  scheduled b = schedule(row_mean_symbol, 128, 900);
  ck_assert_int_eq(a.plan->num_symbols, 1);
  ck_assert_int_eq(a.plan->symbols[0], 1); /* K */
  ck_assert_int_eq(a.plan->symbol_values[0], 1000);
  ck_assert_int_eq(b.plan->symbol_values[0], 900);
  ck_assert_str_eq(fz_plan_key(a.plan, a.arena), fz_plan_key(b.plan, b.arena));

  /* A count written in as a literal is in the key: a kernel per size. */
  scheduled la = schedule(literal_text(1000), 64, 1000);
  scheduled lb = schedule(literal_text(900), 128, 900);
  ck_assert_int_eq(la.plan->num_symbols, 0);
  ck_assert_str_ne(fz_plan_key(la.plan, la.arena),
                   fz_plan_key(lb.plan, lb.arena));
  release(&a);
  release(&b);
  release(&la);
  release(&lb);
}
END_TEST

START_TEST(symbol_values_follow_the_strides) {
  scheduled s = schedule(row_mean_symbol, 64, 1000);
  scheduled l = schedule(literal_text(1000), 64, 1000);
  const fz_plan *p = s.plan;
  /* one more scalar than the plan without a symbol read, its value last */
  ck_assert_int_eq(fz_plan_num_scalar_params(p),
                   fz_plan_num_scalar_params(l.plan) + 1);
  ck_assert_int_eq(fz_plan_num_params(p), fz_plan_num_params(l.plan) + 1);
  int n = fz_plan_num_scalar_params(p);
  ck_assert_int_eq(n, 1 + p->rank + p->num_accesses * (p->rank + 1) + 1);
  int64_t scalars[64];
  ck_assert_int_le(n, 64);
  fz_plan_scalar_params(p, scalars);
  ck_assert_int_eq(scalars[n - 1], 1000);
  int64_t without[64];
  fz_plan_scalar_params(l.plan, without);
  ck_assert(memcmp(scalars, without, sizeof *scalars * (size_t)(n - 1)) == 0);
  int symbol_nodes = 0;
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_SYMBOL) {
      symbol_nodes++;
      ck_assert_int_eq(fz_plan_symbol_param(p, &p->nodes[i]), 0);
    }
  ck_assert_int_eq(symbol_nodes, 1);
  release(&s);
  release(&l);
}
END_TEST

/* fz_plan_verify holds plans to the rules lowering and the key rely on. */
START_TEST(verify_checks_symbols) {
  scheduled s = schedule(row_mean_symbol, 64, 1000);
  fz_plan *p = s.plan;
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_OK);
  int node = -1;
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_SYMBOL)
      node = i;
  ck_assert_int_ge(node, 0);

  /* N read, K passed: K is passed for nothing, N never */
  p->nodes[node].symbol = 0;
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(err.message, "symbol 1 as s0, which no node reads"),
                "%s", err.message);
  p->nodes[node].symbol = 1;

  /* a passed symbol no node reads would change the parameters but not
   * the key */
  int two[2] = {1, 0};
  int64_t values[2] = {1000, 64};
  p->symbols = two;
  p->symbol_values = values;
  p->num_symbols = 2;
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(err.message, "symbol 0 as s1, which no node reads"),
                "%s", err.message);
  p->num_symbols = 1;

  p->nodes[node].dtype = FZ_I32;
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(err.message, "is not an i64 without operands"), "%s",
                err.message);
  release(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("plan_symbols");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, one_kernel_for_two_sizes);
  tcase_add_test(tc, symbol_values_follow_the_strides);
  tcase_add_test(tc, verify_checks_symbols);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
