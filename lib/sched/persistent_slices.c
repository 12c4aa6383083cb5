/* persistent_slices.c - column slices for outer persistent plans (batch
 * norm over N, H, W of channels-last data).
 *
 * Why: a block holding whole rows has a partial of every column, so a
 * column reduction needs every block's partial of every column: a grid
 * barrier, a pass that sums the grid's partials, a second grid barrier
 * before the blocks may read the sums. Cut the row into S slices and
 * give each block one slice: a column is then summed over the
 * gridDim.x / S blocks of its slice only, few enough that each of them
 * sums those partials itself right after one barrier of the slice
 * (lib/lower/persistent_slices.c): one barrier a round instead of two,
 * and no pass that a handful of blocks run for the whole grid.
 *
 * A slice is block_x groups (a power of two, at least 8, so a row of a
 * slice still moves at least 8 vectors); the last slice may be partly
 * masked, by at most a quarter of the row. S divides the SM count, so
 * that every SM gets a block of the same slice shape, and block_y
 * (512 / block_x rows a block) is at least the column values a block
 * broadcasts (one per column reduction and lane), which then fit the
 * column scratch. FZ_OUTER_SLICES=1 in the environment turns slices off,
 * which reaches the whole-row path at any size (tests use it) and gives
 * the launch to compare with: batch norm forward on NHWC f32
 * [32, 28, 28, 256] took 35.0 us sliced and 37.5 us whole on the H200.
 */
#include "sched/persistent_slices.h"

#include "sched/heuristics.h"

#include <stdlib.h>
#include <string.h>

enum { MIN_SLICE_GROUPS = 8, MAX_SLICES = 8, THREADS = 512 };

bool fz_persistent_slices_plan(const fz_problem *pb, fz_plan *p, int columns,
                               int row_loads) {
  const char *off = getenv("FZ_OUTER_SLICES");
  if (off && strcmp(off, "1") == 0)
    return false;
  int64_t groups = fz_plan_row_points(p) / p->vector;
  int64_t rows = fz_plan_rows(p);
  int64_t sms = pb->device.num_sms;
  for (int64_t S = MAX_SLICES; S >= 2; S /= 2) {
    if (sms % S != 0 || groups < S * MIN_SLICE_GROUPS)
      continue;
    int64_t bx = fz_pow2_ceil(fz_cdiv(groups, S));
    if (bx * 8 > THREADS || (S * bx - groups) * 4 > groups)
      continue;
    int64_t by = THREADS / bx;
    if (by > fz_pow2_ceil(rows))
      by = fz_pow2_ceil(rows);
    if ((int64_t)columns * p->vector > by)
      continue;
    int64_t tiles = fz_cdiv(rows, by);
    int64_t per_slice = sms / S < tiles ? sms / S : tiles;
    int64_t held = fz_cdiv(tiles, per_slice);
    int64_t regs = held * p->vector * (row_loads ? row_loads : 1) +
                   (int64_t)columns * p->vector;
    if (regs > 128 || held > FZ_PLAN_MAX_UNROLL)
      continue;
    p->block_x = (int)bx;
    p->block_y = (int)by;
    p->threads = (int)(bx * by);
    p->persistent = 1;
    p->persistent_full = 0;
    p->unroll = (int)held;
    p->grid_x = per_slice * S;
    p->blocks = p->grid_x;
    p->column_slices = (int)S;
    p->cooperative = true;
    p->prefetch = false;
    p->prefetch_row_values = false;
    int64_t bound = rows + p->grid_x * by * held + fz_plan_row_points(p) +
                    S * bx * p->vector;
    p->index32 = fz_plan_fits_int32(p, bound);
    return true;
  }
  return false;
}
