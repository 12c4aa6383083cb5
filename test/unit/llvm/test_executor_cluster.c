/* test_executor_cluster.c - the launch of an inner-outer plan whose column
 * partials meet in a thread-block cluster (column_cluster, sm_90), on a
 * fake CUDA driver (fake_cuda.h) whose launches and cluster occupancy
 * query this test records.
 *
 * The kernel is really scheduled and compiled (LLVM); only the driver is
 * fake. Checked: the grid is cooperative and in whole clusters, no larger
 * than the clusters cuOccupancyMaxActiveClusters keeps resident; the
 * launch is one cuLaunchKernelEx with the cluster dimension and the
 * cooperative flag; the workspace holds a row of partials per cluster;
 * a device that keeps no cluster is refused with a message naming the
 * switch that turns the clusters off; FZ_INNER_OUTER_CLUSTER=off gives
 * the cooperative launch without clusters.
 */
#include "test_util.h"

#include "fake_cuda.h"
#include "test_fusions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What this test's entry points record and answer, over fake_cuda's. */
static struct {
  int clusters;          /* what the cluster occupancy query answers */
  int occupancy_cluster; /* the cluster dimension that query was given */
  int launches_ex, launches_coop, launches_plain;
  unsigned grid_x;
  unsigned num_attrs;
  CUlaunchAttribute attrs[2];
  uint64_t workspace, counters; /* the last launch's two pointers */
} drv;

static void record_workspace(void **params) {
  int n = fake_cuda.num_params;
  ck_assert_int_ge(n, 2);
  memcpy(&drv.workspace, params[n - 2], 8);
  memcpy(&drv.counters, params[n - 1], 8);
}
static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                       CUstream s, void **params, void **extra) {
  drv.launches_plain++;
  return CUDA_SUCCESS;
}
static CUresult launch_coop(CUfunction f, unsigned gx, unsigned gy,
                            unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream s, void **params) {
  drv.launches_coop++;
  drv.grid_x = gx;
  record_workspace(params);
  return CUDA_SUCCESS;
}
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f,
                          void **params, void **extra) {
  drv.launches_ex++;
  drv.grid_x = c->gridDimX;
  drv.num_attrs = c->numAttrs;
  for (unsigned i = 0; i < c->numAttrs && i < 2; i++)
    drv.attrs[i] = c->attrs[i];
  record_workspace(params);
  return CUDA_SUCCESS;
}
static CUresult max_clusters(int *n, CUfunction f, const CUlaunchConfig *c) {
  ck_assert_uint_ge(c->numAttrs, 1);
  ck_assert_int_eq(c->attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  drv.occupancy_cluster = (int)c->attrs[0].value.clusterDim.x;
  *n = drv.clusters;
  return CUDA_SUCCESS;
}

static fz_cuda fake_cu; /* filled in setup */

/* Row sums used back in the row, and a column sum over the rows: an
 * inner-outer plan. At M=4096, N=2048 on 132 SMs: blocks of 64x2 threads,
 * a grid of 264 (two blocks an SM, the scheduler's estimate), clusters of
 * 2 (fuse-opt --emit=sched shows "column-cluster=2"). */
static const char *text = FZ_TEST_ROWS_AND_COLUMNS("rows_and_columns");
enum { M = 4096, N = 2048 };

static fz_device device;
static fz_fusion *fusion;
static fz_executor *ex;

static void make_executor(void) {
  fz_error err;
  ck_assert_msg(fz_executor_create(fusion, &device, &ex, &err) == FZ_OK, "%s",
                err.message);
}

static void setup(void) {
  setenv("FZ_CACHE_DIR", "off", 1);
  setenv("FZ_INNER_OUTER_CLUSTER", "2", 1);
  memset(&drv, 0, sizeof drv);
  fake_cuda_init(&fake_cu);
  fake_cu.cuLaunchKernel = launch;
  fake_cu.cuLaunchCooperativeKernel = launch_coop;
  fake_cu.cuLaunchKernelEx = launch_ex;
  fake_cu.cuOccupancyMaxActiveClusters = max_clusters;
  fake_cuda.num_regs = 64;
  fake_cuda.blocks_per_sm = 2;
  drv.clusters = 100;
  device = fake_cuda_device(&fake_cu);
  /* the name a refusal must quote */
  snprintf(device.props.name, sizeof device.props.name, "Fake H200");
  fusion = test_parse(text);
  make_executor();
}

static void teardown(void) {
  fz_executor_destroy(ex);
  fz_fusion_destroy(fusion);
  unsetenv("FZ_INNER_OUTER_CLUSTER");
}

static fz_status run(fz_error *err) {
  return fake_cuda_run_rows_and_columns(ex, M, N, err);
}

static void expect_run(void) {
  fz_error err;
  ck_assert_msg(run(&err) == FZ_OK, "%s", err.message);
}

/* The workspace of `rows` rows of N f32 partials: the counters follow at
 * the next 256-byte boundary. */
static void expect_workspace_rows(uint64_t rows) {
  ck_assert_uint_eq(drv.counters - drv.workspace,
                    (4 * N * rows + 255) / 256 * 256);
}

/* 100 clusters of 2 resident, fewer blocks than two an SM: the grid is
 * theirs; the workspace keeps the plan's 264 / 2 rows. */
START_TEST(test_grid_of_resident_clusters) {
  expect_run();
  const char *plan = fz_executor_last_plan(ex);
  ck_assert_msg(strstr(plan, "column-cluster=2"), "%s", plan);
  ck_assert_int_eq(drv.launches_ex, 1);
  ck_assert_int_eq(drv.launches_coop + drv.launches_plain, 0);
  ck_assert_int_eq(drv.occupancy_cluster, 2);
  ck_assert_uint_eq(drv.grid_x, 200);
  ck_assert_uint_eq(drv.num_attrs, 2);
  ck_assert_int_eq(drv.attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  ck_assert_uint_eq(drv.attrs[0].value.clusterDim.x, 2);
  ck_assert_uint_eq(drv.attrs[0].value.clusterDim.y, 1);
  ck_assert_int_eq(drv.attrs[1].id, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  ck_assert_int_eq(drv.attrs[1].value.cooperative, 1);
  expect_workspace_rows(132);
}
END_TEST

/* More clusters than the per-SM count allows blocks: the per-SM count
 * bounds the grid, rounded down to whole clusters (131 SMs, one block
 * each: 130 blocks). */
START_TEST(test_grid_in_whole_clusters) {
  fz_executor_destroy(ex);
  device.props.sm_count = 131;
  make_executor();
  fake_cuda.blocks_per_sm = 1;
  drv.clusters = 500;
  expect_run();
  ck_assert_int_eq(drv.launches_ex, 1);
  ck_assert_uint_eq(drv.grid_x, 130);
}
END_TEST

/* Not one cluster resident: refused before any launch, saying how to do
 * without clusters. */
START_TEST(test_no_resident_cluster) {
  drv.clusters = 0;
  fz_error err;
  ck_assert_int_eq(run(&err), FZ_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(err.message, "cannot keep even one cluster of 2 "
                                    "blocks") &&
                    strstr(err.message, "Fake H200") &&
                    strstr(err.message, "FZ_INNER_OUTER_CLUSTER=off"),
                "%s", err.message);
  ck_assert_int_eq(drv.launches_ex + drv.launches_coop + drv.launches_plain,
                   0);
}
END_TEST

/* FZ_INNER_OUTER_CLUSTER=off when the executor schedules: the cooperative
 * launch of every block's partials, a workspace row per block. */
START_TEST(test_clusters_off) {
  setenv("FZ_INNER_OUTER_CLUSTER", "off", 1);
  expect_run();
  const char *plan = fz_executor_last_plan(ex);
  ck_assert_msg(!strstr(plan, "column-cluster"), "%s", plan);
  ck_assert_int_eq(drv.launches_coop, 1);
  ck_assert_int_eq(drv.launches_ex, 0);
  ck_assert_uint_eq(drv.grid_x, 264);
  expect_workspace_rows(264);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("executor_cluster");
  TCase *tc = tcase_create("fake driver");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_grid_of_resident_clusters);
  tcase_add_test(tc, test_grid_in_whole_clusters);
  tcase_add_test(tc, test_no_resident_cluster);
  tcase_add_test(tc, test_clusters_off);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
