/* cuda.h - lib/runtime's internal header: the slice of the CUDA driver API
 * that fz uses, declared here instead of taken from the toolkit, and the
 * prototypes of the runtime files grouped by the file that defines them.
 *
 * Why not the toolkit's <cuda.h>: fz must build, and compile fusions down to
 * PTX, on machines without CUDA, and must not link libcuda.so (a binary
 * linked against it will not even start where the driver is absent). So the
 * driver is opened with dlopen on first use (cuda.c) and called through the
 * function table below. Types, enum values and signatures follow the public
 * CUDA Driver API reference (https://docs.nvidia.com/cuda/cuda-driver-api/:
 * "Data types used by CUDA driver", "Error Handling", "Device Management",
 * "Primary Context Management", "Module Management", "Memory Management",
 * "Execution Control", "Occupancy", "Stream Management", "Event
 * Management"); the numeric values were checked against the values the
 * CUDA 13.0 toolkit header gives them. Only the values fz uses are listed.
 *
 * Every function comes under its exported symbol name, so that the table is
 * one X-macro list: the struct fields, the dlsym loop and the call sites all
 * spell the same name (cu->cuMemAlloc_v2(...)). Where the toolkit header
 * maps a name onto a _v2 symbol (cuMemAlloc -> cuMemAlloc_v2), we bind the
 * _v2 symbol, which has the 64-bit sizes; the plain symbols remain for old
 * 32-bit ABIs. cuEventElapsedTime is bound under its plain name, which every
 * driver exports (cuEventElapsedTime_v2 only exists from CUDA 12.8 on).
 */
#ifndef FZ_RUNTIME_CUDA_H
#define FZ_RUNTIME_CUDA_H

#include "fz/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- driver types (CUDA Driver API, "Data types used by CUDA driver") -- */

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_STUB_LIBRARY = 34, /* the toolkit's link stub, not a driver */
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
} CUresult;

typedef enum CUdevice_attribute_enum {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13, /* kHz */
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,     /* kHz */
  CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37, /* bits */
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,           /* bytes */
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
} CUdevice_attribute;

typedef enum CUfunction_attribute_enum {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1, /* static shared memory */
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,  /* spills and local arrays */
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
} CUfunction_attribute;

/* JIT options for cuModuleLoadDataEx. A *_SIZE_BYTES value goes in as the
 * buffer size and comes back as the number of bytes written. */
typedef enum CUjit_option_enum {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
} CUjit_option;

/* cuStreamIsCapturing: whether work queued on a stream is being recorded
 * into a CUDA graph instead of run. */
typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
} CUstreamCaptureStatus;

/* Flags: cuStreamCreate, cuEventCreate. */
enum {
  CU_STREAM_DEFAULT = 0x0,
  CU_STREAM_NON_BLOCKING = 0x1,
  CU_EVENT_DEFAULT = 0x0,
};

/* cuLaunchKernelEx's launch configuration ("Data types used by CUDA
 * driver": CUlaunchConfig, CUlaunchAttribute, CUlaunchAttributeValue, a
 * 64-byte union of which fz sets only the cluster dimension and the
 * cooperative flag). */
typedef enum CUlaunchAttributeID_enum {
  CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
} CUlaunchAttributeID;

typedef union CUlaunchAttributeValue_union {
  char pad[64];
  int cooperative;
  struct {
    unsigned int x, y, z;
  } clusterDim;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

/* Without an opt-in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) a
 * block may use at most this much shared memory, on every architecture. */
#define FZ_CUDA_DEFAULT_SHARED_BYTES (48 * 1024)

/* ---- the function table (cuda.c) ---------------------------------------- */

/* X(exported symbol, parameter list). Every entry returns CUresult. */
#define FZ_CUDA_FUNCS(X)                                                       \
  X(cuInit, (unsigned int flags))                                              \
  X(cuDriverGetVersion, (int *version))                                        \
  X(cuGetErrorName, (CUresult error, const char **str))                        \
  X(cuGetErrorString, (CUresult error, const char **str))                      \
  X(cuDeviceGet, (CUdevice * device, int ordinal))                             \
  X(cuDeviceGetCount, (int *count))                                            \
  X(cuDeviceGetName, (char *name, int len, CUdevice dev))                      \
  X(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev))  \
  X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev))                       \
  X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev))                \
  X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                              \
  X(cuCtxSetCurrent, (CUcontext ctx))                                          \
  X(cuCtxGetCurrent, (CUcontext * pctx))                                       \
  X(cuCtxSynchronize, (void))                                                  \
  X(cuMemGetInfo_v2, (size_t * free_bytes, size_t * total_bytes))              \
  X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize))                      \
  X(cuMemFree_v2, (CUdeviceptr dptr))                                          \
  X(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t bytes))         \
  X(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t bytes))               \
  X(cuMemcpyDtoD_v2, (CUdeviceptr dst, CUdeviceptr src, size_t bytes))         \
  X(cuMemcpyHtoDAsync_v2,                                                      \
    (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))         \
  X(cuMemcpyDtoHAsync_v2,                                                      \
    (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))               \
  X(cuMemcpyDtoDAsync_v2,                                                      \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))         \
  X(cuMemsetD8_v2, (CUdeviceptr dst, unsigned char uc, size_t n))              \
  X(cuMemsetD32_v2, (CUdeviceptr dst, unsigned int ui, size_t n))              \
  X(cuMemsetD8Async,                                                           \
    (CUdeviceptr dst, unsigned char uc, size_t n, CUstream stream))            \
  X(cuMemsetD32Async,                                                          \
    (CUdeviceptr dst, unsigned int ui, size_t n, CUstream stream))             \
  X(cuModuleLoadDataEx, (CUmodule * module, const void *image,                 \
                         unsigned int num_options, CUjit_option *options,      \
                         void **option_values))                                \
  X(cuModuleUnload, (CUmodule module))                                         \
  X(cuModuleGetFunction, (CUfunction * fn, CUmodule module, const char *name)) \
  X(cuModuleGetGlobal_v2, (CUdeviceptr * dptr, size_t * bytes,                 \
                           CUmodule module, const char *name))                 \
  X(cuFuncGetAttribute, (int *pi, CUfunction_attribute attrib, CUfunction fn)) \
  X(cuFuncSetAttribute, (CUfunction fn, CUfunction_attribute attrib, int v))   \
  X(cuLaunchKernel,                                                            \
    (CUfunction f, unsigned int grid_x, unsigned int grid_y,                   \
     unsigned int grid_z, unsigned int block_x, unsigned int block_y,          \
     unsigned int block_z, unsigned int shared_bytes, CUstream stream,         \
     void **params, void **extra))                                             \
  X(cuLaunchCooperativeKernel,                                                 \
    (CUfunction f, unsigned int grid_x, unsigned int grid_y,                   \
     unsigned int grid_z, unsigned int block_x, unsigned int block_y,          \
     unsigned int block_z, unsigned int shared_bytes, CUstream stream,         \
     void **params))                                                           \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                               \
    (int *num_blocks, CUfunction fn, int block_size, size_t dynamic_shared))   \
  X(cuStreamCreate, (CUstream * stream, unsigned int flags))                   \
  X(cuStreamDestroy_v2, (CUstream stream))                                     \
  X(cuStreamSynchronize, (CUstream stream))                                    \
  X(cuStreamIsCapturing, (CUstream stream, CUstreamCaptureStatus * status))    \
  X(cuEventCreate, (CUevent * event, unsigned int flags))                      \
  X(cuEventRecord, (CUevent event, CUstream stream))                           \
  X(cuEventSynchronize, (CUevent event))                                       \
  X(cuEventElapsedTime, (float *ms, CUevent start, CUevent end))               \
  X(cuEventDestroy_v2, (CUevent event))                                        \
  X(cuEventQuery, (CUevent event))                                             \
  X(cuMemAllocHost_v2, (void **pp, size_t bytesize))                           \
  X(cuMemFreeHost, (void *p))

/* Entries a driver may lack (older than CUDA 12.0): bound when present,
 * NULL otherwise; what needs them reports that the driver is too old. */
#define FZ_CUDA_OPTIONAL_FUNCS(X)                                              \
  X(cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f,             \
                       void **params, void **extra))                           \
  X(cuOccupancyMaxActiveClusters,                                              \
    (int *num_clusters, CUfunction fn, const CUlaunchConfig *config))

typedef struct fz_cuda {
#define FZ_X_FIELD(name, params) CUresult(*name) params;
  FZ_CUDA_FUNCS(FZ_X_FIELD)
  FZ_CUDA_OPTIONAL_FUNCS(FZ_X_FIELD)
#undef FZ_X_FIELD
  int driver_version; /* 1000*major + 10*minor, e.g. 12040 for 12.4 */
} fz_cuda;

/* Opens libcuda.so.1 once per process (thread-safe), binds every entry and
 * calls cuInit(0); later calls return the cached outcome. No driver
 * library, or cuInit reporting CUDA_ERROR_NO_DEVICE or
 * CUDA_ERROR_STUB_LIBRARY, gives FZ_ERR_NO_DEVICE; a driver lacking a
 * symbol, or any other cuInit failure, FZ_ERR_CUDA. */
fz_status fz_cuda_load(const fz_cuda **out, fz_error *err);

/* The uncached step of fz_cuda_load, exposed for tests: dlopen `library`,
 * bind the table, no cuInit. On success *handle is the dlopen handle (the
 * caller may dlclose it); on failure nothing stays open. */
fz_status fz_cuda_bind(const char *library, fz_cuda *cu, void **handle,
                       fz_error *err);

/* FZ_OK for CUDA_SUCCESS; otherwise FZ_ERR_CUDA with the message
 * "what: CUDA_ERROR_XXX (description)". */
fz_status fz_cuda_check(const fz_cuda *cu, CUresult r, const char *what,
                        fz_error *err);

/* Calls cu->fn(args...) and checks it, naming the call in the message:
 *   FZ_CU(cu, err, cuMemFree_v2, ptr) */
#define FZ_CU(cu, err, fn, ...)                                                \
  fz_cuda_check((cu), (cu)->fn(__VA_ARGS__), #fn, (err))

/* ---- device.c ----------------------------------------------------------- */

/* fz_device_props, fz_device_open, fz_device_close and fz_device_get_props
 * are public (fz.h). */
struct fz_device {
  fz_device_props props;
  const fz_cuda *cu;
  CUdevice handle;
  CUcontext context; /* the primary context, retained until close */
};

/* Makes the device's context current on the calling thread (a no-op when
 * it already is, which is the common case and costs one driver call). */
fz_status fz_device_make_current(fz_device *device, fz_error *err);
fz_status fz_device_synchronize(fz_device *device, fz_error *err);

fz_status fz_stream_create(fz_device *device, CUstream *out, fz_error *err);
/* Accepts NULL (the legacy default stream, which is not destroyed). */
fz_status fz_stream_destroy(fz_device *device, CUstream stream, fz_error *err);
fz_status fz_stream_synchronize(fz_device *device, CUstream stream,
                                fz_error *err);

/* ---- module.c ----------------------------------------------------------- */

/* One PTX module JIT-compiled by the driver and one kernel in it. */
typedef struct fz_module {
  fz_device *device;
  CUmodule handle;
  CUfunction function;
  char *kernel_name;
  int num_regs;            /* per thread */
  int static_shared_bytes; /* declared in the PTX (.shared) */
  int local_bytes;         /* per thread; nonzero means spills */
  int max_threads_per_block;
  int dynamic_shared_limit; /* last opt-in set; 48 KiB until raised */
} fz_module;

/* Loads NUL-terminated PTX and looks up kernel_name. A PTX the driver
 * rejects gives FZ_ERR_CUDA whose message carries the JIT error log. */
fz_status fz_module_load(fz_device *device, const char *ptx,
                         const char *kernel_name, fz_module **out,
                         fz_error *err);
/* Accepts NULL. */
void fz_module_unload(fz_module *module);

/* Launches the kernel: cuLaunchCooperativeKernel when cooperative (all
 * blocks co-resident, needed for grid-wide barriers), cuLaunchKernelEx in
 * clusters of `cluster` blocks along x when cluster > 1 (fz_module_launch_
 * cluster), else cuLaunchKernel.
 * shared_bytes is dynamic shared memory; above 48 KiB the kernel is opted
 * in first (once per size increase). params follows cuLaunchKernel: one
 * pointer per kernel parameter, pointing at its value. */
fz_status fz_module_launch(fz_module *module, const unsigned grid[3],
                           const unsigned block[3], unsigned shared_bytes,
                           CUstream stream, void **params, bool cooperative,
                           fz_error *err);

/* The same in thread-block clusters of `cluster` blocks along x (grid[0]
 * a multiple of it), cooperative as well when asked (both attributes of
 * one cuLaunchKernelEx: every block resident at once, which the caller
 * has checked with fz_module_cluster_occupancy). FZ_ERR_UNSUPPORTED when
 * the driver has no cuLaunchKernelEx. */
fz_status fz_module_launch_cluster(fz_module *module, const unsigned grid[3],
                                   const unsigned block[3],
                                   unsigned shared_bytes, CUstream stream,
                                   void **params, int cluster,
                                   bool cooperative, fz_error *err);

/* How many clusters of `cluster` blocks of block_size threads (each with
 * shared_bytes dynamic shared memory) the device keeps resident at once;
 * FZ_ERR_UNSUPPORTED when the driver or the device has no clusters. */
fz_status fz_module_cluster_occupancy(fz_module *module, int block_size,
                                      unsigned shared_bytes, int cluster,
                                      int *clusters, fz_error *err);

/* How many blocks of block_size threads, each with shared_bytes dynamic
 * shared memory, fit on one SM at once (the cooperative grid limit is this
 * times the SM count). */
fz_status fz_module_occupancy(fz_module *module, int block_size,
                              unsigned shared_bytes, int *blocks_per_sm,
                              fz_error *err);

/* ---- memory.c ----------------------------------------------------------- */

/* bytes == 0 gives *out = 0 without calling the driver. Out of device
 * memory gives FZ_ERR_OUT_OF_MEMORY. */
fz_status fz_device_alloc(fz_device *device, size_t bytes, CUdeviceptr *out,
                          fz_error *err);
/* Accepts ptr == 0. */
fz_status fz_device_free(fz_device *device, CUdeviceptr ptr, fz_error *err);
fz_status fz_device_memset8(fz_device *device, CUdeviceptr dst,
                            unsigned char value, size_t count, fz_error *err);
/* count 32-bit words; dst must be 4-byte aligned. */
fz_status fz_device_memset32(fz_device *device, CUdeviceptr dst,
                             uint32_t value, size_t count, fz_error *err);
/* Synchronous copies (the legacy default stream). */
fz_status fz_copy_to_device(fz_device *device, CUdeviceptr dst,
                            const void *src, size_t bytes, fz_error *err);
fz_status fz_copy_to_host(fz_device *device, void *dst, CUdeviceptr src,
                          size_t bytes, fz_error *err);
fz_status fz_copy_device(fz_device *device, CUdeviceptr dst, CUdeviceptr src,
                         size_t bytes, fz_error *err);
/* Enqueued on `stream`; returns before the copy is done. */
fz_status fz_copy_device_async(fz_device *device, CUdeviceptr dst,
                               CUdeviceptr src, size_t bytes, CUstream stream,
                               fz_error *err);

/* Times `runs` repetitions of work on one stream, one pair of CUDA events
 * each. All runs are enqueued before any is read, each behind a flush
 * that keeps the GPU busy while the host enqueues the run, so the launch
 * latency of the host stays out of the time, and that leaves the L2 as a
 * stream of such runs would leave it:
 *   - a read of a buffer larger than the L2 (a small kernel of the
 *     timer's own), which evicts the previous run's data, so each run
 *     reads from device memory as a cold call would;
 *   - then a write of as many bytes as the run writes
 *     (fz_timer_set_written; at most the buffer), whose dirty lines the
 *     run writes back as it evicts them: what the run's own writes cost
 *     the run after it.
 * FZ_TIMER_FLUSH=write in the environment (read at fz_timer_create)
 * flushes with a write of the whole buffer instead, as Triton's do_bench
 * does: then every run pays for an L2 full of dirty lines whatever it
 * writes itself (about 6 us on an H100; bench/README.md). */
typedef struct fz_timer {
  fz_device *device;
  int runs;
  CUevent *start, *stop;
  CUstream stream;
  CUdeviceptr flush;   /* read before each run, then partly written */
  size_t flush_bytes;
  size_t flush_pieces; /* its 16-byte pieces, the read kernel's count */
  size_t written;      /* bytes written after the read */
  bool write_flush;    /* FZ_TIMER_FLUSH=write */
  CUdeviceptr sink;    /* what the read kernel may write: never, in fact */
  CUmodule module;
  CUfunction read;
} fz_timer;

fz_status fz_timer_create(fz_device *device, int runs, fz_timer **out,
                          fz_error *err);
/* Accepts NULL. */
void fz_timer_destroy(fz_timer *timer);
/* The bytes each timed run writes (0 until set), which the flush writes
 * after its read. */
void fz_timer_set_written(fz_timer *timer, size_t bytes);
/* Enqueues the cache flush, then run's start event. */
fz_status fz_timer_start(fz_timer *timer, int run, CUstream stream,
                         fz_error *err);
/* Records run's stop event on the stream given to fz_timer_start. */
fz_status fz_timer_stop(fz_timer *timer, int run, fz_error *err);
/* Waits for every run, then writes each run's time to ms[0..runs). */
fz_status fz_timer_elapsed_ms(fz_timer *timer, float *ms, fz_error *err);

#ifdef __cplusplus
}
#endif
#endif
