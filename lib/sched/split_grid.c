/* split_grid.c - the launch grid of inner and outer reductions from the
 * blocks an SM keeps resident (split_grid.h says why it is chosen twice).
 *
 * Measured on the H200 (132 SMs) before this sizing: the outer reduction
 * kernel of a [2048, 8192] f32 column sum takes 44 registers a thread, so
 * an SM keeps 5 blocks of 256 threads, not the 8 that 2048 threads allow;
 * the grid sized for 8 (64 tiles x 16 slices) ran 1.55 waves at 64% of
 * copy bandwidth. Sized for 5 it is 64 x 10, one wave.
 */
#include "sched/split_grid.h"

#include "sched/heuristics.h"

int fz_blocks_per_sm_estimate(int threads) {
  int per_sm = threads > 0 ? 2048 / threads : 1;
  return per_sm < 1 ? 1 : per_sm > 32 ? 32 : per_sm;
}

/* How busy the slots are over the waves a split takes, as a fraction
 * num / den: tiles * split blocks in ceil(tiles * split / slots) waves. */
typedef struct busy {
  int64_t num, den;
} busy;

static busy busy_of(int64_t tiles, int64_t split, int64_t slots) {
  int64_t blocks = tiles * split;
  return (busy){blocks, fz_cdiv(blocks, slots) * slots};
}

static bool busier(busy a, busy b) { return a.num * b.den > b.num * a.den; }

/* at least 90% busy: the last wave's idle slots cost under ~10% */
static bool busy_enough(busy a) { return 10 * a.num >= 9 * a.den; }

fz_split_grid fz_split_grid_choose(const fz_split_grid_in *in) {
  int per_sm = in->blocks_per_sm > 0 ? in->blocks_per_sm
                                     : fz_blocks_per_sm_estimate(in->threads);
  int64_t slots = (int64_t)(in->num_sms > 0 ? in->num_sms : 1) * per_sm;
  int64_t lo = in->min_split > 1 ? in->min_split : 1;
  int64_t hi = in->max_split < 65535 ? in->max_split : 65535;
  if (hi < lo)
    hi = lo;
  int64_t tiles = in->tiles > 0 ? in->tiles : 0;
  fz_split_grid out = {.grid_x = tiles < slots * 4 ? tiles : slots * 4,
                       .split = (int)lo,
                       .blocks_per_sm = per_sm};
  /* Blocks that walk several tiles already make whole waves (4 S). */
  if (tiles == 0 || hi == lo || tiles >= slots * 4)
    return out;
  int64_t best = lo;
  busy best_busy = busy_of(tiles, lo, slots);
  for (int64_t w = 1; w <= FZ_SPLIT_MAX_WAVES; w++) {
    int64_t s = w * slots / tiles; /* the most slices w waves hold */
    if (s < lo)
      continue;
    if (s > hi)
      s = hi;
    busy b = busy_of(tiles, s, slots);
    if (busy_enough(b)) {
      best = s;
      break;
    }
    if (busier(b, best_busy)) {
      best = s;
      best_busy = b;
    }
    if (s == hi) /* more waves cannot take more slices */
      break;
  }
  out.split = (int)best;
  return out;
}

int64_t fz_reduction_max_split(const fz_plan *p) {
  if (p->kind == FZ_PLAN_INNER_REDUCTION) {
    int64_t groups = fz_plan_reduced_points(p) / p->vector;
    return groups / ((int64_t)p->block_x * 4);
  }
  return fz_plan_reduced_points(p) / ((int64_t)p->block_y * 8);
}

int64_t fz_reduction_index_bound(const fz_plan *p) {
  int64_t loop = fz_plan_kept_points(p) + p->grid_x * (p->block_x + p->block_y);
  int64_t rloop = fz_plan_reduced_points(p) + (int64_t)p->split * p->block_x *
                                                  p->block_y * p->unroll *
                                                  p->vector;
  return loop > rloop ? loop : rloop;
}

void fz_reduction_size_grid(fz_plan *p, int num_sms, int blocks_per_sm,
                            bool compiled) {
  int64_t most = fz_reduction_max_split(p);
  fz_split_grid_in in = {.tiles = fz_plan_num_tiles(p),
                         .min_split = compiled && p->split > 1 ? 2 : 1,
                         .max_split = compiled && p->split == 1 ? 1 : most,
                         .threads = p->threads,
                         .blocks_per_sm = blocks_per_sm,
                         .num_sms = num_sms};
  fz_split_grid g = fz_split_grid_choose(&in);
  fz_plan sized = *p;
  sized.grid_x = g.grid_x;
  sized.split = g.split;
  if (compiled && p->index32 &&
      !fz_plan_fits_int32(&sized, fz_reduction_index_bound(&sized)))
    return; /* the kernel's 32-bit offsets need the grid it was made for */
  p->grid_x = g.grid_x;
  p->split = g.split;
  p->blocks = g.grid_x * g.split;
  p->resident_per_sm = g.blocks_per_sm;
  p->resident_measured = blocks_per_sm > 0;
}
