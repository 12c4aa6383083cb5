/* fz.h - the public C API of fz, a fusion compiler for NVIDIA GPUs.
 *
 * Conventions (zstd-style), which every function below follows unless its
 * own comment says otherwise:
 *
 *  Handles. One prefix, fz_. fz_fusion, fz_value, fz_op, fz_device and
 *  fz_executor are pointers that callers treat as opaque (their layout
 *  lives in fz/ir.h for the compiler's own passes; the "building fusions
 *  through handles" section at the end needs none of it).
 *
 *  Ownership. Whoever calls a create/open function owns the handle it
 *  returns and releases it with the matching destroy/close function, which
 *  accepts NULL. A fusion owns everything made for it: values, ops, names
 *  and strings live in its arena and are freed together by
 *  fz_fusion_destroy, never one by one. Strings passed in are copied (the
 *  caller keeps its own); strings returned are owned by the handle they
 *  came from and stay valid as long as it does, except where a comment says
 *  "malloc'd", in which case the caller frees them with free(). Tensors
 *  (host or device memory) always belong to the caller, except outputs the
 *  executor allocates on request (fz_executor_run).
 *
 *  Errors. Every fallible call returns an fz_status (FZ_OK is 0) and, when
 *  given a non-NULL fz_error, fills it with the status and a human-readable
 *  message naming what is wrong (parse errors: "file:line:col: error: ..."
 *  followed by the source line and a caret). err may always be NULL.
 *  Arguments are checked first, before a call loads the CUDA driver or
 *  touches a device, so a bad argument is FZ_ERR_ARGUMENT on every machine,
 *  with or without a GPU. Sizes are checked where they enter (text,
 *  builder, bindings, tensors): no element count, byte size or strided span
 *  that fz computes may overflow int64, and one that would is an error
 *  naming the value and the numbers. A failed call
 *  leaves its outputs in a defined state (NULL handles, unchanged caller
 *  buffers) and its objects as they were. Calls that return a pointer
 *  return NULL on failure. Nothing here calls exit() or abort() on bad
 *  input or on a runtime failure; only a broken internal invariant (a bug
 *  in fz) aborts, after printing file:line.
 *
 *  Thread safety. No function touches global mutable state except the
 *  one-time loading of the CUDA driver and LLVM's one-time target set-up,
 *  both done under pthread_once. Distinct objects may be used from
 *  distinct threads freely. Functions that take a `const` handle only read
 *  it and may run concurrently with each other on the same object; a
 *  function that takes a non-const fusion or executor needs it to itself
 *  (no other call on it, reading or writing, at the same time). Devices
 *  may be shared between threads (see fz_device_open).
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

/* Where an error is reported. Callers own it (usually on the stack) and may
 * reuse it across calls: a failing call overwrites every field. Test the
 * returned status, not err->status: a successful call need not clear it.
 * The message is NUL-terminated and truncated to fit.
 *
 * line and col locate the error in the text the fusion was parsed from
 * (1-based, as fz_parse numbers lines), or are both 0 when there is no such
 * place. A parse error has the offending token's; an error about one op
 * (the verifier's, a pass's, a scheduler's or lowering's about that op,
 * the reference interpreter's) has the op's, which it records when parsed
 * (ops built through the API have none). Errors about the fusion as a
 * whole, an argument or the device have none. The message does not repeat
 * the place (except a parse error's, which starts with file:line:col):
 * tools print "file:line:col: error: message" from these fields. */
typedef struct fz_error {
  fz_status status;
  char message[1024];
  int line, col;
} fz_error;

/* The enumerator's name ("FZ_ERR_PARSE"); "FZ_ERR_UNKNOWN" for a value not
 * in the list. A static string: never free it. Thread-safe. */
const char *fz_status_name(fz_status status);

/* Fills err (if non-NULL) with status and the printf-style message, with
 * no location (line and col 0), and returns status, so that
 * `return fz_error_set(err, ...)` reports and returns at once. For
 * embedders that report through the same type. Thread-safe (touches only
 * *err). */
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

/* Pure functions of the dtype, thread-safe, never failing: the text-format
 * name ("bf16", a static string; "?" for an invalid dtype), the size of one
 * element in bytes (0 for an invalid dtype), and the category tests. */
const char *fz_dtype_name(fz_dtype dtype);
size_t fz_dtype_size(fz_dtype dtype);
bool fz_dtype_is_float(fz_dtype dtype);   /* f64 f32 f16 bf16 */
bool fz_dtype_is_integer(fz_dtype dtype); /* i64 i32 i8 (not bool) */

/* ---- fusions ------------------------------------------------------------ */

#define FZ_MAX_RANK 8

typedef struct fz_fusion fz_fusion;
typedef struct fz_value fz_value;
typedef struct fz_op fz_op;

/* An empty fusion named `name` (copied; NULL gives "fusion"), to be filled
 * with the builder (fz/ir.h, or the handle calls at the end of this
 * header). The caller owns it: fz_fusion_destroy frees it with every
 * value, op and string made for it; destroy accepts NULL. Never returns
 * NULL (running out of host memory here is treated as fatal). */
fz_fusion *fz_fusion_create(const char *name);
void fz_fusion_destroy(fz_fusion *fusion);

/* Parses one fusion from the text format: `length` bytes of `text` (need
 * not be NUL-terminated). filename (may be NULL: "<input>") is used in
 * diagnostics only. On success *out is a new fusion the caller owns
 * (fz_fusion_destroy); on failure *out is NULL and err holds
 * FZ_ERR_PARSE (bad syntax, with file:line:col, the line and a caret) or
 * FZ_ERR_INVALID (well-formed but ill-typed, same location format).
 * Thread-safe: parses share nothing. */
fz_status fz_parse(const char *filename, const char *text, size_t length,
                   fz_fusion **out, fz_error *err);
/* The same, numbering lines in diagnostics from first_line (fz_parse uses
 * 1): for a file split into pieces, as fuse-opt --split-input-file does. */
fz_status fz_parse_at(const char *filename, int first_line, const char *text,
                      size_t length, fz_fusion **out, fz_error *err);

/* Prints in the text format (fz_parse reads it back to an equal fusion).
 * Returns a malloc'd NUL-terminated string that the caller frees with
 * free(), or NULL when out of memory or fusion is NULL. Only reads the
 * fusion: concurrent prints of one fusion are safe. */
char *fz_print(const fz_fusion *fusion);

/* Checks every invariant of the IR. FZ_OK, or FZ_ERR_INVALID with a
 * message naming the offending value (and, when an op is at fault, the
 * op's location in err->line and col). Only reads the fusion. A fusion
 * built through the builder is valid by construction; verification is for
 * fusions edited by hand or by passes, and fz_executor_create runs it. */
fz_status fz_verify(const fz_fusion *fusion, fz_error *err);

/* ---- host tensors and the reference interpreter ---------------------- */

/* A strided view of host memory, described by the caller and pointing at
 * memory the caller owns; fz never keeps the pointer past the call it is
 * given to. Strides are in elements and may be 0 (broadcast/expanded) or
 * permuted. Rank 0 is a scalar (one element at data). f16 and bf16
 * elements are stored as their 16-bit patterns, bool as one byte 0/1. */
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

/* Binds every symbol from the inputs' sizes (data and strides are not
 * looked at), checking the count of inputs, each one's rank and dtype, and
 * that constant extents, b1 axes (size 1) and every later use of a symbol
 * agree with the first, and that under these sizes every value of the
 * fusion has an element count and byte size that fit int64; errors
 * (FZ_ERR_ARGUMENT) name the input, the axis and where a conflicting
 * symbol was bound first, or the value whose size overflows. On success
 * out->values is malloc'd and the caller frees it with fz_bindings_free
 * (which accepts an already freed or zeroed fz_bindings); on failure out
 * is left empty (num_symbols 0, values NULL). Only reads the fusion. */
fz_status fz_bind_inputs(const fz_fusion *fusion, const fz_host_tensor *inputs,
                         int num_inputs, fz_bindings *out, fz_error *err);
void fz_bindings_free(fz_bindings *bindings);

/* Logical sizes of output `output` under the bindings, written to
 * sizes[0..rank). FZ_ERR_ARGUMENT for an output index out of range or a
 * symbol the bindings leave unbound. Only reads the fusion. */
fz_status fz_output_sizes(const fz_fusion *fusion, int output,
                          const fz_bindings *bindings,
                          int64_t sizes[FZ_MAX_RANK], fz_error *err);

/* The reference interpreter: runs the fusion on the host, computing in
 * f64 (int64 for integers) and rounding each value to its dtype exactly as
 * the GPU stores it; sums and products of f32, f16 and bf16 overflow to
 * inf where an f32 accumulator would (docs/format.md, Semantics).
 * outputs[i] must describe caller-allocated memory of the output's dtype,
 * rank and sizes (any non-overlapping strides); fz writes every element
 * and keeps no pointer. Its own temporaries are
 * malloc'd and freed before it returns. FZ_ERR_ARGUMENT for inputs or
 * outputs that do not fit the fusion (strides whose span overflows int64
 * included), FZ_ERR_INVALID for an op the values make undefined (amax
 * over an empty axis; at the op's location), FZ_ERR_OUT_OF_MEMORY.
 * Outputs may be partly written on failure. Only reads the fusion, so
 * several threads may interpret one fusion at once. */
fz_status fz_interpret(const fz_fusion *fusion, const fz_host_tensor *inputs,
                       int num_inputs, fz_host_tensor *outputs, int num_outputs,
                       fz_error *err);

/* ---- passes ------------------------------------------------------------- */

/* Runs the named pass in place: "canonicalize" (folds, cse, dead ops),
 * "cse", "alloc-order" (gives undeclared results their source's layout).
 * The fusion is verified afterwards. FZ_ERR_ARGUMENT for an unknown name
 * (the message lists the known ones); a pass that cannot handle its input
 * returns an error and leaves the fusion valid. Values the pass removes
 * stay allocated (in the arena) but are no longer part of the fusion:
 * handles to them must not be used as operands afterwards. Needs the
 * fusion to itself. An executor runs the copy it made when it was
 * created, so a pass run afterwards does not change what it runs. */
fz_status fz_run_pass(fz_fusion *fusion, const char *pass_name, fz_error *err);

/* ---- devices (lib/runtime) ---------------------------------------------- */

/* A CUDA device with its primary context retained. The driver is loaded on
 * first use (dlopen of libcuda.so.1, once per process, thread-safe):
 * without it, or without a device, fz_device_open returns FZ_ERR_NO_DEVICE
 * and everything up to PTX still works. fz works in the device's *primary*
 * context, the one the CUDA runtime (and so PyTorch) uses: device pointers
 * and streams from such a framework can be passed to fz as they are. Calls
 * that touch the GPU make that context current on the calling thread (a
 * no-op when it already is) and leave it current. */
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

/* Opens device `ordinal` (0-based, as CUDA_VISIBLE_DEVICES renumbers
 * them) and reads its properties once. On success *out is a handle the
 * caller owns (fz_device_close); on failure it is NULL and err says
 * FZ_ERR_ARGUMENT (negative ordinal, NULL out; checked before the driver
 * is loaded, so also on a machine without one), FZ_ERR_NO_DEVICE (no
 * driver, no device, ordinal past the last one) or FZ_ERR_CUDA (driver
 * failure, with the CUDA error's name). Opening one ordinal twice gives
 * two handles on the same primary context. A device handle is read-only
 * after opening: several threads may use it (allocate, run executors on
 * it) at once. */
fz_status fz_device_open(int ordinal, fz_device **out, fz_error *err);
/* Releases the primary context and frees the handle. Destroy every
 * executor on the device and free the memory you allocated through it
 * first. Accepts NULL. */
void fz_device_close(fz_device *device);
/* The properties read at open; owned by the device, valid until
 * fz_device_close. NULL for a NULL device. */
const fz_device_props *fz_device_get_props(const fz_device *device);

/* ---- executing fusions (lib/runtime/executor.c) ------------------------ */

/* A tensor in device memory: `data` is a CUdeviceptr (a framework's
 * device pointer, e.g. torch's tensor.data_ptr(), as an integer); strides
 * are in elements (non-negative; 0 for broadcast). Rank 0 is a
 * one-element tensor. The memory belongs to the caller. It must be aligned
 * to its element size; 16-byte alignment lets kernels use vector
 * accesses. */
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
 * ~/.cache/fz; FZ_CACHE_DIR=off disables it, FZ_CACHE_MAX_MB caps it:
 * docs/cache.md), and launches.
 *
 * A fusion that no single scheduler accepts is split into segments (one
 * kernel each, launched in order), the values passed between them kept
 * in intermediate tensors in device memory; outputs and intermediates
 * whose layout the fusion leaves undeclared follow the inputs they are
 * computed from ("alloc-order": a channels-last input gives a
 * channels-last result, as in PyTorch).
 *
 * Ownership: the executor borrows the device, which must outlive it. It
 * works on its own copy of the fusion, made at creation: the caller may
 * change or destroy the fusion afterwards without affecting it. It owns
 * its compiled modules, plans, workspaces and intermediates.
 * Threads: one executor must not be used from two threads at once (its
 * caches change on every miss); several executors, on one fusion or one
 * device, may run in parallel threads. */
typedef struct fz_executor fz_executor;

/* Verifies the fusion (FZ_ERR_INVALID if it is not), copies it, runs
 * "alloc-order" on the copy and makes an executor; nothing is compiled
 * until the first run. FZ_ERR_ARGUMENT for a NULL fusion or device. On
 * failure *out is NULL. Only reads the fusion. */
fz_status fz_executor_create(const fz_fusion *fusion, fz_device *device,
                             fz_executor **out, fz_error *err);
/* Frees compiled kernels, caches, workspaces, intermediates and its copy
 * of the fusion (not tensors it allocated for the caller, which the
 * caller frees). Work already launched must
 * have finished (synchronize the streams it ran on first). Accepts NULL. */
void fz_executor_destroy(fz_executor *executor);

/* Bad gather indices. A kernel that gathers (gather, index_select) never
 * reads outside a tensor: an index out of range reads element 0 of that
 * axis instead, and the executor reports the first such index as
 * FZ_ERR_INVALID "%p = gather: index 17 is out of range [0, 16) of axis
 * 1 of %x": at a later fz_executor_run on this executor once the stream
 * has reached the bad call (without waiting for it; that call then
 * launches nothing), and at fz_executor_check, which synchronizes
 * `stream` and reads it at once (calls captured into a CUDA graph are
 * seen only by fz_executor_check). Outputs of the bad call hold values
 * read at index 0 and should not be used; inputs are left intact. FZ_OK
 * when no bad index was met (or for an executor without gathers, which
 * touches nothing). */
fz_status fz_executor_check(fz_executor *executor, void *stream,
                            fz_error *err);

/* Sizes and strides output `output` gets for these inputs, dense: the
 * layout the fusion declares for it, else the one "alloc-order"
 * propagates from the inputs' declared layouts (an output that is an
 * input takes that input's); dtype and rank are the output's. data is
 * left 0. This is how a framework allocates outputs itself (e.g.
 * torch.empty_strided) before fz_executor_run. Binds the inputs' sizes
 * like fz_executor_run (same FZ_ERR_ARGUMENT messages); ignores their data
 * and strides. Launches and allocates nothing. */
fz_status fz_executor_output_layout(fz_executor *executor,
                                    const fz_device_tensor *inputs,
                                    int num_inputs, int output,
                                    fz_device_tensor *out, fz_error *err);
/* Every output's layout at once: outputs[i] gets what
 * fz_executor_output_layout gives for output i, with the inputs' sizes
 * bound once (binding checks every value of the fusion: for a fusion of
 * several outputs this is the cheaper call). num_outputs must be the
 * fusion's output count (FZ_ERR_ARGUMENT otherwise). On failure outputs[]
 * is left as it was. */
fz_status fz_executor_output_layouts(fz_executor *executor,
                                     const fz_device_tensor *inputs,
                                     int num_inputs, fz_device_tensor *outputs,
                                     int num_outputs, fz_error *err);

/* Launches the fusion on `stream` (a CUstream or cudaStream_t, e.g.
 * torch.cuda.current_stream().cuda_stream; NULL for the legacy default
 * stream). The call returns once the kernel is queued: inputs must stay
 * valid and outputs unread until the stream reaches it.
 *
 * Each outputs[i] either describes caller memory (data != 0; dtype, rank
 * and sizes must match, strides may be any non-overlapping ones) or has
 * data == 0, in which case the executor fills it in with
 * fz_executor_output_layout and allocates it; the caller then owns that
 * memory and frees it with fz_device_memory_free. A first call for an
 * input signature (sizes, strides, alignment) schedules and compiles,
 * synchronously on the host; later calls with the same signature only
 * launch.
 *
 * Errors: FZ_ERR_ARGUMENT for a NULL executor, inputs or outputs, and for
 * inputs or outputs that do not fit the fusion (count, dtype, rank, sizes,
 * negative strides, NULL or misaligned data, overlapping output strides,
 * strides whose span overflows int64, sizes that make some value's element
 * count or byte size overflow int64; the message names the value and the
 * axis), FZ_ERR_UNSUPPORTED when no scheduler takes the fusion, not even
 * split into segments (with the schedulers' reasons), FZ_ERR_LLVM /
 * FZ_ERR_CUDA for compile or launch failures, FZ_ERR_OUT_OF_MEMORY.
 * Nothing is launched when any check fails, and outputs the executor
 * allocated for this call are freed again (outputs[] is left as it was).
 * A segmented fusion's kernels are queued one after the other on
 * `stream`; a launch failure part-way leaves earlier kernels queued.
 *
 * Scratch memory (split reductions' workspaces, segmented fusions'
 * intermediates) comes from the executor's allocator (below): by default
 * one block per signature and stream, kept, so calls on different streams
 * never share it and may overlap in time.
 *
 * CUDA graphs: a call may be captured (cuStreamBeginCapture, or
 * torch.cuda.graph) once its signature has been seen, and with the
 * built-in allocator once it has run on the capturing stream, outside
 * capture: the first call compiles, loads the module and allocates, which
 * capture forbids; such a call during capture fails with FZ_ERR_ARGUMENT
 * and a message saying so, and nothing is queued. Outputs left for the
 * executor to allocate (data == 0) cannot be captured either. With an
 * allocator set, later calls take their scratch from it in stream order
 * (PyTorch's caching allocator serves graph capture from the graph's
 * pool). */
fz_status fz_executor_run(fz_executor *executor,
                          const fz_device_tensor *inputs, int num_inputs,
                          fz_device_tensor *outputs, int num_outputs,
                          void *stream, fz_error *err);

/* Where an executor's scratch memory comes from. alloc returns device
 * memory of at least `bytes` bytes, 256-byte aligned, for work queued on
 * `stream` (a CUstream; NULL for the legacy default stream) after the
 * call, in *out, and 0 on success (any other value: failure, reported as
 * FZ_ERR_OUT_OF_MEMORY). free takes it back once the work queued on
 * `stream` so far is done with it, in stream order, as cudaFreeAsync and
 * PyTorch's caching allocator do: memory freed on a stream is reused only
 * by later work on that stream. Called from the thread that runs the
 * executor, once per call that needs scratch memory, never for a fusion
 * that needs none. user is passed back unchanged. */
typedef struct fz_allocator {
  int (*alloc)(void *user, size_t bytes, void *stream, uint64_t *out);
  void (*free)(void *user, uint64_t ptr, size_t bytes, void *stream);
  void *user;
} fz_allocator;

/* Sets the executor's allocator (copied); NULL returns to the built-in
 * one, which keeps a block per signature and stream and allocates with
 * cuMemAlloc. Switching frees the built-in blocks (synchronously, as
 * cuMemFree does: work using them must be done). FZ_ERR_ARGUMENT for a
 * NULL executor or an allocator without both functions. */
fz_status fz_executor_set_allocator(fz_executor *executor,
                                    const fz_allocator *allocator,
                                    fz_error *err);

/* The most input signatures the executor keeps (default
 * FZ_EXECUTOR_DEFAULT_SIGNATURES): a call with a new signature beyond it
 * evicts the least recently used one, freeing its built-in scratch blocks
 * (synchronously). Compiled kernels are kept whatever the limit: they are
 * shared by every signature whose plan has the same structure.
 * FZ_ERR_ARGUMENT for a NULL executor or a limit below 1. */
enum { FZ_EXECUTOR_DEFAULT_SIGNATURES = 256 };
fz_status fz_executor_set_signature_limit(fz_executor *executor,
                                          int max_signatures, fz_error *err);

/* What an executor has done since its creation. A signature miss is a
 * call whose sizes, strides and alignments were not seen before: it
 * segments and schedules (host time in miss_seconds), and compiles only
 * the kernels whose plan structure is new: lowered and optimised by LLVM
 * (kernels_compiled) or read from the disk cache (kernels_from_disk). */
typedef struct fz_executor_stats {
  int64_t runs;               /* successful fz_executor_run calls */
  int64_t signature_misses;
  int64_t kernels_compiled;
  int64_t kernels_from_disk;
  int64_t signatures_evicted;
  int signatures_kept;
  int kernels_kept;
  double miss_seconds;        /* host time spent in signature misses */
} fz_executor_stats;
/* Fills *out (zeros for a NULL executor). */
void fz_executor_get_stats(const fz_executor *executor,
                           fz_executor_stats *out);

/* Text of the plan and PTX the last successful run used (for tools); NULL
 * before the first run. A segmented fusion's texts are those of its
 * segments, concatenated in launch order. Owned by the executor, valid
 * until it is destroyed. Made when first asked for, not on every call
 * with new sizes (NULL also when there is no memory to make them). */
const char *fz_executor_last_plan(const fz_executor *executor);
const char *fz_executor_last_ptx(const fz_executor *executor);

/* Where the last run's time went, for kernels planned with
 * FZ_TRACE=phases (inner-outer kernels: the row walk, the column
 * partials, the grid barrier, the final pass): *text becomes a malloc'd
 * report (the caller frees it with free()) giving, for each such launch,
 * when its blocks reached each phase and the span from each to the
 * next, read back from the GPU; NULL when the last run traced no kernel
 * or on an error. Waits for the device's work. */
fz_status fz_executor_last_trace(fz_executor *executor, char **text,
                                 fz_error *err);

/* Device memory for callers (CUdeviceptr values, 256-byte aligned),
 * allocated in the device's primary context and owned by the caller.
 * alloc: bytes == 0 gives *out = 0; FZ_ERR_OUT_OF_MEMORY when the device
 * is full (free caches and retry), FZ_ERR_CUDA otherwise; *out is 0 on
 * failure. free: accepts 0; synchronous (waits for work using the memory,
 * as cuMemFree does). Thread-safe. */
fz_status fz_device_memory_alloc(fz_device *device, size_t bytes,
                                 uint64_t *out, fz_error *err);
fz_status fz_device_memory_free(fz_device *device, uint64_t ptr,
                                fz_error *err);

/* The library version, "MAJOR.MINOR.PATCH"; a static string. */
const char *fz_version(void);
/* The commit libfz was built from: an abbreviated git hash, followed by
 * "-dirty" when the sources differed from it, or "unknown" when the
 * build had no git checkout; a static string. */
const char *fz_build_commit(void);

/* ---- building fusions through handles (lib/ir/api.c) ------------------ */
/*
 * Everything a framework needs to define a fusion, run it and read its
 * interface, without the IR structs of fz/ir.h: inputs from sizes, ops by
 * their text-format keyword, targets of reshape/expand/full/iota from
 * sizes, and read-only views of values. examples/embed.c and the Python
 * package (python/fz, through ctypes) are written against these. They mix
 * freely with the C builder of fz/ir.h (fz_literal_*, fz_broadcast,
 * fz_squeeze, fz_permute, fz_cast, fz_set, fz_value_set_layout,
 * fz_add_output), which takes handles and plain integers only.
 *
 * Contract, as for the builder: values live in the fusion's arena (valid
 * until fz_fusion_destroy, never freed alone); strings and arrays passed
 * in are copied; returned strings belong to the fusion. Calls that add
 * return NULL (or a status) and fill err on failure, leaving the fusion
 * exactly as it was (no op, no value, no symbol). Calls that add need the
 * fusion to themselves; calls on a const fusion only read it. A value
 * passed with a fusion must be one of that fusion's (an operand, output,
 * value to name or to read of another fusion is FZ_ERR_ARGUMENT: it would
 * dangle once that fusion is destroyed), and a NULL fusion is
 * FZ_ERR_ARGUMENT too.
 *
 * Dims. One rule for every call that takes dims or a permutation here, in
 * fz/ir.h (fz_reduce, fz_broadcast, fz_squeeze, fz_permute) and in the
 * text format: entries may be negative, counting from the end as in
 * PyTorch (-1 is the last axis; for broadcast, the last axis of the
 * result), dims may come in any order, and naming an axis twice is an
 * error. The op stores them wrapped and sorted, and prints them so.
 * Layouts (alloc_order) are not dims: their entries are never negative.
 *
 * Extents. An `extents` array has one entry per axis: a constant extent
 * (>= 0), or one of the codes below. Symbols (run-time extents) are named
 * as in the text format ([A-Za-z_][A-Za-z0-9_]*, not "b1"); one name is
 * one extent throughout the fusion, bound from the inputs at run time.
 */
#define FZ_EXTENT_SYMBOL (-1)    /* the symbol named symbols[i] */
#define FZ_EXTENT_BROADCAST (-2) /* b1: a broadcast axis of extent 1 */

/* Adds a tensor input (rank 1..FZ_MAX_RANK; rank 0: use
 * fz_fusion_add_scalar). name: NULL, or a value name ([A-Za-z0-9_.]+)
 * unique in the fusion. FZ_EXTENT_SYMBOL axes create their symbol on first
 * use; symbols NULL or symbols[i] NULL gives a fresh anonymous symbol (`?`
 * in text) for that axis. alloc_order: NULL for row-major, else a
 * permutation of the axes, outermost first (column-major [M, N] is
 * {1, 0}). contiguous: NULL for dense, else one flag per *allocated*
 * position (false: that stride is not the dense one). Returns the input,
 * or NULL with FZ_ERR_INVALID (bad dtype, rank, extent, name, order, or
 * constant extents whose product in bytes overflows int64). */
fz_value *fz_fusion_add_tensor(fz_fusion *fusion, const char *name,
                               fz_dtype dtype, int rank,
                               const int64_t *extents,
                               const char *const *symbols,
                               const int *alloc_order, const bool *contiguous,
                               fz_error *err);
/* Adds a rank-0 input (a scalar passed as a one-element device tensor). */
fz_value *fz_fusion_add_scalar(fz_fusion *fusion, const char *name,
                               fz_dtype dtype, fz_error *err);

/* A unary, binary or ternary pointwise op by keyword ("exp", "add",
 * "where", ...; the list is include/fz/ops.def). num_operands must be the
 * op's arity. FZ_ERR_INVALID for an unknown keyword, a keyword of another
 * kind (use the calls below or fz_cast), or operands that do not fit. */
fz_value *fz_build_pointwise(fz_fusion *fusion, const char *op,
                             int num_operands, fz_value *const *operands,
                             fz_error *err);
/* A reduction by keyword ("sum", "prod", "amax", "amin", "mean", and the
 * arg-reductions "argmax", "argmin"; "var" takes a correction:
 * fz_build_var) over dims, which may be in any order
 * and negative (counted from the end, as in PyTorch: see Dims above); a
 * repeated axis is an error. keepdim leaves b1 axes in their place. */
fz_value *fz_build_reduction(fz_fusion *fusion, const char *op, fz_value *a,
                             int num_dims, const int *dims, bool keepdim,
                             fz_error *err);
/* torch.argmax / torch.argmin (op "argmax" or "argmin"): the i64 position
 * of the greatest (least) element along axis `dim` (negative counts from
 * the end), or, with all_dims (PyTorch's dim=None; `dim` is then not
 * read), the flat row-major index over every axis. Ties and NaN go to the
 * first position (docs/format.md); a rank-0 operand gives 0; a bool
 * operand or an axis of extent 0 is FZ_ERR_INVALID. */
fz_value *fz_build_arg_reduction(fz_fusion *fusion, const char *op,
                                 fz_value *a, int dim, bool all_dims,
                                 bool keepdim, fz_error *err);
/* The variance over dims (fz_build_reduction's rules; "mean" is a
 * reduction keyword of its own) with Bessel's `correction`, a finite
 * number (torch.var's correction, 1 by default there; negative ones
 * divide by more than the count, as torch's do): the squared
 * distances from the mean summed, over max(0, count - correction), so a
 * correction >= count gives inf (NaN for a constant input), as in
 * PyTorch. Floating-point operands only; f16 and bf16 compute in f32. A
 * var and a mean of the same operand over the same dims are computed in
 * one pass (docs/format.md). */
fz_value *fz_build_var(fz_fusion *fusion, fz_value *a, int num_dims,
                       const int *dims, double correction, bool keepdim,
                       fz_error *err);
/* Expands a's b1 axes: extents has rank(a) entries. For a b1 axis, a
 * constant other than 1 or a symbol expands it (b1->E); 1 or
 * FZ_EXTENT_BROADCAST leaves it. Every other axis must be given its own
 * extent, or FZ_EXTENT_SYMBOL with no name, which keeps it (like -1 in
 * torch.Tensor.expand). Named symbols must already exist in the fusion
 * (an input must bind them). */
fz_value *fz_build_expand(fz_fusion *fusion, fz_value *a,
                          const int64_t *extents, const char *const *symbols,
                          fz_error *err);
/* Reshapes a (row-major element order, like torch.reshape) to `rank`
 * axes: constants, existing named symbols, FZ_EXTENT_BROADCAST for b1. The
 * element counts must be provably equal (same constant product and the
 * same symbols). */
fz_value *fz_build_reshape(fz_fusion *fusion, fz_value *a, int rank,
                           const int64_t *extents, const char *const *symbols,
                           fz_error *err);
/* A tensor of `dtype` and extents (as for reshape; rank 0 allowed) filled
 * with `value`, which for an integer dtype must be integral and in its
 * range (else FZ_ERR_INVALID naming the range, as PyTorch refuses
 * torch.full((4,), 300, dtype=torch.int8)); a float dtype takes any value
 * by IEEE conversion (1e300 fills an f32 tensor with inf); bool: nonzero
 * is true. */
fz_value *fz_build_full(fz_fusion *fusion, fz_dtype dtype, int rank,
                        const int64_t *extents, const char *const *symbols,
                        double value, fz_error *err);
/* A rank-1 tensor of `dtype` (not bool) of one axis (a constant extent,
 * or FZ_EXTENT_SYMBOL and an existing symbol name) holding start + i*step
 * (for integer dtypes, start and step integral and in the dtype's range,
 * as for fz_build_full). */
fz_value *fz_build_iota(fz_fusion *fusion, fz_dtype dtype, int64_t extent,
                        const char *symbol, double start, double step,
                        fz_error *err);
/* The value symbol `symbol` is bound to at run time (`symbol N` in text),
 * an i64 scalar: an operand that computes with a size, as a mean divides
 * by its element count, without writing the size in as a constant, so
 * that one fusion (and one kernel) serves every size. The symbol must
 * already exist (an input names it); FZ_ERR_INVALID otherwise. */
/* Random numbers by keyword: "rand" (uniform in [0, 1)) or "randn"
 * (standard normal), a tensor of float `dtype` and extents (as for
 * fz_build_full; rank 0 allowed) from `seed` and `offset`, i64 scalars of
 * the fusion (rank-0 inputs or results, or fz_literal_int). Element i
 * (row-major) depends only on (seed, offset, i), never on how the fusion
 * is scheduled; distinct offsets give independent streams
 * (docs/format.md, "rand and randn"). */
fz_value *fz_build_random(fz_fusion *fusion, const char *op, fz_dtype dtype,
                          int rank, const int64_t *extents,
                          const char *const *symbols, fz_value *seed,
                          fz_value *offset, fz_error *err);
fz_value *fz_build_symbol(fz_fusion *fusion, const char *symbol,
                          fz_error *err);

/* torch.nan_to_num(a, nan, posinf, neginf): a with NaN replaced by `nan`,
 * +inf by *posinf and -inf by *neginf, each converted to a's dtype (NULL:
 * the dtype's largest finite value, and its negation, as PyTorch's
 * defaults). Not one op but a composite of isnan, eq and where ops; the
 * result is the last where. Integer and bool operands hold no NaN or
 * infinity: the result is a copy (a set op), as in PyTorch. */
fz_value *fz_build_nan_to_num(fz_fusion *fusion, fz_value *a, double nan,
                              const double *posinf, const double *neginf,
                              fz_error *err);

/* Indexing by keyword along axis `dim` (negative counts from the end) of
 * `data`, with an i64 or i32 `index`: "gather" (torch.gather: index has
 * data's rank and the result's shape, its other axes' extents equal
 * data's) or "index_select" (torch.index_select: a 1-D index replaces
 * axis dim). An index out of range is an error when the fusion runs
 * (fz_interpret; fz_executor_check for kernels). */
fz_value *fz_build_gather(fz_fusion *fusion, const char *op, fz_value *data,
                          fz_value *index, int dim, fz_error *err);
/* The resize ops (docs/format.md, "Resize ops"), with fz_build's
 * contract. fz_build_slice: per axis of a, the elements start,
 * start + step, ... below stop, where 0 <= start <= stop <= the extent
 * and step >= 1 (step NULL: all 1); stop FZ_SLICE_END takes the axis to
 * its end, the only way a symbolic axis is sliced (with start 0, step 1).
 * Negative and out-of-range indices are the caller's to normalize (the
 * Python package does it as PyTorch does). fz_build_pad: low[k] and
 * high[k] elements of `value` (converted to a's dtype as fz_build_full's
 * value is) added before and after axis k; a negative width crops; an
 * axis padded or cropped must have a constant extent. fz_build_cat:
 * num_operands >= 1 tensors of one dtype and rank joined along `dim`
 * (negative counts from the end), each of a constant extent along it and
 * equal extents elsewhere. */
#define FZ_SLICE_END INT64_MAX
fz_value *fz_build_slice(fz_fusion *fusion, fz_value *a,
                         const int64_t *start, const int64_t *stop,
                         const int64_t *step, fz_error *err);
fz_value *fz_build_pad(fz_fusion *fusion, fz_value *a, const int64_t *low,
                       const int64_t *high, double value, fz_error *err);
fz_value *fz_build_cat(fz_fusion *fusion, int num_operands,
                       fz_value *const *operands, int dim, fz_error *err);

/* Reading a fusion's interface. Out-of-range indices give NULL; none of
 * these fail otherwise. Returned strings belong to the fusion. */
const char *fz_fusion_name(const fz_fusion *fusion);
int fz_fusion_num_inputs(const fz_fusion *fusion);
int fz_fusion_num_outputs(const fz_fusion *fusion);
fz_value *fz_fusion_input(const fz_fusion *fusion, int index);
fz_value *fz_fusion_output(const fz_fusion *fusion, int index);

/* The value's name without '%' (as given to fz_fusion_add_tensor,
 * fz_value_set_name or the text), or NULL when it has none (the printer
 * numbers such values). */
const char *fz_value_name(const fz_value *value);
/* Names a value ([A-Za-z0-9_.]+, unique in the fusion; copied). NULL
 * removes the name. FZ_ERR_INVALID for a bad or taken name, or a
 * literal. */
fz_status fz_value_set_name(fz_fusion *fusion, fz_value *value,
                            const char *name, fz_error *err);
/* The value's dtype and rank (FZ_NUM_DTYPES and -1 for NULL). */
fz_dtype fz_value_dtype(const fz_value *value);
int fz_value_rank(const fz_value *value);
/* Logical axis `axis` of value: *extent is its constant size (1 for a b1
 * axis) or FZ_EXTENT_SYMBOL, in which case *symbol is the symbol's name
 * (NULL for an anonymous one) and is NULL otherwise; *broadcast tells a b1
 * or expanded (b1->E, whose size is E) axis from an ordinary one. Any out
 * pointer may be NULL. FZ_ERR_ARGUMENT for an axis out of range. */
fz_status fz_value_axis(const fz_fusion *fusion, const fz_value *value,
                        int axis, int64_t *extent, const char **symbol,
                        bool *broadcast, fz_error *err);

/* ---- copies and streams for embedders (lib/runtime/api.c) ------------- */

/* Synchronous copies between host memory and device memory (CUdeviceptr
 * values, such as fz_device_memory_alloc returns), on the legacy default
 * stream: they wait for work queued before them there (and so for
 * fz_executor_run on a NULL stream) and complete before returning. bytes
 * == 0 does nothing. FZ_ERR_CUDA (with the driver's error) on failure.
 * Thread-safe; the memory belongs to the caller throughout. */
fz_status fz_device_memory_copy_from_host(fz_device *device, uint64_t dst,
                                          const void *src, size_t bytes,
                                          fz_error *err);
fz_status fz_device_memory_copy_to_host(fz_device *device, void *dst,
                                        uint64_t src, size_t bytes,
                                        fz_error *err);
/* Waits until all work queued on `stream` (a CUstream; NULL: the legacy
 * default stream) has finished. Errors of kernels that ran there are
 * reported here as FZ_ERR_CUDA. Thread-safe. */
fz_status fz_device_stream_synchronize(fz_device *device, void *stream,
                                       fz_error *err);

#ifdef __cplusplus
}
#endif
#endif
