/* split_grid.h - the launch grid of inner and outer reductions, sized for
 * the blocks an SM really keeps resident.
 *
 * A reduction's blocks each take a tile of the kept space (grid_x, a
 * grid-stride loop over the tiles) and one of `split` slices of the
 * reduced length (gridDim.y). How long the launch takes depends on how
 * those blocks fall into *waves*: an SM runs a handful of blocks at once
 * (the residency), and a grid of 1.5 waves takes as long as two. The
 * residency is the compiled kernel's: its registers and shared memory
 * decide it, and only the driver knows the final register count (ptxas
 * runs inside cuModuleLoadData). So the scheduler sizes the grid from an
 * estimate (2048 threads an SM), and the executor sizes it again from
 * cuOccupancyMaxActiveBlocksPerMultiprocessor once the kernel is loaded.
 * Both grid_x and split are launch dimensions (the kernel reads nctaid.x
 * and nctaid.y); only whether the kernel splits at all is compiled in.
 */
#ifndef FZ_SCHED_SPLIT_GRID_H
#define FZ_SCHED_SPLIT_GRID_H

#include "sched/plan.h"

/* The most waves a split may spread a launch over: more blocks only to
 * shave the last wave's idle slots stop paying for their partials. */
enum { FZ_SPLIT_MAX_WAVES = 8 };

/* What the choice depends on. */
typedef struct fz_split_grid_in {
  int64_t tiles;     /* blocks' worth of kept points; 0 for an empty output */
  int64_t min_split; /* 1, or 2 when the kernel is compiled to split */
  /* the most slices the reduced length affords, each keeping a minimum of
   * work per thread (fz_reduction_max_split) */
  int64_t max_split;
  int threads;       /* per block */
  int blocks_per_sm; /* the kernel's residency; <= 0: unknown (estimated) */
  int num_sms;
} fz_split_grid_in;

typedef struct fz_split_grid {
  int64_t grid_x;
  int split;
  int blocks_per_sm; /* the residency it was sized for */
} fz_split_grid;

/* The residency a block of `threads` threads would have if nothing but
 * threads limited it: 2048 an SM, at most 32 blocks (sm_70 to sm_90). */
int fz_blocks_per_sm_estimate(int threads);

/* The grid and split for `in`, a pure function. With S = num_sms *
 * blocks_per_sm resident slots, grid_x is the tile count up to 4 S (a
 * multiple of S: whole waves when blocks walk several tiles). When the
 * kernel may split and the tiles leave slots idle, the split is the
 * largest that fits in w waves (tiles * split <= w * S) for the fewest
 * waves w whose slots are at least 90% busy (the last wave's idle slots
 * cost under ~10%); when no w up to FZ_SPLIT_MAX_WAVES gets there, the
 * busiest. The split always lies in [min_split, max(min_split,
 * max_split)], at most 65535 (gridDim.y). */
fz_split_grid fz_split_grid_choose(const fz_split_grid_in *in);

/* Inner and outer reduction plans: the most slices their reduced length
 * affords (inner: 4 vectors a thread a split; outer: 8 rows a thread). */
int64_t fz_reduction_max_split(const fz_plan *p);

/* The largest index a reduction plan's kernel computes with its launch
 * grid (its index32 bound: fz_plan_fits_int32). */
int64_t fz_reduction_index_bound(const fz_plan *p);

/* Sets grid_x, split and blocks of an inner or outer reduction plan whose
 * block shape is chosen, for blocks_per_sm resident blocks (<= 0: the
 * estimate), and records the residency used (resident_per_sm,
 * resident_measured = blocks_per_sm > 0). With `compiled` the kernel
 * exists: whether it splits stays as it is (a split kernel keeps split >=
 * 2, as its parameters include the workspace; an unsplit one keeps 1),
 * and when a 32-bit kernel's index bound would no longer hold, nothing
 * changes. The workspace (fz_plan_workspace_bytes) follows the split. */
void fz_reduction_size_grid(fz_plan *p, int num_sms, int blocks_per_sm,
                            bool compiled);

#endif
