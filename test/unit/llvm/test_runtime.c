/* test_runtime.c - lib/runtime's driver layer.
 *
 * Two halves. The first runs everywhere: binding errors, the cached outcome
 * of loading the driver, and the wrappers' plumbing (error text, JIT logs,
 * the shared memory opt-in, out-of-memory) against a fake driver table, so
 * that it is checked on machines without a GPU too. The second needs a
 * real device: memory round trips, a hand-written PTX kernel, timing, and
 * the driver's own errors. Without a driver the test prints "SKIP: ..." and
 * exits with 77, which ctest reports as skipped (SKIP_RETURN_CODE), never
 * as passed.
 */
#include "test_util.h"

/* lib/ is private to libfz; this test is the one user of its internals. */
#include "runtime/cuda.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fake driver ------------------------------------------------------ */

static struct {
  CUcontext current;
  int set_current_calls;
  int alloc_calls;
  CUresult alloc_result;
  CUresult launch_result;
  int launches, cooperative_launches;
  unsigned last_shared;
  int set_attr_calls;
  CUfunction_attribute last_attr;
  int last_attr_value;
  int jit_had_error_buffer;
  int unloads;
} fake;

#define FAKE_CONTEXT ((CUcontext)0x1000)
#define FAKE_MODULE ((CUmodule)0x2000)
#define FAKE_FUNCTION ((CUfunction)0x3000)

static CUresult fake_error_name(CUresult r, const char **s) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    *s = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX:
    *s = "CUDA_ERROR_INVALID_PTX";
    return CUDA_SUCCESS;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    *s = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    return CUDA_SUCCESS;
  default:
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
  }
}

static CUresult fake_error_string(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_INVALID_PTX ? "a PTX JIT compilation failed"
                                   : "fake description";
  return CUDA_SUCCESS;
}

static CUresult fake_get_current(CUcontext *c) {
  *c = fake.current;
  return CUDA_SUCCESS;
}

static CUresult fake_set_current(CUcontext c) {
  fake.current = c;
  fake.set_current_calls++;
  return CUDA_SUCCESS;
}

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes) {
  fake.alloc_calls++;
  *p = fake.alloc_result == CUDA_SUCCESS ? 0x10000 : 0;
  return fake.alloc_result;
}

static CUresult fake_free(CUdeviceptr p) {
  ck_assert_msg(p != 0, "cuMemFree called with 0");
  return CUDA_SUCCESS;
}

/* A JIT that accepts PTX containing "good" and rejects anything else with
 * a ptxas-style log, like the real one. */
static CUresult fake_load(CUmodule *m, const void *image, unsigned n,
                          CUjit_option *options, void **values) {
  char *log = NULL;
  size_t size = 0;
  for (unsigned i = 0; i < n; i++) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      log = values[i];
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      size = (size_t)(uintptr_t)values[i];
  }
  fake.jit_had_error_buffer = log && size > 0;
  if (strstr(image, "good")) {
    *m = FAKE_MODULE;
    return CUDA_SUCCESS;
  }
  if (log)
    snprintf(log, size,
             "ptxas application ptx input, line 3; error   : Unknown "
             "symbol '%%bogus'\n");
  *m = NULL;
  return CUDA_ERROR_INVALID_PTX;
}

static CUresult fake_unload(CUmodule m) {
  ck_assert_ptr_eq(m, FAKE_MODULE);
  fake.unloads++;
  return CUDA_SUCCESS;
}

static CUresult fake_get_function(CUfunction *f, CUmodule m, const char *n) {
  *f = FAKE_FUNCTION;
  return CUDA_SUCCESS;
}

static CUresult fake_func_get_attr(int *v, CUfunction_attribute a,
                                   CUfunction f) {
  *v = a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
           ? FZ_CUDA_DEFAULT_SHARED_BYTES
       : a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 8
                                         : 0;
  return CUDA_SUCCESS;
}

static CUresult fake_func_set_attr(CUfunction f, CUfunction_attribute a,
                                   int v) {
  fake.set_attr_calls++;
  fake.last_attr = a;
  fake.last_attr_value = v;
  return CUDA_SUCCESS;
}

static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy,
                            unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream s, void **params,
                            void **extra) {
  fake.launches++;
  fake.last_shared = shared;
  return fake.launch_result;
}

static CUresult fake_launch_coop(CUfunction f, unsigned gx, unsigned gy,
                                 unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, CUstream s,
                                 void **params) {
  fake.cooperative_launches++;
  fake.last_shared = shared;
  return fake.launch_result;
}

static const fz_cuda fake_cu = {
    .cuGetErrorName = fake_error_name,
    .cuGetErrorString = fake_error_string,
    .cuCtxGetCurrent = fake_get_current,
    .cuCtxSetCurrent = fake_set_current,
    .cuMemAlloc_v2 = fake_alloc,
    .cuMemFree_v2 = fake_free,
    .cuModuleLoadDataEx = fake_load,
    .cuModuleUnload = fake_unload,
    .cuModuleGetFunction = fake_get_function,
    .cuFuncGetAttribute = fake_func_get_attr,
    .cuFuncSetAttribute = fake_func_set_attr,
    .cuLaunchKernel = fake_launch,
    .cuLaunchCooperativeKernel = fake_launch_coop,
};

/* A device on the fake driver, as fz_device_open would have filled it. */
static fz_device fake_device(void) {
  memset(&fake, 0, sizeof fake);
  fz_device d = {.cu = &fake_cu, .context = FAKE_CONTEXT};
  snprintf(d.props.name, sizeof d.props.name, "Fake GPU");
  d.props.max_shared_per_block = 227 * 1024;
  return d;
}

/* Clusters (CUDA 12 drivers): what cuLaunchKernelEx and
 * cuOccupancyMaxActiveClusters were given. */
static struct {
  int launches, occupancy_calls;
  CUlaunchConfig config;
  CUlaunchAttribute attr, attr2; /* the first two attributes */
} fake_clusters;

static void record_config(const CUlaunchConfig *c) {
  fake_clusters.config = *c;
  memset(&fake_clusters.attr2, 0, sizeof fake_clusters.attr2);
  if (c->numAttrs >= 1)
    fake_clusters.attr = c->attrs[0];
  if (c->numAttrs >= 2)
    fake_clusters.attr2 = c->attrs[1];
  fake_clusters.config.attrs = NULL;
}

static CUresult fake_launch_ex(const CUlaunchConfig *c, CUfunction f,
                               void **params, void **extra) {
  fake_clusters.launches++;
  record_config(c);
  return fake.launch_result;
}

static CUresult fake_max_clusters(int *n, CUfunction f,
                                  const CUlaunchConfig *c) {
  fake_clusters.occupancy_calls++;
  record_config(c);
  *n = 16;
  return CUDA_SUCCESS;
}

/* ---- without a GPU ------------------------------------------------------ */

START_TEST(test_bind_missing_library) {
  fz_cuda cu;
  void *handle = &cu;
  fz_error err = {0};
  fz_status st = fz_cuda_bind("libfz-no-such-driver.so.1", &cu, &handle, &err);
  ck_assert_int_eq(st, FZ_ERR_NO_DEVICE);
  ck_assert_int_eq(err.status, FZ_ERR_NO_DEVICE);
  ck_assert_ptr_null(handle);
  ck_assert_msg(strstr(err.message, "cannot load the CUDA driver") &&
                    strstr(err.message, "libfz-no-such-driver.so.1"),
                "message: %s", err.message);
}
END_TEST

/* libm is there on every machine and has none of the driver's symbols: the
 * first entry of the table must be named. */
START_TEST(test_bind_missing_symbol) {
  fz_cuda cu;
  void *handle = &cu;
  fz_error err = {0};
  fz_status st = fz_cuda_bind("libm.so.6", &cu, &handle, &err);
  ck_assert_int_eq(st, FZ_ERR_CUDA);
  ck_assert_ptr_null(handle);
  ck_assert_ptr_null(cu.cuInit);
  ck_assert_msg(strstr(err.message, "libm.so.6 has no symbol cuInit"),
                "message: %s", err.message);
}
END_TEST

/* Whatever this machine has, loading twice gives the same answer, and a
 * failure is NO_DEVICE (no driver, or no device) with a message that
 * fz_device_open repeats. */
START_TEST(test_load_is_cached) {
  const fz_cuda *a = (const fz_cuda *)&a, *b = NULL;
  fz_error e1 = {0}, e2 = {0};
  fz_status s1 = fz_cuda_load(&a, &e1);
  fz_status s2 = fz_cuda_load(&b, &e2);
  ck_assert_int_eq(s1, s2);
  ck_assert_ptr_eq(a, b);
  if (s1 == FZ_OK) {
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(a->cuLaunchKernel);
    ck_assert_int_gt(a->driver_version, 0);
    return;
  }
  ck_assert_ptr_null(a);
  ck_assert_msg(s1 == FZ_ERR_NO_DEVICE, "%s: %s", fz_status_name(s1),
                e1.message);
  ck_assert_str_ne(e1.message, "");
  ck_assert_str_eq(e1.message, e2.message);

  fz_device *d = (fz_device *)&d;
  fz_error e3 = {0};
  ck_assert_int_eq(fz_device_open(0, &d, &e3), FZ_ERR_NO_DEVICE);
  ck_assert_ptr_null(d);
  ck_assert_str_eq(e3.message, e1.message);
  fz_device_close(NULL);
  ck_assert_ptr_null(fz_device_get_props(NULL));
}
END_TEST

START_TEST(test_check_names_the_error) {
  fz_error err = {.status = FZ_ERR_IO, .message = "untouched"};
  ck_assert_int_eq(fz_cuda_check(&fake_cu, CUDA_SUCCESS, "cuX", &err), FZ_OK);
  ck_assert_int_eq(err.status, FZ_ERR_IO);
  ck_assert_str_eq(err.message, "untouched");

  ck_assert_int_eq(
      fz_cuda_check(&fake_cu, CUDA_ERROR_INVALID_PTX, "cuModuleLoadDataEx", &err),
      FZ_ERR_CUDA);
  ck_assert_int_eq(err.status, FZ_ERR_CUDA);
  ck_assert_str_eq(err.message, "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX "
                                "(a PTX JIT compilation failed)");

  /* A code the driver cannot name still gives its number. */
  ck_assert_int_eq(fz_cuda_check(&fake_cu, (CUresult)12345, "cuY", &err),
                   FZ_ERR_CUDA);
  ck_assert_str_eq(err.message, "cuY: CUDA error 12345");
  /* err may be NULL. */
  ck_assert_int_eq(fz_cuda_check(&fake_cu, CUDA_ERROR_OUT_OF_MEMORY, "cuZ",
                                 NULL),
                   FZ_ERR_CUDA);
}
END_TEST

START_TEST(test_make_current_only_when_needed) {
  fz_device d = fake_device();
  fz_error err = {0};
  ck_assert_int_eq(fz_device_make_current(&d, &err), FZ_OK);
  ck_assert_ptr_eq(fake.current, FAKE_CONTEXT);
  ck_assert_int_eq(fake.set_current_calls, 1);
  ck_assert_int_eq(fz_device_make_current(&d, &err), FZ_OK);
  ck_assert_int_eq(fake.set_current_calls, 1);
}
END_TEST

START_TEST(test_module_load_reports_jit_log) {
  fz_device d = fake_device();
  fz_module *m = (fz_module *)&m;
  fz_error err = {0};
  fz_status st = fz_module_load(&d, "broken ptx", "my_kernel", &m, &err);
  ck_assert_int_eq(st, FZ_ERR_CUDA);
  ck_assert_ptr_null(m);
  ck_assert(fake.jit_had_error_buffer);
  ck_assert_int_eq(fake.unloads, 0);
  ck_assert_msg(strstr(err.message, "my_kernel") &&
                    strstr(err.message, "CUDA_ERROR_INVALID_PTX") &&
                    strstr(err.message, "line 3; error   : Unknown symbol "
                                        "'%bogus'"),
                "message: %s", err.message);
  /* The log ends the message; its trailing newline is trimmed. */
  ck_assert_int_eq(err.message[strlen(err.message) - 1], '\'');
}
END_TEST

START_TEST(test_module_load_reads_attributes) {
  fz_device d = fake_device();
  fz_module *m = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_module_load(&d, "good ptx", "k", &m, &err), FZ_OK);
  ck_assert_ptr_eq(m->function, FAKE_FUNCTION);
  ck_assert_str_eq(m->kernel_name, "k");
  ck_assert_int_eq(m->num_regs, 8);
  ck_assert_int_eq(m->dynamic_shared_limit, FZ_CUDA_DEFAULT_SHARED_BYTES);
  fz_module_unload(m);
  ck_assert_int_eq(fake.unloads, 1);
  fz_module_unload(NULL);
}
END_TEST

START_TEST(test_launch_opts_in_to_shared_memory_once) {
  fz_device d = fake_device();
  fz_module *m = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_module_load(&d, "good ptx", "k", &m, &err), FZ_OK);
  unsigned grid[3] = {4, 1, 1}, block[3] = {256, 1, 1};

  /* Up to 48 KiB needs no opt-in. */
  ck_assert_int_eq(fz_module_launch(m, grid, block, 48 * 1024, NULL, NULL,
                                    false, &err),
                   FZ_OK);
  ck_assert_int_eq(fake.set_attr_calls, 0);
  ck_assert_int_eq(fake.launches, 1);

  ck_assert_int_eq(fz_module_launch(m, grid, block, 100 * 1024, NULL, NULL,
                                    false, &err),
                   FZ_OK);
  ck_assert_int_eq(fake.set_attr_calls, 1);
  ck_assert_int_eq(fake.last_attr,
                   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  ck_assert_int_eq(fake.last_attr_value, 100 * 1024);
  ck_assert_uint_eq(fake.last_shared, 100 * 1024);

  /* The opt-in sticks to the function: no second call. */
  ck_assert_int_eq(fz_module_launch(m, grid, block, 64 * 1024, NULL, NULL,
                                    true, &err),
                   FZ_OK);
  ck_assert_int_eq(fake.set_attr_calls, 1);
  ck_assert_int_eq(fake.cooperative_launches, 1);
  ck_assert_int_eq(fake.launches, 2);

  /* More than the device allows is refused before the driver sees it. */
  ck_assert_int_eq(fz_module_launch(m, grid, block, 228 * 1024, NULL, NULL,
                                    false, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_int_eq(fake.launches, 2);
  ck_assert_msg(strstr(err.message, "Fake GPU"), "message: %s", err.message);

  fake.launch_result = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  ck_assert_int_eq(fz_module_launch(m, grid, block, 0, NULL, NULL, false, &err),
                   FZ_ERR_CUDA);
  ck_assert_msg(strstr(err.message, "cuLaunchKernel(k, grid 4x1x1, block "
                                    "256x1x1") &&
                    strstr(err.message, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
                "message: %s", err.message);
  fz_module_unload(m);
}
END_TEST

START_TEST(test_cluster_launch) {
  fz_device d = fake_device();
  memset(&fake_clusters, 0, sizeof fake_clusters);
  fz_cuda cu = fake_cu;
  d.cu = &cu;
  d.props.sm = 90;
  fz_module *m = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_module_load(&d, "good ptx", "k", &m, &err), FZ_OK);
  unsigned grid[3] = {64, 1, 1}, block[3] = {512, 1, 1};
  int clusters = -1;

  /* a driver without the CUDA 12 entries: refused, and said why */
  ck_assert_int_eq(fz_module_launch_cluster(m, grid, block, 0, NULL, NULL, 8,
                                            false, &err),
                   FZ_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(err.message, "cuLaunchKernelEx"), "message: %s",
                err.message);
  ck_assert_int_eq(
      fz_module_cluster_occupancy(m, 512, 0, 8, &clusters, &err),
      FZ_ERR_UNSUPPORTED);
  ck_assert_int_eq(clusters, 0);

  cu.cuLaunchKernelEx = fake_launch_ex;
  cu.cuOccupancyMaxActiveClusters = fake_max_clusters;
  ck_assert_int_eq(fz_module_launch_cluster(m, grid, block, 0, NULL, NULL, 8,
                                            false, &err),
                   FZ_OK);
  ck_assert_int_eq(fake_clusters.launches, 1);
  ck_assert_int_eq(fake.launches, 0);
  ck_assert_uint_eq(fake_clusters.config.gridDimX, 64);
  ck_assert_uint_eq(fake_clusters.config.blockDimX, 512);
  ck_assert_uint_eq(fake_clusters.config.numAttrs, 1);
  ck_assert_int_eq(fake_clusters.attr.id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  ck_assert_uint_eq(fake_clusters.attr.value.clusterDim.x, 8);
  ck_assert_uint_eq(fake_clusters.attr.value.clusterDim.y, 1);
  ck_assert_uint_eq(fake_clusters.attr.value.clusterDim.z, 1);

  ck_assert_int_eq(
      fz_module_cluster_occupancy(m, 512, 0, 8, &clusters, &err), FZ_OK);
  ck_assert_int_eq(clusters, 16);
  ck_assert_uint_eq(fake_clusters.config.gridDimX, 8);
  ck_assert_uint_eq(fake_clusters.attr.value.clusterDim.x, 8);

  fake.launch_result = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  ck_assert_int_eq(fz_module_launch_cluster(m, grid, block, 0, NULL, NULL, 8,
                                            false, &err),
                   FZ_ERR_CUDA);
  ck_assert_msg(strstr(err.message, "cuLaunchKernelEx(k, grid 64x1x1, block "
                                    "512x1x1, cluster 8"),
                "message: %s", err.message);

  /* a device without clusters: refused before the driver sees it */
  d.props.sm = 80;
  fake.launch_result = CUDA_SUCCESS;
  ck_assert_int_eq(fz_module_launch_cluster(m, grid, block, 0, NULL, NULL, 8,
                                            false, &err),
                   FZ_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(err.message, "Fake GPU (sm_80)"), "message: %s",
                err.message);
  ck_assert_int_eq(fake_clusters.launches, 2);
  fz_module_unload(m);
}
END_TEST

/* A cooperative grid in clusters (inner-outer plans whose column partials
 * meet in a cluster): one cuLaunchKernelEx with the cluster dimension and
 * the cooperative flag, never cuLaunchCooperativeKernel; the occupancy
 * query sees the cluster dimension only. */
START_TEST(test_cooperative_cluster_launch) {
  fz_device d = fake_device();
  memset(&fake_clusters, 0, sizeof fake_clusters);
  fz_cuda cu = fake_cu;
  cu.cuLaunchKernelEx = fake_launch_ex;
  cu.cuOccupancyMaxActiveClusters = fake_max_clusters;
  d.cu = &cu;
  d.props.sm = 90;
  fz_module *m = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_module_load(&d, "good ptx", "k", &m, &err), FZ_OK);
  unsigned grid[3] = {132, 1, 1}, block[3] = {512, 1, 1};
  ck_assert_int_eq(fz_module_launch_cluster(m, grid, block, 64 * 1024, NULL,
                                            NULL, 2, true, &err),
                   FZ_OK);
  ck_assert_int_eq(fake_clusters.launches, 1);
  ck_assert_int_eq(fake.cooperative_launches, 0);
  ck_assert_int_eq(fake.launches, 0);
  ck_assert_uint_eq(fake_clusters.config.gridDimX, 132);
  ck_assert_uint_eq(fake_clusters.config.sharedMemBytes, 64 * 1024);
  ck_assert_uint_eq(fake_clusters.config.numAttrs, 2);
  ck_assert_int_eq(fake_clusters.attr.id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  ck_assert_uint_eq(fake_clusters.attr.value.clusterDim.x, 2);
  ck_assert_int_eq(fake_clusters.attr2.id, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  ck_assert_int_eq(fake_clusters.attr2.value.cooperative, 1);
  /* the shared memory opt-in came first, as for any launch */
  ck_assert_int_eq(fake.set_attr_calls, 1);
  ck_assert_int_eq(fake.last_attr_value, 64 * 1024);

  int clusters = 0;
  ck_assert_int_eq(
      fz_module_cluster_occupancy(m, 512, 64 * 1024, 2, &clusters, &err),
      FZ_OK);
  ck_assert_uint_eq(fake_clusters.config.numAttrs, 1);
  ck_assert_uint_eq(fake_clusters.attr.value.clusterDim.x, 2);

  /* a failed launch says it was cooperative */
  fake.launch_result = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  ck_assert_int_eq(fz_module_launch_cluster(m, grid, block, 0, NULL, NULL, 2,
                                            true, &err),
                   FZ_ERR_CUDA);
  ck_assert_msg(strstr(err.message, "cuLaunchKernelEx(k, grid 132x1x1, block "
                                    "512x1x1, cluster 2, cooperative"),
                "message: %s", err.message);
  fz_module_unload(m);
}
END_TEST

START_TEST(test_alloc_and_free_edges) {
  fz_device d = fake_device();
  fz_error err = {0};
  CUdeviceptr p = 1;
  ck_assert_int_eq(fz_device_alloc(&d, 0, &p, &err), FZ_OK);
  ck_assert_uint_eq(p, 0);
  ck_assert_int_eq(fake.alloc_calls, 0);
  ck_assert_int_eq(fz_device_free(&d, 0, &err), FZ_OK); /* fake_free rejects 0 */

  fake.alloc_result = CUDA_ERROR_OUT_OF_MEMORY;
  p = 1;
  ck_assert_int_eq(fz_device_alloc(&d, 1 << 20, &p, &err),
                   FZ_ERR_OUT_OF_MEMORY);
  ck_assert_int_eq(err.status, FZ_ERR_OUT_OF_MEMORY);
  ck_assert_uint_eq(p, 0);
  ck_assert_msg(strstr(err.message, "1048576 bytes") &&
                    strstr(err.message, "CUDA_ERROR_OUT_OF_MEMORY"),
                "message: %s", err.message);

  fake.alloc_result = CUDA_SUCCESS;
  ck_assert_int_eq(fz_device_alloc(&d, 64, &p, &err), FZ_OK);
  ck_assert_uint_ne(p, 0);
  ck_assert_int_eq(fz_device_free(&d, p, &err), FZ_OK);
}
END_TEST

static Suite *host_suite(void) {
  Suite *s = suite_create("runtime");
  TCase *tc = tcase_create("host");
  tcase_add_test(tc, test_bind_missing_library);
  tcase_add_test(tc, test_bind_missing_symbol);
  tcase_add_test(tc, test_load_is_cached);
  tcase_add_test(tc, test_check_names_the_error);
  tcase_add_test(tc, test_make_current_only_when_needed);
  tcase_add_test(tc, test_module_load_reports_jit_log);
  tcase_add_test(tc, test_module_load_reads_attributes);
  tcase_add_test(tc, test_launch_opts_in_to_shared_memory_once);
  tcase_add_test(tc, test_cluster_launch);
  tcase_add_test(tc, test_cooperative_cluster_launch);
  tcase_add_test(tc, test_alloc_and_free_edges);
  suite_add_tcase(s, tc);
  return s;
}

/* ---- with a GPU --------------------------------------------------------- */

static fz_device *gpu; /* device 0, opened by main */

/* fill(float *out, unsigned n): out[i] = 1.5 for i < n. */
static const char fill_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry fill(.param .u64 out, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p;\n"
    "  .reg .b32 %r<5>;\n"
    "  .reg .b64 %rd<4>;\n"
    "\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.u32 %r2, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p, %r2, %r1;\n"
    "  @%p bra done;\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mul.wide.u32 %rd2, %r2, 4;\n"
    "  add.u64 %rd3, %rd1, %rd2;\n"
    "  st.global.f32 [%rd3], 0f3FC00000;\n"
    "done:\n"
    "  ret;\n"
    "}\n";

/* The same kernel storing an undeclared register. */
static const char broken_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry fill(.param .u64 out)\n"
    "{\n"
    "  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  st.global.f32 [%rd1], %bogus;\n"
    "  ret;\n"
    "}\n";

static bool contains_nocase(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n)
      return true;
  }
  return false;
}

static void expect_ok(fz_status st, const fz_error *err, const char *what) {
  ck_assert_msg(st == FZ_OK, "%s: %s (%s)", what, fz_status_name(st),
                err->message);
}

START_TEST(test_gpu_props) {
  const fz_device_props *p = fz_device_get_props(gpu);
  printf("device %d: %s, sm_%d, %d SMs, %d threads/block, %d threads/SM, "
         "shared %d B/block (opt-in) %d B/SM, %d regs/block, L2 %d B, "
         "clock %d kHz, memory %d kHz x %d bits, %zu B, cooperative %d, "
         "driver %d\n",
         p->ordinal, p->name, p->sm, p->sm_count, p->max_threads_per_block,
         p->max_threads_per_sm, p->max_shared_per_block, p->max_shared_per_sm,
         p->max_registers_per_block, p->l2_bytes, p->clock_khz,
         p->memory_clock_khz, p->memory_bus_bits, p->total_memory,
         p->cooperative_launch, p->driver_version);
  ck_assert_int_eq(p->ordinal, 0);
  ck_assert_str_ne(p->name, "");
  ck_assert_int_ge(p->sm, 50);
  ck_assert_int_gt(p->sm_count, 0);
  ck_assert_int_eq(p->warp_size, 32);
  ck_assert_int_ge(p->max_threads_per_block, 1024);
  ck_assert_int_ge(p->max_shared_per_block, FZ_CUDA_DEFAULT_SHARED_BYTES);
  ck_assert_int_ge(p->max_shared_per_sm, p->max_shared_per_block);
  ck_assert_int_gt(p->max_registers_per_block, 0);
  ck_assert_int_gt(p->l2_bytes, 0);
  ck_assert_uint_gt(p->total_memory, 0);
  ck_assert_int_gt(p->driver_version, 0);

  int count = 0;
  ck_assert_int_eq(gpu->cu->cuDeviceGetCount(&count), CUDA_SUCCESS);
  fz_device *d = (fz_device *)&d;
  fz_error err = {0};
  ck_assert_int_eq(fz_device_open(count, &d, &err), FZ_ERR_NO_DEVICE);
  ck_assert_ptr_null(d);
  ck_assert_int_eq(fz_device_open(-1, &d, &err), FZ_ERR_ARGUMENT);

  /* A second handle on the same device shares the primary context. */
  fz_device *again = NULL;
  expect_ok(fz_device_open(0, &again, &err), &err, "fz_device_open");
  ck_assert_ptr_eq(again->context, gpu->context);
  fz_device_close(again);
}
END_TEST

START_TEST(test_gpu_memory_round_trip) {
  enum { N = 1 << 20 };
  size_t bytes = N * sizeof(uint32_t);
  uint32_t *host = malloc(bytes), *back = malloc(bytes);
  ck_assert(host && back);
  for (uint32_t i = 0; i < N; i++)
    host[i] = i * 2654435761u; /* distinct, nonzero past 0 */
  fz_error err = {0};
  CUdeviceptr a = 0, b = 0;
  expect_ok(fz_device_alloc(gpu, bytes, &a, &err), &err, "alloc a");
  expect_ok(fz_device_alloc(gpu, bytes, &b, &err), &err, "alloc b");
  ck_assert_uint_ne(a, 0);

  expect_ok(fz_device_memset32(gpu, a, 0x3f800000u, N, &err), &err,
            "memset32");
  expect_ok(fz_copy_to_host(gpu, back, a, bytes, &err), &err, "DtoH");
  for (uint32_t i = 0; i < N; i++)
    ck_assert_uint_eq(back[i], 0x3f800000u);

  expect_ok(fz_device_memset8(gpu, a, 0xab, bytes, &err), &err, "memset8");
  expect_ok(fz_copy_to_host(gpu, back, a, bytes, &err), &err, "DtoH");
  for (uint32_t i = 0; i < N; i++)
    ck_assert_uint_eq(back[i], 0xababababu);

  expect_ok(fz_copy_to_device(gpu, a, host, bytes, &err), &err, "HtoD");
  expect_ok(fz_copy_device(gpu, b, a, bytes, &err), &err, "DtoD");
  memset(back, 0, bytes);
  expect_ok(fz_copy_to_host(gpu, back, b, bytes, &err), &err, "DtoH");
  ck_assert_int_eq(memcmp(host, back, bytes), 0);

  expect_ok(fz_device_free(gpu, a, &err), &err, "free a");
  expect_ok(fz_device_free(gpu, b, &err), &err, "free b");
  expect_ok(fz_device_free(gpu, 0, &err), &err, "free 0");
  free(host);
  free(back);
}
END_TEST

/* Runs fill over n elements of a buffer of n + pad, checks the first n
 * hold 1.5 and the pad is untouched, and returns the kernel's time. */
static float run_fill(fz_module *m, unsigned n, unsigned shared_bytes,
                      bool cooperative) {
  enum { PAD = 1000 };
  size_t bytes = (n + PAD) * sizeof(float);
  float *back = malloc(bytes);
  ck_assert_ptr_nonnull(back);
  fz_error err = {0};
  CUdeviceptr out = 0;
  expect_ok(fz_device_alloc(gpu, bytes, &out, &err), &err, "alloc");
  expect_ok(fz_device_memset8(gpu, out, 0xff, bytes, &err), &err, "poison");

  fz_timer *timer = NULL;
  expect_ok(fz_timer_create(gpu, 1, &timer, &err), &err, "timer");
  unsigned grid[3] = {(n + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
  void *params[] = {&out, &n};
  expect_ok(fz_timer_start(timer, 0, NULL, &err), &err, "timer start");
  expect_ok(fz_module_launch(m, grid, block, shared_bytes, NULL, params,
                             cooperative, &err),
            &err, "launch");
  expect_ok(fz_timer_stop(timer, 0, &err), &err, "timer stop");
  float ms = -1;
  expect_ok(fz_timer_elapsed_ms(timer, &ms, &err), &err, "elapsed");
  expect_ok(fz_device_synchronize(gpu, &err), &err, "synchronize");
  fz_timer_destroy(timer);

  expect_ok(fz_copy_to_host(gpu, back, out, bytes, &err), &err, "DtoH");
  for (unsigned i = 0; i < n; i++)
    ck_assert_msg(back[i] == 1.5f, "out[%u] = %g", i, back[i]);
  uint32_t bits;
  for (unsigned i = n; i < n + PAD; i++) {
    memcpy(&bits, &back[i], 4);
    ck_assert_msg(bits == 0xffffffffu, "pad[%u] overwritten", i - n);
  }
  expect_ok(fz_device_free(gpu, out, &err), &err, "free");
  free(back);
  ck_assert(ms >= 0);
  return ms;
}

START_TEST(test_gpu_kernel) {
  fz_module *m = NULL;
  fz_error err = {0};
  expect_ok(fz_module_load(gpu, fill_ptx, "fill", &m, &err), &err, "load");
  ck_assert_int_gt(m->num_regs, 0);
  ck_assert_int_ge(m->max_threads_per_block, 256);
  ck_assert_int_eq(m->local_bytes, 0);
  ck_assert_int_eq(m->static_shared_bytes, 0);
  float ms = run_fill(m, 1000003, 0, false);
  printf("fill over 1000003 floats: %.3f ms, %d registers\n", ms, m->num_regs);

  /* A stream of our own. */
  CUstream stream = NULL;
  expect_ok(fz_stream_create(gpu, &stream, &err), &err, "stream");
  ck_assert_ptr_nonnull(stream);
  expect_ok(fz_stream_synchronize(gpu, stream, &err), &err, "stream sync");
  expect_ok(fz_stream_destroy(gpu, stream, &err), &err, "stream destroy");
  fz_module_unload(m);
}
END_TEST

/* Above 48 KiB of dynamic shared memory a launch fails unless the kernel
 * was opted in; fz_module_launch does that. */
START_TEST(test_gpu_kernel_big_shared) {
  const fz_device_props *p = fz_device_get_props(gpu);
  if (p->max_shared_per_block < 100 * 1024) {
    printf("skipping the 100 KiB launch: %s allows %d B per block\n", p->name,
           p->max_shared_per_block);
    return;
  }
  fz_module *m = NULL;
  fz_error err = {0};
  expect_ok(fz_module_load(gpu, fill_ptx, "fill", &m, &err), &err, "load");
  run_fill(m, 4096, 100 * 1024, false);
  run_fill(m, 4096, (unsigned)p->max_shared_per_block, false);
  unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  ck_assert_int_eq(fz_module_launch(m, grid, block,
                                    (unsigned)p->max_shared_per_block + 1, NULL,
                                    NULL, false, &err),
                   FZ_ERR_ARGUMENT);
  fz_module_unload(m);
}
END_TEST

START_TEST(test_gpu_cooperative) {
  const fz_device_props *p = fz_device_get_props(gpu);
  if (!p->cooperative_launch) {
    printf("skipping cooperative launches: not supported by %s\n", p->name);
    return;
  }
  fz_module *m = NULL;
  fz_error err = {0};
  expect_ok(fz_module_load(gpu, fill_ptx, "fill", &m, &err), &err, "load");
  int per_sm = 0;
  expect_ok(fz_module_occupancy(m, 256, 0, &per_sm, &err), &err, "occupancy");
  ck_assert_int_ge(per_sm, 1);
  ck_assert_int_le(per_sm, p->max_threads_per_sm / 256);
  unsigned fit = (unsigned)(per_sm * p->sm_count);
  printf("fill: %d blocks of 256 per SM, %u co-resident\n", per_sm, fit);
  run_fill(m, fit * 256, 0, true);

  CUdeviceptr out = 0;
  unsigned n = (fit + 1) * 256;
  expect_ok(fz_device_alloc(gpu, n * sizeof(float), &out, &err), &err,
            "alloc");
  unsigned grid[3] = {fit + 1, 1, 1}, block[3] = {256, 1, 1};
  void *params[] = {&out, &n};
  ck_assert_int_eq(
      fz_module_launch(m, grid, block, 0, NULL, params, true, &err),
      FZ_ERR_CUDA);
  ck_assert_msg(strstr(err.message, "cuLaunchCooperativeKernel(fill") &&
                    strstr(err.message,
                           "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"),
                "message: %s", err.message);
  expect_ok(fz_device_free(gpu, out, &err), &err, "free");
  fz_module_unload(m);
}
END_TEST

START_TEST(test_gpu_broken_ptx) {
  fz_module *m = (fz_module *)&m;
  fz_error err = {0};
  ck_assert_int_eq(fz_module_load(gpu, broken_ptx, "fill", &m, &err),
                   FZ_ERR_CUDA);
  ck_assert_ptr_null(m);
  printf("broken PTX: %s\n", err.message);
  ck_assert_msg(strstr(err.message, "CUDA_ERROR_INVALID_PTX"), "message: %s",
                err.message);
  const char *log = strchr(err.message, '\n');
  ck_assert_msg(log && (contains_nocase(log, "ptx") ||
                        contains_nocase(log, "error")),
                "no JIT log in: %s", err.message);
}
END_TEST

START_TEST(test_gpu_driver_errors_are_named) {
  fz_module *m = (fz_module *)&m;
  fz_error err = {0};
  ck_assert_int_eq(fz_module_load(gpu, fill_ptx, "no_such_kernel", &m, &err),
                   FZ_ERR_CUDA);
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(err.message, "cuModuleGetFunction(no_such_kernel)") &&
                    strstr(err.message, "CUDA_ERROR_NOT_FOUND"),
                "message: %s", err.message);

  CUdeviceptr p = 1;
  size_t too_much = 2 * fz_device_get_props(gpu)->total_memory;
  ck_assert_int_eq(fz_device_alloc(gpu, too_much, &p, &err),
                   FZ_ERR_OUT_OF_MEMORY);
  ck_assert_uint_eq(p, 0);
  ck_assert_msg(strstr(err.message, "CUDA_ERROR_OUT_OF_MEMORY"), "message: %s",
                err.message);
}
END_TEST

static Suite *gpu_suite(void) {
  Suite *s = suite_create("runtime-gpu");
  TCase *tc = tcase_create("gpu");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_gpu_props);
  tcase_add_test(tc, test_gpu_memory_round_trip);
  tcase_add_test(tc, test_gpu_kernel);
  tcase_add_test(tc, test_gpu_kernel_big_shared);
  tcase_add_test(tc, test_gpu_cooperative);
  tcase_add_test(tc, test_gpu_broken_ptx);
  tcase_add_test(tc, test_gpu_driver_errors_are_named);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  int rc = test_run_suite(host_suite());
  if (rc != EXIT_SUCCESS)
    return rc;
  fz_error err = {0};
  fz_status st = fz_device_open(0, &gpu, &err);
  if (st == FZ_ERR_NO_DEVICE) {
    printf("SKIP: no CUDA driver (%s)\n", err.message);
    return 77;
  }
  if (st != FZ_OK) {
    fprintf(stderr, "opening device 0: %s: %s\n", fz_status_name(st),
            err.message);
    return EXIT_FAILURE;
  }
  rc = test_run_suite(gpu_suite());
  fz_device_close(gpu);
  return rc;
}
