/* executor.h - the executor's private data, shared by executor.c (the
 * public calls: checks, output layouts, the signature cache, launches) and
 * executor_prepare.c (what a signature miss builds: the segmentation, a
 * plan and kernel per segment, workspaces and intermediates).
 */
#ifndef FZ_RUNTIME_EXECUTOR_H
#define FZ_RUNTIME_EXECUTOR_H

#include "codegen/codegen.h"
#include "codegen/dump.h"
#include "runtime/cuda.h"
#include "sched/segment.h"

/* A compiled kernel, shared by every segment launch (of any signature)
 * whose plan has the same structural key (fz_plan_identify: the binary
 * form of fz_plan_key). */
typedef struct kernel_entry {
  fz_plan_id id;
  fz_module *module;
  char *ptx;
} kernel_entry;

/* One segment of a signature's segmentation, ready to launch. */
typedef struct segment_launch {
  const fz_segment *segment; /* where its tensors live (fz_buffer_ref) */
  fz_plan *plan;
  kernel_entry *kernel;
  int64_t *scalars; /* the plan's i64 parameters, precomputed */
  int num_scalars;
  bool has_workspace; /* the two workspace pointers end the parameters */
  /* Split reductions and cooperative plans: partials and counters, at
   * these offsets in the call's scratch memory (signature_entry). The
   * counters start at zero and the kernel's last block resets them. */
  size_t workspace_bytes, counter_bytes;
  size_t workspace_offset, counters_offset;
  /* Cooperative plans: the blocks that can all be resident at once, at
   * most the plan's grid_x (kernels read gridDim, not the plan). */
  unsigned cooperative_grid;
  /* The launch as prepared, so that a call only passes it on: grid (the
   * cooperative one for cooperative plans) and block, dynamic shared
   * memory, and whether the plan has gathers (the error word ends the
   * parameters). */
  unsigned grid[3], block[3];
  unsigned shared_bytes;
  bool has_gather;
  /* Nothing to do for this signature: every output of the segment is
   * empty (then plan and kernel are NULL: it is not even scheduled), or
   * the launch grid is (a zero-block launch is an error in CUDA). */
  bool skip;
} segment_launch;

/* Scratch memory of one signature for one stream, from the built-in
 * allocator: kept until the signature is evicted, so that a call only
 * launches. One block per stream, so that calls on two streams never share
 * a workspace. */
typedef struct scratch_block {
  CUstream stream;
  CUdeviceptr base;
  struct scratch_block *next;
} scratch_block;

/* Everything one input signature needs, built once on its first call.
 *
 * Scratch memory: what the kernels of a call need besides the caller's
 * tensors, laid out once per signature in one range of scratch_bytes:
 * the intermediates between segments (each dense in its layout), the
 * launches' workspaces, then all their counters, which must be zero when
 * a kernel starts (bytes [counters_begin, scratch_bytes)). Each offset is
 * 256-byte aligned (the descriptors promise 16). Where the memory comes
 * from is the executor's allocator's business (scratch.c). */
typedef struct signature_entry {
  int64_t *sig;
  int sig_len;
  uint64_t sig_hash; /* compared before the signature itself */
  bool has_gather;   /* some launch that runs has gathers */
  fz_arena *arena; /* plans, parameters, launches */
  fz_segmentation *segmentation;
  int num_launches;
  segment_launch *launches;
  size_t *intermediate_offsets; /* segmentation->num_intermediates */
  size_t scratch_bytes;
  size_t counters_begin;
  scratch_block *blocks; /* built-in allocator: one per stream (malloc'd) */
  uint64_t last_used;    /* the executor's run count at its last call */
  char *plan_text;       /* every launch's plan, concatenated (malloc'd) */
  char *ptx_text; /* their PTX concatenated (malloc'd), or NULL when the
                     one launch's kernel's PTX is used as it is */
} signature_entry;

/* Where a kernel's bad gather index comes from (gather_check.c): the
 * number a gathered access's site parameter holds is 1 + its position in
 * gather_errors.sites. */
typedef struct gather_site {
  char op[80];   /* "%p = gather" */
  char data[64]; /* "%x" */
  int axis;
  int64_t extent;
} gather_site;

/* The error word of the executor's plans with gathers (plan.h): two i64
 * on the device, zero until a kernel meets an index out of range; after
 * each call that ran such a kernel, a copy into pinned host memory and an
 * event, which the next call reads once the event has completed (no
 * synchronization), and fz_executor_check at once. */
typedef struct gather_errors {
  CUdeviceptr word; /* 0 until a plan with gathers is prepared */
  int64_t *host;    /* pinned, two i64 */
  CUevent copied;
  bool pending; /* a copy queued and not read yet */
  gather_site **sites;
  int num_sites, cap_sites;
} gather_errors;

struct fz_executor {
  fz_fusion *fusion; /* the executor's own copy, after "alloc-order" */
  fz_device *device;
  fz_arena *arena;
  kernel_entry **kernels;
  int num_kernels, cap_kernels;
  signature_entry **signatures;
  int num_signatures, cap_signatures;
  const signature_entry *last;
  int opt_level;
  /* FZ_PLAN_CLASSES=off when the executor was made: plans for each call's
   * exact sizes, no kernel shared by a size class (fz_problem's
   * exact_sizes), to measure what sharing costs; FZ_PLAN_CLASSES=always:
   * size-class plans from the first call on, as once sizes vary, to
   * measure a class kernel at one size. */
  bool exact_sizes, always_classes;
  /* FZ_GRID_AT_LOAD=off when the executor was made: reduction grids keep
   * the scheduler's estimate of the residency instead of being sized from
   * the loaded kernel's occupancy (lib/sched/split_grid.h), to measure
   * what that sizing gains. */
  bool grid_from_estimate;
  /* Whether the fusion's sizes changed between calls: the symbol values
   * of the first signature miss are kept, and once a miss binds others,
   * plans share kernels by size class for good. Until then (a fusion run
   * at one size, as in most static-shape programs) each signature gets
   * its exact plan, which at some sizes is faster than the class's. */
  int64_t *first_symbols;
  bool sizes_seen, sizes_vary;
  /* fz_executor_set_allocator: scratch memory from the caller's allocator
   * per call instead of the built-in blocks. */
  bool has_allocator;
  fz_allocator allocator;
  int max_signatures; /* least recently used ones beyond it are evicted */
  fz_executor_stats stats;
  gather_errors gather;
};

/* executor_prepare.c: a signature miss. in/out are the call's tensors
 * (outputs allocated or placeholders of the same alignment class), b the
 * bound symbols. On success *out is the new entry, added to
 * ex->signatures; on failure *out is NULL and nothing of the entry is left
 * allocated (kernels compiled on the way stay in the kernel cache). */
fz_status fz_executor_prepare(fz_executor *ex, const fz_device_tensor *in,
                              const fz_device_tensor *out, const fz_bindings *b,
                              const int64_t *sig, int sig_len,
                              uint64_t sig_hash, signature_entry **entry,
                              fz_error *err);
/* Makes the entry's plan_text and ptx_text if they are not made yet
 * (executor_prepare.c); FZ_ERR_OUT_OF_MEMORY when they cannot be. */
fz_status fz_executor_signature_texts(signature_entry *e, fz_error *err);
/* Frees what an entry owns (device memory, texts, segmentation, arena). */
void fz_executor_signature_free(fz_executor *ex, signature_entry *e);

/* gather_check.c. register: at a signature miss, gives each gathered
 * access of launch s its site (allocating the error word on first use).
 * after_launches: queues the copy of the error word after a call whose
 * launches read gathers (not while the stream is captured into a graph).
 * poll: at the start of a call, reports a bad index that an earlier call
 * met, if its copy has arrived, as FZ_ERR_INVALID "%p = gather: index 17
 * is out of range [0, 16) of axis 1 of %x", and clears the word. free:
 * at destruction. */
fz_status fz_gather_register(fz_executor *ex, segment_launch *s,
                             fz_error *err);
fz_status fz_gather_after_launches(fz_executor *ex, const signature_entry *e,
                                   CUstream stream, fz_error *err);
fz_status fz_gather_poll(fz_executor *ex, fz_error *err);
void fz_gather_free(fz_executor *ex);

/* scratch.c: a call's scratch memory (signature_entry). acquire gives the
 * base address for a call on `stream`, its counters zeroed in stream
 * order: the caller's allocator's memory (fresh each call), or this
 * stream's built-in block (allocated on the stream's first call). release
 * hands the caller's allocator its memory back after the launches are
 * queued (stream-ordered); built-in blocks stay. */
fz_status fz_scratch_acquire(fz_executor *ex, signature_entry *e,
                             CUstream stream, CUdeviceptr *base,
                             fz_error *err);
void fz_scratch_release(fz_executor *ex, signature_entry *e, CUstream stream,
                        CUdeviceptr base);
/* Frees the entry's built-in blocks (synchronously, as cuMemFree does). */
void fz_scratch_free_blocks(fz_executor *ex, signature_entry *e);
/* FZ_ERR_ARGUMENT, naming `what`, when `stream` is being captured into a
 * CUDA graph: what needs compiling or cuMemAlloc must happen before. */
fz_status fz_stream_check_not_capturing(fz_device *device, CUstream stream,
                                        const char *what, fz_error *err);

#endif
