/* fake_cuda.c - the driver entry points fake_cuda.h describes. No check
 * assertions here: bench/miss_cpu links this file without the check
 * framework. */
#include "fake_cuda.h"

#include <string.h>

fake_cuda_state fake_cuda;

static CUresult name_of(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
                                     : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
static CUresult string_of(CUresult r, const char **s) {
  *s = "fake";
  return CUDA_SUCCESS;
}
static CUresult get_current(CUcontext *c) {
  *c = fake_cuda.current;
  return CUDA_SUCCESS;
}
static CUresult set_current(CUcontext c) {
  fake_cuda.current = c;
  return CUDA_SUCCESS;
}
/* Rounded up to 64 KiB: aligned, and no two blocks overlap. */
static CUresult mem_alloc(CUdeviceptr *p, size_t bytes) {
  fake_cuda.allocs++;
  *p = fake_cuda.next_address;
  fake_cuda.next_address += (bytes + 0xffff) & ~(CUdeviceptr)0xffff;
  return CUDA_SUCCESS;
}
static CUresult mem_free(CUdeviceptr p) {
  fake_cuda.frees++;
  return CUDA_SUCCESS;
}
static CUresult memset_async(CUdeviceptr dst, unsigned char v, size_t n,
                             CUstream s) {
  return CUDA_SUCCESS;
}
static CUresult is_capturing(CUstream s, CUstreamCaptureStatus *status) {
  *status = s && s == fake_cuda.capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                          : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
/* fz's kernels take their pointers (workspace and counters last) as
 * .u64 parameters: counting them tells a test where those two lie in a
 * launch's parameter array. */
static CUresult load(CUmodule *m, const void *image, unsigned n,
                     CUjit_option *options, void **values) {
  int count = 0;
  for (const char *p = image; (p = strstr(p, ".param .u64")); p++)
    count++;
  fake_cuda.num_params = count;
  *m = (CUmodule)0x2000;
  return CUDA_SUCCESS;
}
static CUresult unload(CUmodule m) { return CUDA_SUCCESS; }
static CUresult get_function(CUfunction *f, CUmodule m, const char *n) {
  *f = (CUfunction)0x3000;
  return CUDA_SUCCESS;
}
static CUresult func_get_attr(int *v, CUfunction_attribute a, CUfunction f) {
  *v = a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
           ? FZ_CUDA_DEFAULT_SHARED_BYTES
       : a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024
       : a == CU_FUNC_ATTRIBUTE_NUM_REGS              ? fake_cuda.num_regs
                                                      : 0;
  return CUDA_SUCCESS;
}
static CUresult func_set_attr(CUfunction f, CUfunction_attribute a, int v) {
  return CUDA_SUCCESS;
}
static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                       CUstream s, void **params, void **extra) {
  return CUDA_SUCCESS;
}
static CUresult occupancy(int *blocks, CUfunction f, int threads,
                          size_t shared) {
  *blocks = fake_cuda.blocks_per_sm;
  return CUDA_SUCCESS;
}

void fake_cuda_init(fz_cuda *cu) {
  fake_cuda = (fake_cuda_state){
      .next_address = 0x100000, .num_regs = 32, .blocks_per_sm = 2};
  *cu = (fz_cuda){
      .cuGetErrorName = name_of,
      .cuGetErrorString = string_of,
      .cuCtxGetCurrent = get_current,
      .cuCtxSetCurrent = set_current,
      .cuMemAlloc_v2 = mem_alloc,
      .cuMemFree_v2 = mem_free,
      .cuMemsetD8Async = memset_async,
      .cuStreamIsCapturing = is_capturing,
      .cuModuleLoadDataEx = load,
      .cuModuleUnload = unload,
      .cuModuleGetFunction = get_function,
      .cuFuncGetAttribute = func_get_attr,
      .cuFuncSetAttribute = func_set_attr,
      .cuLaunchKernel = launch,
      .cuOccupancyMaxActiveBlocksPerMultiprocessor = occupancy,
  };
}

fz_status fake_cuda_run_rows_and_columns(fz_executor *ex, int64_t m,
                                         int64_t n, fz_error *err) {
  fz_device_tensor in = {.dtype = FZ_F32, .rank = 2, .data = 0x7000000};
  in.sizes[0] = m;
  in.sizes[1] = n;
  in.strides[0] = n;
  in.strides[1] = 1;
  fz_device_tensor out[2] = {in, {.dtype = FZ_F32, .rank = 1}};
  out[0].data = 0x8000000;
  out[1].data = 0x9000000;
  out[1].sizes[0] = n;
  out[1].strides[0] = 1;
  return fz_executor_run(ex, &in, 1, out, 2, NULL, err);
}

fz_device fake_cuda_device(const fz_cuda *cu) {
  fz_device d = {.cu = cu, .context = (CUcontext)0x1000};
  d.props = (fz_device_props){.name = "fake H200",
                              .sm = 90,
                              .sm_count = 132,
                              .max_threads_per_block = 1024,
                              .max_threads_per_sm = 2048,
                              .warp_size = 32,
                              .max_shared_per_block = 227 * 1024,
                              .max_shared_per_sm = 228 * 1024,
                              .max_registers_per_block = 65536,
                              .l2_bytes = 60 << 20,
                              .cooperative_launch = true};
  return d;
}
