/* test_lower_size_class.c - lib/lower: the kernel of an inner persistent
 * plan's size class. Two row lengths of one class lower to the same PTX;
 * a dynamic block reads its width from the launch (%ntid.x), is compiled
 * for at most FZ_PLAN_DYNAMIC_MAX_THREADS threads, counts the row's warps
 * at run time in the cross-warp combine, and traps on a row it cannot
 * cover; the held groups from persistent_full on are masked by the row
 * length, the earlier ones not. */
#include "lower_util.h"

#include "sched/plan.h"

#include "schedule_util.h"

/* x / sqrt(sum((x - sum x)^2)) per row: two row rounds, no libdevice. */
static const char *ROWNORM =
    "fusion @rownorm(%x: f32[N, K]) {\n"
    "  %s = sum %x dims(1) keepdim : f32[N, b1]\n"
    "  %e = expand %s : f32[N, b1->K]\n"
    "  %d = sub %x, %e : f32[N, K]\n"
    "  %q = mul %d, %d : f32[N, K]\n"
    "  %v = sum %q dims(1) keepdim : f32[N, b1]\n"
    "  %r = rsqrt %v : f32[N, b1]\n"
    "  %re = expand %r : f32[N, b1->K]\n"
    "  %y = mul %d, %re : f32[N, K]\n"
    "  return %y\n"
    "}\n";

typedef struct compiled {
  scheduled s;
  lowered l;
  char *ptx;
} compiled;

static void compile(compiled *c, const char *binds) {
  fz_plan *p = schedule(&c->s, ROWNORM, binds);
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  c->l = lower_ok(p);
  c->ptx = to_ptx(&c->l);
  ck_assert_ptr_nonnull(c->ptx);
}

static void release(compiled *c) {
  free(c->ptx);
  lowered_free(&c->l);
  scheduled_free(&c->s);
}

/* Rows of 2000 and 4000 floats: one kernel, its block the launch's. */
START_TEST(dynamic_block_kernel) {
  compiled a, b;
  compile(&a, "N=1000,K=2000");
  compile(&b, "N=3000,K=4000");
  ck_assert(a.s.plan->dynamic_block);
  ck_assert_int_ne(a.s.plan->block_x, b.s.plan->block_x);
  ck_assert_str_eq(a.ptx, b.ptx);
  ck_assert_has(a.ptx, "%ntid.x");
  ck_assert_has(a.ptx, ".maxntid 512, 1, 1");
  ck_assert_has(a.ptx, "trap;");
  /* lanes below the run-time warp count read the warps' values */
  ck_assert_has(a.l.ir, "%warps = lshr i32");
  /* 8 groups a thread: 4 always inside the row, 4 masked */
  ck_assert_int_eq(a.s.plan->persistent, 8);
  ck_assert(!has(a.l.ir, "%active.g3 "));
  ck_assert_has(a.l.ir, "%active.g4 ");
  ck_assert_has(a.l.ir, "%active.g7 ");
  assemble(a.ptx);
  release(&a);
  release(&b);
}
END_TEST

/* Rows of a warp (300 and 500 floats: 75 and 125 groups): 4 groups a
 * thread, the last two masked; the width is compiled in. */
START_TEST(warp_rows_kernel) {
  compiled a, b;
  compile(&a, "N=1000,K=300");
  compile(&b, "N=1000,K=500");
  ck_assert(!a.s.plan->dynamic_block);
  ck_assert_str_eq(a.ptx, b.ptx);
  ck_assert(!has(a.ptx, "%ntid.x"));
  ck_assert(!has(a.l.ir, "%active.g1 "));
  ck_assert_has(a.l.ir, "%active.g2 ");
  ck_assert_has(a.l.ir, "%active.g3 ");
  assemble(a.ptx);
  release(&a);
  release(&b);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("lower_size_class");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, dynamic_block_kernel);
  tcase_add_test(tc, warp_rows_kernel);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
