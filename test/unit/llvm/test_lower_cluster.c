/* test_lower_cluster.c - the kernel of a cluster-persistent plan
 * (lib/lower/persistent_cluster.c): it reads the cluster's shape and its
 * rank, exchanges row partials through distributed shared memory between
 * two cluster barriers, ends with one more, and compiles for sm_90 only
 * (lib/nvptx refuses an older target instead of letting LLVM abort); a
 * single prefetch buffer is refilled only after the row's reads. */
#include <stdlib.h>

#include "lower_util.h"

#include "sched/plan.h"

#include "schedule_util.h"
#include "test_fusions.h"

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

static const char *SOFTMAX = FZ_TEST_SOFTMAX("softmax", "f32");

/* text[from, to) of one string; malloc'd */
static char *span(const char *from, const char *to) {
  size_t n = (size_t)(to - from);
  char *s = malloc(n + 1);
  memcpy(s, from, n);
  s[n] = '\0';
  return s;
}

static const char *find(const char *text, const char *needle) {
  const char *at = strstr(text, needle);
  ck_assert_msg(report(at != NULL, text), "no '%s'", needle);
  return at;
}

/* One prefetch buffer (f32 rows of 256K, blocks of 1024 threads): a thread refills its slots
 * with the next row only after it has read them for the current row and
 * a block barrier has passed (persistent_prefetch.c), and waits for all
 * its copies (wait_group 0, never 1) before the next row's reads. In the
 * lowered IR the copies' block follows the first row combine's barrier
 * and copies into the buffer it reads (no parity), its sources steps
 * from group 0's; in the PTX, in the
 * loop: the wait, the row's 8 reads from shared memory, the max that
 * consumes them, the shuffles and the barrier of round 0's combine, then
 * the 8 copies, committed before the cluster exchange. */
START_TEST(single_buffer_refilled_after_the_reads) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=512,N=262144");
  ck_assert(p->prefetch && p->prefetch_single);
  ck_assert_int_eq(p->persistent, 8);
  lowered l = lower_ok(p);
  ck_assert_count(l.ir, "call void @llvm.nvvm.cp.async.wait.group(i32 0)", 1);
  ck_assert(!has(l.ir, "cp.async.wait.group(i32 1)"));
  ck_assert(!has(l.ir, "xor i32 %pf.buf"));
  ck_assert_has(l.ir, "\npf.next:                                          "
                      "; preds = %warp.publish.end\n");
  const char *barrier = find(l.ir, "\nwarp.publish.end:");
  ck_assert(strstr(barrier, "@llvm.nvvm.barrier0()") <
            strstr(barrier, "\npf.next:"));
  const char *wait = find(l.ir, "cp.async.wait.group(i32 0)");
  char *reads = span(wait, find(wait, "\npf.next:"));
  ck_assert_count(reads, "load <4 x float>, ptr addrspace(3)", 8);
  free(reads);
  /* the copies' sources: group 0's address and the masked group's from
   * the row's offsets, the six between as steps of 8 * 1024 * 4 elements
   * from group 0's (no per-group offset kept across the row loop) */
  const char *refill = find(l.ir, "\npf.next:");
  char *next = span(refill, find(refill, "\npf.next.end:"));
  ck_assert_count(next, "getelementptr inbounds float, ptr addrspace(1) %a0,",
                  2);
  ck_assert_has(next, ", i32 32768\n");
  ck_assert_has(next, ", i32 196608\n");
  free(next);

  char *ptx = to_ptx(&l);
  if (!ptx) { /* no libdevice (for exp): skipped */
    lowered_free(&l);
    scheduled_free(&s);
    return;
  }
  ck_assert_count(ptx, "cp.async.wait_group 0;", 1);
  ck_assert(!has(ptx, "cp.async.wait_group 1"));
  ck_assert_count(ptx, "cp.async.cg.shared.global", 2 * 8);
  const char *loop = find(ptx, "cp.async.wait_group 0;");
  const char *copy = find(loop, "cp.async.cg.shared.global");
  char *row = span(loop, copy);
  ck_assert_count(row, "ld.shared.v4.f32", 8);
  const char *last_read = row;
  for (const char *r = row; (r = strstr(r, "ld.shared.v4.f32")); r++)
    last_read = r;
  ck_assert_has(last_read, "max.NaN.f32");
  ck_assert_has(find(last_read, "max.NaN.f32"), "shfl.sync.bfly");
  ck_assert_has(find(last_read, "shfl.sync.bfly"), "bar.sync");
  free(row);
  ck_assert(!has(copy, "ld.shared.v4.f32"));
  ck_assert_count(copy, "cp.async.cg.shared.global", 8);
  ck_assert_has(find(copy, "cp.async.commit_group"), "barrier.cluster.arrive");
  assemble(ptx);
  free(ptx);
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
  tcase_add_test(c, single_buffer_refilled_after_the_reads);
  suite_add_tcase(s, c);
  return s;
}

int main(void) { return test_run_suite(make()); }
