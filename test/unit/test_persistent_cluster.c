/* test_persistent_cluster.c - the cluster-persistent schedule of rows that
 * outgrow one SM (lib/sched/persistent_cluster.c): which rows take a
 * cluster and of what shape, that sm_80 keeps the one-block plans, that
 * the plans verify and their keys name the cluster, that
 * fz_plan_verify refuses a cluster where the lowering has none, and
 * which plans prefetch the next row, into two buffers or one. */
#include <stdlib.h>
#include <string.h>

#include "llvm/schedule_util.h"
#include "sched/persistent_cluster.h"
#include "test_fusions.h"

static const char *SOFTMAX = FZ_TEST_SOFTMAX("softmax", "f32");

static const char *RMS_NORM_BF16 =
    "fusion @rms(%x: bf16[M, N], %w: bf16[N]) {\n"
    "  %xf = cast %x : f32[M, N]\n"
    "  %sq = mul %xf, %xf : f32[M, N]\n"
    "  %s = sum %sq dims(1) keepdim : f32[M, b1]\n"
    "  %r = rsqrt %s : f32[M, b1]\n"
    "  %re = expand %r : f32[M, b1->N]\n"
    "  %xn = mul %xf, %re : f32[M, N]\n"
    "  %wf = cast %w : f32[N]\n"
    "  %wb = broadcast %wf dims(0) : f32[b1, N]\n"
    "  %we = expand %wb : f32[b1->M, N]\n"
    "  %y = mul %xn, %we : f32[M, N]\n"
    "  %yb = cast %y : bf16[M, N]\n"
    "  return %yb\n"
    "}\n";

static void expect_shape(int64_t groups, int vector, int held, bool want,
                         int cluster, int block_x, int persistent) {
  fz_cluster_shape sh;
  bool got = fz_cluster_shape_choose(groups, vector, held, &sh);
  ck_assert_msg(got == want, "groups %lld vector %d held %d: %s",
                (long long)groups, vector, held, got ? "cluster" : "none");
  if (!want) {
    ck_assert_int_eq(sh.cluster, 0);
    return;
  }
  ck_assert_int_eq(sh.cluster, cluster);
  ck_assert_int_eq(sh.block_x, block_x);
  ck_assert_int_eq(sh.persistent, persistent);
  /* the lowering's guard: the last group of a thread is the only one
   * that may pass the row's end */
  int64_t covered = (int64_t)sh.persistent * sh.cluster * sh.block_x;
  ck_assert(covered >= groups);
  ck_assert(covered - (int64_t)sh.cluster * sh.block_x < groups);
  ck_assert(sh.persistent * vector * held <= 32);
}

START_TEST(shapes) {
  /* up to 32K held values: one block a row, as before */
  expect_shape(32768 / 4, 4, 1, false, 0, 0, 0);
  expect_shape(32768 / 8, 8, 1, false, 0, 0, 0);
  expect_shape(16384 / 4, 4, 2, false, 0, 0, 0);
  /* 64K f32: 4 blocks of 512 threads, 8 groups of 4 lanes each */
  expect_shape(65536 / 4, 4, 1, true, 4, 512, 8);
  /* 128K f32 and bf16: 8 blocks of 512 */
  expect_shape(131072 / 4, 4, 1, true, 8, 512, 8);
  expect_shape(131072 / 8, 8, 1, true, 8, 512, 4);
  /* 256K: 8 blocks of 1024 threads (one a SM) */
  expect_shape(262144 / 4, 4, 1, true, 8, 1024, 8);
  expect_shape(262144 / 8, 8, 1, true, 8, 1024, 4);
  /* two tensors held: 64K in 8 blocks of 512, 128K of 1024, 256K none */
  expect_shape(65536 / 4, 4, 2, true, 8, 512, 4);
  expect_shape(131072 / 4, 4, 2, true, 8, 1024, 4);
  expect_shape(262144 / 4, 4, 2, false, 0, 0, 0);
  /* lengths no power of two: scalar lanes, idle last groups */
  expect_shape(100003, 1, 1, true, 8, 512, 25);
  expect_shape(65540 / 4, 4, 1, true, 8, 512, 5);
  /* too long for 8 blocks: none (segmented as before) */
  expect_shape(1 << 20, 1, 1, false, 0, 0, 0);
  expect_shape(300001, 1, 1, false, 0, 0, 0);
  /* nonsense sizes */
  expect_shape(0, 4, 1, false, 0, 0, 0);
}
END_TEST

START_TEST(softmax_plans) {
  scheduled s;
  /* without prefetch (below, the plans that prefetch) */
  setenv("FZ_CLUSTER_PREFETCH", "0", 1);
  fz_plan *p = schedule(&s, SOFTMAX, "M=1024,N=131072");
  unsetenv("FZ_CLUSTER_PREFETCH");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  ck_assert_int_eq(p->cluster, 8);
  ck_assert_int_eq(p->block_x, 512);
  ck_assert_int_eq(p->block_y, 1);
  ck_assert_int_eq(p->threads, 512);
  ck_assert_int_eq(p->persistent, 8);
  ck_assert_int_eq(p->grid_x % p->cluster, 0);
  /* eight waves of 32 resident clusters (two 512-thread blocks an SM) */
  ck_assert_int_eq(p->grid_x, 8 * (132 / 8 * 2) * 8);
  ck_assert_int_eq(p->blocks, p->grid_x);
  ck_assert(!p->cooperative && !p->prefetch);
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_OK);
  const char *key = fz_plan_key(p, s.arena);
  ck_assert_ptr_nonnull(strstr(key, " cluster=8\n"));
  fz_buf text = {0};
  fz_plan_print(p, &text);
  ck_assert_ptr_nonnull(strstr(text.data, " phases=2 cluster=8\n"));
  free(text.data);
  scheduled_free(&s);

  /* few rows: a cluster a row */
  p = schedule(&s, SOFTMAX, "M=3,N=131072");
  ck_assert_int_eq(p->grid_x, 3 * 8);
  scheduled_free(&s);

  /* 32K: one block, no cluster, and a key without one */
  p = schedule(&s, SOFTMAX, "M=8,N=32768");
  ck_assert_int_eq(p->cluster, 0);
  ck_assert_ptr_null(strstr(fz_plan_key(p, s.arena), "cluster"));
  scheduled_free(&s);
}
END_TEST

START_TEST(weight_row_not_held) {
  /* the weight row varies along the row but not across rows: loaded where
   * used, so only x counts: a 32K bf16 row keeps one block, 64K clusters */
  scheduled s;
  fz_plan *p = schedule(&s, RMS_NORM_BF16, "M=8,N=32768");
  ck_assert_int_eq(p->cluster, 0);
  scheduled_free(&s);
  p = schedule(&s, RMS_NORM_BF16, "M=8,N=65536");
  ck_assert_int_eq(p->cluster, 4);
  ck_assert_int_eq(p->vector, 8);
  ck_assert_int_eq(p->persistent, 4);
  scheduled_free(&s);
}
END_TEST

START_TEST(eight_byte_values_count_twice) {
  /* f64: two registers a value, so a 64K row needs the registers of a
   * 128K f32 row (8 blocks), and a 16K one keeps one block */
  static const char *RMS_F64 =
      "fusion @rms64(%x: f64[M, N]) {\n"
      "  %sq = mul %x, %x : f64[M, N]\n"
      "  %s = sum %sq dims(1) keepdim : f64[M, b1]\n"
      "  %r = rsqrt %s : f64[M, b1]\n"
      "  %re = expand %r : f64[M, b1->N]\n"
      "  %y = mul %x, %re : f64[M, N]\n"
      "  return %y\n"
      "}\n";
  scheduled s;
  fz_plan *p = schedule(&s, RMS_F64, "M=4,N=65536");
  ck_assert_int_eq(p->vector, 2);
  ck_assert_int_eq(p->cluster, 8);
  ck_assert_int_eq(p->block_x, 512);
  ck_assert_int_eq(p->persistent, 8);
  scheduled_free(&s);
  p = schedule(&s, RMS_F64, "M=4,N=16384");
  ck_assert_int_eq(p->cluster, 0);
  scheduled_free(&s);
}
END_TEST

START_TEST(no_clusters_before_sm90) {
  scheduled s;
  describe_problem(&s, test_parse(SOFTMAX), "M=8,N=131072");
  s.pb.device = fz_device_info_default(80);
  fz_error err = {0};
  ck_assert_int_eq(fz_schedule(&s.pb, s.arena, &s.plan, &err), FZ_OK);
  ck_assert_int_eq(s.plan->cluster, 0);
  ck_assert_int_eq(s.plan->block_x, 1024);
  scheduled_free(&s);
}
END_TEST

static void expect_refused(fz_plan *p, const char *what) {
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(err.message, what), "message: %s", err.message);
}

START_TEST(verify_refuses_bad_clusters) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=8,N=131072");
  fz_plan saved = *p;
  p->cluster = 16;
  expect_refused(p, "a cluster of 16 blocks");
  *p = saved;
  p->cluster = 1;
  expect_refused(p, "a cluster of 1 blocks");
  *p = saved;
  p->grid_x += 1;
  p->blocks = p->grid_x;
  expect_refused(p, "grid");
  *p = saved;
  p->block_y = 2;
  p->block_x = 256;
  expect_refused(p, "block 256x2");
  *p = saved;
  p->kind = FZ_PLAN_INNER_OUTER_PERSISTENT;
  expect_refused(p, "non-inner");
  scheduled_free(&s);

  p = schedule(&s, "fusion @e(%x: f32[N]) {\n  %y = exp %x : f32[N]\n"
                   "  return %y\n}\n",
               "N=1024");
  p->cluster = 2;
  expect_refused(p, "not persistent");
  scheduled_free(&s);
}
END_TEST

static const char *SOFTMAX_BF16 = FZ_TEST_SOFTMAX("softmax", "bf16");

/* More rows than resident clusters, and buffers that fit: one wave of
 * clusters, each walking rows with the next row prefetched; the plan
 * verifies, its key says so, and a prefetched input that does not move
 * in whole cp.async pieces is refused. FZ_CLUSTER_PREFETCH=0 keeps the
 * waves without prefetch. */
START_TEST(prefetch_when_clusters_walk_rows) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX_BF16, "M=1024,N=262144");
  ck_assert_int_eq(p->cluster, 8);
  ck_assert_int_eq(p->block_x, 1024);
  ck_assert(p->prefetch);
  /* one 1024-thread block an SM: 132 / 8 = 16 clusters */
  ck_assert_int_eq(p->grid_x, 16 * 8);
  /* two buffers of 4 groups of 16 bytes a thread */
  ck_assert_uint_eq(fz_plan_shared_bytes(p), 2 * 4 * 1024 * 16);
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_OK);
  ck_assert_ptr_nonnull(strstr(fz_plan_key(p, s.arena), " prefetch reduced="));
  ck_assert(!p->prefetch_single);
  p->accesses[0].vector = 1;
  expect_refused(p, "whole 4-, 8- or 16-byte cp.async pieces");
  scheduled_free(&s);

  /* two 512-thread blocks an SM, 64 KiB each */
  p = schedule(&s, SOFTMAX_BF16, "M=4096,N=65536");
  ck_assert(p->prefetch);
  ck_assert_int_eq(p->grid_x, 132 / 4 * 2 * 4);
  scheduled_free(&s);

  /* no second wave of rows: nothing to prefetch */
  p = schedule(&s, SOFTMAX_BF16, "M=16,N=262144");
  ck_assert(!p->prefetch);
  ck_assert_int_eq(p->grid_x, 16 * 8);
  scheduled_free(&s);

  setenv("FZ_CLUSTER_PREFETCH", "0", 1);
  p = schedule(&s, SOFTMAX_BF16, "M=4096,N=65536");
  unsetenv("FZ_CLUSTER_PREFETCH");
  ck_assert(!p->prefetch);
  ck_assert_int_eq(p->grid_x, 8 * (132 / 4 * 2) * 4);
  scheduled_free(&s);
}
END_TEST

/* Where two buffers do not fit but one does, for blocks of 1024 threads
 * alone on their SM (f32 rows of 256K), one buffer: still one wave of
 * resident clusters, one buffer's shared memory, `prefetch=1` in the key
 * and the launch line (another kernel than the double-buffered one), and
 * the plan verifies. Blocks of 512 threads, two an SM (f32 rows of 64K
 * and 128K), keep the waves without prefetch, at the smallest cluster. A
 * single buffer anywhere but a prefetching cluster plan is refused;
 * FZ_CLUSTER_PREFETCH=0 turns both off. */
START_TEST(single_buffer_where_two_do_not_fit) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=512,N=262144");
  ck_assert_int_eq(p->cluster, 8);
  ck_assert_int_eq(p->block_x, 1024);
  ck_assert(p->prefetch && p->prefetch_single);
  /* one 1024-thread block an SM: 132 / 8 = 16 clusters */
  ck_assert_int_eq(p->grid_x, 16 * 8);
  /* one buffer of 8 groups of 16 bytes a thread: 128 KiB */
  ck_assert_uint_eq(fz_plan_shared_bytes(p), 8 * 1024 * 16);
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_OK);
  const char *key = fz_plan_key(p, s.arena);
  ck_assert_ptr_nonnull(strstr(key, " prefetch=1 reduced="));
  fz_buf text = {0};
  fz_plan_print(p, &text);
  ck_assert_ptr_nonnull(strstr(text.data, " phases=2 prefetch=1 cluster=8\n"));
  free(text.data);
  /* the same plan with two buffers: another key */
  p->prefetch_single = false;
  ck_assert_str_ne(fz_plan_key(p, s.arena), key);
  ck_assert_uint_eq(fz_plan_shared_bytes(p), 2 * 8 * 1024 * 16);
  p->prefetch_single = true;
  /* three buffers with the single one, or without prefetch: refused */
  fz_plan saved = *p;
  p->prefetch_deep = true;
  expect_refused(p, "three prefetch buffers on a plan that has a single one");
  p->prefetch_single = false;
  p->prefetch = false;
  expect_refused(p, "three prefetch buffers on a plan that does not prefetch");
  *p = saved;
  /* refused without prefetch, and on a plan without a cluster */
  p->prefetch = false;
  expect_refused(p, "single prefetch buffer on a plan that does not prefetch");
  *p = saved;
  p->cluster = 0;
  p->grid_x = 512;
  p->blocks = p->grid_x;
  p->block_x = p->threads = 1024;
  p->persistent = 64;
  p->persistent_full = 63;
  expect_refused(p, "single prefetch buffer on a plan that is not a cluster");
  scheduled_free(&s);

  /* 64K and 128K: two 512-thread blocks an SM, no prefetch, the
   * smallest cluster, eight waves of resident clusters */
  p = schedule(&s, SOFTMAX, "M=2048,N=65536");
  ck_assert(!p->prefetch && !p->prefetch_single);
  ck_assert_int_eq(p->cluster, 4);
  ck_assert_int_eq(p->block_x, 512);
  ck_assert_int_eq(p->grid_x, 8 * 66 * 4);
  scheduled_free(&s);
  p = schedule(&s, SOFTMAX, "M=1024,N=131072");
  ck_assert(!p->prefetch && !p->prefetch_single);
  ck_assert_int_eq(p->grid_x, 8 * 32 * 8);
  scheduled_free(&s);

  /* no second wave of rows: nothing to prefetch, one buffer or two */
  p = schedule(&s, SOFTMAX, "M=16,N=262144");
  ck_assert(!p->prefetch && !p->prefetch_single);
  ck_assert_int_eq(p->grid_x, 16 * 8);
  scheduled_free(&s);

  setenv("FZ_CLUSTER_PREFETCH", "0", 1);
  p = schedule(&s, SOFTMAX, "M=512,N=262144");
  unsetenv("FZ_CLUSTER_PREFETCH");
  ck_assert(!p->prefetch && !p->prefetch_single);
  /* eight waves of 16 clusters of 8 */
  ck_assert_int_eq(p->grid_x, 8 * 16 * 8);
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("persistent_cluster");
  TCase *c = tcase_create("cluster");
  tcase_add_test(c, shapes);
  tcase_add_test(c, softmax_plans);
  tcase_add_test(c, weight_row_not_held);
  tcase_add_test(c, eight_byte_values_count_twice);
  tcase_add_test(c, no_clusters_before_sm90);
  tcase_add_test(c, verify_refuses_bad_clusters);
  tcase_add_test(c, prefetch_when_clusters_walk_rows);
  tcase_add_test(c, single_buffer_where_two_do_not_fit);
  suite_add_tcase(s, c);
  return s;
}

int main(void) { return test_run_suite(make()); }
