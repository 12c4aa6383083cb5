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
 * whose plan has the same structural key. */
typedef struct kernel_entry {
  const char *key;
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
  /* Split reductions and cooperative plans: partials, then counters. The
   * counters are zeroed once here and reset by the kernel's last block,
   * so a launch needs no memset. */
  CUdeviceptr workspace;
  CUdeviceptr counters;
  /* Cooperative plans: the blocks that can all be resident at once, at
   * most the plan's grid_x (kernels read gridDim, not the plan). */
  unsigned cooperative_grid;
  /* Nothing to do for this signature: every output of the segment is
   * empty (then plan and kernel are NULL: it is not even scheduled), or
   * the launch grid is (a zero-block launch is an error in CUDA). */
  bool skip;
} segment_launch;

/* Everything one input signature needs, built once on its first call.
 * Workspaces and intermediates belong to the signature: calls of one
 * executor must not run concurrently on different streams. */
typedef struct signature_entry {
  int64_t *sig;
  int sig_len;
  fz_arena *arena; /* plans, parameters, launches */
  fz_segmentation *segmentation;
  int num_launches;
  segment_launch *launches;
  /* Intermediates: one device allocation, each tensor dense in its
   * layout at a 256-byte aligned offset. */
  CUdeviceptr intermediate_block;
  CUdeviceptr *intermediates; /* segmentation->num_intermediates */
  char *plan_text;            /* every launch's plan, concatenated (malloc'd) */
  char *ptx_text; /* their PTX concatenated (malloc'd), or NULL when the
                     one launch's kernel's PTX is used as it is */
} signature_entry;

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
};

/* executor_prepare.c: a signature miss. in/out are the call's tensors
 * (outputs allocated or placeholders of the same alignment class), b the
 * bound symbols. On success *out is the new entry, added to
 * ex->signatures; on failure *out is NULL and nothing of the entry is left
 * allocated (kernels compiled on the way stay in the kernel cache). */
fz_status fz_executor_prepare(fz_executor *ex, const fz_device_tensor *in,
                              const fz_device_tensor *out, const fz_bindings *b,
                              const int64_t *sig, int sig_len,
                              signature_entry **entry, fz_error *err);
/* Frees what an entry owns (device memory, texts, segmentation, arena). */
void fz_executor_signature_free(fz_executor *ex, signature_entry *e);

#endif
