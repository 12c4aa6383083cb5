/* fz.h - the public C API of fz, a fusion compiler for NVIDIA GPUs.
 *
 * Conventions (zstd-style):
 *  - one prefix, fz_; handles are pointers to structs that callers treat as
 *    opaque (their layout lives in fz/ir.h for the compiler's own passes);
 *  - every fallible call returns an fz_status and, when given a non-NULL
 *    fz_error, fills it with the status and a human-readable message;
 *    fz_status_name() names a status;
 *  - create/destroy pairs own everything: destroying a fusion frees every
 *    value, op and string created for it (one arena per fusion); destroy
 *    functions accept NULL;
 *  - nothing here calls exit() or abort() on bad input.
 *
 * Thread safety: distinct fusions may be used from distinct threads; one
 * fusion must not be used from two threads at once.
 */
#ifndef FZ_FZ_H
#define FZ_FZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors ------------------------------------------------- */

#define FZ_STATUS_LIST(X)                                                      \
  X(FZ_OK, "ok")                                                               \
  X(FZ_ERR_PARSE, "parse error")                                               \
  X(FZ_ERR_INVALID, "invalid fusion")                                          \
  X(FZ_ERR_ARGUMENT, "invalid argument")                                       \
  X(FZ_ERR_UNSUPPORTED, "unsupported")                                         \
  X(FZ_ERR_NO_DEVICE, "no CUDA device")                                        \
  X(FZ_ERR_CUDA, "CUDA error")                                                 \
  X(FZ_ERR_LLVM, "LLVM error")                                                 \
  X(FZ_ERR_OUT_OF_MEMORY, "out of memory")                                     \
  X(FZ_ERR_IO, "I/O error")                                                    \
  X(FZ_ERR_INTERNAL, "internal error")

typedef enum fz_status {
#define FZ_X_ENUM(e, s) e,
  FZ_STATUS_LIST(FZ_X_ENUM)
#undef FZ_X_ENUM
} fz_status;

/* Where an error is reported. Callers own it (usually on the stack). */
typedef struct fz_error {
  fz_status status;
  char message[1024];
} fz_error;

const char *fz_status_name(fz_status status);

/* Fills err (if non-NULL) and returns status. printf-style. */
fz_status fz_error_set(fz_error *err, fz_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- dtypes ------------------------------------------------------------ */

#define FZ_DTYPE_LIST(X)                                                       \
  X(F64, "f64", 8)                                                             \
  X(F32, "f32", 4)                                                             \
  X(F16, "f16", 2)                                                             \
  X(BF16, "bf16", 2)                                                           \
  X(I64, "i64", 8)                                                             \
  X(I32, "i32", 4)                                                             \
  X(I8, "i8", 1)                                                               \
  X(BOOL, "bool", 1)

typedef enum fz_dtype {
#define FZ_X_ENUM(e, s, n) FZ_##e,
  FZ_DTYPE_LIST(FZ_X_ENUM)
#undef FZ_X_ENUM
      FZ_NUM_DTYPES
} fz_dtype;

const char *fz_dtype_name(fz_dtype dtype);
size_t fz_dtype_size(fz_dtype dtype);
bool fz_dtype_is_float(fz_dtype dtype);   /* f64 f32 f16 bf16 */
bool fz_dtype_is_integer(fz_dtype dtype); /* i64 i32 i8 (not bool) */

/* ---- fusions ------------------------------------------------------------ */

#define FZ_MAX_RANK 8

typedef struct fz_fusion fz_fusion;
typedef struct fz_value fz_value;
typedef struct fz_op fz_op;

fz_fusion *fz_fusion_create(const char *name);
void fz_fusion_destroy(fz_fusion *fusion);

/* Parse one fusion from the text format. filename is used in diagnostics
 * ("file:line:col: error: ..."). On failure *out is NULL. */
fz_status fz_parse(const char *filename, const char *text, size_t length,
                   fz_fusion **out, fz_error *err);
/* The same, numbering lines in diagnostics from first_line (fz_parse uses
 * 1): for a file split into pieces, as fuse-opt --split-input-file does. */
fz_status fz_parse_at(const char *filename, int first_line, const char *text,
                      size_t length, fz_fusion **out, fz_error *err);

/* Print in the text format. Returns a malloc'd NUL-terminated string that
 * the caller frees with free(), or NULL when out of memory. */
char *fz_print(const fz_fusion *fusion);

/* Check every invariant of the IR; returns FZ_ERR_INVALID with a message
 * naming the offending value on failure. */
fz_status fz_verify(const fz_fusion *fusion, fz_error *err);

/* ---- host tensors and the reference interpreter ---------------------- */

/* A strided view of host memory. Strides are in elements and may be 0
 * (broadcast/expanded) or permuted. Rank 0 is a scalar. */
typedef struct fz_host_tensor {
  fz_dtype dtype;
  int rank;
  int64_t sizes[FZ_MAX_RANK];
  int64_t strides[FZ_MAX_RANK];
  void *data;
} fz_host_tensor;

/* The value of every symbolic extent, bound from the inputs' sizes. */
typedef struct fz_bindings {
  int num_symbols;
  int64_t *values; /* owned by the caller or by fz_bindings_free */
} fz_bindings;

/* Bind symbols from inputs (checks rank, dtype, and that every constant and
 * shared symbolic extent agrees). values is malloc'd: free with
 * fz_bindings_free. */
fz_status fz_bind_inputs(const fz_fusion *fusion, const fz_host_tensor *inputs,
                         int num_inputs, fz_bindings *out, fz_error *err);
void fz_bindings_free(fz_bindings *bindings);

/* Logical sizes of output i under the bindings. */
fz_status fz_output_sizes(const fz_fusion *fusion, int output,
                          const fz_bindings *bindings,
                          int64_t sizes[FZ_MAX_RANK], fz_error *err);

/* Runs the fusion on the host, accumulating in f64 and rounding each value
 * to its dtype exactly as the GPU stores it. outputs[i] must describe
 * caller-allocated memory of the right dtype and sizes (any strides). */
fz_status fz_interpret(const fz_fusion *fusion, const fz_host_tensor *inputs,
                       int num_inputs, fz_host_tensor *outputs, int num_outputs,
                       fz_error *err);

/* ---- passes ------------------------------------------------------------- */

/* Runs the named pass ("canonicalize", ...) in place. */
fz_status fz_run_pass(fz_fusion *fusion, const char *pass_name, fz_error *err);

/* ---- devices (lib/runtime) ---------------------------------------------- */

/* A CUDA device with its primary context retained. The driver is loaded on
 * first use (dlopen of libcuda.so.1): without it, or without a device,
 * fz_device_open returns FZ_ERR_NO_DEVICE and everything up to PTX still
 * works. */
typedef struct fz_device fz_device;

typedef struct fz_device_props {
  int ordinal;
  char name[256];
  int sm;                        /* compute capability, 10*major+minor: 90 */
  int sm_count;                  /* multiprocessors */
  int max_threads_per_block;
  int max_threads_per_sm;
  int warp_size;
  int max_shared_per_block;      /* bytes, with the opt-in (above 48 KiB) */
  int max_shared_per_sm;         /* bytes */
  int max_registers_per_block;   /* 32-bit registers */
  int l2_bytes;
  int clock_khz;                 /* SM clock */
  int memory_clock_khz;
  int memory_bus_bits;
  bool cooperative_launch;
  size_t total_memory;           /* bytes */
  int driver_version;            /* 1000*major + 10*minor: 12040 */
} fz_device_props;

/* Opens device `ordinal` (0-based). FZ_ERR_NO_DEVICE without a driver or
 * when ordinal is past the last device. */
fz_status fz_device_open(int ordinal, fz_device **out, fz_error *err);
/* Releases the primary context. Accepts NULL. */
void fz_device_close(fz_device *device);
const fz_device_props *fz_device_get_props(const fz_device *device);

/* ---- executing fusions (lib/runtime/executor.c) ------------------------ */

/* A tensor in device memory: `data` is a CUdeviceptr; strides are in
 * elements (non-negative; 0 for broadcast). Rank 0 is a one-element
 * tensor. */
typedef struct fz_device_tensor {
  fz_dtype dtype;
  int rank;
  int64_t sizes[FZ_MAX_RANK];
  int64_t strides[FZ_MAX_RANK];
  uint64_t data;
} fz_device_tensor;

/* Runs one fusion on one device: checks each call's inputs against the
 * fusion, schedules, compiles once per input signature (memory cache) and
 * once per kernel (disk cache: $FZ_CACHE_DIR, else $XDG_CACHE_HOME/fz, else
 * ~/.cache/fz; FZ_CACHE_DIR=off disables it), and launches. The fusion must
 * outlive the executor and not change while it exists. One executor must
 * not be used from two threads at once. */
typedef struct fz_executor fz_executor;

fz_status fz_executor_create(const fz_fusion *fusion, fz_device *device,
                             fz_executor **out, fz_error *err);
/* Frees compiled kernels and caches (not tensors it allocated for the
 * caller). Accepts NULL. */
void fz_executor_destroy(fz_executor *executor);

/* Sizes and strides output `output` gets for these inputs: the layout the
 * fusion declares for it, or row-major. data is left 0. */
fz_status fz_executor_output_layout(fz_executor *executor,
                                    const fz_device_tensor *inputs,
                                    int num_inputs, int output,
                                    fz_device_tensor *out, fz_error *err);

/* Launches the fusion on `stream` (a CUstream; NULL for the default
 * stream). Each outputs[i] either describes caller memory (data != 0;
 * dtype, rank and sizes must match, strides may be any non-overlapping
 * ones) or has data == 0, in which case the executor fills it in with
 * fz_executor_output_layout and allocates it (free with
 * fz_device_memory_free). Nothing is launched when any check fails. */
fz_status fz_executor_run(fz_executor *executor,
                          const fz_device_tensor *inputs, int num_inputs,
                          fz_device_tensor *outputs, int num_outputs,
                          void *stream, fz_error *err);

/* Text of the plan and PTX the last run used (for tools); NULL before the
 * first run. Owned by the executor. */
const char *fz_executor_last_plan(const fz_executor *executor);
const char *fz_executor_last_ptx(const fz_executor *executor);

/* Device memory for callers (CUdeviceptr values). */
fz_status fz_device_memory_alloc(fz_device *device, size_t bytes,
                                 uint64_t *out, fz_error *err);
fz_status fz_device_memory_free(fz_device *device, uint64_t ptr,
                                fz_error *err);

/* The library version, "MAJOR.MINOR.PATCH". */
const char *fz_version(void);

#ifdef __cplusplus
}
#endif
#endif
