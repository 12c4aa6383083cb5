/* persistent_cluster.c - rows too long for one SM, held by a cluster.
 *
 * One SM has 64K 32-bit registers; a block that holds a row keeps it
 * there, so a row of more than about 32K held values (half the register
 * file, the rest for addresses and temporaries) either spills (a block of
 * 1024 threads gets at most 64 registers a thread) or is declined and
 * split into kernels that round-trip f32 intermediates through memory.
 * On sm_90 a thread-block cluster of c blocks, each on its own SM, can
 * share the row instead: every block holds 1/c of it and a row reduction
 * meets across the cluster through distributed shared memory
 * (lib/lower/persistent_cluster.c), so the row is still read once and
 * written once.
 *
 * Sizing: a thread holds at most FZ_CLUSTER_THREAD_VALUES values (so that
 * they stay in registers). The smallest cluster whose blocks of at most
 * 512 threads hold the row wins: at most 16K values a block, so that two
 * blocks share an SM and one loads its row while the other reduces; else
 * the smallest with blocks of 1024 threads (one block an SM); else no
 * cluster (the row is sized for one block as before, or declined).
 * The grid is a cluster a row, as the inner persistent plans have a block
 * a row (a cluster that finishes its row frees its SMs for the next one,
 * whose loads then overlap the others' reductions), up to
 * FZ_CLUSTER_WAVES waves of resident clusters (num_sms / c, twice for
 * blocks of at most 512 threads); beyond that clusters walk the rows.
 *
 * Prefetch: a block holds one row share at a time and, between its
 * loads and its stores, waits for its block's and its cluster's
 * reductions, while its SM's memory idles unless another block there is
 * loading. When the rows outnumber the resident clusters and the
 * prefetch buffers (two row shares a block, persistent_prefetch.c) fit
 * every block an SM keeps, the grid is instead one wave of resident
 * clusters, each walking rows with the next row's copies in flight
 * while it reduces the current one (the executor trims the grid to the
 * clusters the device keeps resident). Where two buffers do not fit
 * but one does, for a block of 1024 threads alone on its SM (f32 rows
 * of 256K: 128 KiB of row share a block), the plan prefetches into a
 * single buffer (prefetch_single), refilled
 * once the row's values have left it for registers: the copies then
 * overlap the row's reductions after the first block combine and its
 * stores, not its loads. FZ_CLUSTER_PREFETCH=0 in the environment keeps
 * the waves of clusters without prefetch, the launch to compare with.
 */
#include "sched/persistent_cluster.h"

#include "sched/heuristics.h"

#include <stdlib.h>
#include <string.h>

enum {
  FZ_CLUSTER_THREAD_VALUES = 32,
  FZ_CLUSTER_WAVES = 8,
  /* what a block's shared memory takes besides the prefetch buffers:
   * the row scratch and cluster slots, and the 1 KiB the driver
   * reserves a block */
  FZ_CLUSTER_SHARED_EXTRA = 2048,
};

/* The fewest threads (a power of two from 128 to max_threads) that hold
 * `groups` groups at most FZ_CLUSTER_THREAD_VALUES values a thread; 0
 * when even max_threads do not. */
static int threads_for(int64_t groups, int vector, int held,
                       int max_threads) {
  for (int bx = 128; bx <= max_threads; bx *= 2)
    if (fz_cdiv(groups, bx) * vector * held <= FZ_CLUSTER_THREAD_VALUES)
      return bx;
  return 0;
}

bool fz_cluster_shape_choose(int64_t groups, int vector, int held,
                             fz_cluster_shape *out) {
  *out = (fz_cluster_shape){0};
  if (groups < 1 || vector < 1 || held < 1 ||
      groups * vector * held <= FZ_CLUSTER_SM_VALUES)
    return false;
  for (int max_threads = 512; max_threads <= 1024; max_threads *= 2)
    for (int c = 2; c <= FZ_PLAN_MAX_CLUSTER; c *= 2) {
      int64_t per_block = fz_cdiv(groups, c);
      int bx = threads_for(per_block, vector, held, max_threads);
      if (!bx)
        continue;
      /* the kernel's guard holds by construction: (persistent - 1) * c *
       * block_x < groups <= persistent * c * block_x */
      *out = (fz_cluster_shape){c, bx, (int)fz_cdiv(groups, (int64_t)c * bx)};
      return true;
    }
  return false;
}

int fz_persistent_row_tensors(const fz_plan *p) {
  int held = 0;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_LOAD || n->space != FZ_SPACE_FULL)
      continue;
    bool along = false, across = false;
    for (int k = 0; k < p->rank; k++) {
      along |= p->row_axes[k] && p->accesses[n->access].strides[k] != 0;
      across |= !p->row_axes[k] && p->accesses[n->access].strides[k] != 0;
    }
    if (along && across)
      held += fz_dtype_size(p->accesses[n->access].dtype) > 4 ? 2 : 1;
  }
  return held ? held : 1;
}

/* Whether the plan (its launch set) prefetches into two buffers, or
 * one (`single`): rows left for a second wave of `resident` clusters,
 * and room for the buffers of `per_sm` blocks an SM. One buffer is
 * refilled within the row after its first row reduction's block combine
 * (persistent_prefetch.c): without a row reduction the copies would
 * overlap nothing. */
static bool cluster_prefetch(const fz_problem *pb, fz_plan *p, int per_sm,
                             int64_t rows, int64_t resident, bool single) {
  const char *off = getenv("FZ_CLUSTER_PREFETCH");
  p->prefetch = false;
  p->prefetch_single = false;
  p->prefetch_deep = false; /* two buffers at most fit beside a cluster's row */
  p->prefetch_row_values = false;
  p->weights_early = false;
  p->refetch_bf16 = false;
  if ((off && strcmp(off, "0") == 0) || pb->device.sm < 80 ||
      rows <= resident || (single && p->phases < 1) ||
      !fz_plan_prefetch_pieces_fit(p))
    return false;
  /* fz_plan_shared_bytes counts the buffers these ask for */
  p->prefetch = true;
  p->prefetch_single = single;
  size_t room = (size_t)pb->device.max_shared_per_block;
  size_t block = fz_plan_shared_bytes(p) + FZ_CLUSTER_SHARED_EXTRA;
  p->prefetch = (size_t)per_sm * block <= room;
  p->prefetch_single = single && p->prefetch;
  if (!p->prefetch)
    return false;
  /* the row values' slots beside the rows', where they fit */
  fz_plan_choose_row_values(p);
  block = fz_plan_shared_bytes(p) + FZ_CLUSTER_SHARED_EXTRA;
  if ((size_t)per_sm * block > room)
    p->prefetch_row_values = false;
  return true;
}

/* Sets the plan's launch for shape `sh`, prefetching into two buffers or
 * one (`single`) where they fit; true when it prefetches. */
static bool launch(const fz_problem *pb, fz_plan *p,
                   const fz_cluster_shape *sh, bool single) {
  int64_t rows = fz_plan_rows(p);
  int per_sm = sh->block_x <= 512 ? 2 : 1;
  int64_t resident = (int64_t)pb->device.num_sms / sh->cluster * per_sm;
  if (resident < 1)
    resident = 1;
  p->block_x = sh->block_x;
  p->block_y = 1;
  p->threads = sh->block_x;
  p->persistent = sh->persistent;
  p->persistent_full = sh->persistent - 1; /* an exact plan: no class */
  p->unroll = 1;
  p->split = 1;
  p->cluster = sh->cluster;
  p->cooperative = false;
  bool prefetch = cluster_prefetch(pb, p, per_sm, rows, resident, single);
  int64_t cap = prefetch ? resident : resident * FZ_CLUSTER_WAVES;
  int64_t clusters = rows < cap ? rows : cap;
  p->grid_x = clusters * sh->cluster;
  p->blocks = p->grid_x;
  return prefetch;
}

bool fz_persistent_cluster_plan(const fz_problem *pb, fz_plan *p,
                                int64_t groups) {
  fz_cluster_shape sh;
  int held = fz_persistent_row_tensors(p);
  if (pb->device.sm < 90 || p->kind != FZ_PLAN_INNER_PERSISTENT ||
      !fz_cluster_shape_choose(groups, p->vector, held, &sh))
    return false;
  /* Two buffers where they fit. One buffer only for blocks alone on
   * their SM (1024 threads): two blocks an SM already overlap one's
   * loads with the other's reductions. On the H100 (medians of 30 runs),
   * softmax f32 512x262144 (1024 threads) took 451 us without prefetch
   * and 434 with one buffer; 1024x131072 (512 threads, two an SM) 407
   * and 405. And no larger cluster whose smaller row shares would let
   * two buffers fit: f32 rows of 64K in clusters of 8 blocks of 256
   * threads with two buffers took 470 us, in clusters of 4 blocks of 512
   * threads without prefetch 395 us (half the warps an SM, twice the
   * blocks that meet a row). */
  /* (a launch that does not prefetch leaves the waves without it) */
  if (!launch(pb, p, &sh, false) && sh.block_x > 512)
    launch(pb, p, &sh, true);
  int64_t rows = fz_plan_rows(p);
  int64_t bound = rows + p->grid_x + fz_plan_row_points(p) +
                  (int64_t)sh.cluster * sh.block_x * p->vector;
  p->index32 = fz_plan_fits_int32(p, bound);
  return true;
}
