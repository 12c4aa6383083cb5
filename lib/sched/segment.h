/* segment.h - splitting a fusion that no single scheduler accepts.
 *
 * A segmentation is an ordered list of segments, each a complete fusion of
 * its own that one scheduler accepts, plus the intermediate tensors that
 * carry values from one segment to a later one. Running the segments in
 * order, each reading the parent's inputs, the parent's outputs already
 * written or intermediates, computes exactly the parent fusion.
 *
 * Segmentation depends on the problem (sizes, strides and layouts decide
 * what a scheduler accepts), so it is computed per call signature, like a
 * plan. A fusion that one scheduler accepts whole is one segment whose
 * fusion is the parent itself.
 */
#ifndef FZ_SCHED_SEGMENT_H
#define FZ_SCHED_SEGMENT_H

#include "sched/plan.h"

/* Where a segment's input or output tensor lives. */
typedef enum fz_buffer_kind {
  FZ_BUFFER_INPUT,        /* the parent fusion's input `index` */
  FZ_BUFFER_OUTPUT,       /* the parent fusion's output `index` */
  FZ_BUFFER_INTERMEDIATE, /* segmentation->intermediates[index] */
} fz_buffer_kind;

typedef struct fz_buffer_ref {
  fz_buffer_kind kind;
  int index;
} fz_buffer_ref;

/* A tensor written by one segment and read by later ones that is not a
 * parent output. Its type has has_layout set (declared in the parent, or
 * propagated by the alloc-order rules) and is fully contiguous: the
 * executor allocates it densely in that order, 16-byte aligned. */
typedef struct fz_intermediate {
  const fz_value *value; /* in the parent fusion */
  fz_type type;
} fz_intermediate;

typedef struct fz_segment {
  /* A verified fusion with the parent's symbols at the same indices (so
   * the parent's symbol values bind it unchanged). owned: false only for
   * the single segment of a fusion scheduled whole (fusion == parent). */
  fz_fusion *fusion;
  bool owned;
  const char *scheduler;  /* "pointwise", "reduction", ... */
  fz_buffer_ref *inputs;  /* fusion->num_inputs */
  fz_buffer_ref *outputs; /* fusion->num_outputs */
  int num_ops;
  int *parent_ops; /* indices into the parent's ops, in SSA order */
} fz_segment;

typedef struct fz_segmentation {
  const fz_fusion *parent;
  int num_segments;
  fz_segment *segments; /* execution order */
  int num_intermediates;
  fz_intermediate *intermediates;
  /* Why larger merges were rejected (one line each), for
   * fuse-opt --emit=segments; NULL when scheduled whole. */
  char *notes;
} fz_segmentation;

/* Split problem->fusion into the fewest segments the schedulers accept
 * (greedy merging along producer-consumer edges, largest tensors first,
 * never creating a cycle); past FZ_SEG_GREEDY_MAX_OPS ops, into the
 * longest runs of consecutive ops they accept (segment.c). FZ_ERR_UNSUPPORTED
 * when even single ops cannot be scheduled. On success *out is owned by
 * the caller. */
fz_status fz_segment_fusion(const fz_problem *problem,
                            fz_segmentation **out, fz_error *err);
/* The same; when the fusion is scheduled whole (one segment) and
 * plan_arena and whole_plan are given, *whole_plan is its verified plan,
 * allocated in plan_arena: the plan fz_schedule would build for that
 * segment, which the caller need not build again. NULL otherwise. */
fz_status fz_segment_fusion_planned(const fz_problem *problem,
                                    fz_arena *plan_arena,
                                    fz_segmentation **out,
                                    fz_plan **whole_plan, fz_error *err);
void fz_segmentation_destroy(fz_segmentation *segmentation);

/* The tensor descriptors of one segment for a call: inputs from the
 * parent problem's inputs and outputs or the intermediates' descriptors
 * (intermediate_descs[i], from fz_intermediate_desc), symbols shared.
 * The descriptor arrays are allocated in `arena`. */
void fz_intermediate_desc(const fz_intermediate *im, const int64_t *symbols,
                          fz_tensor_desc *out);
void fz_segment_problem(const fz_segmentation *segmentation, int segment,
                        const fz_problem *parent,
                        const fz_tensor_desc *intermediate_descs,
                        fz_arena *arena, fz_problem *out);

/* Text for fuse-opt --emit=segments: one line per segment (scheduler,
 * ops, inputs and outputs by parent value name), then the notes. */
void fz_segmentation_print(const fz_segmentation *segmentation, fz_buf *out);
/* The same, with kernel_names[k] (when kernel_names and it are non-NULL)
 * after segment k's scheduler, as fuse-opt prints it. */
void fz_segmentation_print_kernels(const fz_segmentation *segmentation,
                                   const char *const *kernel_names,
                                   fz_buf *out);

#endif
