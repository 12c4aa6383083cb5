/* test_lower_reduction.c - lib/lower: inner and outer reduction plans to
 * LLVM IR and PTX.
 *
 * The plans come from the reduction scheduler on small fusions, with the
 * problem made up as fuse-opt does it (every tensor dense in its declared
 * layout, 16-byte aligned, an H200), sometimes edited afterwards to force
 * a launch shape (a sub-warp row, a split). Each test checks the skeleton
 * its situation needs: butterfly shuffles and shared memory across warps
 * for inner rows, the shared-memory tree for outer columns, the counter
 * atomic, fences and volatile reads of a grid reduction, 16-byte loads,
 * no division in the R loop over one axis; and that the PTX assembles
 * with ptxas -arch=sm_90 (a SKIP line where ptxas is missing).
 */
#include "lower_util.h"

#include "sched/plan.h"

#include "schedule_util.h"

/* Sets the block shape (threads follow) of a scheduled plan. */
static void reshape_block(fz_plan *p, int bx, int by) {
  p->block_x = bx;
  p->block_y = by;
  p->threads = bx * by;
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

/* Lowers, checks the parameter count against the launcher's, compiles to
 * PTX; the caller frees both. */
static char *lower_to_ptx(const fz_plan *p, lowered *l) {
  *l = lower_ok(p);
  LLVMValueRef fn = LLVMGetNamedFunction(l->mod, p->kernel_name);
  ck_assert_ptr_nonnull(fn);
  ck_assert_int_eq((int)LLVMCountParams(fn), fz_plan_num_params(p));
  char *ptx = to_ptx(l);
  ck_assert_ptr_nonnull(ptx);
  return ptx;
}

static const char *ROW_SUM = "fusion @row_sum(%x: f32[M, N]) {\n"
                             "  %s = sum %x dims(1) : f32[M]\n"
                             "  return %s\n"
                             "}\n";

static const char *COLUMN_MAJOR_SUM =
    "fusion @playground(%x: f32[M, N] layout(1, 0)) {\n"
    "  %s = sum %x dims(1) : f32[M]\n"
    "  return %s\n"
    "}\n";

/* ---- inner ------------------------------------------------------------------
 */

START_TEST(inner_row_of_512_threads) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=36864,N=16384");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_eq(p->block_x, 512);
  ck_assert_int_eq(p->split, 1);
  ck_assert_int_eq(p->vector, 4);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  /* unroll 16-byte loads per trip, all before the accumulation */
  char *main = block_text(l.ir, "r.main.body");
  ck_assert_count(main, "load <4 x float>", p->unroll);
  /* one R axis: the loop index is the coordinate, no division */
  ck_assert(!has(main, "udiv") && !has(main, "urem"));
  free(main);
  /* 16 warps per row: five shuffles within each, four across them */
  ck_assert_count(l.ir, "call float @llvm.nvvm.shfl.sync.bfly.f32(", 9);
  ck_assert_has(l.ir, "@fz_scratch = internal addrspace(3) global [64 x i8]");
  ck_assert(!has(l.ir, "atomicrmw"));
  ck_assert_has(ptx, "ld.global.nc.v4.f32");
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  ck_assert_has(ptx, "bar.sync");
  ck_assert_has(ptx, "st.shared.f32");
  ck_assert(!has(ptx, "atom.global"));
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(inner_rows_shorter_than_a_warp) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=256");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  reshape_block(p, 8, 32);
  p->split = 1;
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  /* 8 threads per row: offsets 4, 2, 1 inside the warp, no shared memory
   * and no barrier */
  ck_assert_count(l.ir, "call float @llvm.nvvm.shfl.sync.bfly.f32(", 3);
  ck_assert_has(l.ir, "i32 -1, float %");
  ck_assert_has(l.ir, ", i32 4, i32 31)");
  ck_assert(!has(l.ir, ", i32 8, i32 31)"));
  ck_assert(!has(l.ir, "fz_scratch"));
  ck_assert(!has(ptx, "bar.sync"));
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(inner_split_is_a_grid_reduction) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=8,N=1000003");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_gt(p->split, 1);
  ck_assert_int_eq(fz_plan_num_params(p), p->num_accesses + 1 + p->rank +
                                              p->num_accesses * (p->rank + 1) +
                                              2);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(l.ir, "ptr addrspace(1) %workspace");
  ck_assert_has(l.ir, "ptr addrspace(1) %counters");
  ck_assert_has(l.ir, "atomicrmw add ptr addrspace(1)");
  ck_assert_has(l.ir, "load volatile float");
  ck_assert_has(l.ir, "@llvm.nvvm.membar.gl()");
  ck_assert_has(l.ir, "@fz_last_block = internal addrspace(3) global i32");
  ck_assert_has(ptx, "atom.global.add.u32");
  ck_assert_has(ptx, "membar.gl");
  ck_assert_has(ptx, "ld.volatile.global.f32");
  ck_assert_has(ptx, "bar.sync");
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(inner_bf16_rows_accumulate_in_f32) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: bf16[M, N]) {\n"
                        "  %s = sum %x dims(1) : bf16[M]\n"
                        "  return %s\n"
                        "}\n",
                        "M=4096,N=4096");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_eq(p->vector, 8);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(l.ir, "load <8 x bfloat>");
  ck_assert_has(l.ir, "fpext bfloat");
  ck_assert_has(l.ir, "fadd float");
  ck_assert_has(l.ir, "fptrunc float"); /* the result, rounded once */
  ck_assert_msg(
      report(has(ptx, "ld.global.nc.v4.b32") || has(ptx, "ld.global.nc.v4.u32"),
             ptx),
      "no 16-byte load");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(amax_propagates_nan) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[M, N]) {\n"
                        "  %s = amax %x dims(1) : f32[M]\n"
                        "  return %s\n"
                        "}\n",
                        "M=4096,N=4096");
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(l.ir, "@llvm.maximum.f32");
  ck_assert_has(l.ir, "float 0xFFF0000000000000"); /* -inf, the identity */
  ck_assert(!has(l.ir, "fadd"));
  ck_assert_has(ptx, "max.NaN.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* i32 amin accumulates in i64, which shuffles as two 32-bit halves. */
START_TEST(integer_amin_shuffles_halves) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: i32[M, N]) {\n"
                        "  %s = amin %x dims(1) : i32[M]\n"
                        "  return %s\n"
                        "}\n",
                        "M=64,N=4096");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(l.ir, "@llvm.smin.i64");
  ck_assert_has(l.ir, "i64 9223372036854775807"); /* INT64_MAX */
  ck_assert_has(l.ir, "@llvm.nvvm.shfl.sync.bfly.i32(");
  ck_assert(!has(l.ir, "@llvm.nvvm.shfl.sync.bfly.f32("));
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(f64_prod_shuffles_halves) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f64[M, N]) {\n"
                        "  %s = prod %x dims(1) : f64[M]\n"
                        "  return %s\n"
                        "}\n",
                        "M=64,N=4096");
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(l.ir, "fmul double");
  ck_assert_has(l.ir, "store double 1.000000e+00"); /* the identity */
  ck_assert_has(l.ir, "bitcast double");
  ck_assert_has(l.ir, "@llvm.nvvm.shfl.sync.bfly.i32(");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* mean and bias: the epilogue multiplies by a literal and adds a tensor
 * constant along R, read once per row. */
START_TEST(inner_epilogue_reads_kept_inputs) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[M, N], %b: f32[M]) {\n"
                        "  %s = sum %x dims(1) : f32[M]\n"
                        "  %m = mul %s, 0.25 : f32[M]\n"
                        "  %y = add %m, %b : f32[M]\n"
                        "  return %y\n"
                        "}\n",
                        "M=4096,N=1024");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  char *epi = block_text(l.ir, "epilogue");
  ck_assert_has(epi, "fmul float");
  ck_assert_has(epi, "load float");
  ck_assert_has(epi, "fadd float");
  ck_assert_has(epi, "store float");
  free(epi);
  ck_assert_has(ptx, "ld.global.nc.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* A full-space output is written inside the R loop, vectorized. */
START_TEST(inner_prologue_store) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[M, N]) {\n"
                        "  %y = mul %x, 2.0 : f32[M, N]\n"
                        "  %s = sum %y dims(1) : f32[M]\n"
                        "  return %y, %s\n"
                        "}\n",
                        "M=4096,N=1024");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  char *main = block_text(l.ir, "r.main.body");
  ck_assert_count(main, "store <4 x float>", p->unroll);
  free(main);
  ck_assert_has(ptx, "st.global.v4.f32");
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* R over two canonical axes ([R, I, R]): the R index is decomposed per
 * slot; the kept one once per tile. */
START_TEST(inner_two_reduced_axes_decompose) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[A, B, C]) {\n"
                        "  %s = sum %x dims(0, 2) : f32[B]\n"
                        "  return %s\n"
                        "}\n",
                        "A=6,B=100,C=1024");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_eq(p->rank, 3);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  char *main = block_text(l.ir, "r.main.body");
  ck_assert_has(main, "udiv");
  free(main);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* Every axis reduced: one kept point, a scalar output. */
START_TEST(full_reduction_to_a_scalar) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[M, N]) {\n"
                        "  %s = sum %x dims(0, 1) : f32\n"
                        "  return %s\n"
                        "}\n",
                        "M=1000,N=1000");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  ck_assert_int_eq(fz_plan_kept_points(p), 1);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(ptx, "shfl.sync.bfly.b32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(inner_index64) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=4096");
  p->index32 = false;
  lowered l = lower_ok(p);
  ck_assert_has(l.ir, "icmp ult i64 %tile");
  ck_assert(!has(l.ir, "trunc i64 %groups"));
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* ---- outer ------------------------------------------------------------------
 */

START_TEST(outer_tree_without_split) {
  scheduled s;
  fz_plan *p = schedule(&s, COLUMN_MAJOR_SUM, "M=4096,N=64");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  p->split = 1;
  ck_assert_int_gt(p->block_y, 1);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  char *main = block_text(l.ir, "r.main.body");
  ck_assert_count(main, "load <4 x float>", p->unroll);
  ck_assert(!has(main, "udiv") && !has(main, "urem"));
  free(main);
  /* the tree: a barrier after the stores, one per halving of block_y,
   * one at the end of the tile */
  int steps = 0;
  for (int y = p->block_y; y > 1; y /= 2)
    steps++;
  ck_assert_count(l.ir, "call void @llvm.nvvm.barrier0()", steps + 2);
  ck_assert(!has(l.ir, "shfl"));
  ck_assert(!has(l.ir, "atomicrmw"));
  ck_assert_has(ptx, "ld.global.nc.v4.f32");
  ck_assert_has(ptx, "st.global.v4.f32"); /* the result, 4 columns at once */
  ck_assert_has(ptx, "bar.sync");
  ck_assert_has(ptx, "st.shared.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* Seed 004's PlayGround: [16384, 36864] column-major, summed over dim 1. */
START_TEST(outer_playground_splits_r) {
  scheduled s;
  fz_plan *p = schedule(&s, COLUMN_MAJOR_SUM, "M=16384,N=36864");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  ck_assert_int_gt(p->split, 1);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(ptx, "ld.global.nc.v4.f32");
  ck_assert_has(ptx, "atom.global.add.u32");
  ck_assert_has(ptx, "membar.gl");
  ck_assert_has(ptx, "ld.volatile.global.f32");
  ck_assert_has(ptx, "st.global.v4.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(outer_bf16_columns) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: bf16[M, N]) {\n"
                        "  %s = sum %x dims(0) : bf16[N]\n"
                        "  return %s\n"
                        "}\n",
                        "M=1000,N=4096");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  ck_assert_int_eq(p->vector, 8);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(l.ir, "load <8 x bfloat>");
  ck_assert_has(l.ir, "store <8 x bfloat>");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* Two reductions of one input: two accumulators per lane, two workspace
 * regions, one counter. */
START_TEST(outer_two_reductions_share_the_grid_protocol) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[M, N]) {\n"
                        "  %s = sum %x dims(0) : f32[N]\n"
                        "  %m = amax %x dims(0) : f32[N]\n"
                        "  return %s, %m\n"
                        "}\n",
                        "M=65536,N=256");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  ck_assert_int_gt(p->split, 1);
  ck_assert_uint_eq(fz_plan_workspace_bytes(p),
                    2 * 4 * (size_t)fz_plan_kept_points(p) * (size_t)p->split);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_count(l.ir, "atomicrmw", 1);
  ck_assert_has(l.ir, "@llvm.maximum.f32");
  ck_assert_has(l.ir, "%kept_split, 4"); /* the second region's offset */
  ck_assert_count(ptx, "atom.global.add.u32", 1);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* keepdim and an epilogue cast, on the outer side. */
START_TEST(outer_keepdim_epilogue) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[M, N], %w: f32[b1, N]) {\n"
                        "  %s = sum %x dims(0) keepdim : f32[b1, N]\n"
                        "  %y = mul %s, %w : f32[b1, N]\n"
                        "  %c = cast %y : bf16[b1, N]\n"
                        "  return %c\n"
                        "}\n",
                        "M=512,N=1024");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  char *epi = block_text(l.ir, "epilogue");
  ck_assert_has(epi, "load <4 x float>");
  ck_assert_has(epi, "fmul float");
  free(epi);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* More reductions than the scratch holds at once: several passes. */
START_TEST(outer_many_reductions_take_several_passes) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f64[M, N]) {\n"
                        "  %a = sum %x dims(0) : f64[N]\n"
                        "  %b = prod %x dims(0) : f64[N]\n"
                        "  %c = amax %x dims(0) : f64[N]\n"
                        "  %d = amin %x dims(0) : f64[N]\n"
                        "  return %a, %b, %c, %d\n"
                        "}\n",
                        "M=64,N=2048");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_REDUCTION);
  reshape_block(p, 32, 32);
  p->split = 1;
  p->vector = 2;
  for (int i = 0; i < p->num_accesses; i++)
    p->accesses[i].vector = 2;
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  /* 4 reductions x 2 lanes x 1024 threads x 8 bytes = 64 KiB: two
   * columns per 16 KiB pass, four passes of a store barrier and five
   * steps, then the tile's barrier */
  ck_assert_has(l.ir,
                "@fz_scratch = internal addrspace(3) global [16384 x i8]");
  ck_assert_count(l.ir, "call void @llvm.nvvm.barrier0()", 4 * 6 + 1);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* ---- malformed plans --------------------------------------------------------
 */

START_TEST(block_x_not_a_power_of_two_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=4096");
  reshape_block(p, 24, 8);
  char msg[1024];
  ck_assert_int_eq(lower_status(p, msg, sizeof msg), FZ_ERR_INTERNAL);
  ck_assert_msg(has(msg, "24x8"), "message: %s", msg);
  scheduled_free(&s);
}
END_TEST

START_TEST(wrong_innermost_kind_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=4096");
  p->kind = FZ_PLAN_OUTER_REDUCTION;
  char msg[1024];
  ck_assert_int_eq(lower_status(p, msg, sizeof msg), FZ_ERR_INTERNAL);
  ck_assert_msg(has(msg, "innermost"), "message: %s", msg);
  scheduled_free(&s);
}
END_TEST

START_TEST(pre_node_reading_a_post_node_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @f(%x: f32[M, N]) {\n"
                        "  %s = sum %x dims(1) : f32[M]\n"
                        "  %m = mul %s, 0.25 : f32[M]\n"
                        "  return %m\n"
                        "}\n",
                        "M=4096,N=1024");
  int mul = -1;
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_OP)
      mul = i;
  ck_assert_int_ge(mul, 0);
  p->nodes[mul].space = FZ_SPACE_FULL;
  char msg[1024];
  ck_assert_int_eq(lower_status(p, msg, sizeof msg), FZ_ERR_INTERNAL);
  ck_assert_msg(has(msg, "other space"), "message: %s", msg);
  scheduled_free(&s);
}
END_TEST

START_TEST(reduce_node_in_a_pointwise_plan_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=4096");
  p->kind = FZ_PLAN_POINTWISE;
  char msg[1024];
  ck_assert_int_eq(lower_status(p, msg, sizeof msg), FZ_ERR_INTERNAL);
  ck_assert_msg(has(msg, "pointwise plan"), "message: %s", msg);
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("lower_reduction");
  TCase *inner = tcase_create("inner");
  tcase_set_timeout(inner, 120);
  tcase_add_test(inner, inner_row_of_512_threads);
  tcase_add_test(inner, inner_rows_shorter_than_a_warp);
  tcase_add_test(inner, inner_split_is_a_grid_reduction);
  tcase_add_test(inner, inner_bf16_rows_accumulate_in_f32);
  tcase_add_test(inner, amax_propagates_nan);
  tcase_add_test(inner, integer_amin_shuffles_halves);
  tcase_add_test(inner, f64_prod_shuffles_halves);
  tcase_add_test(inner, inner_epilogue_reads_kept_inputs);
  tcase_add_test(inner, inner_prologue_store);
  tcase_add_test(inner, inner_two_reduced_axes_decompose);
  tcase_add_test(inner, full_reduction_to_a_scalar);
  tcase_add_test(inner, inner_index64);
  suite_add_tcase(s, inner);

  TCase *outer = tcase_create("outer");
  tcase_set_timeout(outer, 120);
  tcase_add_test(outer, outer_tree_without_split);
  tcase_add_test(outer, outer_playground_splits_r);
  tcase_add_test(outer, outer_bf16_columns);
  tcase_add_test(outer, outer_two_reductions_share_the_grid_protocol);
  tcase_add_test(outer, outer_keepdim_epilogue);
  tcase_add_test(outer, outer_many_reductions_take_several_passes);
  suite_add_tcase(s, outer);

  TCase *bad = tcase_create("malformed");
  tcase_add_test(bad, block_x_not_a_power_of_two_is_internal);
  tcase_add_test(bad, wrong_innermost_kind_is_internal);
  tcase_add_test(bad, pre_node_reading_a_post_node_is_internal);
  tcase_add_test(bad, reduce_node_in_a_pointwise_plan_is_internal);
  suite_add_tcase(s, bad);
  return s;
}

int main(void) { return test_run_suite(make()); }
