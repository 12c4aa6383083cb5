/* test_persistent_multipass.c - the multipass schedule of rows that stay
 * on chip nowhere (lib/sched/persistent_multipass.c): its shapes, which
 * fusions take it (only rows too long for a block and a cluster, with
 * rows enough to fill the SMs), that its plans verify and their keys
 * name it, and that fz_plan_verify refuses a multipass row where the
 * lowering has none. */
#include <stdlib.h>
#include <string.h>

#include "llvm/schedule_util.h"
#include "sched/persistent_multipass.h"

static const char *SOFTMAX_BWD_BF16 =
    "fusion @sbwd(%dyb: bf16[M, N], %yb: bf16[M, N]) {\n"
    "  %dy = cast %dyb : f32[M, N]\n"
    "  %y = cast %yb : f32[M, N]\n"
    "  %p = mul %dy, %y : f32[M, N]\n"
    "  %s = sum %p dims(1) keepdim : f32[M, b1]\n"
    "  %se = expand %s : f32[M, b1->N]\n"
    "  %d = sub %dy, %se : f32[M, N]\n"
    "  %dx = mul %y, %d : f32[M, N]\n"
    "  %dxb = cast %dx : bf16[M, N]\n"
    "  return %dxb\n"
    "}\n";

static void expect_shape(int64_t rows, int64_t groups, int vector, int held,
                         bool want, int block_x, int trip, int64_t blocks) {
  fz_multipass_shape sh;
  bool got =
      fz_multipass_shape_choose(rows, groups, vector, held, 132, &sh);
  ck_assert_msg(got == want, "rows %lld groups %lld vector %d held %d: %s",
                (long long)rows, (long long)groups, vector, held,
                got ? "multipass" : "none");
  if (!want) {
    ck_assert_int_eq(sh.block_x, 0);
    return;
  }
  ck_assert_int_eq(sh.block_x, block_x);
  ck_assert_int_eq(sh.trip, trip);
  ck_assert_int_eq(sh.blocks, blocks);
  ck_assert(sh.trip * vector * held <= 64);
}

START_TEST(shapes) {
  /* bf16 softmax backward at 256K: two tensors of 8 lanes, 4 groups a
   * trip (64 values), a block a row */
  expect_shape(1024, 262144 / 8, 8, 2, true, 512, 4, 1024);
  /* f32 at 4M: 4 groups of 4 lanes */
  expect_shape(512, 4194304 / 4, 4, 1, true, 512, 4, 512);
  /* f64 counts twice: 2 lanes, two registers each */
  expect_shape(200, 1 << 20, 2, 2, true, 512, 4, 200);
  /* three tensors of 8 lanes: 2 groups a trip */
  expect_shape(200, 1 << 20, 8, 3, true, 512, 2, 200);
  /* many rows: eight waves of two blocks an SM, walking the rest */
  expect_shape(100000, 1 << 18, 8, 1, true, 512, 4, 132 * 2 * 8);
  /* a row shorter than a block's trip: fewer warps */
  expect_shape(1000, 100, 1, 1, true, 32, 4, 1000);
  expect_shape(1000, 1000, 1, 1, true, 256, 4, 1000);
  /* fewer rows than SMs: none (the segmenter splits the rows) */
  expect_shape(131, 1 << 20, 4, 1, false, 0, 0, 0);
  expect_shape(8, 1 << 20, 4, 1, false, 0, 0, 0);
  /* nonsense sizes */
  expect_shape(0, 4, 1, 1, false, 0, 0, 0);
  expect_shape(1000, 0, 1, 1, false, 0, 0, 0);
}
END_TEST

START_TEST(long_rows_take_it) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX_BWD_BF16, "M=1024,N=262144");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  ck_assert(p->multipass);
  ck_assert_str_eq(p->kernel_name, "fz_inner_multipass");
  ck_assert_int_eq(p->cluster, 0);
  ck_assert_int_eq(p->block_x, 512);
  ck_assert_int_eq(p->block_y, 1);
  ck_assert_int_eq(p->vector, 8);
  ck_assert_int_eq(p->persistent, 4);
  ck_assert_int_eq(p->persistent_full, 0);
  ck_assert_int_eq(p->grid_x, 1024);
  ck_assert(p->index32);
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_OK);
  ck_assert_ptr_nonnull(strstr(fz_plan_key(p, s.arena), " multipass\n"));
  fz_buf text = {0};
  fz_plan_print(p, &text);
  ck_assert_ptr_nonnull(strstr(text.data, " phases=1 multipass\n"));
  free(text.data);
  scheduled_free(&s);
}
END_TEST

START_TEST(rows_on_chip_do_not) {
  /* 8K: one block a row; 64K: a cluster; neither key names multipass */
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX_BWD_BF16, "M=1024,N=8192");
  ck_assert(!p->multipass);
  ck_assert_str_eq(p->kernel_name, "fz_inner_persistent");
  ck_assert_ptr_null(strstr(fz_plan_key(p, s.arena), "multipass"));
  scheduled_free(&s);
  p = schedule(&s, SOFTMAX_BWD_BF16, "M=1024,N=65536");
  ck_assert(!p->multipass);
  ck_assert_int_eq(p->cluster, 8);
  scheduled_free(&s);
}
END_TEST

START_TEST(few_rows_do_not) {
  scheduled s;
  describe_problem(&s, test_parse(SOFTMAX_BWD_BF16), "M=8,N=262144");
  fz_error err = {0};
  ck_assert_int_eq(fz_schedule(&s.pb, s.arena, &s.plan, &err),
                   FZ_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(err.message, "multipass: 8 rows too long for a block"),
                "message: %s", err.message);
  scheduled_free(&s);
}
END_TEST

static void expect_refused(fz_plan *p, const char *what) {
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(err.message, what), "message: %s", err.message);
}

START_TEST(verify_refuses_bad_multipass) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX_BWD_BF16, "M=1024,N=262144");
  fz_plan saved = *p;
  p->block_y = 2;
  p->block_x = 256;
  expect_refused(p, "a multipass row");
  *p = saved;
  p->persistent_full = 1;
  expect_refused(p, "1 groups unmasked");
  *p = saved;
  p->cluster = 2;
  p->grid_x = 1024;
  expect_refused(p, "cluster 2");
  *p = saved;
  p->kind = FZ_PLAN_INNER_OUTER_PERSISTENT;
  expect_refused(p, "non-inner");
  scheduled_free(&s);

  p = schedule(&s, "fusion @e(%x: f32[N]) {\n  %y = exp %x : f32[N]\n"
                   "  return %y\n}\n",
               "N=1024");
  p->multipass = true;
  expect_refused(p, "multipass row on a plan that is not persistent");
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("persistent_multipass");
  TCase *c = tcase_create("multipass");
  tcase_add_test(c, shapes);
  tcase_add_test(c, long_rows_take_it);
  tcase_add_test(c, rows_on_chip_do_not);
  tcase_add_test(c, few_rows_do_not);
  tcase_add_test(c, verify_refuses_bad_multipass);
  suite_add_tcase(s, c);
  return s;
}

int main(void) { return test_run_suite(make()); }
