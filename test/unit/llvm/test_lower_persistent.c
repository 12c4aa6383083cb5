/* test_lower_persistent.c - lib/lower: persistent normalization plans
 * (softmax, layer norm, RMS norm, the inner-outer kernel of their
 * backwards, seed 000, and the outer kernel of batch norm) to LLVM IR and
 * PTX.
 *
 * The plans come from fz_schedule on parsed fusions, with the problem made
 * up as fuse-opt does it (every tensor dense in its declared layout,
 * 16-byte aligned, an H200). Each test checks what its situation needs:
 * the row read once (as many 16-byte loads as the thread holds groups,
 * none after the rounds), butterfly shuffles, shared memory and barriers
 * across warps, a weight row read once for all rows, row outputs written
 * once per row, and for inner-outer plans the column partials' tree, the
 * grid barrier (fence, atom.global.add on the counter, volatile spin on
 * the generation) and the final pass's volatile reads; the parameters
 * match the launcher's count; the PTX assembles with ptxas -arch=sm_90
 * (a SKIP line where ptxas is missing).
 */
#include "lower_util.h"

#include "sched/pass.h"
#include "sched/plan.h"

#include "schedule_util.h"
#include "test_fusions.h"

#include <stdlib.h>

/* Lowers, checks the parameter count against the launcher's, compiles to
 * PTX; the caller frees both. */
static char *lower_to_ptx(const fz_plan *p, lowered *l) {
  *l = lower_ok(p);
  LLVMValueRef fn = LLVMGetNamedFunction(l->mod, p->kernel_name);
  ck_assert_ptr_nonnull(fn);
  ck_assert_int_eq((int)LLVMCountParams(fn), fz_plan_num_params(p));
  /* NULL after a SKIP line when the kernel needs libdevice and this
   * machine has none: the caller frees and returns */
  return to_ptx(l);
}

/* lower_to_ptx for a plan of schedule `s`; where that gives no PTX (the
 * kernel needs libdevice, which this machine lacks), NULL with the
 * lowering and the schedule freed, so that the test just returns. */
static char *ptx_or_skip(const fz_plan *p, lowered *l, scheduled *s) {
  char *ptx = lower_to_ptx(p, l);
  if (!ptx) {
    lowered_free(l);
    scheduled_free(s);
  }
  return ptx;
}

/* The PTX from the first line containing `from` to the end. */
static const char *after(const char *ptx, const char *from) {
  const char *at = strstr(ptx, from);
  ck_assert_msg(report(at != NULL, ptx), "no '%s'", from);
  return at;
}

/* The text of basic block `label` in printed IR (up to the blank line
 * that ends it); malloc'd. */
static char *block_text(const char *ir, const char *label) {
  char head[64];
  snprintf(head, sizeof head, "\n%s:", label);
  const char *at = strstr(ir, head);
  ck_assert_msg(report(at != NULL, ir), "no block %s", label);
  const char *end = strstr(at + 1, "\n\n");
  size_t n = end ? (size_t)(end - at) : strlen(at);
  char *s = malloc(n + 1);
  memcpy(s, at, n);
  s[n] = '\0';
  return s;
}

static char *read_source(const char *relative) {
  FILE *f = fopen(test_source_path(relative), "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  ck_assert_int_eq((long)fread(text, 1, (size_t)n, f), n);
  text[n] = '\0';
  fclose(f);
  return text;
}

static const char *SEED = "examples/layer_norm_backward_seed000.fz";

static const char *SOFTMAX = FZ_TEST_SOFTMAX("softmax", "f32");

/* ---- inner persistent ---------------------------------------------------- */

/* Softmax at four row lengths: sub-warp rows sharing a block (32), rows
 * not a multiple of the groups (100: one group, the last lanes of the row
 * masked), one warp per row (1024) and 8 warps per row (8192: shared
 * memory and a barrier per round). Every row is read once: as many loads
 * as the thread holds groups, all before the first shuffle. */
static void softmax_at(int n, int want_bx, bool barrier) {
  scheduled s;
  char binds[64];
  snprintf(binds, sizeof binds, "M=2048,N=%d", n);
  fz_plan *p = schedule(&s, SOFTMAX, binds);
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  ck_assert_int_eq(p->block_x, want_bx);
  ck_assert_int_eq(p->phases, 2);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert_count(ptx, "ld.global.nc.v4.f32", p->persistent);
  const char *first_shuffle = after(ptx, "shfl.sync.bfly.b32");
  ck_assert(!has(first_shuffle, "ld.global"));
  ck_assert_has(ptx, "st.global.v4.f32");
  /* max, then sum: two butterflies of log2(min(bx, 32)) steps each (and
   * again across warps: as many as a dynamic block may have) */
  int steps = 0;
  for (int w = want_bx < 32 ? want_bx : 32; w > 1; w /= 2)
    steps++;
  int across = 0;
  int widest = p->dynamic_block ? FZ_PLAN_DYNAMIC_MAX_THREADS : want_bx;
  for (int w = widest / 32; w > 1; w /= 2)
    across++;
  ck_assert_count(ptx, "shfl.sync.bfly.b32", 2 * (steps + across));
  ck_assert_int_eq(has(ptx, "bar.sync"), barrier);
  if (barrier)
    ck_assert_count(ptx, "shfl.sync.idx.b32", 2); /* the row value, to all */
  ck_assert(!has(ptx, "atom.global"));
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}

START_TEST(softmax_32) { softmax_at(32, 8, false); }
END_TEST
START_TEST(softmax_100) { softmax_at(100, 32, false); }
END_TEST
START_TEST(softmax_1024) { softmax_at(1024, 32, false); }
END_TEST
START_TEST(softmax_8192) { softmax_at(8192, 256, true); }
END_TEST

/* Layer norm forward: the weight and bias rows are read once, where they
 * are first used, after the two rounds (a block has one row: keeping them
 * live across the rounds' barriers would only cost registers); mean and
 * rstd are written once per row (scalar stores by the row's first
 * thread); y with 16-byte stores. */
START_TEST(layer_norm_forward_affine) {
  scheduled s;
  fz_plan *p = schedule(
      &s,
      "fusion @layer_norm(%x: f32[M, N], %w: f32[N], %b: f32[N], %eps: f64) "
      "{\n"
      "  %s = sum %x dims(1) keepdim : f32[M, b1]\n"
      "  %mean = mul %s, 1.220703125e-4 : f32[M, b1]\n"
      "  %me = expand %mean : f32[M, b1->N]\n"
      "  %xc = sub %x, %me : f32[M, N]\n"
      "  %sq = mul %xc, %xc : f32[M, N]\n"
      "  %v = sum %sq dims(1) keepdim : f32[M, b1]\n"
      "  %var = mul %v, 1.220703125e-4 : f32[M, b1]\n"
      "  %ve = add %var, %eps : f32[M, b1]\n"
      "  %rstd = rsqrt %ve : f32[M, b1]\n"
      "  %re = expand %rstd : f32[M, b1->N]\n"
      "  %xh = mul %xc, %re : f32[M, N]\n"
      "  %wb = broadcast %w dims(0) : f32[b1, N]\n"
      "  %we = expand %wb : f32[b1->M, N]\n"
      "  %bb = broadcast %b dims(0) : f32[b1, N]\n"
      "  %be = expand %bb : f32[b1->M, N]\n"
      "  %y0 = mul %xh, %we : f32[M, N]\n"
      "  %y = add %y0, %be : f32[M, N]\n"
      "  return %y, %mean, %rstd\n"
      "}\n",
      "M=2048,N=8192");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  /* x, w and b once each: 3 * persistent 16-byte loads in all, x's
   * before the first shuffle, w's and b's after the last */
  ck_assert_count(ptx, "ld.global.nc.v4.f32", 3 * p->persistent);
  ck_assert_count(after(ptx, "shfl.sync.idx.b32"), "ld.global.nc.v4.f32",
                  2 * p->persistent);
  ck_assert_count(ptx, "st.global.v4.f32", p->persistent);
  ck_assert_count(ptx, "st.global.f32", 2); /* mean, rstd */
  ck_assert_has(ptx, "bar.sync");
  /* eps, a scalar input, read once */
  ck_assert_count(ptx, "ld.global.nc.f64", 1);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* RMS norm on bf16, computed in f32: 8 lanes per 16-byte access, the sum
 * of squares accumulated in f32, the result rounded to bf16 once. */
START_TEST(rms_norm_bf16) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @rms(%x: bf16[M, N], %w: bf16[N]) {\n"
                        "  %xf = cast %x : f32[M, N]\n"
                        "  %sq = mul %xf, %xf : f32[M, N]\n"
                        "  %s = sum %sq dims(1) keepdim : f32[M, b1]\n"
                        "  %ms = mul %s, 1.220703125e-4 : f32[M, b1]\n"
                        "  %ve = add %ms, 1.0e-6 : f32[M, b1]\n"
                        "  %r = rsqrt %ve : f32[M, b1]\n"
                        "  %re = expand %r : f32[M, b1->N]\n"
                        "  %xn = mul %xf, %re : f32[M, N]\n"
                        "  %wf = cast %w : f32[N]\n"
                        "  %wb = broadcast %wf dims(0) : f32[b1, N]\n"
                        "  %we = expand %wb : f32[b1->M, N]\n"
                        "  %y = mul %xn, %we : f32[M, N]\n"
                        "  %yb = cast %y : bf16[M, N]\n"
                        "  return %yb\n"
                        "}\n",
                        "M=16384,N=8192");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  ck_assert_int_eq(p->vector, 8);
  ck_assert_int_eq(p->phases, 1);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert_has(l.ir, "load <8 x bfloat>");
  ck_assert_has(l.ir, "store <8 x bfloat>");
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  ck_assert_has(ptx, "bar.sync");
  ck_assert_has(ptx, "cvt.rn.bf16");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* No kept axis at all (one row): the row index decomposes to nothing. */
START_TEST(single_row) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=1,N=4096");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  ck_assert_int_eq(p->rank, 1);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* 64-bit index math where the plan asks for it. */
START_TEST(index64) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  p->index32 = false;
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert_has(l.ir, "load <4 x float>");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* A row length the kernel's groups do not cover traps instead of reading
 * past the row: the guard is in the kernel. */
START_TEST(row_length_guard_traps) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert_has(l.ir, "bad.row.length");
  ck_assert_has(ptx, "trap;");
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* ---- inner-outer persistent ---------------------------------------------- */

/* The grid part of an inner-outer kernel: partials published, a block
 * barrier, thread 0's fence, counted in on counters[0], the generation
 * spun on, a fence and a block barrier, then the partials read back with
 * coherent (not .nc) loads. */
static void check_grid_protocol(const char *ptx) {
  const char *grid = after(ptx, "membar.gl");
  ck_assert_has(grid, "atom.global.add.u32");
  ck_assert_has(grid, "ld.volatile.global.u32");
  ck_assert_has(grid, "st.volatile.global.u32"); /* counters[0] reset */
  const char *spun = after(after(grid, "atom.global.add.u32"),
                           "ld.volatile.global.u32");
  ck_assert_has(spun, "membar.gl");
  ck_assert_has(after(spun, "membar.gl"), "bar.sync");
  ck_assert_msg(strstr(after(spun, "membar.gl"), "ld.global.nc") == NULL,
                "the final pass reads partials through the non-coherent "
                "cache");
}

static void seed000(const char *file, bool canonical, const char *binds,
                    int want_by) {
  char *text = read_source(file);
  fz_fusion *f = test_parse(text);
  free(text);
  if (canonical) {
    fz_error err = {0};
    ck_assert_int_eq(fz_pass_canonicalize(f, &err), FZ_OK);
  }
  scheduled s;
  fz_plan *p = schedule_fusion(&s, f, binds);
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_OUTER_PERSISTENT);
  ck_assert(p->cooperative);
  ck_assert_int_eq(p->block_y, want_by);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  if (p->prefetch) {
    /* the weight once from global memory; grad and x copied into shared
     * memory a row ahead (before the loop and in it), and read from there
     * once per row after the wait for the current row's copies */
    ck_assert_count(ptx, "ld.global.nc.v4.f32", p->persistent);
    ck_assert_count(ptx, "cp.async.cg.shared.global", 4 * p->persistent);
    ck_assert_count(ptx, "ld.shared.v4.f32", 2 * p->persistent);
    ck_assert_has(after(ptx, "cp.async.wait_group 1"), "ld.shared.v4.f32");
    /* the row loop copies the next row into the other buffer (pf.buf ^ 1)
     * than the one it reads; into the same one it would overwrite the
     * current row before reading it */
    char *next = block_text(l.ir, "pf.next");
    ck_assert_has(next, "xor i32 %pf.buf, 1");
    ck_assert_has(next, "cp.async");
    free(next);
  } else {
    /* grad and x once per row, the weight once: 3 * persistent loads of
     * 16 bytes */
    ck_assert_count(ptx, "ld.global.nc.v4.f32", 3 * p->persistent);
  }
  /* no global load waits behind a row's shuffles */
  ck_assert(!has(after(ptx, "shfl.sync.bfly.b32"), "ld.global.nc"));
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  ck_assert_has(ptx, "bar.sync");
  check_grid_protocol(ptx);
  /* the column partials' tree across ty when rows share a block */
  if (want_by > 1)
    ck_assert_has(ptx, "st.shared.f32");
  /* dx, dw, db with 16-byte stores; partials to the workspace too */
  ck_assert_has(ptx, "st.global.v4.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}

START_TEST(seed000_raw) { seed000(SEED, false, NULL, 1); }
END_TEST
START_TEST(seed000_canonical) { seed000(SEED, true, NULL, 1); }
END_TEST
/* The seed's fusion with symbolic sizes (the GPU test's), on short rows:
 * two rows per block (64 threads each, so that the grad, x and weight
 * groups and the two column accumulators fit in registers), the column
 * partials combined across ty. */
START_TEST(seed000_short_rows) {
  seed000("test/gpu/norm_layer_norm_backward.fz", true, "M=37,N=1000", 2);
}
END_TEST

/* FZ_PREFETCH_BUFFERS=3: three buffers (shared memory for three rows),
 * the first two rows copied before the loop, each later one two rows
 * ahead, and the wait leaves the newest two groups in flight. The loop's
 * copy goes two buffers on from the current one: (buf + 2) mod 3. */
START_TEST(seed000_three_buffers) {
  char *text = read_source(SEED);
  fz_fusion *f = test_parse(text);
  free(text);
  scheduled s;
  setenv("FZ_PREFETCH_BUFFERS", "3", 1);
  fz_plan *p = schedule_fusion(&s, f, NULL);
  unsetenv("FZ_PREFETCH_BUFFERS");
  ck_assert(p->prefetch && p->prefetch_deep && !p->prefetch_single);
  p->prefetch_deep = false;
  size_t two = fz_plan_shared_bytes(p);
  p->prefetch_deep = true;
  ck_assert_uint_eq(fz_plan_shared_bytes(p), two / 2 * 3);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert_count(ptx, "cp.async.cg.shared.global", 6 * p->persistent);
  ck_assert_count(ptx, "cp.async.commit_group", 3);
  ck_assert_count(ptx, "cp.async.wait_group 2", 1);
  ck_assert(!has(ptx, "cp.async.wait_group 1"));
  ck_assert_has(after(ptx, "cp.async.wait_group 2"), "ld.shared.v4.f32");
  char *second = block_text(l.ir, "pf.second");
  ck_assert_has(second, "cp.async");
  free(second);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* RMS norm backward: one row round, one column reduction. */
START_TEST(rms_norm_backward) {
  scheduled s;
  fz_plan *p = schedule(
      &s,
      "fusion @rms_bwd(%grad: f32[M, N], %x: f32[M, N], %rstd: f32[M, b1], "
      "%w: f32[N]) {\n"
      "  %re = expand %rstd : f32[M, b1->N]\n"
      "  %wb = broadcast %w dims(0) : f32[b1, N]\n"
      "  %we = expand %wb : f32[b1->M, N]\n"
      "  %gw = mul %grad, %we : f32[M, N]\n"
      "  %xr = mul %x, %re : f32[M, N]\n"
      "  %t = mul %grad, %xr : f32[M, N]\n"
      "  %dw = sum %t dims(0) : f32[N]\n"
      "  %p = mul %gw, %x : f32[M, N]\n"
      "  %s = sum %p dims(1) keepdim : f32[M, b1]\n"
      "  %r2 = mul %rstd, %rstd : f32[M, b1]\n"
      "  %r3 = mul %r2, %rstd : f32[M, b1]\n"
      "  %c = mul %s, %r3 : f32[M, b1]\n"
      "  %cn = mul %c, 1.0e-3 : f32[M, b1]\n"
      "  %ce = expand %cn : f32[M, b1->N]\n"
      "  %a = mul %gw, %re : f32[M, N]\n"
      "  %bx = mul %x, %ce : f32[M, N]\n"
      "  %dx = sub %a, %bx : f32[M, N]\n"
      "  return %dx, %dw\n"
      "}\n",
      "M=37,N=1000");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_OUTER_PERSISTENT);
  ck_assert_int_eq(p->phases, 1);
  ck_assert_int_gt(p->block_y, 1);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  ck_assert_has(ptx, "st.shared.f32"); /* the ty tree */
  check_grid_protocol(ptx);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* Column outputs with a column-space node after the reduction (a cast to
 * bf16), and accumulators of two widths: the f64 region first in the
 * workspace, so that both stay aligned for vector stores. */
START_TEST(column_post_nodes_and_mixed_accumulators) {
  scheduled s;
  fz_plan *p =
      schedule(&s,
               "fusion @f(%g: f32[M, N], %x: f32[M, N], %r: f32[M, b1]) {\n"
               "  %re = expand %r : f32[M, b1->N]\n"
               "  %xr = mul %x, %re : f32[M, N]\n"
               "  %t = mul %g, %xr : f32[M, N]\n"
               "  %s = sum %t dims(1) keepdim : f32[M, b1]\n"
               "  %se = expand %s : f32[M, b1->N]\n"
               "  %dx = sub %g, %se : f32[M, N]\n"
               "  %gd = cast %g : f64[M, N]\n"
               "  %db = sum %gd dims(0) : f64[N]\n"
               "  %dw = sum %t dims(0) : f32[N]\n"
               "  %dwb = cast %dw : bf16[N]\n"
               "  return %dx, %db, %dwb\n"
               "}\n",
               "M=4096,N=1024");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_OUTER_PERSISTENT);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  check_grid_protocol(ptx);
  const char *final = after(ptx, "atom.global.add.u32");
  ck_assert_has(final, "ld.global.v2.f64");
  ck_assert_has(final, "ld.global.v4.f32");
  ck_assert_has(final, "cvt.rn.bf16");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* A [R, I, R] space: rows reduce dims (0, 2), the column reduction dim 1.
 * A thread's groups are decomposed into both R coordinates once, before
 * the row loop (in the block after the row length guard; the row loop
 * divides nothing); the final pass decomposes its column groups the same
 * way. */
START_TEST(two_reduced_axes_around_the_kept_one) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[A, B, C]) {\n"
                        "  %s = sum %x dims(0, 2) keepdim : f32[b1, B, b1]\n"
                        "  %se = expand %s : f32[b1->A, B, b1->C]\n"
                        "  %y = sub %x, %se : f32[A, B, C]\n"
                        "  %c = sum %y dims(1) : f32[A, C]\n"
                        "  return %y, %c\n"
                        "}\n",
                        "A=6,B=100,C=256");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_OUTER_PERSISTENT);
  ck_assert_int_eq(p->rank, 3);
  ck_assert(p->reduced[0] && !p->reduced[1] && p->reduced[2]);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  char *groups = block_text(l.ir, "row.length.ok");
  ck_assert_has(groups, "urem");
  free(groups);
  char *row = block_text(l.ir, "tile.body");
  ck_assert(!has(row, "udiv") && !has(row, "urem"));
  free(row);
  char *col = block_text(l.ir, "col.store");
  ck_assert_has(col, "udiv");
  free(col);
  check_grid_protocol(ptx);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* ---- malformed plans ----------------------------------------------------- */

/* ---- outer persistent (batch norm) --------------------------------------- */

static const char *BATCH_NORM =
    "fusion @bn(%x: f32[M, C], %w: f32[C], %b: f32[C]) {\n"
    "  %s = sum %x dims(0) keepdim : f32[b1, C]\n"
    "  %m = mul %s, 1.220703125e-4 : f32[b1, C]\n"
    "  %me = expand %m : f32[b1->M, C]\n"
    "  %xc = sub %x, %me : f32[M, C]\n"
    "  %sq = mul %xc, %xc : f32[M, C]\n"
    "  %v = sum %sq dims(0) keepdim : f32[b1, C]\n"
    "  %r = rsqrt %v : f32[b1, C]\n"
    "  %re = expand %r : f32[b1->M, C]\n"
    "  %xh = mul %xc, %re : f32[M, C]\n"
    "  %wb = broadcast %w dims(0) : f32[b1, C]\n"
    "  %we = expand %wb : f32[b1->M, C]\n"
    "  %bb = broadcast %b dims(0) : f32[b1, C]\n"
    "  %be = expand %bb : f32[b1->M, C]\n"
    "  %y0 = mul %xh, %we : f32[M, C]\n"
    "  %y = add %y0, %be : f32[M, C]\n"
    "  return %y, %m\n"
    "}\n";

/* Batch norm: each thread loads its held rows once (held x groups 16-byte
 * loads of x, before the first barrier, none after), the weight and bias
 * once; a launch with too few blocks traps. Whole rows a block
 * (FZ_OUTER_SLICES=1): two rounds, each two grid barriers (publish, then
 * results out) of two atomics; column slices: each round one barrier of
 * the slice's blocks, one atomic a block, and a grid that is not a
 * multiple of the slices traps. */
static void check_rows_held(bool sliced) {
  if (!sliced)
    setenv("FZ_OUTER_SLICES", "1", 1);
  scheduled s;
  fz_plan *p = schedule(&s, BATCH_NORM, "M=8192,C=256");
  unsetenv("FZ_OUTER_SLICES");
  ck_assert_int_eq(p->column_slices > 1, sliced);
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_PERSISTENT);
  ck_assert(p->cooperative);
  ck_assert_int_eq(p->phases, 2);
  ck_assert_int_ge(p->unroll, 2);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert(has(l.ir, "bad.grid"));
  ck_assert_count(ptx, "ld.global.nc.v4.f32",
                  (p->unroll + 2) * p->persistent);
  ck_assert(!has(after(ptx, "atom.global.add.u32"), "ld.global.nc"));
  ck_assert_count(ptx, "atom.global.add.u32",
                  sliced ? p->phases : 2 * 2 * p->phases);
  ck_assert(has(l.ir, "bad.slices") == sliced);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}

START_TEST(batch_norm_rows_held) { check_rows_held(false); }
END_TEST

START_TEST(batch_norm_column_slices) { check_rows_held(true); }
END_TEST

/* Batch norm holding 24 rows of 4 lanes a thread keeps them in shared
 * memory (plan->held_shared): x is copied there by the one cp.async of
 * the copy loop and never loaded into registers (the only 16-byte global
 * loads are the weight's and the bias's), the thread waits for its own
 * copies once, every round reads its rows back with 16-byte shared
 * loads, and each round is still one barrier of the slice. The dynamic
 * shared memory is the held rows': 24 rows of 512 threads' 16 bytes.
 * FZ_OUTER_SHARED=0 keeps the rows in registers. */
START_TEST(batch_norm_rows_in_shared_memory) {
  scheduled s;
  fz_plan *p = schedule(&s, BATCH_NORM, "M=25088,C=256");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_PERSISTENT);
  ck_assert(p->held_shared);
  ck_assert_int_eq(p->unroll, 24);
  ck_assert_int_eq(p->threads, 512);
  ck_assert_uint_eq(fz_plan_shared_bytes(p), 24u * 512u * 16u);
  lowered l;
  char *ptx = ptx_or_skip(p, &l, &s);
  if (!ptx)
    return;
  ck_assert_count(l.ir, "call void @llvm.nvvm.cp.async.cg.shared.global.16(",
                  1);
  ck_assert_count(l.ir, "call void @llvm.nvvm.cp.async.wait.all()", 1);
  ck_assert(has(l.ir, "bad.grid"));
  ck_assert_count(ptx, "ld.global.nc.v4.f32", 2);
  ck_assert_has(after(ptx, "cp.async.wait_all"), "ld.shared.v4.f32");
  ck_assert_count(ptx, "atom.global.add.u32", p->phases);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);

  setenv("FZ_OUTER_SHARED", "0", 1);
  p = schedule(&s, BATCH_NORM, "M=25088,C=256");
  unsetenv("FZ_OUTER_SHARED");
  ck_assert(!p->held_shared);
  ck_assert_uint_eq(fz_plan_shared_bytes(p), 0);
  scheduled_free(&s);
}
END_TEST

/* Column sums with 8- and 4-byte accumulators over 2 points: the results
 * after the partials start at a 16-byte boundary (the partials end at byte
 * 24; the H200 faulted on 16-byte vectors there), and the workspace has
 * room for the padding. */
START_TEST(outer_results_aligned) {
  scheduled s;
  fz_plan *p = schedule(
      &s,
      "fusion @f(%x: f32[N, 7] layout(1, 0)) {\n"
      "  %c = gt %x, 0.5 : bool[N, 7]\n"
      "  %n = sum %c dims(1) keepdim : i64[N, b1]\n"
      "  %xn = add %x, %n : f32[N, 7]\n"
      "  %t = sum %xn dims(1) keepdim : f32[N, b1]\n"
      "  %y = sub %xn, %t : f32[N, 7]\n"
      "  return %y\n"
      "}\n",
      "N=2");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_PERSISTENT);
  size_t points = (size_t)fz_plan_row_points(p);
  ck_assert_uint_eq(fz_plan_workspace_bytes(p),
                    (8 + 4) * points * (size_t)(p->grid_x + 1) + 16);
  lowered l = lower_ok(p);
  const char *at = strstr(l.ir, "%ws.results = and i64");
  ck_assert_ptr_nonnull(at);
  const char *eol = strchr(at, '\n');
  const char *mask = strstr(at, ", -16");
  ck_assert_msg(mask && (!eol || mask < eol), "results not 16-byte aligned: %.80s",
                at);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* A full-space node may not read a column value (the columns are only
 * known after every row): here grad-weight's store, moved to the full
 * space. */
START_TEST(full_node_reading_a_column_node_is_internal) {
  scheduled s;
  char *text = read_source(SEED);
  fz_plan *p = schedule_fusion(&s, test_parse(text), NULL);
  free(text);
  int store = -1;
  for (int i = 0; i < p->num_nodes && store < 0; i++)
    if (p->nodes[i].kind == FZ_NODE_STORE &&
        p->nodes[i].space == FZ_SPACE_COLUMN)
      store = i;
  ck_assert_int_ge(store, 0);
  p->nodes[store].space = FZ_SPACE_FULL;
  char msg[sizeof((fz_error *)0)->message];
  ck_assert_int_eq(lower_status(p, msg, sizeof msg), FZ_ERR_INTERNAL);
  ck_assert_msg(strstr(msg, "column node") != NULL, "%s", msg);
  scheduled_free(&s);
}
END_TEST

START_TEST(row_reduce_of_its_own_phase_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_REDUCE && p->nodes[i].phase == 2)
      p->nodes[i].phase = 1; /* reads a phase-1 value in round 0 */
  char msg[sizeof((fz_error *)0)->message];
  ck_assert_int_eq(lower_status(p, msg, sizeof msg), FZ_ERR_INTERNAL);
  scheduled_free(&s);
}
END_TEST

START_TEST(split_persistent_plan_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  p->split = 2;
  char msg[sizeof((fz_error *)0)->message];
  ck_assert_int_eq(lower_status(p, msg, sizeof msg), FZ_ERR_INTERNAL);
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("lower_persistent");
  TCase *inner = tcase_create("inner");
  tcase_set_timeout(inner, 120);
  tcase_add_test(inner, softmax_32);
  tcase_add_test(inner, softmax_100);
  tcase_add_test(inner, softmax_1024);
  tcase_add_test(inner, softmax_8192);
  tcase_add_test(inner, layer_norm_forward_affine);
  tcase_add_test(inner, rms_norm_bf16);
  tcase_add_test(inner, single_row);
  tcase_add_test(inner, index64);
  tcase_add_test(inner, row_length_guard_traps);
  suite_add_tcase(s, inner);

  TCase *outer = tcase_create("inner_outer");
  tcase_set_timeout(outer, 120);
  tcase_add_test(outer, seed000_raw);
  tcase_add_test(outer, seed000_canonical);
  tcase_add_test(outer, seed000_short_rows);
  tcase_add_test(outer, seed000_three_buffers);
  tcase_add_test(outer, rms_norm_backward);
  tcase_add_test(outer, column_post_nodes_and_mixed_accumulators);
  tcase_add_test(outer, two_reduced_axes_around_the_kept_one);
  suite_add_tcase(s, outer);

  TCase *held = tcase_create("outer");
  tcase_set_timeout(held, 120);
  tcase_add_test(held, batch_norm_rows_held);
  tcase_add_test(held, batch_norm_column_slices);
  tcase_add_test(held, batch_norm_rows_in_shared_memory);
  tcase_add_test(held, outer_results_aligned);
  suite_add_tcase(s, held);

  TCase *bad = tcase_create("malformed");
  tcase_add_test(bad, full_node_reading_a_column_node_is_internal);
  tcase_add_test(bad, row_reduce_of_its_own_phase_is_internal);
  tcase_add_test(bad, split_persistent_plan_is_internal);
  suite_add_tcase(s, bad);
  return s;
}

int main(void) { return test_run_suite(make()); }
