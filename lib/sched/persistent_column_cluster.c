/* persistent_column_cluster.c - an inner-outer plan's column partials
 * combined across a thread-block cluster (sm_90) before they meet in the
 * workspace.
 *
 * Why: every block of an inner-outer kernel (layer norm backward) holds a
 * partial of every column reduction (grad-weight, grad-bias) over the
 * rows it walked. Without clusters each block publishes its partial row
 * to the workspace and, after the grid barrier, the final pass reads all
 * gridDim.x rows back: for a 2048x8192 layer norm backward on the H200
 * (132 blocks, two f32 column sums) 8.7 MB written and 8.7 MB read, next
 * to 192 MB (f32) or 96 MB (bf16) of real data. With the blocks launched
 * in clusters of c, the c blocks of a cluster first add up their
 * partials on chip through distributed shared memory, each summing 1/c
 * of the columns, and the workspace holds gridDim.x / c rows: the
 * traffic shrinks by (c - 1) / c (lib/lower/persistent_column_cluster.c
 * is the kernel's side).
 *
 * Measured on the H200 (fuse-run, 2048x8192, median of 50): clusters of
 * 2 took layer norm backward bf16 from 49.4 to 48.7 us and the RMS norm
 * backward from 48.5 to 48.1, but the f32 seed from 63.3 to 64.6;
 * clusters of 4 were slower on all three (the workspace is small next to
 * the rows, and the kernel holds one 512-thread block an SM, so it is
 * latency that costs, not these bytes). So it is off unless asked for.
 *
 * The cluster size: none unless FZ_INNER_OUTER_CLUSTER says 2, 4 or 8. A
 * cooperative grid must be resident all at once, and in clusters it is
 * resident in whole clusters, each within one GPC. An H200 GPC is made of
 * TPCs (pairs of SMs), so clusters of 2 are expected to leave no SM
 * idle, while clusters of 4 or 8 may leave the SMs of a GPC that do not
 * make a whole cluster without a block (the executor launches what
 * cuOccupancyMaxActiveClusters allows): fewer blocks for the rows, which
 * may cost more than the smaller workspace saves. Measure before raising
 * the default. c must divide the grid (the scheduler's; the executor's
 * resident grid is a multiple of c too) and block_x (so each block's
 * share of a chunk is whole slots).
 *
 * The exchange buffer: dynamic shared memory, where the prefetch buffers
 * lie (idle once the rows are done), so it costs no occupancy when it
 * fits in them; otherwise up to EXCHANGE_BYTES. It holds column_chunk of
 * a thread's held groups at a time (per column REDUCE node, chunk *
 * block_x groups of `vector` accumulators): the seed's 8192-wide f32 row
 * (4 groups of 4 lanes a thread, 512 threads, two sums) takes 64 KiB in
 * one chunk, beside 128 KiB of prefetch buffers.
 */
#include "sched/persistent_column_cluster.h"

#include <stdlib.h>
#include <string.h>

enum {
  DEFAULT_CLUSTER = 0, /* off: see above */
  /* a plan without prefetch buffers (or with smaller ones) gets this
   * much for the exchange, in chunks */
  EXCHANGE_BYTES = 32 * 1024,
  /* what the kernel's static shared memory (the row and column
   * combines' scratch) may take beside the dynamic buffer */
  STATIC_ROOM = 48 * 1024,
};

int fz_plan_cluster_dim(const fz_plan *p) {
  return p->cluster ? p->cluster : p->column_cluster;
}

/* The accumulator bytes of one lane of every column REDUCE node; 0 when
 * one of them is not a single accumulator (an arg-reduction's pair). */
static size_t lane_bytes(const fz_plan *p) {
  size_t bytes = 0;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_REDUCE || n->space != FZ_SPACE_COLUMN)
      continue;
    size_t acc = fz_dtype_size(fz_plan_reduce_acc(p, n));
    if (fz_plan_reduce_bytes(p, n) != acc)
      return 0;
    bytes += acc;
  }
  return bytes;
}

size_t fz_plan_column_exchange_bytes(const fz_plan *p) {
  if (!p->column_cluster)
    return 0;
  return (size_t)p->column_chunk * (size_t)p->block_x * (size_t)p->vector *
         lane_bytes(p);
}

/* FZ_INNER_OUTER_CLUSTER: 2, 4 or 8 blocks, or 0 for off (also "off",
 * "1", "no"); anything else is the default (off). */
static int asked_cluster(void) {
  const char *v = getenv("FZ_INNER_OUTER_CLUSTER");
  if (!v || !*v)
    return DEFAULT_CLUSTER;
  if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0 || strcmp(v, "0") == 0 ||
      strcmp(v, "1") == 0)
    return 0;
  if (strcmp(v, "2") == 0 || strcmp(v, "4") == 0 || strcmp(v, "8") == 0)
    return atoi(v);
  return DEFAULT_CLUSTER;
}

bool fz_column_cluster_plan(const fz_problem *pb, fz_plan *p) {
  p->column_cluster = 0;
  p->column_chunk = 0;
  int c = asked_cluster();
  if (!c || pb->device.sm < 90 || p->kind != FZ_PLAN_INNER_OUTER_PERSISTENT ||
      p->cluster || p->dynamic_block || !p->cooperative || p->block_x < 32 ||
      p->block_x % c != 0 || p->grid_x % c != 0)
    return false;
  size_t group = (size_t)p->block_x * (size_t)p->vector * lane_bytes(p);
  if (group == 0)
    return false;
  /* at this point fz_plan_shared_bytes is the prefetch buffers' */
  size_t budget = fz_plan_shared_bytes(p);
  if (budget < EXCHANGE_BYTES)
    budget = EXCHANGE_BYTES;
  size_t room = pb->device.max_shared_per_block > STATIC_ROOM
                    ? (size_t)pb->device.max_shared_per_block - STATIC_ROOM
                    : 0;
  if (budget > room)
    budget = room;
  size_t chunk = budget / group;
  if (chunk < 1)
    return false;
  p->column_cluster = c;
  p->column_chunk =
      chunk < (size_t)p->persistent ? (int)chunk : p->persistent;
  return true;
}
