/* module.c - turns PTX into a launchable kernel and launches it.
 *
 * The driver JIT-compiles the PTX (cuModuleLoadDataEx) for the device at
 * hand, so fz needs no ptxas at run time. When the JIT rejects a module the
 * driver's status alone (CUDA_ERROR_INVALID_PTX) says nothing useful; the
 * reason is in the JIT's error log, so we always hand it log buffers and
 * put the log into the error message.
 *
 * The kernel's resource use (registers, static shared memory, spills) is
 * read once at load time: the executor checks launches against it, and a
 * nonzero local size is the first sign of register spills. The dynamic
 * shared memory opt-in (needed above 48 KiB per block) is a property of the
 * function, so it is raised once, when a launch first asks for more, not on
 * every launch: a cached launch must cost microseconds.
 */
#include "runtime/cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_JIT_LOG_BYTES 8192

static void trim_end(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
    s[--n] = '\0';
}

static fz_status load_ptx(fz_device *device, const char *ptx,
                          const char *kernel_name, CUmodule *out,
                          fz_error *err) {
  const fz_cuda *cu = device->cu;
  char *error_log = calloc(2, FZ_JIT_LOG_BYTES);
  if (!error_log)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory loading kernel %s", kernel_name);
  char *info_log = error_log + FZ_JIT_LOG_BYTES;
  CUjit_option options[] = {
      CU_JIT_ERROR_LOG_BUFFER,
      CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER,
      CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
  };
  void *values[] = {
      error_log,
      (void *)(uintptr_t)(FZ_JIT_LOG_BYTES - 1),
      info_log,
      (void *)(uintptr_t)(FZ_JIT_LOG_BYTES - 1),
  };
  CUresult r = cu->cuModuleLoadDataEx(
      out, ptx, (unsigned)(sizeof options / sizeof options[0]), options,
      values);
  fz_status st = FZ_OK;
  if (r != CUDA_SUCCESS) {
    char what[160];
    snprintf(what, sizeof what, "cuModuleLoadDataEx(%s)", kernel_name);
    fz_error why;
    fz_cuda_check(cu, r, what, &why);
    /* The last byte of each buffer is never handed to the driver, so the
     * logs stay terminated whatever it wrote. */
    trim_end(error_log);
    trim_end(info_log);
    const char *log = error_log[0] ? error_log
                      : info_log[0] ? info_log
                                    : "(the JIT compiler wrote no log)";
    st = fz_error_set(err, why.status, "%s\n%s", why.message, log);
    *out = NULL;
  }
  free(error_log);
  return st;
}

static fz_status func_attr(const fz_cuda *cu, CUfunction fn,
                           CUfunction_attribute attr, int *out,
                           fz_error *err) {
  return fz_cuda_check(cu, cu->cuFuncGetAttribute(out, attr, fn),
                       "cuFuncGetAttribute", err);
}

fz_status fz_module_load(fz_device *device, const char *ptx,
                         const char *kernel_name, fz_module **out,
                         fz_error *err) {
  *out = NULL;
  if (!device || !ptx || !kernel_name)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_module_load needs a device, PTX and a kernel name");
  const fz_cuda *cu = device->cu;
  fz_status st = fz_device_make_current(device, err);
  if (st)
    return st;

  fz_module *m = calloc(1, sizeof *m);
  size_t name_len = strlen(kernel_name);
  char *name = malloc(name_len + 1);
  if (!m || !name) {
    free(m);
    free(name);
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory loading kernel %s", kernel_name);
  }
  memcpy(name, kernel_name, name_len + 1);
  m->device = device;
  m->kernel_name = name;

  if ((st = load_ptx(device, ptx, kernel_name, &m->handle, err))) {
    fz_module_unload(m);
    return st;
  }
  char what[160];
  snprintf(what, sizeof what, "cuModuleGetFunction(%s)", kernel_name);
  CUfunction fn = NULL;
  if ((st = fz_cuda_check(cu, cu->cuModuleGetFunction(&fn, m->handle, name),
                          what, err)) ||
      (st = func_attr(cu, fn, CU_FUNC_ATTRIBUTE_NUM_REGS, &m->num_regs, err)) ||
      (st = func_attr(cu, fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                      &m->static_shared_bytes, err)) ||
      (st = func_attr(cu, fn, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                      &m->local_bytes, err)) ||
      (st = func_attr(cu, fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                      &m->max_threads_per_block, err)) ||
      (st = func_attr(cu, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                      &m->dynamic_shared_limit, err))) {
    fz_module_unload(m);
    return st;
  }
  m->function = fn;
  *out = m;
  return FZ_OK;
}

void fz_module_unload(fz_module *module) {
  if (!module)
    return;
  /* cuModuleUnload acts on the current context; the error, if any, has
   * nowhere to go and leaves nothing of ours behind. */
  if (module->handle && fz_device_make_current(module->device, NULL) == FZ_OK)
    module->device->cu->cuModuleUnload(module->handle);
  free(module->kernel_name);
  free(module);
}

/* Opt the kernel in to `bytes` of dynamic shared memory if it is above
 * what it may use now. */
static fz_status reserve_shared(fz_module *m, unsigned bytes, fz_error *err) {
  if (bytes <= (unsigned)m->dynamic_shared_limit)
    return FZ_OK;
  int limit = m->device->props.max_shared_per_block;
  if ((unsigned long long)bytes + (unsigned)m->static_shared_bytes >
      (unsigned long long)limit)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "kernel %s asks for %u bytes of dynamic shared memory "
                        "besides %d static; %s allows %d per block",
                        m->kernel_name, bytes, m->static_shared_bytes,
                        m->device->props.name, limit);
  char what[160];
  snprintf(what, sizeof what,
           "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)",
           m->kernel_name, bytes);
  const fz_cuda *cu = m->device->cu;
  fz_status st = fz_cuda_check(
      cu,
      cu->cuFuncSetAttribute(m->function,
                             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             (int)bytes),
      what, err);
  if (st == FZ_OK)
    m->dynamic_shared_limit = (int)bytes;
  return st;
}

fz_status fz_module_launch(fz_module *module, const unsigned grid[3],
                           const unsigned block[3], unsigned shared_bytes,
                           CUstream stream, void **params, bool cooperative,
                           fz_error *err) {
  const fz_cuda *cu = module->device->cu;
  fz_status st = fz_device_make_current(module->device, err);
  if (st || (st = reserve_shared(module, shared_bytes, err)))
    return st;
  CUresult r;
  if (cooperative)
    r = cu->cuLaunchCooperativeKernel(module->function, grid[0], grid[1],
                                      grid[2], block[0], block[1], block[2],
                                      shared_bytes, stream, params);
  else
    r = cu->cuLaunchKernel(module->function, grid[0], grid[1], grid[2],
                           block[0], block[1], block[2], shared_bytes, stream,
                           params, NULL);
  if (r == CUDA_SUCCESS)
    return FZ_OK;
  char what[256];
  snprintf(what, sizeof what,
           "%s(%s, grid %ux%ux%u, block %ux%ux%u, %u bytes shared)",
           cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel",
           module->kernel_name, grid[0], grid[1], grid[2], block[0], block[1],
           block[2], shared_bytes);
  return fz_cuda_check(cu, r, what, err);
}

fz_status fz_module_occupancy(fz_module *module, int block_size,
                              unsigned shared_bytes, int *blocks_per_sm,
                              fz_error *err) {
  *blocks_per_sm = 0;
  const fz_cuda *cu = module->device->cu;
  fz_status st = fz_device_make_current(module->device, err);
  if (st || (st = reserve_shared(module, shared_bytes, err)))
    return st;
  return FZ_CU(cu, err, cuOccupancyMaxActiveBlocksPerMultiprocessor,
               blocks_per_sm, module->function, block_size, shared_bytes);
}

/* A launch configuration in clusters of `cluster` blocks along x, and
 * cooperative when asked: attr[0] the cluster dimension, attr[1] the
 * cooperative flag. */
static CUlaunchConfig cluster_config(const unsigned grid[3],
                                     const unsigned block[3],
                                     unsigned shared_bytes, CUstream stream,
                                     int cluster, bool cooperative,
                                     CUlaunchAttribute attr[2]) {
  attr[0] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
  attr[0].value.clusterDim.x = (unsigned)cluster;
  attr[0].value.clusterDim.y = 1;
  attr[0].value.clusterDim.z = 1;
  attr[1] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
  attr[1].value.cooperative = 1;
  return (CUlaunchConfig){.gridDimX = grid[0],
                          .gridDimY = grid[1],
                          .gridDimZ = grid[2],
                          .blockDimX = block[0],
                          .blockDimY = block[1],
                          .blockDimZ = block[2],
                          .sharedMemBytes = shared_bytes,
                          .hStream = stream,
                          .attrs = attr,
                          .numAttrs = cooperative ? 2 : 1};
}

static fz_status need_clusters(const fz_module *m, bool present,
                               fz_error *err) {
  if (m->device->props.sm < 90)
    return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                        "kernel %s runs in thread-block clusters, which %s "
                        "(sm_%d) does not have (sm_90 and later do)",
                        m->kernel_name, m->device->props.name,
                        m->device->props.sm);
  if (!present)
    return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                        "kernel %s runs in thread-block clusters; this CUDA "
                        "driver has no cuLaunchKernelEx or "
                        "cuOccupancyMaxActiveClusters (CUDA 12.0 and later "
                        "have them)",
                        m->kernel_name);
  return FZ_OK;
}

fz_status fz_module_launch_cluster(fz_module *module, const unsigned grid[3],
                                   const unsigned block[3],
                                   unsigned shared_bytes, CUstream stream,
                                   void **params, int cluster,
                                   bool cooperative, fz_error *err) {
  const fz_cuda *cu = module->device->cu;
  fz_status st = need_clusters(module, cu->cuLaunchKernelEx != NULL, err);
  if (st || (st = fz_device_make_current(module->device, err)) ||
      (st = reserve_shared(module, shared_bytes, err)))
    return st;
  CUlaunchAttribute attr[2];
  CUlaunchConfig config = cluster_config(grid, block, shared_bytes, stream,
                                         cluster, cooperative, attr);
  CUresult r = cu->cuLaunchKernelEx(&config, module->function, params, NULL);
  if (r == CUDA_SUCCESS)
    return FZ_OK;
  char what[256];
  snprintf(what, sizeof what,
           "cuLaunchKernelEx(%s, grid %ux%ux%u, block %ux%ux%u, cluster %d%s, "
           "%u bytes shared)",
           module->kernel_name, grid[0], grid[1], grid[2], block[0], block[1],
           block[2], cluster, cooperative ? ", cooperative" : "",
           shared_bytes);
  return fz_cuda_check(cu, r, what, err);
}

fz_status fz_module_cluster_occupancy(fz_module *module, int block_size,
                                      unsigned shared_bytes, int cluster,
                                      int *clusters, fz_error *err) {
  *clusters = 0;
  const fz_cuda *cu = module->device->cu;
  fz_status st =
      need_clusters(module, cu->cuOccupancyMaxActiveClusters != NULL, err);
  if (st || (st = fz_device_make_current(module->device, err)) ||
      (st = reserve_shared(module, shared_bytes, err)))
    return st;
  /* the grid must be a multiple of the cluster; its size is not asked */
  unsigned grid[3] = {(unsigned)cluster, 1, 1};
  unsigned block[3] = {(unsigned)block_size, 1, 1};
  CUlaunchAttribute attr[2];
  CUlaunchConfig config =
      cluster_config(grid, block, shared_bytes, NULL, cluster, false, attr);
  return FZ_CU(cu, err, cuOccupancyMaxActiveClusters, clusters,
               module->function, &config);
}
