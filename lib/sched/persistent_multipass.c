/* persistent_multipass.c - rows that stay on chip nowhere, walked once a
 * round.
 *
 * A row of a normalization that fits neither one SM's registers nor a
 * cluster (persistent_cluster.c) used to be split by the segmenter into
 * kernels that write its f32 intermediates and read them back: softmax
 * backward's y * (g - sum(g * y)) became a reduction kernel that stores
 * the row sums and a pointwise kernel that reads g, y and the sums, with
 * each value stored in f32 between them. A multipass plan keeps the
 * fusion one kernel: one block a row walks it once per round (each round
 * the reductions of one phase, the last one the stores), reading the
 * inputs again from global memory and recomputing the cheap pointwise
 * values, and holds only the round's partials in registers. Softmax
 * backward then moves g and y twice and dx once: the minimum for a row
 * reduction used back in the row. The lowering is
 * lib/lower/persistent_multipass.c.
 *
 * Sizing: blocks of 512 threads, two an SM (the rows are long, so a block
 * has plenty of work), each thread loading `trip` 16-byte groups of every
 * row tensor a trip so that about 64 values a thread are in flight; as
 * many blocks as eight waves of resident ones, walking the rows beyond
 * that. With fewer rows than SMs, a block a row leaves SMs idle and the
 * plan is declined: the segmenter's kernels split a row over the grid.
 */
#include "sched/persistent_multipass.h"

#include "sched/heuristics.h"
#include "sched/persistent_cluster.h"

enum {
  FZ_MULTIPASS_THREADS = 512,
  FZ_MULTIPASS_BLOCKS_PER_SM = 2,
  FZ_MULTIPASS_WAVES = 8,
  FZ_MULTIPASS_TRIP_VALUES = 64,
  FZ_MULTIPASS_MAX_TRIP = 4,
};

bool fz_multipass_shape_choose(int64_t rows, int64_t groups, int vector,
                               int held, int num_sms,
                               fz_multipass_shape *out) {
  *out = (fz_multipass_shape){0};
  if (rows < 1 || groups < 1 || vector < 1 || held < 1 || num_sms < 1 ||
      rows < num_sms)
    return false;
  int trip = 1;
  while (trip < FZ_MULTIPASS_MAX_TRIP &&
         2 * trip * vector * held <= FZ_MULTIPASS_TRIP_VALUES)
    trip *= 2;
  int64_t bx = FZ_MULTIPASS_THREADS;
  /* a row shorter than a block's trip: fewer threads (whole warps) */
  while (bx > 32 && (bx / 2) * trip >= groups)
    bx /= 2;
  int64_t cap = (int64_t)num_sms * FZ_MULTIPASS_BLOCKS_PER_SM *
                FZ_MULTIPASS_WAVES;
  *out = (fz_multipass_shape){(int)bx, trip, rows < cap ? rows : cap};
  return true;
}

bool fz_multipass_plan(fz_dag *d, const fz_problem *pb, fz_plan *p) {
  if (p->kind != FZ_PLAN_INNER_PERSISTENT)
    return fz_dag_decline(d, "a row too long for a block, with column "
                             "reductions (only inner normalizations run "
                             "in several passes)");
  int64_t rows = fz_plan_rows(p);
  int64_t groups = fz_plan_row_points(p) / p->vector;
  fz_multipass_shape sh;
  if (!fz_multipass_shape_choose(rows, groups, p->vector, fz_persistent_row_tensors(p),
                                 pb->device.num_sms, &sh))
    return fz_dag_decline(d,
                          "%lld rows too long for a block do not fill %d "
                          "SMs a block a row",
                          (long long)rows, pb->device.num_sms);
  p->kernel_name = fz_arena_strdup(d->arena, "fz_inner_multipass");
  p->multipass = true;
  p->block_x = sh.block_x;
  p->block_y = 1;
  p->threads = sh.block_x;
  p->persistent = sh.trip;
  p->persistent_full = 0;
  p->dynamic_block = false;
  p->unroll = 1;
  p->split = 1;
  p->cluster = 0;
  p->grid_x = sh.blocks;
  p->blocks = sh.blocks;
  p->cooperative = false;
  p->prefetch = false;
  int64_t bound = rows + p->grid_x + fz_plan_row_points(p) +
                  (int64_t)sh.trip * sh.block_x * p->vector;
  p->index32 = fz_plan_fits_int32(p, bound);
  return true;
}

static bool build_multipass(fz_dag *d, const fz_problem *pb, fz_arena *arena,
                            fz_reason *why, const fz_op *first,
                            const fz_value *ref, fz_plan **out) {
  return fz_persistent_build(d, pb, arena, why, first, ref, out, true);
}

bool fz_multipass_try(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_reason *why) {
  return fz_dag_try(problem, arena, out, why, build_multipass);
}
