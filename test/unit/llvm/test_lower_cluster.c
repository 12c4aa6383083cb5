/* test_lower_cluster.c - the kernel of a cluster-persistent plan
 * (lib/lower/persistent_cluster.c): it reads the cluster's shape and its
 * rank, exchanges row partials through distributed shared memory between
 * two cluster barriers, ends with one more, and compiles for sm_90 only
 * (lib/nvptx refuses an older target instead of letting LLVM abort). */
#include <stdlib.h>

#include "lower_util.h"

#include "sched/plan.h"

#include "schedule_util.h"

static const char *RMS =
    "fusion @rms(%x: f32[M, N]) {\n"
    "  %sq = mul %x, %x : f32[M, N]\n"
    "  %s = sum %sq dims(1) keepdim : f32[M, b1]\n"
    "  %r = rsqrt %s : f32[M, b1]\n"
    "  %re = expand %r : f32[M, b1->N]\n"
    "  %y = mul %x, %re : f32[M, N]\n"
    "  return %y, %r\n"
    "}\n";

START_TEST(cluster_kernel) {
  scheduled s;
  fz_plan *p = schedule(&s, RMS, "M=8,N=131072");
  ck_assert_int_eq(p->cluster, 8);
  lowered l = lower_ok(p);
  ck_assert(has(l.ir, "@llvm.nvvm.read.ptx.sreg.cluster.nctarank"));
  ck_assert(has(l.ir, "@llvm.nvvm.read.ptx.sreg.cluster.ctarank"));
  ck_assert(has(l.ir, "@llvm.nvvm.read.ptx.sreg.clusterid.x"));
  ck_assert(has(l.ir, "@llvm.nvvm.mapa("));
  ck_assert(has(l.ir, "@fz_cluster_slots"));
  ck_assert(has(l.ir, "!\"minctasm\", i32 2"));
  /* one exchange for the one round, one barrier before the end */
  ck_assert_int_eq(count(l.ir, "call void @llvm.nvvm.barrier.cluster.arrive()"),
                   2);
  ck_assert_int_eq(count(l.ir, "call void @llvm.nvvm.barrier.cluster.wait()"),
                   2);
  char *ptx = to_ptx(&l);
  ck_assert(has(ptx, "barrier.cluster.arrive;"));
  ck_assert(has(ptx, "mapa.u64"));
  ck_assert(has(ptx, ".minnctapersm 2"));
  free(ptx);
  lowered_free(&l);

  /* the same kernel for sm_80: refused, not aborted */
  l = lower_ok(p);
  fz_nvptx_options opts = {.sm = 80, .opt_level = 3};
  char *old = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_nvptx_compile(l.mod, &opts, &old, &err),
                   FZ_ERR_UNSUPPORTED);
  ck_assert_ptr_null(old);
  ck_assert_msg(has(err.message, "thread-block clusters") &&
                    has(err.message, "sm_80"),
                "message: %s", err.message);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(one_block_kernel_has_no_cluster) {
  scheduled s;
  fz_plan *p = schedule(&s, RMS, "M=8,N=16384");
  ck_assert_int_eq(p->cluster, 0);
  lowered l = lower_ok(p);
  ck_assert(!has(l.ir, "cluster"));
  ck_assert(!has(l.ir, "mapa"));
  ck_assert(!has(l.ir, "minctasm"));
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("lower_cluster");
  TCase *c = tcase_create("cluster");
  tcase_set_timeout(c, 120);
  tcase_add_test(c, cluster_kernel);
  tcase_add_test(c, one_block_kernel_has_no_cluster);
  suite_add_tcase(s, c);
  return s;
}

int main(void) { return test_run_suite(make()); }
