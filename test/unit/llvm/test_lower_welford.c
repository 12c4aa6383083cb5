/* test_lower_welford.c - lib/lower: var and mean as Welford states.
 *
 * Plans from fz_schedule on parsed fusions (inner and outer reductions,
 * split or not, and the persistent layer norm), lowered to LLVM IR and
 * PTX. What each checks: a var and a mean of one operand share one
 * state (the lowered kernel divides exactly as often as for the var
 * alone: one update per element, one combine per meeting), states cross
 * lanes with shuffles field by field, split plans publish and read the
 * states through the workspace, and the PTX assembles (ptxas
 * -arch=sm_90 where it exists).
 */
#include "lower_util.h"

#include "sched/plan.h"

#include "schedule_util.h"

/* The fdivs of the lowered (unoptimised) kernel of `text`. */
static int fdivs_of(const char *text, const char *binds, fz_plan_kind kind) {
  scheduled s;
  fz_plan *p = schedule(&s, text, binds);
  ck_assert_int_eq(p->kind, kind);
  lowered l = lower_ok(p);
  int n = count(l.ir, " fdiv ");
  char *ptx = to_ptx(&l);
  if (ptx) {
    assemble(ptx);
    free(ptx);
  }
  lowered_free(&l);
  scheduled_free(&s);
  return n;
}

static const char *const var_mean_rows =
    "fusion @t(%x: f32[M, N]) {\n"
    "  %v = var %x dims(1) correction(0) : f32[M]\n"
    "  %m = mean %x dims(1) : f32[M]\n"
    "  return %v, %m\n"
    "}\n";
static const char *const var_rows = "fusion @t(%x: f32[M, N]) {\n"
                                    "  %v = var %x dims(1) : f32[M]\n"
                                    "  return %v\n"
                                    "}\n";

START_TEST(inner_var_mean_is_one_state) {
  int both = fdivs_of(var_mean_rows, "M=2048,N=1024",
                      FZ_PLAN_INNER_REDUCTION);
  int var = fdivs_of(var_rows, "M=2048,N=1024", FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_gt(var, 0);
  ck_assert_int_eq(both, var);
}
END_TEST

START_TEST(split_rows_publish_states) {
  scheduled s;
  fz_plan *p = schedule(&s, var_mean_rows, "M=4,N=1000000");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_gt(p->split, 1);
  /* one state of three f32 per kept point and split */
  ck_assert_uint_eq(fz_plan_workspace_bytes(p),
                    2 * 12 * 4 * (size_t)p->split);
  lowered l = lower_ok(p);
  /* the states are published and read back whole */
  ck_assert(report(has(l.ir, "store { float, float, float }"), l.ir));
  ck_assert(report(has(l.ir, "load volatile { float, float, float }"), l.ir));
  char *ptx = to_ptx(&l);
  if (ptx) {
    ck_assert(report(count(ptx, "shfl.sync.bfly") >= 3 * 5, ptx));
    assemble(ptx);
    free(ptx);
  }
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(outer_split_with_a_sum_and_f64) {
  const char *text = "fusion @t(%x: f32[M, N]) {\n"
                     "  %y = cast %x : f64[M, N]\n"
                     "  %v = var %y dims(0) correction(2.5) : f64[N]\n"
                     "  %m = mean %x dims(0) : f32[N]\n"
                     "  %s = sum %x dims(0) : f32[N]\n"
                     "  return %v, %m, %s\n"
                     "}\n";
  scheduled s;
  fz_plan *p = schedule(&s, text, "M=1000000,N=4");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  ck_assert_int_gt(p->split, 1);
  lowered l = lower_ok(p);
  ck_assert(report(has(l.ir, "{ double, double, double }"), l.ir));
  ck_assert(report(has(l.ir, "{ float, float, float }"), l.ir));
  char *ptx = to_ptx(&l);
  if (ptx) {
    assemble(ptx);
    free(ptx);
  }
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(layer_norm_is_one_persistent_state) {
  const char *ln = "fusion @ln(%x: f32[M, N]) {\n"
                   "  %v = var %x dims(1) keepdim correction(0) : f32[M, b1]\n"
                   "  %m = mean %x dims(1) keepdim : f32[M, b1]\n"
                   "  %me = expand %m : f32[M, b1->N]\n"
                   "  %xc = sub %x, %me : f32[M, N]\n"
                   "  %ve = add %v, 1.0e-5 : f32[M, b1]\n"
                   "  %r = rsqrt %ve : f32[M, b1]\n"
                   "  %re = expand %r : f32[M, b1->N]\n"
                   "  %y = mul %xc, %re : f32[M, N]\n"
                   "  return %y\n"
                   "}\n";
  const char *var_only =
      "fusion @ln(%x: f32[M, N]) {\n"
      "  %v = var %x dims(1) keepdim correction(0) : f32[M, b1]\n"
      "  %ve = add %v, 1.0e-5 : f32[M, b1]\n"
      "  %r = rsqrt %ve : f32[M, b1]\n"
      "  %re = expand %r : f32[M, b1->N]\n"
      "  %y = mul %x, %re : f32[M, N]\n"
      "  return %y\n"
      "}\n";
  /* rows of several warps: states cross warps through shared memory */
  int both = fdivs_of(ln, "M=2048,N=8192", FZ_PLAN_INNER_PERSISTENT);
  int var = fdivs_of(var_only, "M=2048,N=8192", FZ_PLAN_INNER_PERSISTENT);
  ck_assert_int_eq(both, var);
  both = fdivs_of(ln, "M=4096,N=64", FZ_PLAN_INNER_PERSISTENT);
  var = fdivs_of(var_only, "M=4096,N=64", FZ_PLAN_INNER_PERSISTENT);
  ck_assert_int_eq(both, var);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("lower_welford");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, inner_var_mean_is_one_state);
  tcase_add_test(tc, split_rows_publish_states);
  tcase_add_test(tc, outer_split_with_a_sum_and_f64);
  tcase_add_test(tc, layer_norm_is_one_persistent_state);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
