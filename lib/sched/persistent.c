/* persistent.c - persistent normalizations: softmax, layer norm, RMS norm
 * forward (row reductions used back in the row), and the inner-outer
 * kernel of their backwards (seed 000): row reductions for grad-input and,
 * in the same pass, column reductions over the rows for grad-weight and
 * grad-bias.
 *
 * Steps, as a script:
 *  1. The reference space, as for reductions (the first reduction's input
 *     or a finer space it is computed from). Every value gets a map.
 *  2. The physical order comes from the inputs read in the full space;
 *     the rows are the reductions that reduce the physically innermost
 *     axis (with whatever else they reduce: their set R); every other
 *     reduction must reduce exactly the remaining axes (a column
 *     reduction). Whether a post-reduction broadcast denotes the reduced
 *     axis is decided by the maps, through any chain of broadcast, set,
 *     squeeze, expand and reshape: the question seed 000 got wrong.
 *  3. Outputs live in the full space, a row's space or a column's space,
 *     by the axes their map touches; each must be written exactly once.
 *  4. The DAG with spaces and phases: a full-space node's phase is the
 *     number of row-reduction rounds it waits for.
 *  5. Heuristics: the row is split over block_x threads holding
 *     `persistent` 16-byte groups each in registers; short rows share a
 *     block; an inner-outer plan runs as many blocks as can be resident
 *     (cooperative), each looping over rows and keeping column partials
 *     in registers. An outer normalization (every reduction keeps the
 *     innermost axis: batch norm) holds all its rows on chip instead,
 *     across a grid barrier per reduction round (outer_heuristics), in
 *     registers or, where they would crowd them, in shared memory
 *     (persistent_held.c), or is declined when they do not fit. Vector
 *     widths and 32-bit indexing follow the shared rules of
 *     heuristics.c.
 * The entry point, fz_persistent_try, drives steps 1-5 over the reference
 * candidates (fz_dag_try).
 */
#include "sched/dag.h"
#include "sched/heuristics.h"
#include "sched/persistent_cluster.h"
#include "sched/persistent_held.h"
#include "sched/persistent_column_cluster.h"
#include "sched/persistent_slices.h"
#include "sched/persistent_multipass.h"

#include <stdio.h>
#include <string.h>

/* Physical order of the reference axes: the strides, through its map, of
 * the input that spans most of them; row-major where none says. */
static void physical_order(const fz_dag *d, const int64_t *sizes,
                           int64_t *order) {
  const fz_fusion *f = d->problem->fusion;
  int64_t stride = 1;
  for (int r = d->ref_rank - 1; r >= 0; r--) {
    order[r] = stride;
    stride *= sizes[r] > 1 ? sizes[r] : 1;
  }
  int best = -1, best_axes = 0;
  int64_t best_strides[FZ_MAX_RANK] = {0};
  for (int i = 0; i < f->num_inputs; i++) {
    const fz_value *in = f->inputs[i];
    if (!d->maps[in->id])
      continue;
    int64_t s[FZ_MAX_RANK] = {0};
    fz_index_map_strides(d->maps[in->id], d->problem->inputs[i].strides, s);
    int axes = 0;
    for (int r = 0; r < d->ref_rank; r++)
      axes += s[r] != 0 && sizes[r] > 1;
    if (axes > best_axes) {
      best = i;
      best_axes = axes;
      memcpy(best_strides, s, sizeof s);
    }
  }
  if (best >= 0)
    for (int r = 0; r < d->ref_rank; r++)
      if (best_strides[r] != 0)
        order[r] = best_strides[r];
}

static bool dense_in(const fz_dag *d, const fz_problem *pb, int output,
                     const int64_t *space) {
  const fz_value *o = pb->fusion->outputs[output];
  int64_t s[FZ_MAX_RANK] = {0};
  fz_index_map_strides(d->maps[o->id], pb->outputs[output].strides, s);
  int64_t n = 1;
  for (int r = 0; r < d->ref_rank; r++)
    n *= space[r];
  return fz_desc_numel(&pb->outputs[output]) == n &&
         fz_dense_cover(space, s, d->ref_rank);
}

/* The canonical space was built with the rows' axes marked (they are the
 * ones merged alike); reduced[] marks what the fusion reduces, which in an
 * outer plan is every other axis. */
static void set_row_axes(fz_plan *p, bool outer) {
  for (int k = 0; k < p->rank; k++) {
    p->row_axes[k] = p->reduced[k];
    p->reduced[k] = outer ? !p->row_axes[k] : p->row_axes[k];
  }
}

static void assign_phases(fz_plan *p) {
  p->phases = 0;
  for (int i = 0; i < p->num_nodes; i++) {
    fz_plan_node *n = &p->nodes[i];
    int phase = 0;
    for (int k = 0; k < n->num_operands; k++) {
      const fz_plan_node *o = &p->nodes[n->operands[k]];
      int op_phase = o->phase;
      if (o->kind == FZ_NODE_REDUCE && o->space == FZ_SPACE_ROW)
        op_phase = o->phase; /* already counts its own round */
      if (op_phase > phase)
        phase = op_phase;
    }
    /* a reduction's value is ready a round after its operand: row
     * reductions; in outer plans, column reductions (a grid barrier) */
    bool round =
        n->kind == FZ_NODE_REDUCE &&
        (n->space == FZ_SPACE_ROW ||
         (n->space == FZ_SPACE_COLUMN && p->kind == FZ_PLAN_OUTER_PERSISTENT));
    if (round)
      phase += 1;
    n->phase = phase;
    if (round && phase > p->phases)
      p->phases = phase;
  }
}

/* Prefetch the next row when a block walks several rows and little else
 * on its SM hides its load latency (inner-outer plans: cooperative, at
 * most two blocks per SM); only where cp.async exists (sm_80) and each
 * prefetched access moves whole 4-, 8- or 16-byte pieces per group.
 * Measured on the H200 (LN and RMS backward, f32 and bf16, N from 1024
 * to 8192): prefetch won wherever a block of 512 threads is alone on its
 * SM (its ~128 registers per thread allow no second) or the buffers are
 * at most 32 KiB; with two blocks per SM and 64 KiB or more it lost up
 * to 12%, the larger shared-memory carve-out costing more L1 than the
 * prefetch hides. */
static void choose_prefetch(const fz_problem *pb, fz_plan *p, int64_t tiles) {
  p->prefetch = false;
  p->prefetch_deep = false;
  p->prefetch_row_values = false;
  if (pb->device.sm < 80 || p->kind != FZ_PLAN_INNER_OUTER_PERSISTENT ||
      tiles <= p->grid_x || !fz_plan_prefetch_pieces_fit(p))
    return;
  p->prefetch = true; /* fz_plan_shared_bytes counts the buffers */
  size_t room = (size_t)pb->device.max_shared_per_block;
  size_t bytes = fz_plan_shared_bytes(p);
  p->prefetch = bytes + 16 * 1024 <= room &&
                (p->threads >= 512 || bytes <= 32 * 1024);
  if (!p->prefetch)
    return;
  /* the row values' slots (a few KiB) beside the rows', where they fit */
  fz_plan_choose_row_values(p);
  if (fz_plan_shared_bytes(p) + 16 * 1024 > room)
    p->prefetch_row_values = false;
  /* a third buffer under the same limits as the first two */
  fz_plan_choose_deep(p);
  bytes = fz_plan_shared_bytes(p);
  if (bytes + 16 * 1024 > room || (p->threads < 512 && bytes > 32 * 1024))
    p->prefetch_deep = false;
}

/* An outer plan holds every row it is given: a block of ~512 threads
 * (block_y rows of block_x threads) per SM, each thread `unroll` rows of
 * `persistent` groups, all resident at once (cooperative launch; the
 * executor refuses a launch that cannot keep grid_x blocks resident).
 * What does not fit in about 128 registers a thread is declined, and the
 * segmenter runs it as reductions and pointwise kernels instead; what
 * fits, but would crowd the registers, is held in shared memory
 * (persistent_held.c). */
static bool outer_heuristics(fz_dag *d, const fz_problem *pb, fz_plan *p,
                             int columns) {
  int64_t rows = fz_plan_rows(p);
  /* what each held row keeps: the loads that vary along the rows (a
   * weight row is loaded once per thread) */
  int row_loads = 0;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_LOAD || n->space != FZ_SPACE_FULL)
      continue;
    bool along_rows = false;
    for (int k = 0; k < p->rank; k++)
      along_rows |= !p->row_axes[k] && p->accesses[n->access].strides[k] != 0;
    row_loads += along_rows;
  }
  if (fz_persistent_slices_plan(pb, p, columns, row_loads)) {
    fz_persistent_held_choose(pb, p, columns, row_loads);
    return true;
  }
  int64_t by = 512 / p->block_x;
  if (by < 1)
    by = 1;
  if (by > fz_pow2_ceil(rows))
    by = fz_pow2_ceil(rows);
  int64_t tiles = fz_cdiv(rows, by);
  int64_t grid = pb->device.num_sms < tiles ? pb->device.num_sms : tiles;
  int64_t held = fz_cdiv(tiles, grid);
  int64_t lanes = (int64_t)p->persistent * p->vector;
  int64_t regs = held * lanes * (row_loads ? row_loads : 1) + columns * lanes;
  if (regs > 128)
    return fz_dag_decline(d,
                          "an outer normalization of %lld rows does not fit "
                          "on chip (%lld values a thread in registers)",
                          (long long)rows, (long long)regs);
  if (held > FZ_PLAN_MAX_UNROLL)
    return fz_dag_decline(d,
                          "an outer normalization of %lld rows would hold "
                          "%lld rows a thread (at most %d)",
                          (long long)rows, (long long)held,
                          FZ_PLAN_MAX_UNROLL);
  p->block_y = (int)by;
  p->threads = (int)(p->block_x * by);
  p->unroll = (int)held;
  p->grid_x = grid;
  p->blocks = grid;
  p->cooperative = true;
  p->prefetch = false;
  p->prefetch_row_values = false;
  int64_t bound = rows + grid * by * held + fz_plan_row_points(p) +
                  (int64_t)p->block_x * p->vector;
  p->index32 = fz_plan_fits_int32(p, bound);
  fz_persistent_held_choose(pb, p, columns, row_loads);
  return true;
}

/* How a row is spread over its threads: block_x threads, each holding
 * `held` groups, of which the first `full` lie inside every row the
 * kernel serves (plan.h: persistent, persistent_full, dynamic_block). */
typedef struct row_shape {
  int64_t block_x, held, full;
  bool dynamic;
} row_shape;

/* The size class of an inner persistent plan's rows, so that one kernel
 * serves a range of row lengths (false: rows of at most 32 groups, one
 * per thread, or too long for a class; each of those gets a kernel for
 * its exact shape, as rows of up to 32 groups come in few shapes, one per
 * power of two). A thread holds at most `most` groups (8; 16 for scalar
 * lanes, so that a thread still moves 16 elements a row), fewer when the
 * row's tensors would take more than 128 registers:
 *   - up to 32 * most groups: a warp per row, four rows a block, and the
 *     held groups rounded up to a power of two: one class per doubling
 *     of the row;
 *   - up to FZ_PLAN_DYNAMIC_MAX_THREADS * most groups: one class,
 *     `most` groups a thread and as many warps as the row needs, chosen
 *     per call (dynamic_block), one row a block.
 * In both, the later half of the held groups is masked by the run-time
 * row length: with block_x >= 64 threads in whole warps, a row of G
 * groups has G > most * (block_x - 32) >= most / 2 * block_x.
 * A dynamic block is launched one a row (heuristics: grid = rows, at
 * most FZ_PLAN_DYNAMIC_MAX_GRID), so that its kernel has no loop over
 * rows: a loop made the backend keep every group's offset as an
 * induction variable of its own (the block width, hence every group's
 * distance, is a run-time value), 92 registers a thread for softmax
 * against 63 without the loop (ptxas, sm_90). */
static bool row_class(int64_t groups, int64_t rows, int v, int per_element,
                      row_shape *out) {
  int64_t most = fz_persistent_most_groups(v == 1 ? 16 : 8);
  while (most > 2 && most * v * per_element > 128)
    most /= 2;
  if (most * v * per_element > 128 || groups <= 32)
    return false;
  if (groups <= 32 * most) {
    int64_t held = fz_pow2_ceil(fz_cdiv(groups, 32));
    *out = (row_shape){32, held, held / 2, false};
    return true;
  }
  if (groups > FZ_PLAN_DYNAMIC_MAX_THREADS * most ||
      rows > FZ_PLAN_DYNAMIC_MAX_GRID)
    return false;
  *out = (row_shape){fz_cdiv(fz_cdiv(groups, most), 32) * 32, most, most / 2,
                     true};
  return true;
}

/* The accesses a full-space load reads (ctx: one flag per access). */
static bool loaded_in_full_space(const fz_plan *p, int access,
                                 const void *ctx) {
  (void)p;
  return ((const bool *)ctx)[access];
}

/* *too_long: declined only because a row fits neither one block's
 * registers nor a cluster (persistent_multipass.c takes those). */
static bool heuristics(fz_dag *d, const fz_problem *pb, fz_plan *p,
                       bool *too_long) {
  int last = p->rank - 1;
  int full_loads = 0;
  bool *full =
      fz_arena_alloc(d->arena, sizeof *full * (size_t)p->num_accesses);
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_LOAD || n->space != FZ_SPACE_FULL)
      continue;
    /* only what varies along the row is held in registers per element */
    full_loads += p->accesses[n->access].strides[last] != 0;
    full[n->access] = true;
  }
  int v = fz_plan_widest_vector(p, loaded_in_full_space, full);
  v = fz_plan_fit_vector(pb, p, v, false);
  p->vector = v;
  fz_plan_set_access_vectors(pb, p, v, NULL, NULL);

  int64_t rows = fz_plan_rows(p);
  int64_t groups = fz_plan_row_points(p) / v;
  if (groups < 1 || rows < 1)
    return fz_dag_decline(d, "an empty row or no rows");
  /* a row that outgrows one SM and is only reduced: a multipass walk
   * reads it once without holding it */
  if (p->kind == FZ_PLAN_INNER_PERSISTENT &&
      fz_multipass_prefer(pb, p, groups)) {
    *too_long = true;
    return fz_dag_decline(d,
                          "rows of %lld elements, only reduced, outgrow one "
                          "SM: a multipass walk reads them once",
                          (long long)fz_plan_row_points(p));
  }
  /* a row that outgrows one SM: a cluster of blocks shares it (sm_90) */
  if (fz_persistent_cluster_plan(pb, p, groups))
    return true;
  /* Registers per thread that scale with the row: every tensor that varies
   * along it, plus one accumulator per column reduction (they live across
   * all the rows a block processes). Widen the block until they fit in
   * about 128 registers, leaving room for the rest. */
  int columns = 0;
  for (int i = 0; i < p->num_nodes; i++)
    columns += p->nodes[i].kind == FZ_NODE_REDUCE &&
               p->nodes[i].space == FZ_SPACE_COLUMN;
  int per_element = (full_loads ? full_loads : 1) + columns;
  row_shape shape;
  if (p->kind != FZ_PLAN_INNER_PERSISTENT || pb->exact_sizes ||
      !row_class(groups, rows, v, per_element, &shape)) {
    int64_t bx = groups < 32 ? fz_pow2_ceil(groups) : 32;
    int64_t most = fz_persistent_most_groups(8);
    while ((fz_cdiv(groups, bx) > most ||
            fz_cdiv(groups, bx) * v * per_element > 128) &&
           bx < 1024)
      bx *= 2;
    int64_t per_thread = fz_cdiv(groups, bx);
    *too_long = per_thread * v * per_element > 160;
    if (*too_long)
      return fz_dag_decline(d,
                            "%d row tensors of %lld elements do not fit in "
                            "the registers of one block",
                            per_element, (long long)fz_plan_row_points(p));
    shape = (row_shape){bx, per_thread, per_thread - 1, false};
  }
  int64_t bx = shape.block_x;
  int64_t by = bx < 128 && !shape.dynamic ? 128 / bx : 1;
  if (by > fz_pow2_ceil(rows))
    by = fz_pow2_ceil(rows);
  p->block_x = (int)bx;
  p->block_y = (int)by;
  p->persistent = (int)shape.held;
  p->persistent_full = (int)shape.full;
  p->dynamic_block = shape.dynamic;
  p->threads = (int)(bx * by);
  p->unroll = 1;
  p->split = 1;
  int64_t tiles = fz_cdiv(rows, by);
  int64_t blocks_per_sm = 2048 / (bx * by);
  if (blocks_per_sm > 16)
    blocks_per_sm = 16;
  if (p->kind == FZ_PLAN_OUTER_PERSISTENT)
    return outer_heuristics(d, pb, p, columns);
  if (p->kind == FZ_PLAN_INNER_OUTER_PERSISTENT) {
    /* Every block must be resident (cooperative launch); the executor
     * lowers grid_x further if the kernel's registers allow fewer. */
    int64_t most = fz_inner_outer_blocks_per_sm(2);
    int64_t resident = (int64_t)pb->device.num_sms *
                       (blocks_per_sm > most ? most : blocks_per_sm);
    p->grid_x = tiles < resident ? tiles : resident;
    p->cooperative = true;
  } else {
    int64_t cap = (int64_t)pb->device.num_sms * blocks_per_sm * 8;
    p->grid_x = tiles < cap || shape.dynamic ? tiles : cap;
  }
  p->blocks = p->grid_x;
  choose_prefetch(pb, p, tiles);
  fz_plan_choose_weights_early(p);
  fz_plan_choose_refetch(p); /* after prefetch: prefetched inputs are not */
  fz_plan_choose_trace(p);
  fz_column_cluster_plan(pb, p);
  int64_t bound = rows + p->grid_x * by + fz_plan_row_points(p) + bx * v;
  p->index32 = fz_plan_fits_int32(p, bound);
  return true;
}

/* *about_rows: multipass mode's verdict is its own (the row fits on
 * chip, or it is too long and fz_multipass_plan decides), not the
 * persistent scheduler's reason again. */
static bool build_plan(fz_dag *d, const fz_problem *pb, fz_arena *arena,
                       fz_reason *why, const fz_op *first,
                       const fz_value *ref, fz_plan **out, bool multipass,
                       bool *about_rows) {
  (void)first; /* every reduction is classified below */
  const fz_fusion *f = pb->fusion;
  char label[64];
  int64_t sizes[FZ_MAX_RANK];
  for (int i = 0; i < ref->type.rank; i++)
    sizes[i] = fz_axis_size(&ref->type.axes[i], pb->symbols);
  fz_dag_init(d, pb, arena, sizes, ref->type.rank, why);
  if (!fz_dag_find_maps(d, ref))
    return false;
  int64_t order[FZ_MAX_RANK];
  physical_order(d, sizes, order);
  unsigned nontrivial = 0;
  int inner = -1;
  for (int r = 0; r < d->ref_rank; r++) {
    if (sizes[r] <= 1)
      continue;
    nontrivial |= 1u << r;
    if (inner < 0 || order[r] < order[inner])
      inner = r;
  }
  if (inner < 0)
    return fz_dag_decline(d, "the reference space has no axis longer than 1");

  /* Rows: reductions over the innermost axis; columns: the rest. */
  unsigned rcols = 0, ccols = 0;
  bool columns = false, mixed_columns = false;
  for (int i = 0; i < f->num_ops; i++) {
    const fz_op *op = f->ops[i];
    if (fz_op_table[op->code].kind != FZ_KIND_REDUCTION)
      continue;
    const fz_value *in = op->operands[0];
    if (!d->maps[in->id])
      return fz_dag_decline_at(
          d, op->result, "reduction %s reads outside the reference space",
          fz_dag_label(d, op->result, label, sizeof label));
    unsigned reduced = 0;
    for (int a = 0; a < in->type.rank; a++)
      if (fz_op_reduces_axis(op, a))
        reduced |= fz_map_row_columns(d->maps[in->id], a);
    reduced &= nontrivial;
    if (reduced & (1u << inner)) {
      if (rcols && rcols != reduced)
        return fz_dag_decline_at(
            d, op->result, "row reductions reduce different axes (%s)",
            fz_dag_label(d, op->result, label, sizeof label));
      rcols = reduced;
    } else {
      /* the column combine has no Welford states: a reduction kernel
       * computes such a var or mean, in a segment of its own */
      if (fz_reduce_is_welford(op->code))
        return fz_dag_decline_at(d, op->result,
                                 "%s is a column %s (only row reductions "
                                 "keep Welford states here)",
                                 fz_dag_label(d, op->result, label,
                                              sizeof label),
                                 fz_op_table[op->code].name);
      mixed_columns |= columns && ccols != reduced;
      ccols = reduced;
      columns = true;
    }
  }
  /* An outer normalization (batch norm over N, H, W of channels-last
   * data): every reduction keeps the innermost axis. Its rows are then
   * the points of the reduced axes, each spanning the kept ones, and the
   * reductions are column reductions over those rows, used back in them:
   * the rows are held on chip across a grid barrier per reduction round
   * (FZ_PLAN_OUTER_PERSISTENT). */
  bool outer = !rcols;
  if (outer) {
    if (!columns || !ccols)
      return fz_dag_decline(d, "no reduction reduces the physically "
                               "innermost axis, and none reduces another");
    if (mixed_columns)
      return fz_dag_decline(d, "an outer normalization whose reductions "
                               "reduce different axes");
    rcols = nontrivial & ~ccols;
  }
  if (rcols == nontrivial && columns)
    return fz_dag_decline(d, "rows reduce every axis, so there are no columns");
  d->persistent = true;
  d->rcols = rcols;

  int64_t row_space[FZ_MAX_RANK], col_space[FZ_MAX_RANK];
  for (int r = 0; r < d->ref_rank; r++) {
    bool in_r = (rcols >> r) & 1;
    row_space[r] = in_r ? 1 : sizes[r];
    col_space[r] = in_r ? sizes[r] : 1;
  }
  for (int i = 0; i < f->num_outputs; i++) {
    const fz_value *o = f->outputs[i];
    unsigned cols = fz_map_columns(d->maps[o->id]) & nontrivial;
    /* With no kept axis longer than 1 (a single row), what varies along
     * the row is the full space, not a column's. */
    bool has_kept = (nontrivial & ~rcols) != 0;
    fz_space space = (cols & rcols) && ((cols & ~rcols) || !has_kept)
                         ? FZ_SPACE_FULL
                     : (cols & rcols) ? FZ_SPACE_COLUMN
                                      : FZ_SPACE_ROW;
    const int64_t *extent = space == FZ_SPACE_FULL  ? sizes
                            : space == FZ_SPACE_ROW ? row_space
                                                    : col_space;
    if (!dense_in(d, pb, i, extent))
      return fz_dag_decline_at(d, o,
                               "output %s is not one-to-one with its space",
                               fz_dag_label(d, o, label, sizeof label));
    int src = fz_dag_node_in(d, o, d->maps[o->id], space);
    if (src < 0)
      return false;
    fz_dag_store_in(d, i, src, space);
  }

  bool reduced[FZ_MAX_RANK] = {0};
  for (int r = 0; r < d->ref_rank; r++)
    reduced[r] = (rcols >> r) & 1;
  fz_canon c;
  fz_dag_canonical(d, order, reduced, &c);
  if (!c.reduced[c.rank - 1])
    return fz_dag_decline(d, "the rows are not innermost");
  bool has_columns = false, has_full_use = false;
  for (int i = 0; i < d->num_nodes; i++) {
    const fz_plan_node *n = &d->nodes[i];
    has_columns |= n->kind == FZ_NODE_REDUCE && n->space == FZ_SPACE_COLUMN;
    for (int k = 0; k < n->num_operands; k++) {
      const fz_plan_node *o = &d->nodes[n->operands[k]];
      has_full_use |= o->kind == FZ_NODE_REDUCE && o->space == FZ_SPACE_ROW &&
                      n->space == FZ_SPACE_FULL;
    }
  }
  /* A column sum feeding the full space or a row's would need every row
   * before any row could finish: not a single pass. It happens when the
   * layouts disagree on which axis is innermost (grad column-major, x
   * row-major), or when a row value and a column value meet (a square
   * space where an unrelated input was matched position by position). */
  for (int i = 0; i < d->num_nodes; i++) {
    const fz_plan_node *n = &d->nodes[i];
    if (n->space == FZ_SPACE_COLUMN || (outer && n->space != FZ_SPACE_ROW))
      continue;
    for (int k = 0; k < n->num_operands; k++)
      if (d->nodes[n->operands[k]].space == FZ_SPACE_COLUMN)
        return fz_dag_decline(d,
                              "a column reduction is used back in the %s "
                              "space",
                              n->space == FZ_SPACE_ROW ? "rows'" : "full");
  }
  if (outer && has_full_use)
    return fz_dag_decline(d, "an outer normalization with row reductions");
  if (!has_columns && !has_full_use)
    return fz_dag_decline(d, "no reduction is used back in its rows (a plain "
                             "reduction)");
  bool used_back = false;
  for (int i = 0; i < d->num_nodes && outer; i++)
    for (int k = 0; k < d->nodes[i].num_operands; k++)
      used_back |= d->nodes[i].space != FZ_SPACE_COLUMN &&
                   d->nodes[d->nodes[i].operands[k]].space == FZ_SPACE_COLUMN;
  if (outer && !used_back)
    return fz_dag_decline(d, "no reduction is used back in the full space (a "
                             "plain outer reduction)");
  fz_plan *p = fz_arena_alloc(arena, sizeof *p);
  p->fusion = f;
  p->kind = outer         ? FZ_PLAN_OUTER_PERSISTENT
            : has_columns ? FZ_PLAN_INNER_OUTER_PERSISTENT
                          : FZ_PLAN_INNER_PERSISTENT;
  p->kernel_name = fz_arena_strdup(arena, outer ? "fz_outer_persistent"
                                          : has_columns
                                              ? "fz_inner_outer_persistent"
                                              : "fz_inner_persistent");
  p->reference = fz_arena_strdup(arena, fz_value_label(ref, label, sizeof label));
  fz_dag_finish(d, &c, p);
  set_row_axes(p, outer);
  assign_phases(p);
  if (p->phases > FZ_PLAN_MAX_PHASES)
    return fz_dag_decline(d, "%d rounds of reductions, one after another "
                             "(at most %d)",
                          p->phases, FZ_PLAN_MAX_PHASES);
  bool too_long = false;
  if (heuristics(d, pb, p, &too_long)) {
    fz_plan_choose_column_parts(p);
    *about_rows = true;
    if (multipass)
      return fz_dag_decline(d, "a row fits on chip (the persistent "
                               "scheduler's)");
  } else {
    *about_rows = too_long;
    if (!multipass || !too_long || !fz_multipass_plan(d, pb, p))
      return false;
  }
  *out = p;
  return true;
}

bool fz_persistent_build(fz_dag *d, const fz_problem *pb, fz_arena *arena,
                         fz_reason *why, const fz_op *first,
                         const fz_value *ref, fz_plan **out, bool multipass) {
  bool about_rows = false;
  if (build_plan(d, pb, arena, why, first, ref, out, multipass, &about_rows))
    return true;
  /* the persistent scheduler's reason is listed already */
  if (multipass && !about_rows)
    return fz_dag_decline(d, "the persistent scheduler declines it, not for "
                             "its row length");
  return false;
}

static bool build_from(fz_dag *d, const fz_problem *pb, fz_arena *arena,
                       fz_reason *why, const fz_op *first,
                       const fz_value *ref, fz_plan **out) {
  return fz_persistent_build(d, pb, arena, why, first, ref, out, false);
}

bool fz_persistent_try(const fz_problem *problem, fz_arena *arena,
                       fz_plan **out, fz_reason *why) {
  return fz_dag_try(problem, arena, out, why, build_from);
}
