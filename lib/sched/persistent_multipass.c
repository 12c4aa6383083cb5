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
 *
 * Rows that are only reduced: a fusion that stores nothing along the row
 * and whose reductions all fit one walk (the first round's, and the
 * online sums of its maxima: cross-entropy's log-sum-exp) reads its row
 * once in a multipass plan too, holding nothing. Such a row that
 * outgrows one SM is given a multipass plan rather than a cluster (the
 * persistent heuristics decline it as too long): one block a row streams
 * it at the device's bandwidth, while a cluster holding it waits through
 * its loads and its cluster-wide reductions in turn (on an H100, a
 * cluster reached 42-81% of copy bandwidth on cross-entropy rows of
 * 64K-256K). FZ_MULTIPASS_READ_ONCE=0 in the environment keeps the
 * cluster, the plan to compare with.
 */
#include "sched/persistent_multipass.h"

#include "sched/heuristics.h"
#include "sched/persistent_cluster.h"

#include <stdlib.h>
#include <string.h>

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

int fz_multipass_online_sum(const fz_plan *p, int m) {
  const fz_plan_node *mn = &p->nodes[m];
  if (mn->kind != FZ_NODE_REDUCE || mn->code != FZ_OP_AMAX ||
      mn->space != FZ_SPACE_ROW || mn->num_operands != 1 ||
      !fz_dtype_is_float(mn->dtype) ||
      p->nodes[mn->operands[0]].dtype != mn->dtype)
    return -1;
  int x = mn->operands[0];
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_REDUCE || n->space != FZ_SPACE_ROW ||
        n->code != FZ_OP_SUM || n->num_operands != 1 ||
        n->phase != mn->phase + 1 ||
        fz_plan_reduce_acc(p, n) != fz_plan_reduce_acc(p, mn))
      continue;
    const fz_plan_node *ex = &p->nodes[n->operands[0]];
    if (ex->kind != FZ_NODE_OP || ex->code != FZ_OP_EXP ||
        ex->num_operands != 1 || ex->space != FZ_SPACE_FULL)
      continue;
    const fz_plan_node *d = &p->nodes[ex->operands[0]];
    if (d->kind == FZ_NODE_OP && d->code == FZ_OP_SUB &&
        d->num_operands == 2 && d->operands[0] == x && d->operands[1] == m &&
        d->space == FZ_SPACE_FULL)
      return i;
  }
  return -1;
}

/* Whether row REDUCE node i is an online sum of a first-round max. */
static bool online_in_first_round(const fz_plan *p, int i) {
  for (int m = 0; m < p->num_nodes; m++)
    if (p->nodes[m].phase == 1 && fz_multipass_online_sum(p, m) == i)
      return true;
  return false;
}

bool fz_multipass_reads_once(const fz_plan *p) {
  if (p->kind != FZ_PLAN_INNER_PERSISTENT)
    return false;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind == FZ_NODE_STORE && n->space == FZ_SPACE_FULL)
      return false;
    if (n->kind == FZ_NODE_REDUCE &&
        (n->space != FZ_SPACE_ROW ||
         (n->phase != 1 && !online_in_first_round(p, i))))
      return false;
  }
  return true;
}

bool fz_multipass_prefer(const fz_problem *pb, const fz_plan *p,
                         int64_t groups) {
  const char *off = getenv("FZ_MULTIPASS_READ_ONCE");
  if (off && strcmp(off, "0") == 0)
    return false;
  int held = fz_persistent_row_tensors(p);
  fz_multipass_shape sh;
  return groups * p->vector * held > FZ_CLUSTER_SM_VALUES &&
         fz_multipass_reads_once(p) &&
         fz_multipass_shape_choose(fz_plan_rows(p), groups, p->vector, held,
                                   pb->device.num_sms, &sh);
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
  p->prefetch_row_values = false;
  p->weights_early = false;
  p->refetch_bf16 = false;
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
