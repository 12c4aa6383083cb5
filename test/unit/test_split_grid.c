/* test_split_grid.c - the launch grid of inner and outer reductions
 * (lib/sched/split_grid.c): the pure choice of grid and split from the
 * tiles, the split range and the residency, and its application to
 * scheduled plans, once by the scheduler (estimated residency) and again
 * as the executor does once the kernel is loaded (measured residency):
 * the kernel's key stays, whether it splits stays, the workspace follows
 * the split. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/split_grid.h"
#include "test_util.h"

enum { H200_SMS = 132 };

static fz_split_grid choose(int64_t tiles, int64_t min_split,
                            int64_t max_split, int threads,
                            int blocks_per_sm) {
  fz_split_grid_in in = {.tiles = tiles,
                         .min_split = min_split,
                         .max_split = max_split,
                         .threads = threads,
                         .blocks_per_sm = blocks_per_sm,
                         .num_sms = H200_SMS};
  return fz_split_grid_choose(&in);
}

static void expect(fz_split_grid g, int64_t grid_x, int split, int per_sm) {
  ck_assert_int_eq(g.grid_x, grid_x);
  ck_assert_int_eq(g.split, split);
  ck_assert_int_eq(g.blocks_per_sm, per_sm);
}

START_TEST(estimate) {
  ck_assert_int_eq(fz_blocks_per_sm_estimate(256), 8);
  ck_assert_int_eq(fz_blocks_per_sm_estimate(512), 4);
  ck_assert_int_eq(fz_blocks_per_sm_estimate(1024), 2);
  ck_assert_int_eq(fz_blocks_per_sm_estimate(96), 21);
  /* the hardware's 32 blocks an SM, and never none */
  ck_assert_int_eq(fz_blocks_per_sm_estimate(32), 32);
  ck_assert_int_eq(fz_blocks_per_sm_estimate(1), 32);
  ck_assert_int_eq(fz_blocks_per_sm_estimate(0), 1);
  /* unknown residency: the estimate */
  expect(choose(64, 1, 32, 256, 0), 64, 16, 8);
  expect(choose(64, 1, 32, 256, -1), 64, 16, 8);
}
END_TEST

/* The H200 rows measured before: [2048, 8192] f32 over dim 0 (64 tiles
 * of 32 x 4 columns, R affords 32 slices of 8 rows a thread for 8 rows
 * of threads, 44 registers: 5 blocks of 256 an SM) and channels-last
 * [64, 56, 56, 256] over (0, 1, 2) (2 tiles, 3 blocks of 512 an SM). */
START_TEST(measured_rows) {
  /* estimated 8 an SM: 64 x 16 = 1024 blocks, 1.55 waves of the real 5 */
  expect(choose(64, 1, 32, 256, 0), 64, 16, 8);
  /* measured: 64 x 10 = 640 blocks, one wave of 660 slots */
  expect(choose(64, 1, 32, 256, 5), 64, 10, 5);
  /* channels-last: 2 x 264 = 528 blocks = 1.33 waves of 396; 2 x 198 */
  int64_t most = 64 * 56 * 56 / (16 * 8);
  expect(choose(2, 1, most, 512, 0), 2, 264, 4);
  expect(choose(2, 1, most, 512, 3), 2, 198, 3);
  /* [2048, 8192] over dim 1: one row a block of 512, no split to have;
   * 2048 blocks are 3.88 waves of 4 an SM (3% idle in the last) */
  expect(choose(2048, 1, 1, 512, 4), 2048, 1, 4);
}
END_TEST

/* When one wave leaves more than a tenth of the slots idle, the split
 * spreads the blocks over the fewest waves that are 90% busy. */
START_TEST(whole_waves) {
  /* 400 tiles, 660 slots: one wave is 61% busy, three slices in two
   * waves 91% */
  expect(choose(400, 1, 100, 256, 5), 400, 3, 5);
  /* 1.2 waves of tiles: three slices in four waves (90%) */
  expect(choose(792, 1, 100, 256, 5), 792, 3, 5);
  /* no split allowed: the tiles as they are */
  expect(choose(792, 1, 1, 256, 5), 792, 1, 5);
  /* R affords only 4 slices: as many as it affords */
  expect(choose(64, 1, 4, 256, 5), 64, 4, 5);
  /* R caps the split short of 90%: the busiest it allows, the fewest
   * slices on a tie (250 tiles: 2 slices, 76%; 400 tiles: 1 and 2 slices
   * are both 61% busy) */
  expect(choose(250, 1, 2, 256, 5), 250, 2, 5);
  expect(choose(400, 1, 2, 256, 5), 400, 1, 5);
  /* 1.5 waves of tiles: 2, 3 and 4 waves are 76% busy, five 91% */
  expect(choose(1000, 1, 100, 256, 5), 1000, 3, 5);
}
END_TEST

/* A kernel compiled to split keeps splitting (its parameters include the
 * workspace), one compiled not to never does. */
START_TEST(compiled_split_range) {
  /* 600 tiles, 660 slots: unsplit is 91% busy, but the kernel splits */
  expect(choose(600, 2, 100, 256, 5), 600, 2, 5);
  /* a split kernel whose R would afford one slice still gets two */
  expect(choose(600, 2, 1, 256, 5), 600, 2, 5);
  /* many tiles: whole waves of blocks walking several tiles (4 S) */
  expect(choose(100000, 2, 100, 256, 5), 4 * 660, 2, 5);
  expect(choose(100000, 1, 100, 256, 5), 4 * 660, 1, 5);
}
END_TEST

START_TEST(edges) {
  /* an empty output: no blocks */
  expect(choose(0, 1, 32, 256, 5), 0, 1, 5);
  /* one tile, a huge device: gridDim.y's limit */
  fz_split_grid_in in = {.tiles = 1,
                         .min_split = 1,
                         .max_split = (int64_t)1 << 40,
                         .threads = 64,
                         .blocks_per_sm = 32,
                         .num_sms = 10000};
  fz_split_grid g = fz_split_grid_choose(&in);
  ck_assert_int_eq(g.grid_x, 1);
  ck_assert_int_eq(g.split, 65535);
}
END_TEST

/* Over many inputs: the split in its range, the grid at most the tiles
 * and 4 waves, and a multiple of the slots when it is capped. */
START_TEST(bounds) {
  for (int64_t tiles = 1; tiles < 3000; tiles += 37)
    for (int per_sm = 1; per_sm <= 32; per_sm += 3)
      for (int64_t lo = 1; lo <= 2; lo++)
        for (int64_t hi = 0; hi < 400; hi += 57) {
          fz_split_grid g = choose(tiles, lo, hi, 256, per_sm);
          int64_t slots = (int64_t)H200_SMS * per_sm;
          int64_t top = hi > lo ? hi : lo;
          ck_assert_int_ge(g.split, lo);
          ck_assert_int_le(g.split, top);
          ck_assert_int_le(g.grid_x, tiles);
          ck_assert_int_le(g.grid_x, 4 * slots);
          if (g.grid_x < tiles)
            ck_assert_int_eq(g.grid_x % slots, 0);
          /* a split beyond the minimum never leaves a wave emptier
           * than the minimum's */
          if (g.split > lo) {
            int64_t b = tiles * g.split, bl = tiles * lo;
            int64_t w = (b + slots - 1) / slots, wl = (bl + slots - 1) / slots;
            ck_assert(b * wl * slots >= bl * w * slots);
          }
        }
}
END_TEST

/* ---- plans ---------------------------------------------------------------- */

static const char SUM_COLS[] = "fusion @sum_cols(%x: f32[M, N]) {\n"
                               "  %s = sum %x dims(0) : f32[N]\n"
                               "  return %s\n"
                               "}\n";

static const char SUM_CHANNELS_LAST[] =
    "fusion @sum_channels_last(%x: f32[N, H, W, C]) {\n"
    "  %s = sum %x dims(0, 1, 2) : f32[C]\n"
    "  return %s\n"
    "}\n";

static const char SUM_ROWS[] = "fusion @sum_rows(%x: f32[M, N]) {\n"
                               "  %s = sum %x dims(1) : f32[M]\n"
                               "  return %s\n"
                               "}\n";

/* The plan of f over a contiguous f32 input of `rank` sizes. */
static fz_plan *schedule(fz_arena *arena, const char *text,
                         const int64_t *sizes, int rank) {
  fz_fusion *f = test_parse(text);
  fz_tensor_desc x = {.dtype = FZ_F32, .rank = rank, .align = 16};
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; k--) {
    x.sizes[k] = sizes[k];
    x.strides[k] = stride;
    stride *= sizes[k];
  }
  fz_tensor_desc out = {0};
  fz_problem pb = {.fusion = f, .inputs = &x, .symbols = sizes,
                   .device = fz_device_info_default(90)};
  /* the output: the kept sizes, contiguous */
  const fz_value *o = f->outputs[0];
  out.dtype = FZ_F32;
  out.rank = o->type.rank;
  stride = 1;
  for (int k = out.rank - 1; k >= 0; k--) {
    out.sizes[k] = fz_axis_size(&o->type.axes[k], sizes);
    out.strides[k] = stride;
    stride *= out.sizes[k];
  }
  out.align = 16;
  pb.outputs = &out;
  fz_plan *plan = NULL;
  fz_error err = {0};
  ck_assert_msg(fz_schedule(&pb, arena, &plan, &err) == FZ_OK, "%s",
                err.message);
  return plan; /* the caller destroys plan->fusion */
}

static char *plan_text(const fz_plan *p) {
  fz_buf b = {0};
  fz_plan_print(p, &b);
  char *text = fz_buf_take(&b);
  ck_assert_ptr_nonnull(text);
  return text;
}

/* What the executor does once the kernel is loaded, checked against the
 * scheduler's plan: same key, same splitting, the workspace of the new
 * split, the text naming the residency. */
static void resize(fz_plan *p, int per_sm, int64_t grid_x, int split) {
  fz_arena *arena = fz_arena_create();
  const char *key = fz_plan_key(p, arena);
  bool splits = p->split > 1;
  fz_reduction_size_grid(p, H200_SMS, per_sm, true);
  ck_assert_int_eq(p->grid_x, grid_x);
  ck_assert_int_eq(p->split, split);
  ck_assert_int_eq(p->blocks, grid_x * split);
  ck_assert_int_eq(p->split > 1, splits);
  ck_assert_str_eq(fz_plan_key(p, arena), key);
  ck_assert_int_eq(p->resident_per_sm, per_sm);
  ck_assert(p->resident_measured);
  if (splits)
    ck_assert_uint_eq(fz_plan_workspace_bytes(p),
                      4 * (size_t)fz_plan_kept_points(p) * (size_t)split);
  fz_error err = {0};
  ck_assert_msg(fz_plan_verify(p, &err) == FZ_OK, "%s", err.message);
  char want[64];
  snprintf(want, sizeof want, "grid sized at load (occupancy: %d blocks/SM)",
           per_sm);
  char *text = plan_text(p);
  ck_assert_msg(strstr(text, want), "%s", text);
  free(text);
  fz_arena_destroy(arena);
}

START_TEST(plan_sum_cols) {
  fz_arena *arena = fz_arena_create();
  int64_t sizes[2] = {2048, 8192};
  fz_plan *p = schedule(arena, SUM_COLS, sizes, 2);
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  ck_assert_int_eq(p->threads, 256);
  ck_assert_int_eq(fz_reduction_max_split(p), 32);
  ck_assert_int_eq(p->grid_x, 64);
  ck_assert_int_eq(p->split, 16);
  ck_assert_int_eq(p->resident_per_sm, 8);
  ck_assert(!p->resident_measured);
  char *text = plan_text(p);
  ck_assert_msg(strstr(text, "launch grid=64x16 block=32x8 vector=4 "
                             "unroll=4 grid-reduction; grid sized at "
                             "load (estimate: 8 blocks/SM)\n"),
                "%s", text);
  free(text);
  resize(p, 5, 64, 10);
  /* 32 an SM: as many slices as R affords */
  resize(p, 32, 64, 32);
  fz_fusion_destroy((fz_fusion *)p->fusion);
  fz_arena_destroy(arena);
}
END_TEST

START_TEST(plan_channels_last) {
  fz_arena *arena = fz_arena_create();
  int64_t sizes[4] = {64, 56, 56, 256};
  fz_plan *p = schedule(arena, SUM_CHANNELS_LAST, sizes, 4);
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  ck_assert_int_eq(p->threads, 512);
  ck_assert_int_eq(p->grid_x, 2);
  ck_assert_int_eq(p->split, 264);
  resize(p, 3, 2, 198);
  fz_fusion_destroy((fz_fusion *)p->fusion);
  fz_arena_destroy(arena);
}
END_TEST

/* An unsplit kernel stays unsplit, its grid whole waves of blocks. */
START_TEST(plan_sum_rows) {
  fz_arena *arena = fz_arena_create();
  int64_t sizes[2] = {2048, 8192};
  fz_plan *p = schedule(arena, SUM_ROWS, sizes, 2);
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_eq(p->threads, 512);
  ck_assert_int_eq(p->split, 1);
  ck_assert_int_eq(p->grid_x, 2048);
  resize(p, 4, 2048, 1);
  /* 2 an SM: 4 waves of 264 blocks walking the 2048 rows */
  resize(p, 2, 4 * 264, 1);
  fz_fusion_destroy((fz_fusion *)p->fusion);
  fz_arena_destroy(arena);
}
END_TEST

/* A 32-bit kernel keeps the grid it was made for when a larger split
 * would take its R loop's indices past 2^31: one row of 2^31 - 2^24
 * floats, split 528 ways for 4 blocks of 512 an SM (R loop bound 2^31 -
 * 2^24 + 528 * 512 * 8 * 4 < 2^31), where 32 an SM would split it 4224
 * ways (bound past 2^31). */
START_TEST(plan_index_bound) {
  fz_arena *arena = fz_arena_create();
  int64_t sizes[2] = {1, ((int64_t)1 << 31) - ((int64_t)1 << 24)};
  fz_plan *p = schedule(arena, SUM_ROWS, sizes, 2);
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_eq(p->split, 528);
  ck_assert_int_eq(p->unroll, 8);
  ck_assert(p->index32);
  fz_reduction_size_grid(p, H200_SMS, 32, true);
  ck_assert_int_eq(p->split, 528);
  ck_assert_int_eq(p->grid_x, 1);
  ck_assert_int_eq(p->resident_per_sm, 4);
  ck_assert(!p->resident_measured);
  /* 2 an SM takes fewer slices: the bound holds */
  fz_reduction_size_grid(p, H200_SMS, 2, true);
  ck_assert_int_eq(p->split, 264);
  ck_assert(p->resident_measured);
  fz_fusion_destroy((fz_fusion *)p->fusion);
  fz_arena_destroy(arena);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("split_grid");
  TCase *t = tcase_create("choose");
  tcase_add_test(t, estimate);
  tcase_add_test(t, measured_rows);
  tcase_add_test(t, whole_waves);
  tcase_add_test(t, compiled_split_range);
  tcase_add_test(t, edges);
  tcase_add_test(t, bounds);
  suite_add_tcase(s, t);
  TCase *p = tcase_create("plans");
  tcase_add_test(p, plan_sum_cols);
  tcase_add_test(p, plan_channels_last);
  tcase_add_test(p, plan_sum_rows);
  tcase_add_test(p, plan_index_bound);
  suite_add_tcase(s, p);
  return s;
}

int main(void) { return test_run_suite(make()); }
