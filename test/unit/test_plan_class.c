/* test_plan_class.c - size classes of inner persistent plans: one kernel
 * (one plan key) serves a range of row lengths, the groups past
 * persistent_full masked by the run-time row length and, for long rows, the
 * block as wide as the launch (dynamic_block). A problem with exact_sizes
 * gets the plan of its exact sizes instead, and fz_plan_verify refuses a
 * row the kernel cannot cover. A fusion scheduled whole is planned once
 * per miss: segmentation hands its plan on. */
#include <stdio.h>
#include <string.h>

#include "sched/plan.h"
#include "sched/segment.h"
#include "test_util.h"

static const char softmax[] = "fusion @softmax(%x: f32[N, K]) {\n"
                              "  %a = amax %x dims(1) keepdim : f32[N, b1]\n"
                              "  %ae = expand %a : f32[N, b1->K]\n"
                              "  %d = sub %x, %ae : f32[N, K]\n"
                              "  %e = exp %d : f32[N, K]\n"
                              "  %s = sum %e dims(1) keepdim : f32[N, b1]\n"
                              "  %se = expand %s : f32[N, b1->K]\n"
                              "  %o = div %e, %se : f32[N, K]\n"
                              "  return %o\n"
                              "}\n";

typedef struct scheduled {
  fz_arena *arena;
  fz_plan *plan;
  int64_t symbols[2];
} scheduled;

/* The plan of softmax over f32[n, k], contiguous and 16-byte aligned. */
static void schedule(const fz_fusion *f, int64_t n, int64_t k, bool exact,
                     scheduled *s) {
  s->arena = fz_arena_create();
  fz_tensor_desc x = {.dtype = FZ_F32, .rank = 2, .sizes = {n, k},
                      .strides = {k, 1}, .align = 16};
  s->symbols[0] = n;
  s->symbols[1] = k;
  fz_problem pb = {.fusion = f, .inputs = &x, .outputs = &x,
                   .symbols = s->symbols,
                   .device = fz_device_info_default(90),
                   .exact_sizes = exact};
  fz_error err = {0};
  ck_assert_msg(fz_schedule(&pb, s->arena, &s->plan, &err) == FZ_OK, "%s",
                err.message);
  ck_assert_int_eq(s->plan->kind, FZ_PLAN_INNER_PERSISTENT);
}

/* bench/dynamic.py's softmax sweep (row lengths 128 + 40 i over 4096
 * rows): at most 5 kernels, where exact plans need 16. */
START_TEST(softmax_sweep_needs_few_kernels) {
  fz_fusion *f = test_parse(softmax);
  for (int exact = 0; exact < 2; exact++) {
    fz_arena *keep = fz_arena_create();
    const char *keys[100];
    int n = 0;
    for (int i = 0; i < 100; i++) {
      scheduled s;
      schedule(f, 4096, 128 + 40 * i, exact, &s);
      const char *key = fz_plan_key(s.plan, keep);
      bool seen = false;
      for (int j = 0; j < n && !seen; j++)
        seen = strcmp(keys[j], key) == 0;
      if (!seen)
        keys[n++] = key;
      fz_arena_destroy(s.arena);
    }
    if (exact)
      ck_assert_int_eq(n, 16);
    else
      ck_assert_int_le(n, 5);
    fz_arena_destroy(keep);
  }
  fz_fusion_destroy(f);
}
END_TEST

/* Long rows: one key for rows of 2000 and 4000 floats, the block as wide
 * as each needs (whole warps), 8 groups a thread, the last 4 masked. */
START_TEST(long_rows_share_a_dynamic_block) {
  fz_fusion *f = test_parse(softmax);
  scheduled a, b;
  schedule(f, 1024, 2000, false, &a);
  schedule(f, 1024, 4000, false, &b);
  ck_assert(a.plan->dynamic_block && b.plan->dynamic_block);
  ck_assert_int_eq(a.plan->persistent, 8);
  ck_assert_int_eq(a.plan->persistent_full, 4);
  ck_assert_int_eq(a.plan->block_y, 1);
  ck_assert_int_eq(a.plan->block_x, 64);  /* 500 groups / 8, in warps */
  ck_assert_int_eq(b.plan->block_x, 128); /* 1000 groups / 8 */
  ck_assert_str_eq(fz_plan_key(a.plan, a.arena), fz_plan_key(b.plan, b.arena));
  /* the launch is the plan's: block_x threads */
  unsigned grid[3], block[3];
  fz_plan_launch_shape(b.plan, grid, block);
  ck_assert_uint_eq(block[0] * block[1], 128);
  fz_arena_destroy(a.arena);
  fz_arena_destroy(b.arena);
  fz_fusion_destroy(f);
}
END_TEST

/* Rows of one warp: the held groups rounded up to a power of two, the
 * later half masked: rows of 300 and 500 floats (75 and 125 groups) share
 * the class of 4 groups a thread. */
START_TEST(warp_rows_round_up_the_groups) {
  fz_fusion *f = test_parse(softmax);
  scheduled a, b;
  schedule(f, 1024, 300, false, &a);
  schedule(f, 1024, 500, false, &b);
  ck_assert(!a.plan->dynamic_block);
  ck_assert_int_eq(a.plan->block_x, 32);
  ck_assert_int_eq(a.plan->persistent, 4);
  ck_assert_int_eq(a.plan->persistent_full, 2);
  ck_assert_str_eq(fz_plan_key(a.plan, a.arena), fz_plan_key(b.plan, b.arena));
  fz_arena_destroy(a.arena);
  fz_arena_destroy(b.arena);
  fz_fusion_destroy(f);
}
END_TEST

/* exact_sizes: the plan of these sizes, only the last group masked. */
START_TEST(exact_sizes_masks_only_the_last_group) {
  fz_fusion *f = test_parse(softmax);
  scheduled s;
  schedule(f, 1024, 2000, true, &s);
  ck_assert(!s.plan->dynamic_block);
  ck_assert_int_eq(s.plan->persistent_full, s.plan->persistent - 1);
  ck_assert_int_eq(s.plan->block_x, 64); /* 500 groups: 8 each of 64 */
  ck_assert_int_eq(s.plan->persistent, 8);
  fz_arena_destroy(s.arena);
  fz_fusion_destroy(f);
}
END_TEST

/* A row the kernel would not cover, or one whose unmasked groups would
 * pass its end, is an internal error, not a kernel. */
START_TEST(verify_checks_the_row_cover) {
  fz_fusion *f = test_parse(softmax);
  scheduled s;
  schedule(f, 1024, 2000, false, &s); /* 500 groups, 64 threads x 8 */
  fz_plan *p = s.plan;
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_OK);
  p->persistent_full = 8;
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(err.message, "a row of 500 groups"), "%s", err.message);
  p->persistent_full = 4;
  p->block_x = p->threads = 32; /* 256 groups at most */
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  p->block_x = p->threads = 96; /* whole warps: fine when dynamic */
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_OK);
  p->dynamic_block = false; /* a static block is a power of two */
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  p->dynamic_block = true;
  p->block_x = p->threads = 1024; /* wider than the kernel's maximum */
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  fz_arena_destroy(s.arena);
  fz_fusion_destroy(f);
}
END_TEST

/* A miss schedules a fusion taken whole once: the segmentation keeps the
 * plan it built, the one fz_schedule builds; asked without an arena it
 * keeps none. */
START_TEST(segmentation_keeps_the_whole_plan) {
  fz_fusion *f = test_parse(softmax);
  scheduled s;
  schedule(f, 1024, 2000, false, &s);
  fz_tensor_desc x = {.dtype = FZ_F32, .rank = 2, .sizes = {1024, 2000},
                      .strides = {2000, 1}, .align = 16};
  fz_problem pb = {.fusion = f, .inputs = &x, .outputs = &x,
                   .symbols = s.symbols,
                   .device = fz_device_info_default(90)};
  fz_error err = {0};
  fz_segmentation *seg = NULL;
  fz_plan *whole = NULL;
  ck_assert_int_eq(fz_segment_fusion_planned(&pb, s.arena, &seg, &whole, &err),
                   FZ_OK);
  ck_assert_int_eq(seg->num_segments, 1);
  ck_assert_ptr_nonnull(whole);
  ck_assert_str_eq(fz_plan_key(whole, s.arena), fz_plan_key(s.plan, s.arena));
  fz_segmentation_destroy(seg);
  whole = (fz_plan *)&whole; /* must be reset */
  ck_assert_int_eq(fz_segment_fusion_planned(&pb, NULL, &seg, &whole, &err),
                   FZ_OK);
  ck_assert_ptr_null(whole);
  fz_segmentation_destroy(seg);
  fz_arena_destroy(s.arena);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("plan_class");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, softmax_sweep_needs_few_kernels);
  tcase_add_test(tc, long_rows_share_a_dynamic_block);
  tcase_add_test(tc, warp_rows_round_up_the_groups);
  tcase_add_test(tc, exact_sizes_masks_only_the_last_group);
  tcase_add_test(tc, verify_checks_the_row_cover);
  tcase_add_test(tc, segmentation_keeps_the_whole_plan);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
