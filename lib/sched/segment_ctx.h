/* segment_ctx.h - private to the segmenter: the state its strategies share
 * (segment.c sets it up and assembles the result; segment_greedy.c merges
 * groups greedily, segment_pack.c cuts large fusions in program order).
 *
 * Everything is computed on W (segment.c's top comment): ops are W's op
 * indices, values W's values. A group is a list of op indices in
 * ascending (SSA) order.
 */
#ifndef FZ_SCHED_SEGMENT_CTX_H
#define FZ_SCHED_SEGMENT_CTX_H

#include "sched/segment.h"

enum { FZ_SEG_MAX_NOTES = 12, FZ_SEG_NOTE_CHARS = 360 };

typedef struct fz_seg_ctx {
  const fz_problem *pb;
  const fz_fusion *parent;
  fz_fusion *w;
  int n;  /* w->num_ops */
  int nv; /* w->next_value_id */
  const fz_value **parent_of; /* w value id -> parent value; NULL: a copy */
  int *producer;              /* w value id -> op index, or -1 */
  int *out_index;             /* w value id -> first output index, or -1 */
  bool *live;                 /* per op */
  int num_live;
  fz_type *store;             /* w value id -> layout as an intermediate */
  fz_tensor_desc *desc;       /* w value id -> descriptor as intermediate */
  int64_t *bytes;             /* w value id */
  /* the ops reading each value: users[user_start[id] .. user_start[id+1]) */
  int *user_start, *users;
  /* per symbol, the first W input whose type names it, or -1 */
  int *symbol_input;
  /* scratch for building candidates, reset after each: the stamp marks
   * what belongs to the candidate being built */
  int stamp;
  int *op_stamp;     /* per op: in the candidate */
  int *value_stamp;  /* per value id: read from outside it */
  int *need_stamp, *have_stamp; /* per symbol */
  fz_value **map;    /* per value id: its copy (fz_extract_fusion) */
  /* the notes: why the segments that remain stay apart */
  fz_buf notes;
  int num_notes, more_notes;
} fz_seg_ctx;

/* A group built as a fusion of its own. INTERMEDIATE refs carry a W value
 * id until the segmentation numbers its intermediates. */
typedef struct fz_seg_cand {
  fz_fusion *f;
  const char *scheduler;
  int num_inputs, num_outputs;
  fz_buffer_ref *in, *out;
  const fz_value **in_vals, **out_vals; /* W values */
} fz_seg_cand;

void fz_seg_cand_free(fz_seg_cand *c);

/* Builds the group `ops` (ascending op indices) as fusion `name` and asks
 * the schedulers; when none accepts and `why` is not NULL, *why gets
 * their reasons (malloc'd). Costs the size of the group and what it
 * reads, not the size of W. */
fz_status fz_seg_build_cand(fz_seg_ctx *c, const int *ops, int num_ops,
                            const char *name, fz_seg_cand *out, char **why,
                            fz_error *err);

/* A value's label as W names it. */
void fz_seg_put_label(fz_buf *b, const fz_value *v);
/* Appends one line to the notes, cut to FZ_SEG_NOTE_CHARS; after
 * FZ_SEG_MAX_NOTES lines only counts. */
void fz_seg_note(fz_seg_ctx *c, const char *text);
/* Whether another note would be kept (not only counted). */
bool fz_seg_note_room(const fz_seg_ctx *c);

/* The strategies: each gives the final groups in execution order, group
 * k being (*ops)[(*start)[k] .. (*start)[k+1]), k < *count (*ops and
 * *start malloc'd, the caller frees them, also on failure). */
fz_status fz_seg_greedy(fz_seg_ctx *c, int **ops, int **start, int *count,
                        fz_error *err);
fz_status fz_seg_pack(fz_seg_ctx *c, int **ops, int **start, int *count,
                      fz_error *err);

/* The greedy search keeps n x n matrices over W's ops and ranks every
 * candidate merge again after each merge taken: quadratic memory and
 * about cubic time in the number of ops. Up to this many it runs; above,
 * segment_pack.c cuts the fusion in program order. */
enum { FZ_SEG_GREEDY_MAX_OPS = 512 };

#endif
