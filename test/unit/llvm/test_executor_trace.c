/* test_executor_trace.c - the phase marks of a traced inner-outer kernel
 * (FZ_TRACE=phases), read back and summarized by fz_executor_last_trace,
 * on a fake CUDA driver (fake_cuda.h) whose fz_trace global this test
 * fills with clocks of its own making.
 *
 * The kernel is really scheduled and compiled (LLVM); only the driver is
 * fake. Checked: the report's numbers for known clocks (when the blocks
 * reached each mark, the median span from each block's previous mark, in
 * ns and cycles; a block that walked no row has no first-row mark); the
 * global is asked for by name and read whole, after the device is
 * synchronized; an untraced run reports nothing and asks for nothing; a
 * missing global, one of the wrong size and records from no launch are
 * errors that say so.
 */
#include "test_util.h"

#include "fake_cuda.h"
#include "test_fusions.h"
#include "runtime/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WORDS = FZ_TRACE_BLOCKS * FZ_TRACE_MARKS * 2 };
#define TOL 0.005 /* the report prints microseconds to 10 ns */
static const CUdeviceptr TRACE_AT = 0x5000000;

/* What this test's entry points record and answer, over fake_cuda's. */
static struct {
  int syncs, globals, copies;
  bool synced_before_copy;
  char asked[64];       /* the global's name */
  size_t global_bytes;  /* what cuModuleGetGlobal_v2 answers */
  CUresult global_status;
  unsigned grid_x;
  uint64_t words[WORDS]; /* what the copy hands back */
} drv;

static CUresult synchronize(void) {
  drv.syncs++;
  return CUDA_SUCCESS;
}
static CUresult get_global(CUdeviceptr *p, size_t *bytes, CUmodule m,
                           const char *name) {
  drv.globals++;
  snprintf(drv.asked, sizeof drv.asked, "%s", name);
  if (drv.global_status != CUDA_SUCCESS)
    return drv.global_status;
  *p = TRACE_AT;
  *bytes = drv.global_bytes;
  return CUDA_SUCCESS;
}
static CUresult copy_to_host(void *dst, CUdeviceptr src, size_t bytes) {
  drv.copies++;
  drv.synced_before_copy = drv.syncs > 0;
  ck_assert_uint_eq(src, TRACE_AT);
  ck_assert_uint_eq(bytes, sizeof drv.words);
  memcpy(dst, drv.words, bytes);
  return CUDA_SUCCESS;
}
static CUresult launch_coop(CUfunction f, unsigned gx, unsigned gy,
                            unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream s, void **params) {
  drv.grid_x = gx;
  return CUDA_SUCCESS;
}

static fz_cuda fake_cu;

/* Row sums used back in the row and a column sum: an inner-outer plan
 * (264 blocks of 64x2 threads at M=4096, N=2048 on 132 SMs). */
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
  setenv("FZ_TRACE", "phases", 1);
  memset(&drv, 0, sizeof drv);
  drv.global_bytes = sizeof drv.words;
  fake_cuda_init(&fake_cu);
  fake_cu.cuCtxSynchronize = synchronize;
  fake_cu.cuModuleGetGlobal_v2 = get_global;
  fake_cu.cuMemcpyDtoH_v2 = copy_to_host;
  fake_cu.cuLaunchCooperativeKernel = launch_coop;
  fake_cuda.num_regs = 64;
  fake_cuda.blocks_per_sm = 2;
  device = fake_cuda_device(&fake_cu);
  fusion = test_parse(text);
  make_executor();
}

static void teardown(void) {
  fz_executor_destroy(ex);
  fz_fusion_destroy(fusion);
  unsetenv("FZ_TRACE");
}

static fz_status run(fz_error *err) {
  return fake_cuda_run_rows_and_columns(ex, M, N, err);
}

static void expect_run(void) {
  fz_error err;
  ck_assert_msg(run(&err) == FZ_OK, "%s", err.message);
}

/* Mark m of every block b reached at 1000 + 8 b + AFTER[m] ns (cycles:
 * twice that); block 5 walked no row. */
static const int64_t AFTER[FZ_TRACE_MARKS] = {0, 2000, 20000, 21000, 23000,
                                              25000};
static void fill_clocks(int blocks) {
  for (int b = 0; b < blocks; b++)
    for (int m = 0; m < FZ_TRACE_MARKS; m++) {
      uint64_t t = 1000 + 8 * (uint64_t)b + (uint64_t)AFTER[m];
      bool none = b == 5 && m == FZ_TRACE_FIRST_ROW;
      drv.words[(b * FZ_TRACE_MARKS + m) * 2] = none ? 0 : t;
      drv.words[(b * FZ_TRACE_MARKS + m) * 2 + 1] = none ? 0 : 2 * t;
    }
}

typedef struct mark_line {
  int blocks;
  double min, median, max, span;
  long long cycles;
  bool has_span;
} mark_line;

/* The report's line for mark `name`; fails the test when it is missing. */
static mark_line line_of(const char *report, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "\n  %s ", name);
  const char *at = strstr(report, key);
  ck_assert_msg(at, "no line for %s in:\n%s", name, report);
  mark_line l = {0};
  char span[32], cycles[32];
  int n = sscanf(at + strlen(key), "%d %lf %lf %lf %31s %31s", &l.blocks,
                 &l.min, &l.median, &l.max, span, cycles);
  ck_assert_msg(n == 6, "line for %s: %s", name, at + 1);
  l.has_span = strcmp(span, "-") != 0;
  if (l.has_span) {
    l.span = atof(span);
    l.cycles = atoll(cycles);
  }
  return l;
}

START_TEST(test_report_of_known_clocks) {
  expect_run();
  ck_assert_msg(strstr(fz_executor_last_plan(ex), "trace=phases"), "%s",
                fz_executor_last_plan(ex));
  ck_assert_uint_eq(drv.grid_x, 264);
  fill_clocks(264);
  char *report = NULL;
  fz_error err;
  ck_assert_msg(fz_executor_last_trace(ex, &report, &err) == FZ_OK, "%s",
                err.message);
  ck_assert_ptr_nonnull(report);
  ck_assert_int_eq(drv.globals, 1);
  ck_assert_str_eq(drv.asked, "fz_trace");
  ck_assert_int_eq(drv.copies, 1);
  ck_assert(drv.synced_before_copy);
  ck_assert_msg(strstr(report, "trace fz_inner_outer_persistent: 264 of 264 "
                               "blocks") &&
                    strstr(report, "step 8 ns"),
                "%s", report);
  /* starts 0 .. 8 * 263 ns after the first: median of 131 and 132 */
  mark_line start = line_of(report, "start");
  ck_assert_int_eq(start.blocks, 264);
  ck_assert_double_eq_tol(start.min, 0, TOL);
  ck_assert_double_eq_tol(start.median, 1.052, TOL);
  ck_assert_double_eq_tol(start.max, 2.104, TOL);
  ck_assert(!start.has_span);
  mark_line first = line_of(report, "first-row");
  ck_assert_int_eq(first.blocks, 263);
  ck_assert_double_eq_tol(first.min, 2.0, TOL);
  ck_assert_double_eq_tol(first.span, 2.0, TOL);
  ck_assert_int_eq(first.cycles, 4000);
  /* block 5's span runs from its start: not the median */
  mark_line rows = line_of(report, "rows");
  ck_assert_int_eq(rows.blocks, 264);
  ck_assert_double_eq_tol(rows.span, 18.0, TOL);
  ck_assert_int_eq(rows.cycles, 36000);
  mark_line barrier = line_of(report, "grid-barrier");
  ck_assert_double_eq_tol(barrier.median, 24.052, TOL);
  ck_assert_double_eq_tol(barrier.span, 2.0, TOL);
  mark_line end = line_of(report, "end");
  ck_assert_double_eq_tol(end.max, 27.104, TOL);
  ck_assert_int_eq(end.cycles, 4000);
  free(report);
}
END_TEST

/* Without FZ_TRACE when the executor schedules: no marks, no report, and
 * nothing asked of the driver. */
START_TEST(test_untraced_run_reports_nothing) {
  fz_executor_destroy(ex);
  unsetenv("FZ_TRACE");
  make_executor();
  expect_run();
  ck_assert_ptr_null(strstr(fz_executor_last_plan(ex), "trace="));
  char *report = (char *)"unset";
  fz_error err;
  ck_assert_int_eq(fz_executor_last_trace(ex, &report, &err), FZ_OK);
  ck_assert_ptr_null(report);
  ck_assert_int_eq(drv.globals + drv.copies + drv.syncs, 0);
}
END_TEST

/* Before any run, and bad arguments. */
START_TEST(test_no_run_and_bad_arguments) {
  char *report = (char *)"unset";
  fz_error err;
  ck_assert_int_eq(fz_executor_last_trace(ex, &report, &err), FZ_OK);
  ck_assert_ptr_null(report);
  ck_assert_int_eq(fz_executor_last_trace(NULL, &report, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_ptr_null(report);
  ck_assert_int_eq(fz_executor_last_trace(ex, NULL, &err), FZ_ERR_ARGUMENT);
}
END_TEST

/* A module without the global: the driver's error, naming the call. */
START_TEST(test_missing_global) {
  expect_run();
  drv.global_status = CUDA_ERROR_NOT_FOUND;
  char *report = NULL;
  fz_error err;
  ck_assert_int_eq(fz_executor_last_trace(ex, &report, &err), FZ_ERR_CUDA);
  ck_assert_ptr_null(report);
  ck_assert_msg(strstr(err.message, "cuModuleGetGlobal_v2"), "%s",
                err.message);
  ck_assert_int_eq(drv.copies, 0);
}
END_TEST

/* A global of another layout (another fz's module): refused, not read. */
START_TEST(test_global_of_wrong_size) {
  expect_run();
  drv.global_bytes = 4096;
  char *report = NULL;
  fz_error err;
  ck_assert_int_eq(fz_executor_last_trace(ex, &report, &err),
                   FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(err.message, "fz_trace has 4096 bytes, not 98304"),
                "%s", err.message);
  ck_assert_int_eq(drv.copies, 0);
}
END_TEST

/* No block's start recorded, or a mark before every start: the records
 * are not one launch's. */
START_TEST(test_records_from_no_launch) {
  expect_run();
  char *report = NULL;
  fz_error err;
  ck_assert_int_eq(fz_executor_last_trace(ex, &report, &err),
                   FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(err.message, "no block recorded its start"), "%s",
                err.message);
  fill_clocks(264);
  drv.words[(7 * FZ_TRACE_MARKS + FZ_TRACE_END) * 2] = 10;
  ck_assert_int_eq(fz_executor_last_trace(ex, &report, &err),
                   FZ_ERR_INTERNAL);
  ck_assert_ptr_null(report);
  ck_assert_msg(strstr(err.message, "block 7 reached end before any block "
                                    "started"),
                "%s", err.message);
}
END_TEST

/* The summary alone: a grid larger than the blocks recorded says so. */
START_TEST(test_format_of_part_of_a_grid) {
  fill_clocks(3);
  fz_buf b = {0};
  fz_error err;
  ck_assert_int_eq(fz_trace_format(drv.words, 3, 2000, "k", &b, &err), FZ_OK);
  char *s = fz_buf_take(&b);
  ck_assert_msg(strstr(s, "trace k: 3 of 2000 blocks"), "%s", s);
  ck_assert_int_eq(line_of(s, "end").blocks, 3);
  free(s);
  ck_assert_int_eq(fz_trace_format(drv.words, 0, 2000, "k", &b, &err),
                   FZ_ERR_ARGUMENT);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("executor_trace");
  TCase *tc = tcase_create("fake driver");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_report_of_known_clocks);
  tcase_add_test(tc, test_untraced_run_reports_nothing);
  tcase_add_test(tc, test_no_run_and_bad_arguments);
  tcase_add_test(tc, test_missing_global);
  tcase_add_test(tc, test_global_of_wrong_size);
  tcase_add_test(tc, test_records_from_no_launch);
  tcase_add_test(tc, test_format_of_part_of_a_grid);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
