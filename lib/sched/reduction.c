/* reduction.c - the reduction scheduler: inner and outer, block and grid,
 * classified by the layout of what is actually read (seed 004).
 *
 * Steps, as a script:
 *  1. The reference is the input of the first reduction (the tensor the
 *     kernel reads most), or a finer space it is computed from through
 *     single-operand ops: a reshape of a permuted input (seed 004's
 *     ReductionOnPermutedReshape) is affine only from the finer side,
 *     merges are, splits are not (fz_dag_try tries them in turn).
 *     Every value gets a map from its coordinates.
 *  2. The reduced (R) axes of the reference are the columns the reduced
 *     axes of that reduction map to; every reduction must reduce exactly
 *     those, and its kept axes must map to none of them.
 *  3. Outputs whose map is constant along R are written once per kept (I)
 *     point after the reductions (post); outputs that vary along R are
 *     written during the pass over the full space (pre).
 *  4. The DAG: REDUCE nodes over pre nodes; a reduced value used back in
 *     the full space is a normalization, left to the persistent scheduler.
 *  5. Canonical axes in the *physical* order of the main input read in the
 *     full space — never the output's — with R and I axes merged only
 *     among themselves. Innermost R: inner reduction; innermost I: outer.
 *  6. Heuristics from the sizes and the device (below; vector widths and
 *     32-bit indexing by the shared rules of heuristics.c).
 * The entry point, fz_reduction_try, drives steps 1-6 over the reference
 * candidates (fz_dag_try).
 */
#include "sched/dag.h"
#include "sched/heuristics.h"
#include "sched/split_grid.h"

#include <stdio.h>
#include <string.h>

/* ---- heuristics --------------------------------------------------------- */

static bool is_pre_access(const fz_plan *p, int access) {
  for (int i = 0; i < p->num_nodes; i++)
    if ((p->nodes[i].kind == FZ_NODE_LOAD ||
         p->nodes[i].kind == FZ_NODE_STORE) &&
        p->nodes[i].access == access && p->nodes[i].space == FZ_SPACE_FULL)
      return true;
  return false;
}

/* The accesses that walk the innermost axis: those of the pre pass for
 * an inner reduction (ctx points at true), all of them for an outer one. */
static bool walks_innermost(const fz_plan *p, int access, const void *ctx) {
  bool inner = *(const bool *)ctx;
  return !inner || is_pre_access(p, access);
}

/* Lanes along the innermost axis, then each access's own width. An outer
 * reduction stores its outputs along that axis: they decide the width, as
 * in the pointwise scheduler. */
static void choose_vector(const fz_problem *pb, fz_plan *p, bool inner) {
  int v = fz_plan_widest_vector(p, walks_innermost, &inner);
  v = fz_plan_fit_vector(pb, p, v, !inner);
  p->vector = v;
  fz_plan_set_access_vectors(pb, p, v, walks_innermost, &inner);
}

/* Inner: block_x threads share a row, block_y rows per block. Each thread
 * should load several vectors per row (bytes in flight), rows too short
 * for a warp share one, and too few rows to fill the GPU split R. */
static void inner_launch(const fz_problem *pb, fz_plan *p) {
  int64_t rows = fz_plan_kept_points(p);
  int64_t groups = fz_plan_reduced_points(p) / p->vector;
  int64_t bx = fz_pow2_ceil(fz_cdiv(groups, 4));
  if (bx > 512)
    bx = 512;
  if (bx < 1)
    bx = 1;
  int64_t by = 256 / bx;
  if (by < 1)
    by = 1;
  if (by > fz_pow2_ceil(rows))
    by = fz_pow2_ceil(rows);
  p->block_x = (int)bx;
  p->block_y = (int)by;
  p->threads = (int)(bx * by);
  /* Split R when the tiles leave SMs idle and each split keeps at least
   * 4 vectors per thread, in whole waves (1.09 waves cost a whole second
   * wave's latency): split_grid.c, again at load for the real residency. */
  fz_reduction_size_grid(p, pb->device.num_sms, 0, false);
  int64_t per_thread = fz_cdiv(groups, bx * p->split);
  /* all of a thread's loads of a row in flight at once, up to 8 */
  p->unroll = per_thread >= 8 ? 8 : per_thread >= 4 ? 4 : per_thread >= 2 ? 2 : 1;
}

/* Outer: block_x threads along the kept innermost axis (vector lanes
 * each), block_y threads along R, combined in shared memory; R is split
 * across blocks when the kept space gives too few tiles. */
static void outer_launch(const fz_problem *pb, fz_plan *p) {
  int64_t kept = fz_plan_kept_points(p) / p->vector;
  int64_t rlen = fz_plan_reduced_points(p);
  int64_t bx = 32;
  if (bx > fz_pow2_ceil(kept))
    bx = fz_pow2_ceil(kept);
  /* A warp spans 512 contiguous bytes of a row and 8 warps walk R (measured
   * best on [36864, 16384]). When the kept space is only a few warps wide,
   * up to 512 threads walk R instead, so fewer splits are needed and the
   * last block's finish stays short. When R is short, each thread walks
   * all of it alone, like a pointwise kernel with an in-register sum. */
  int64_t by = bx == 32 && fz_cdiv(kept, bx) > 8 ? 8 : 512 / bx;
  if (by > 128)
    by = 128;
  if (rlen <= 32) {
    by = 1;
    bx = fz_pow2_ceil(kept) < 256 ? fz_pow2_ceil(kept) : 256;
  }
  if (by > fz_pow2_ceil(rlen))
    by = fz_pow2_ceil(rlen);
  if (by < 1)
    by = 1;
  p->block_x = (int)bx;
  p->block_y = (int)by;
  p->threads = (int)(bx * by);
  /* R is split as for inner, keeping 8 rows per thread per split */
  fz_reduction_size_grid(p, pb->device.num_sms, 0, false);
  int64_t per_thread = fz_cdiv(rlen, by * p->split);
  /* 8 loads in flight when R is short (all of it) or the kept space is
   * narrow (few threads per row, so each needs more bytes in flight) */
  p->unroll = per_thread >= 8 && (rlen <= 32 || bx < 32) ? 8
              : per_thread >= 4                          ? 4
              : per_thread >= 2                          ? 2
                                                         : 1;
}

/* ---- the scheduler ------------------------------------------------------ */

/* Whether building the outputs' nodes would come to a reduction's result
 * in the full space: a normalization, which the walk declines where it
 * meets one (dag_nodes.c, reduce_space). Found from the ops alone: the
 * walk visits each output in its space (the kept space when its map is
 * constant along R, else the full space) and, from a value it visits, an
 * op's operands in the same space, a reduction's input in the full
 * space; resize ops and a gather's data are inputs or declined. So a
 * (value, space) pair found here is one the walk visits unless it has
 * declined before: the verdict is the walk's, and the nodes are not
 * built. Its reason may be another the walk meets first, so this is
 * asked only when no reason is wanted. */
typedef struct walk {
  unsigned char *seen; /* per value id: 1 visited in the full space, 2 row */
  const fz_value **values;
  unsigned char *spaces;
  int top;
} walk;

static void visit(walk *w, const fz_value *v, unsigned char space) {
  if (v->kind != FZ_VALUE_RESULT || (w->seen[v->id] & space))
    return;
  w->seen[v->id] |= space;
  w->values[w->top] = v;
  w->spaces[w->top++] = space;
}

static bool meets_normalization(const fz_dag *d, unsigned rcols) {
  const fz_fusion *f = d->problem->fusion;
  size_t n = (size_t)f->next_value_id + 1;
  walk w = {.seen = fz_arena_alloc(d->arena, n),
            .values = fz_arena_alloc(d->arena, sizeof *w.values * 2 * n),
            .spaces = fz_arena_alloc(d->arena, 2 * n)};
  for (int i = 0; i < f->num_outputs; i++) {
    const fz_value *o = f->outputs[i];
    bool post = (fz_map_columns(d->maps[o->id]) & rcols) == 0;
    visit(&w, o, post ? 2 : 1);
  }
  while (w.top > 0) {
    const fz_value *v = w.values[--w.top];
    unsigned char space = w.spaces[w.top];
    const fz_op *op = v->def;
    switch (fz_op_table[op->code].kind) {
    case FZ_KIND_REDUCTION:
      if (space == 1)
        return true;
      visit(&w, op->operands[0], 1);
      break;
    case FZ_KIND_GATHER:
      visit(&w, op->operands[1], space);
      break;
    case FZ_KIND_SLICE:
    case FZ_KIND_PAD:
    case FZ_KIND_CAT:
    case FZ_KIND_FULL:
    case FZ_KIND_IOTA:
    case FZ_KIND_SYMBOL:
      break;
    default: /* pointwise ops, casts, random, and shape ops (one operand) */
      for (int k = 0; k < op->num_operands; k++)
        visit(&w, op->operands[k], space);
    }
  }
  return false;
}

static bool build_from(fz_dag *d, const fz_problem *pb, fz_arena *arena,
                       fz_reason *why, const fz_op *first,
                       const fz_value *ref, fz_plan **out) {
  const fz_fusion *f = pb->fusion;
  char label[64];
  int64_t ref_sizes[FZ_MAX_RANK];
  for (int i = 0; i < ref->type.rank; i++)
    ref_sizes[i] = fz_axis_size(&ref->type.axes[i], pb->symbols);
  fz_dag_init(d, pb, arena, ref_sizes, ref->type.rank, why);
  if (!fz_dag_find_maps(d, ref))
    return false;

  /* The R columns, and every reduction reducing exactly them. */
  unsigned rcols = 0;
  for (int i = 0; i < ref->type.rank; i++)
    if (fz_op_reduces_axis(first, i))
      rcols |= fz_map_row_columns(d->maps[ref->id], i);
  for (int i = 0; i < f->num_ops; i++) {
    const fz_op *op = f->ops[i];
    if (fz_op_table[op->code].kind != FZ_KIND_REDUCTION)
      continue;
    const fz_value *in = op->operands[0];
    if (!d->maps[in->id])
      return fz_dag_decline_at(
          d, op->result, "reduction %s reads outside the reference space",
          fz_dag_label(d, op->result, label, sizeof label));
    unsigned reduced = 0, kept = 0;
    for (int a = 0; a < in->type.rank; a++) {
      if (fz_op_reduces_axis(op, a))
        reduced |= fz_map_row_columns(d->maps[in->id], a);
      else
        kept |= fz_map_row_columns(d->maps[in->id], a);
    }
    if (reduced != rcols || (kept & rcols))
      return fz_dag_decline_at(
          d, op->result,
          "reduction %s reduces other axes than the first reduction",
          fz_dag_label(d, op->result, label, sizeof label));
  }
  if (rcols == 0)
    return fz_dag_decline(d, "the reduced axes all have size 1");
  if (!why && meets_normalization(d, rcols))
    return false;

  /* Outputs: post (constant along R) or pre (the full space), each
   * written exactly once. */
  int64_t kept_sizes[FZ_MAX_RANK];
  for (int r = 0; r < d->ref_rank; r++)
    kept_sizes[r] = (rcols >> r) & 1 ? 1 : ref_sizes[r];
  for (int i = 0; i < f->num_outputs; i++) {
    const fz_value *o = f->outputs[i];
    bool post = (fz_map_columns(d->maps[o->id]) & rcols) == 0;
    int64_t s[FZ_MAX_RANK] = {0};
    fz_index_map_strides(d->maps[o->id], pb->outputs[i].strides, s);
    const int64_t *space = post ? kept_sizes : ref_sizes;
    int64_t n = 1;
    for (int r = 0; r < d->ref_rank; r++)
      n *= space[r];
    if (fz_desc_numel(&pb->outputs[i]) != n ||
        !fz_dense_cover(space, s, d->ref_rank))
      return fz_dag_decline_at(d, o, "output %s is not one-to-one with %s",
                               fz_dag_label(d, o, label, sizeof label),
                               post ? "the kept space" : "the reference");
    int src = fz_dag_node(d, o, d->maps[o->id], post);
    if (src < 0)
      return false;
    fz_dag_store(d, i, src, post);
  }

  /* Physical order: the pre-pass input access touching most axes. */
  int64_t order[FZ_MAX_RANK];
  int best = -1, best_axes = -1;
  for (int i = 0; i < d->num_accesses; i++) {
    if (d->accesses[i].is_output)
      continue;
    bool pre = false;
    for (int k = 0; k < d->num_nodes && !pre; k++)
      pre = d->nodes[k].kind == FZ_NODE_LOAD && d->nodes[k].access == i &&
            d->nodes[k].space == FZ_SPACE_FULL;
    if (!pre)
      continue;
    int axes = 0;
    for (int r = 0; r < d->ref_rank; r++)
      axes += d->ref_strides[i][r] != 0;
    if (axes > best_axes) {
      best = i;
      best_axes = axes;
    }
  }
  int64_t stride = 1;
  for (int r = d->ref_rank - 1; r >= 0; r--) {
    order[r] = stride; /* row-major unless an input says otherwise */
    stride *= ref_sizes[r] > 1 ? ref_sizes[r] : 1;
  }
  if (best >= 0)
    for (int r = 0; r < d->ref_rank; r++)
      if (d->ref_strides[best][r] != 0)
        order[r] = d->ref_strides[best][r];
  bool reduced[FZ_MAX_RANK] = {0};
  for (int r = 0; r < d->ref_rank; r++)
    reduced[r] = (rcols >> r) & 1;
  fz_canon c;
  fz_dag_canonical(d, order, reduced, &c);

  fz_plan *p = fz_arena_alloc(arena, sizeof *p);
  p->fusion = f;
  bool inner = c.reduced[c.rank - 1];
  p->kind = inner ? FZ_PLAN_INNER_REDUCTION : FZ_PLAN_OUTER_REDUCTION;
  p->kernel_name =
      fz_arena_strdup(arena, inner ? "fz_inner_reduction" : "fz_outer_reduction");
  p->reference = fz_arena_strdup(arena, fz_value_label(ref, label, sizeof label));
  fz_dag_finish(d, &c, p);
  choose_vector(pb, p, inner);
  if (inner)
    inner_launch(pb, p);
  else
    outer_launch(pb, p);
  p->index32 = fz_plan_fits_int32(p, fz_reduction_index_bound(p));
  *out = p;
  return true;
}

bool fz_reduction_try(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_reason *why) {
  return fz_dag_try(problem, arena, out, why, build_from);
}
