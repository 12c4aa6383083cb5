/* test_executor_memory.c - where an executor's scratch memory comes from.
 *
 * The executor runs against a fake CUDA driver (fake_cuda.h: it counts
 * allocations and reports stream capture) whose memsets and launches this
 * test records, parameters included, so that the memory contract (fz.h:
 * fz_executor_set_allocator, signature limit, CUDA graph capture, calls
 * on several streams) is checked on machines without a GPU. Kernels are really scheduled and compiled (LLVM); only the
 * driver is fake. The fusion is a full sum long enough to be split across
 * blocks, so its kernel takes a workspace and counters: its last two
 * parameters.
 */
#include "test_util.h"

#include "fake_cuda.h"

#include <stdlib.h>
#include <string.h>

#define STREAM_A ((CUstream)0xa0)
#define STREAM_B ((CUstream)0xb0)

/* What this test's entry points record, over fake_cuda's. */
static struct {
  int memsets;
  CUstream memset_stream;
  CUdeviceptr memset_dst;
  size_t memset_bytes;
  int launches;
  unsigned grid_x, grid_y; /* the last launch's grid */
  uint64_t workspace;    /* the last launch's workspace pointer */
  uint64_t counters;     /* and counters pointer */
  CUstream launch_stream;
} drv;

/* the fake's cuMemFree_v2 (it counts), for blocks that exist */
static CUresult (*fake_free)(CUdeviceptr p);
static CUresult mem_free(CUdeviceptr p) {
  ck_assert_msg(p != 0, "cuMemFree called with 0");
  return fake_free(p);
}
static CUresult memset_async(CUdeviceptr dst, unsigned char v, size_t n,
                             CUstream s) {
  ck_assert_int_eq(v, 0);
  drv.memsets++;
  drv.memset_stream = s;
  drv.memset_dst = dst;
  drv.memset_bytes = n;
  return CUDA_SUCCESS;
}
static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                       CUstream s, void **params, void **extra) {
  int n = fake_cuda.num_params;
  ck_assert_int_ge(n, 2);
  drv.launches++;
  drv.launch_stream = s;
  drv.grid_x = gx;
  drv.grid_y = gy;
  memcpy(&drv.workspace, params[n - 2], 8);
  memcpy(&drv.counters, params[n - 1], 8);
  return CUDA_SUCCESS;
}

/* filled anew in setup: a test takes the occupancy query away */
static fz_cuda fake_cu;

static fz_device device;
static fz_fusion *fusion;
static fz_executor *ex;

static void setup(void) {
  setenv("FZ_CACHE_DIR", "off", 1);
  memset(&drv, 0, sizeof drv);
  fake_cuda_init(&fake_cu);
  fake_free = fake_cu.cuMemFree_v2;
  fake_cu.cuMemFree_v2 = mem_free;
  fake_cu.cuMemsetD8Async = memset_async;
  fake_cu.cuLaunchKernel = launch;
  /* the full sum's kernel: 3 blocks of 512 threads an SM, where the
   * scheduler estimates 4 */
  fake_cuda.blocks_per_sm = 3;
  device = fake_cuda_device(&fake_cu);
  fusion = test_parse("fusion @full_sum(%x: f32[N]) {\n"
                      "  %s = sum %x dims(0) : f32\n"
                      "  return %s\n"
                      "}\n");
  fz_error err;
  ck_assert_msg(fz_executor_create(fusion, &device, &ex, &err) == FZ_OK, "%s",
                err.message);
}

static void teardown(void) {
  fz_executor_destroy(ex);
  fz_fusion_destroy(fusion);
}

/* A run on `stream` of an input of n elements at a fake address. */
static fz_status run(int64_t n, CUstream stream, fz_error *err) {
  fz_device_tensor in = {.dtype = FZ_F32, .rank = 1, .data = 0x7000000};
  in.sizes[0] = n;
  in.strides[0] = 1;
  fz_device_tensor out = {.dtype = FZ_F32, .rank = 0, .data = 0x6000000};
  return fz_executor_run(ex, &in, 1, &out, 1, stream, err);
}

static void expect_run(int64_t n, CUstream stream) {
  fz_error err;
  ck_assert_msg(run(n, stream, &err) == FZ_OK, "%s", err.message);
}

enum { BIG = 1 << 24 };

START_TEST(test_builtin_block_per_stream) {
  expect_run(BIG, STREAM_A);
  ck_assert_int_eq(drv.launches, 1);
  ck_assert_int_eq(fake_cuda.allocs, 1);
  /* the counters are zeroed once, in the order of the stream that uses
   * them, not on the legacy stream */
  ck_assert_int_eq(drv.memsets, 1);
  ck_assert_ptr_eq(drv.memset_stream, STREAM_A);
  ck_assert_uint_eq(drv.memset_dst, drv.counters);
  uint64_t ws_a = drv.workspace;
  ck_assert_uint_ne(ws_a, 0);

  expect_run(BIG, STREAM_A); /* a hit: launches only */
  ck_assert_int_eq(fake_cuda.allocs, 1);
  ck_assert_int_eq(drv.memsets, 1);
  ck_assert_uint_eq(drv.workspace, ws_a);

  expect_run(BIG, STREAM_B); /* another stream: its own partials */
  ck_assert_int_eq(fake_cuda.allocs, 2);
  ck_assert_int_eq(drv.memsets, 2);
  ck_assert_ptr_eq(drv.launch_stream, STREAM_B);
  ck_assert_uint_ne(drv.workspace, ws_a);

  fz_executor_stats stats;
  fz_executor_get_stats(ex, &stats);
  ck_assert_int_eq(stats.runs, 3);
  ck_assert_int_eq(stats.signature_misses, 1);
  ck_assert_int_eq(stats.kernels_compiled, 1);
  ck_assert_int_eq(stats.signatures_kept, 1);
  ck_assert_int_eq(stats.kernels_kept, 1);
}
END_TEST

/* ---- a caller's allocator ----------------------------------------------- */

static struct {
  int allocs, frees;
  uint64_t base;
  size_t bytes;
  void *alloc_stream, *free_stream;
  int fail;       /* answer alloc with an error */
  uint64_t skew;  /* added to the address: misalignment */
} user;

static int user_alloc(void *u, size_t bytes, void *stream, uint64_t *out) {
  ck_assert_ptr_eq(u, &user);
  user.allocs++;
  user.alloc_stream = stream;
  if (user.fail)
    return 1;
  user.bytes = bytes;
  user.base = 0x40000000 + 0x1000000 * (uint64_t)user.allocs + user.skew;
  *out = user.base;
  return 0;
}

static void user_free(void *u, uint64_t ptr, size_t bytes, void *stream) {
  ck_assert_uint_eq(ptr, user.base);
  ck_assert_uint_eq(bytes, user.bytes);
  user.frees++;
  user.free_stream = stream;
}

static void set_user_allocator(void) {
  memset(&user, 0, sizeof user);
  fz_allocator a = {user_alloc, user_free, &user};
  fz_error err;
  ck_assert(fz_executor_set_allocator(ex, &a, &err) == FZ_OK);
}

START_TEST(test_allocator_per_call_in_stream_order) {
  set_user_allocator();
  for (int i = 1; i <= 3; i++) {
    expect_run(BIG, STREAM_A);
    ck_assert_int_eq(user.allocs, i);
    ck_assert_int_eq(user.frees, i);
    ck_assert_ptr_eq(user.alloc_stream, STREAM_A);
    ck_assert_ptr_eq(user.free_stream, STREAM_A);
    /* the kernel's workspace and counters lie in the caller's memory, and
     * fresh memory has its counters zeroed on the stream each call */
    ck_assert_uint_ge(drv.workspace, user.base);
    ck_assert_uint_lt(drv.counters, user.base + user.bytes);
    ck_assert_int_eq(drv.memsets, i);
    ck_assert_uint_eq(drv.memset_dst, drv.counters);
    ck_assert_uint_eq(drv.memset_dst + drv.memset_bytes, user.base + user.bytes);
  }
  ck_assert_int_eq(fake_cuda.allocs, 0); /* nothing from cuMemAlloc */
}
END_TEST

START_TEST(test_allocator_failures_launch_nothing) {
  set_user_allocator();
  user.fail = 1;
  fz_error err;
  ck_assert_int_eq(run(BIG, STREAM_A, &err), FZ_ERR_OUT_OF_MEMORY);
  ck_assert_ptr_nonnull(strstr(err.message, "allocator"));
  ck_assert_int_eq(drv.launches, 0);
  ck_assert_int_eq(user.frees, 0);

  user.fail = 0;
  user.skew = 16;
  ck_assert_int_eq(run(BIG, STREAM_A, &err), FZ_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "256-byte aligned"));
  ck_assert_int_eq(drv.launches, 0);
  ck_assert_int_eq(user.frees, 1); /* given back */
}
END_TEST

START_TEST(test_switching_allocators_frees_blocks) {
  expect_run(BIG, STREAM_A);
  expect_run(BIG, STREAM_B);
  ck_assert_int_eq(fake_cuda.frees, 0);
  set_user_allocator();
  ck_assert_int_eq(fake_cuda.frees, 2);
  expect_run(BIG, STREAM_A);
  ck_assert_int_eq(user.allocs, 1);
  fz_error err;
  ck_assert(fz_executor_set_allocator(ex, NULL, &err) == FZ_OK);
  expect_run(BIG, STREAM_A); /* a built-in block again */
  ck_assert_int_eq(fake_cuda.allocs, 3);
  ck_assert_int_eq(user.allocs, 1);
  fz_allocator half = {user_alloc, NULL, &user};
  ck_assert_int_eq(fz_executor_set_allocator(ex, &half, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_int_eq(fz_executor_set_allocator(NULL, NULL, &err),
                   FZ_ERR_ARGUMENT);
}
END_TEST

/* ---- CUDA graph capture -------------------------------------------------- */

START_TEST(test_capture_needs_a_warm_signature) {
  fz_error err;
  fake_cuda.capturing = STREAM_A;
  ck_assert_int_eq(run(BIG, STREAM_A, &err), FZ_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "new signature"));
  ck_assert_ptr_nonnull(strstr(err.message, "captured"));
  ck_assert_int_eq(drv.launches, 0);
  ck_assert_int_eq(fake_cuda.allocs, 0);

  fake_cuda.capturing = NULL; /* warm up outside capture */
  expect_run(BIG, STREAM_A);
  fake_cuda.capturing = STREAM_A;
  expect_run(BIG, STREAM_A); /* captured: launches only */
  ck_assert_int_eq(drv.launches, 2);
  ck_assert_int_eq(fake_cuda.allocs, 1);

  /* warm signature, but the built-in allocator has no block for this
   * stream yet */
  fake_cuda.capturing = STREAM_B;
  ck_assert_int_eq(run(BIG, STREAM_B, &err), FZ_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "first call on this stream"));
  ck_assert_int_eq(drv.launches, 2);

  /* with an allocator, the memory comes from it during capture too */
  set_user_allocator();
  expect_run(BIG, STREAM_B);
  ck_assert_int_eq(user.allocs, 1);
  ck_assert_int_eq(drv.launches, 3);

  /* outputs left to the executor need cuMemAlloc: refused */
  fz_device_tensor in = {.dtype = FZ_F32, .rank = 1, .data = 0x7000000};
  in.sizes[0] = BIG;
  in.strides[0] = 1;
  fz_device_tensor out = {.dtype = FZ_F32, .rank = 0, .data = 0};
  ck_assert_int_eq(fz_executor_run(ex, &in, 1, &out, 1, STREAM_B, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "output left for the executor"));
  ck_assert_int_eq(drv.launches, 3);
}
END_TEST

/* ---- signature limit ----------------------------------------------------- */

START_TEST(test_least_recently_used_signature_is_evicted) {
  fz_error err;
  ck_assert(fz_executor_set_signature_limit(ex, 2, &err) == FZ_OK);
  ck_assert_int_eq(fz_executor_set_signature_limit(ex, 0, &err),
                   FZ_ERR_ARGUMENT);
  expect_run(BIG, STREAM_A);
  expect_run(BIG + 4096, STREAM_A);
  expect_run(BIG, STREAM_A); /* BIG is now the more recent */
  expect_run(BIG + 8192, STREAM_A); /* evicts BIG + 4096 and its block */
  fz_executor_stats stats;
  fz_executor_get_stats(ex, &stats);
  ck_assert_int_eq(stats.signature_misses, 3);
  ck_assert_int_eq(stats.signatures_evicted, 1);
  ck_assert_int_eq(stats.signatures_kept, 2);
  ck_assert_int_eq(fake_cuda.frees, 1);
  expect_run(BIG, STREAM_A); /* still kept */
  fz_executor_get_stats(ex, &stats);
  ck_assert_int_eq(stats.signature_misses, 3);
  expect_run(BIG + 4096, STREAM_A); /* gone: built again */
  fz_executor_get_stats(ex, &stats);
  ck_assert_int_eq(stats.signature_misses, 4);
  ck_assert_int_eq(stats.signatures_evicted, 2);
  /* the sizes share one plan structure: one kernel, compiled once */
  ck_assert_int_eq(stats.kernels_kept, 1);
  ck_assert_int_eq(stats.kernels_compiled, 1);
  ck_assert(stats.miss_seconds > 0);
}
END_TEST

/* ---- the grid, sized at load ------------------------------------------- */

/* The full sum of BIG floats is one row of 2^22 vectors, read by blocks
 * of 512 threads: split 528 ways for the estimated 4 blocks an SM (132
 * SMs), 396 ways for the 3 the fake driver's occupancy query reports.
 * The workspace (one f32 partial a slice, then the counters at the next
 * 256-byte boundary) follows the split launched. */
static void expect_split(int split) {
  expect_run(BIG, STREAM_A);
  ck_assert_uint_eq(drv.grid_x, 1);
  ck_assert_uint_eq(drv.grid_y, (unsigned)split);
  ck_assert_uint_eq(drv.counters - drv.workspace,
                    (4 * (uint64_t)split + 255) / 256 * 256);
}

START_TEST(test_grid_sized_from_occupancy) {
  expect_split(396);
  const char *plan = fz_executor_last_plan(ex);
  ck_assert_ptr_nonnull(plan);
  ck_assert_msg(strstr(plan, "launch grid=1x396 block=512x1 vector=4 unroll=8 "
                             "grid-reduction; grid sized at load (occupancy: "
                             "3 blocks/SM)"),
                "%s", plan);
}
END_TEST

/* A driver table without the query: the scheduler's estimate. */
START_TEST(test_grid_estimate_without_query) {
  fake_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor = NULL;
  expect_split(528);
}
END_TEST

/* A kernel the query says cannot be resident: the estimate (the launch
 * would report it). */
START_TEST(test_grid_estimate_without_residency) {
  fake_cuda.blocks_per_sm = 0;
  expect_split(528);
}
END_TEST

/* FZ_GRID_AT_LOAD=off when the executor is made: the estimate. */
START_TEST(test_grid_estimate_when_asked) {
  fz_executor_destroy(ex);
  setenv("FZ_GRID_AT_LOAD", "off", 1);
  fz_error err;
  fz_status st = fz_executor_create(fusion, &device, &ex, &err);
  unsetenv("FZ_GRID_AT_LOAD");
  ck_assert_msg(st == FZ_OK, "%s", err.message);
  expect_split(528);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("executor_memory");
  TCase *tc = tcase_create("fake driver");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_builtin_block_per_stream);
  tcase_add_test(tc, test_allocator_per_call_in_stream_order);
  tcase_add_test(tc, test_allocator_failures_launch_nothing);
  tcase_add_test(tc, test_switching_allocators_frees_blocks);
  tcase_add_test(tc, test_capture_needs_a_warm_signature);
  tcase_add_test(tc, test_least_recently_used_signature_is_evicted);
  tcase_add_test(tc, test_grid_sized_from_occupancy);
  tcase_add_test(tc, test_grid_estimate_without_query);
  tcase_add_test(tc, test_grid_estimate_without_residency);
  tcase_add_test(tc, test_grid_estimate_when_asked);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
