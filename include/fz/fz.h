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

/* The library version, "MAJOR.MINOR.PATCH". */
const char *fz_version(void);

#ifdef __cplusplus
}
#endif
#endif
