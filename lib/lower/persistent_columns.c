/* persistent_columns.c - the column half of an inner-outer persistent
 * kernel (layer norm backward's grad-weight and grad-bias), as a script:
 *
 *   1. each thread holds, per column REDUCE node, group and lane, the
 *      partial over every row it processed (its columns never change);
 *      block_y > 1: combined across ty by combine.c's shared-memory tree;
 *   2. ty == 0 publishes the block's partial row of each column node in
 *      the workspace: block b's partial of column c at [b * R + c] of the
 *      node's region, gridDim.x * R accumulators per region, regions
 *      ordered by accumulator size (widest first, so every region stays
 *      aligned for vector stores), else in node order; a column_cluster
 *      plan first combines the partials of a cluster's blocks and
 *      publishes one row per cluster (persistent_column_cluster.c), whose
 *      last cluster barrier waits after the grid barrier;
 *   3. a grid-wide barrier (the launch is cooperative, every block is
 *      resident): a block barrier orders the block's published partials
 *      before thread 0's fence (the fence is cumulative, as in CUDA's
 *      cooperative-groups grid sync; a fence in every writer cost ~4 us
 *      of the seed kernel's fixed cost); thread 0 of each block reads the
 *      generation counters[1], fences, and counts itself in on
 *      counters[0]; the last to arrive resets counters[0] to 0 (so the
 *      next launch needs no memset) and bumps the generation; the others
 *      spin on volatile loads of the generation until it moves;
 *   4. the column groups are spread over the grid, each summed by the
 *      lanes of a warp slice (final_pass says why): lane q sums blocks
 *      q, q + slices, ... in order (plain loads: the fence that ends
 *      the grid barrier invalidates L1, which is not coherent, and the
 *      block barrier after it orders every thread's loads after it),
 *      a butterfly over the slices combines them, so the result does not
 *      depend on timing; slice 0 rounds to the node's dtype, computes the
 *      column-space nodes (a cast of grad-weight to bf16) and stores the
 *      column outputs.
 * gridDim.x, never plan->grid_x: the executor may launch fewer blocks
 * than the plan asks for, to fit residency, and the kernel is shared by
 * plans whose grids differ.
 */
#include "persistent.h"

#include <stdio.h>
#include <stdlib.h>

/* Shared memory for the ty tree, as combine.c's outer layout budgets it. */
enum { COLUMN_SCRATCH_BUDGET = 16 * 1024 };

/* Whether column node j is combined in the current call: every one
 * after an inner-outer row loop; those of the round's phase in an outer
 * plan. */
static bool in_round(const pers *s, int j) {
  return s->col_round < 0 ||
         s->p->nodes[s->colnode[j]].phase == s->col_round + 1;
}

/* ---- 1. across ty -------------------------------------------------------- */

static size_t widest_acc(const pers *s) {
  size_t w = 0;
  for (int j = 0; j < s->ncol; j++)
    if (fz_dtype_size(fz_pers_col_acc(s, j)) > w)
      w = fz_dtype_size(fz_pers_col_acc(s, j));
  return w;
}

static void column_layout(const pers *s, fz_reduce_layout *l) {
  const fz_plan *p = s->p;
  *l = (fz_reduce_layout){0};
  l->lanes = s->G * s->V;
  l->warp_mask = p->threads >= 32 ? 0xffffffffu : (1u << p->threads) - 1;
  if (p->block_y == 1 || s->ncol == 0)
    return;
  l->column_bytes = widest_acc(s) * (size_t)p->threads;
  int fit = (int)(COLUMN_SCRATCH_BUDGET / l->column_bytes);
  l->columns_per_pass = fit < 1 ? 1 : fit > l->lanes ? l->lanes : fit;
  l->scratch_bytes = l->column_bytes * (size_t)l->columns_per_pass;
}

size_t fz_pers_column_scratch(const pers *s) {
  fz_reduce_layout l;
  column_layout(s, &l);
  return l.scratch_bytes;
}

/* vals[j][g * V + l]: the thread's partials, combined across ty (valid in
 * ty == 0 afterwards). */
static bool block_partials(pers *s, LLVMValueRef *vals) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  int lanes = s->G * s->V;
  for (int j = 0; j < s->ncol; j++) {
    if (!in_round(s, j))
      continue;
    LLVMTypeRef t = fz_emit_reg_type(e, fz_pers_col_acc(s, j));
    for (int g = 0; g < s->G; g++)
      for (int l = 0; l < s->V; l++)
        vals[j * lanes + g * s->V + l] =
            LLVMBuildLoad2(e->b, t, *pers_colacc(s, j, g, l), "");
  }
  if (s->p->block_y == 1)
    return true;
  /* the rows' last round may still be reading the scratch */
  fz_emit_barrier(e);
  return fz_pers_ty_combine(s, vals);
}

bool fz_pers_ty_combine(pers *s, LLVMValueRef *vals) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  int lanes = s->G * s->V;
  fz_reduce_layout lay;
  column_layout(s, &lay);
  for (int j = 0; j < s->ncol; j++) {
    if (!in_round(s, j))
      continue;
    const fz_plan_node *n = &s->p->nodes[s->colnode[j]];
    fz_reduce_set one = {.count = 1};
    one.node[0] = s->colnode[j];
    one.code[0] = n->code;
    one.acc[0] = fz_pers_col_acc(s, j);
    if (!fz_emit_column_combine(k, &one, &lay, &s->bs, vals + j * lanes))
      return false;
  }
  return !e->failed;
}

/* ---- 2. the workspace ---------------------------------------------------- */

typedef struct wspace {
  LLVMValueRef blocks;                          /* gridDim.x, i64 */
  /* rows of partials, i64: gridDim.x, or the clusters of a
   * column_cluster plan (persistent_column_cluster.c) */
  LLVMValueRef rows;
  LLVMValueRef points;                          /* R, i64 */
  LLVMValueRef region[PERS_MAX_COLUMN_REDUCES]; /* per column node */
  LLVMValueRef result[PERS_MAX_COLUMN_REDUCES]; /* OUTER: R results each */
} wspace;

static void workspace_regions(pers *s, wspace *w) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  w->blocks = fz_emit_zext_i64(e, fz_emit_sreg(e, "nctaid.x"));
  w->rows = s->p->column_cluster
                ? fz_emit_zext_i64(e, fz_emit_sreg(e, "nclusterid.x"))
                : w->blocks;
  w->points = LLVMBuildMul(b, fz_emit_zext_i64(e, s->r_groups), fz_emit_i64(e, s->V), "R");
  LLVMValueRef stride = LLVMBuildMul(b, w->rows, w->points, "");
  size_t before = 0;
  for (size_t size = 8; size >= 1; size /= 2)
    for (int j = 0; j < s->ncol; j++) {
      if (fz_dtype_size(fz_pers_col_acc(s, j)) != size)
        continue;
      LLVMValueRef bytes =
          LLVMBuildMul(b, stride, fz_emit_i64(e, (int64_t)before), "");
      w->region[j] =
          LLVMBuildInBoundsGEP2(b, e->t_i8, k->workspace, &bytes, 1, "");
      fz_set_name(w->region[j], "ws.n%d", s->colnode[j]);
      before += size;
    }
  /* an outer plan's results follow the partials, in the same order, from
   * the next 16-byte boundary (the partials of mixed widths, an i64 and
   * an f32 sum over 2 points, end at byte 24: the H200 faulted on the
   * misaligned 16-byte result vectors there) */
  LLVMValueRef partials = LLVMBuildAnd(
      b,
      LLVMBuildAdd(b, LLVMBuildMul(b, stride, fz_emit_i64(e, (int64_t)before), ""),
                   fz_emit_i64(e, 15), ""),
      fz_emit_i64(e, ~(int64_t)15), "ws.results");
  size_t after = 0;
  for (size_t size = 8; size >= 1 && s->held; size /= 2)
    for (int j = 0; j < s->ncol; j++) {
      if (fz_dtype_size(fz_pers_col_acc(s, j)) != size)
        continue;
      LLVMValueRef bytes = LLVMBuildAdd(
          b, partials, LLVMBuildMul(b, w->points, fz_emit_i64(e, (int64_t)after), ""),
          "");
      w->result[j] =
          LLVMBuildInBoundsGEP2(b, e->t_i8, k->workspace, &bytes, 1, "");
      fz_set_name(w->result[j], "ws.result.n%d", s->colnode[j]);
      after += size;
    }
}

static LLVMValueRef result_ptr(pers *s, const wspace *w, int j,
                               LLVMValueRef index) {
  fz_emit *e = &s->k->e;
  LLVMTypeRef t = fz_emit_reg_type(e, fz_pers_col_acc(s, j));
  return LLVMBuildInBoundsGEP2(e->b, t, w->result[j], &index, 1, "");
}

static LLVMValueRef ws_ptr(pers *s, const wspace *w, int j,
                           LLVMValueRef index) {
  fz_emit *e = &s->k->e;
  LLVMTypeRef t = fz_emit_reg_type(e, fz_pers_col_acc(s, j));
  return LLVMBuildInBoundsGEP2(e->b, t, w->region[j], &index, 1, "");
}

static bool publish(pers *s, const wspace *w, LLVMValueRef *vals) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  int lanes = s->G * s->V;
  LLVMValueRef me = fz_emit_zext_i64(e, fz_emit_sreg(e, "ctaid.x"));
  LLVMValueRef row = LLVMBuildMul(b, me, w->points, "ws.row");
  fz_if writer;
  fz_if_begin(e, &writer, LLVMBuildICmp(b, LLVMIntEQ, s->bs.ty, fz_emit_i32(e, 0), ""),
              "ws.publish");
  for (int g = 0; g < s->G; g++) {
    fz_if in_row;
    char name[32];
    snprintf(name, sizeof name, "ws.g%d", g);
    fz_if_begin(e, &in_row, s->gactive[g], name);
    LLVMValueRef at = LLVMBuildAdd(
        b, row, LLVMBuildMul(b, fz_emit_zext_i64(e, s->g[g]), fz_emit_i64(e, s->V), ""), "");
    for (int j = 0; j < s->ncol; j++)
      if (in_round(s, j))
        fz_pers_store_lanes(e, fz_emit_reg_type(e, fz_pers_col_acc(s, j)),
                  fz_dtype_size(fz_pers_col_acc(s, j)), ws_ptr(s, w, j, at),
                  vals + j * lanes + g * s->V, s->V);
    fz_if_end(e, &in_row);
  }
  fz_if_end(e, &writer);
  return !e->failed;
}

/* ---- 3. the grid barrier ------------------------------------------------- */

static void grid_barrier(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  fz_emit_barrier(e);
  fz_if lead;
  fz_if_begin(e, &lead, LLVMBuildICmp(b, LLVMIntEQ, s->bs.tid, fz_emit_i32(e, 0), ""),
              "grid.arrive");
  LLVMValueRef one = fz_emit_i64(e, 1);
  LLVMValueRef arrived = k->counters;
  LLVMValueRef generation =
      LLVMBuildInBoundsGEP2(b, e->t_i32, k->counters, &one, 1, "generation");
  /* the generation before arriving, and not reordered after it */
  LLVMValueRef gen = LLVMBuildLoad2(b, e->t_i32, generation, "gen");
  LLVMSetVolatile(gen, 1);
  fz_emit_fence_gpu(e);
  LLVMValueRef old =
      LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpAdd, arrived, fz_emit_i32(e, 1),
                         LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef blocks = fz_emit_sreg(e, "nctaid.x");
  LLVMValueRef last = LLVMBuildICmp(
      b, LLVMIntEQ, old, LLVMBuildSub(b, blocks, fz_emit_i32(e, 1), ""), "last");
  LLVMBasicBlockRef release =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "grid.release");
  LLVMBasicBlockRef spin =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "grid.spin");
  LLVMBasicBlockRef passed =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "grid.passed");
  LLVMBuildCondBr(b, last, release, spin);

  LLVMPositionBuilderAtEnd(b, release);
  LLVMValueRef reset = LLVMBuildStore(b, fz_emit_i32(e, 0), arrived);
  LLVMSetVolatile(reset, 1);
  fz_emit_fence_gpu(e);
  LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpAdd, generation, fz_emit_i32(e, 1),
                     LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(b, passed);

  LLVMPositionBuilderAtEnd(b, spin);
  LLVMValueRef now = LLVMBuildLoad2(b, e->t_i32, generation, "gen.now");
  LLVMSetVolatile(now, 1);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, now, gen, ""), spin, passed);

  LLVMPositionBuilderAtEnd(b, passed);
  fz_emit_fence_gpu(e); /* every block's partials, before reading them */
  fz_if_end(e, &lead);
  fz_emit_barrier(e);
}

/* ---- 4. the final pass over the columns ---------------------------------- */

typedef fz_pers_colpass colpass;

/* A node of the column space (or constant along the kept axes) for the
 * pass's column group, all lanes (walk.c evaluates the operands it reads
 * first). */
typedef struct col_walk {
  pers *s;
  colpass *c;
} col_walk;

static fz_walk_step col_enter(void *ctx, int i) {
  col_walk *w = ctx;
  pers *s = w->s;
  const fz_plan_node *n = &s->p->nodes[i];
  if (w->c->done[i])
    return FZ_WALK_DONE;
  if (s->space[i] == PS_CONST)
    return FZ_WALK_LEAF; /* computed once in the entry block */
  if (s->space[i] == PS_COLC ||
      (s->space[i] == PS_COLUMN && n->kind != FZ_NODE_REDUCE))
    return FZ_WALK_OPERANDS;
  return fz_emit_fail_at(&s->k->e, i, FZ_ERR_UNSUPPORTED,
                         "column node reads n%d, which varies along the rows",
                         i),
         FZ_WALK_FAIL;
}

static bool col_leave(void *ctx, int i) {
  col_walk *w = ctx;
  pers *s = w->s;
  colpass *c = w->c;
  fz_kernel *k = s->k;
  const fz_plan *p = s->p;
  const fz_plan_node *n = &p->nodes[i];
  LLVMValueRef *out = fz_slot_val(p, c->vals, i);
  if (s->space[i] == PS_CONST) {
    /* the entry block dominates the pass */
    for (int l = 0; l < s->V; l++)
      out[l] = s->rowt[(size_t)i * (size_t)s->V];
  } else {
    bool ok;
    if (n->kind == FZ_NODE_LOAD) {
      LLVMValueRef off = fz_kernel_offset(
          k, n->access, k->access[n->access].offset, c->coord, s->rmask);
      ok = fz_kernel_load_node(k, i, c->vals, off, s->V);
    } else {
      ok = fz_kernel_value_node(k, i, c->vals, c->coord, s->V);
    }
    if (!ok)
      return false;
  }
  c->done[i] = true;
  return true;
}

static bool eval_col(pers *s, colpass *c, int i) {
  col_walk w = {s, c};
  return fz_walk_nodes(&s->k->e, i, col_enter, col_leave, &w);
}

void fz_pers_col_coords(pers *s, fz_pers_colpass *c, LLVMValueRef gc) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  /* the column's coordinates, in the index type */
  LLVMValueRef gi =
      LLVMTypeOf(gc) == e->t_idx ? gc : LLVMBuildTrunc(e->b, gc, e->t_idx, "");
  for (int d = 0; d < s->p->rank; d++)
    c->coord[d] = fz_kernel_idx(k, 0);
  fz_kernel_decompose(k, gi, s->raxes, s->nr, s->V, s->r_per_row, c->coord);
}

bool fz_pers_col_stores(pers *s, fz_pers_colpass *c) {
  fz_kernel *k = s->k;
  const fz_plan *p = s->p;
  bool ok = true;
  for (int i = 0; ok && i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_STORE || n->space != FZ_SPACE_COLUMN)
      continue;
    /* an outer plan stores a column output in the round that makes it
     * (one with no reduction in it, in the first) */
    int ready = p->nodes[n->operands[0]].phase;
    if (s->col_round >= 0 && ready != s->col_round + 1 &&
        !(ready == 0 && s->col_round == 0))
      continue;
    ok = eval_col(s, c, n->operands[0]);
    if (ok) {
      LLVMValueRef off = fz_kernel_offset(
          k, n->access, k->access[n->access].offset, c->coord, s->rmask);
      ok = fz_kernel_store_node(k, i, c->vals, off, s->V);
    }
  }
  return ok && !k->e.failed;
}

/* Into the allocas acc[j][l]: the partials of column point `col` of
 * blocks from, from + step, ... below `to`, in that order. SUM_UNROLL
 * blocks a trip, all their loads issued before the first add: a trip
 * then waits for one L2 round trip, not one per block and node (the
 * pass was ~6 us of the seed kernel's fixed cost when each load waited
 * for the add before it). A block past `to` loads block `from`'s
 * partial, which its select then drops. */
enum { SUM_UNROLL = 4 };

static bool sum_blocks(pers *s, const wspace *w, LLVMValueRef *acc,
                       LLVMValueRef col, LLVMValueRef from, LLVMValueRef to,
                       LLVMValueRef step) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  int lanes = s->ncol * s->V;
  LLVMValueRef *got = calloc((size_t)SUM_UNROLL * (size_t)lanes, sizeof *got);
  if (!got)
    return fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory"), false;
  LLVMValueRef in[SUM_UNROLL];
  fz_loop lp;
  LLVMValueRef blk = fz_emit_loop_begin(e, &lp, from, NULL, to, "col.blocks");
  for (int u = 0; u < SUM_UNROLL; u++) {
    LLVMValueRef bu = LLVMBuildAdd(
        b, blk, LLVMBuildMul(b, step, fz_emit_i64(e, u), ""), "");
    in[u] = u == 0 ? NULL : LLVMBuildICmp(b, LLVMIntULT, bu, to, "col.in");
    if (in[u])
      bu = LLVMBuildSelect(b, in[u], bu, from, "");
    LLVMValueRef at =
        LLVMBuildAdd(b, LLVMBuildMul(b, bu, w->points, ""), col, "");
    for (int j = 0; j < s->ncol; j++) {
      fz_dtype t = fz_pers_col_acc(s, j);
      if (in_round(s, j))
        fz_pers_load_lanes(e, fz_emit_reg_type(e, t), fz_dtype_size(t),
                   ws_ptr(s, w, j, at), got + u * lanes + j * s->V, s->V);
    }
  }
  for (int u = 0; u < SUM_UNROLL; u++)
    for (int j = 0; j < s->ncol; j++) {
      if (!in_round(s, j))
        continue;
      fz_dtype t = fz_pers_col_acc(s, j);
      fz_opcode code = s->p->nodes[s->colnode[j]].code;
      for (int l = 0; l < s->V; l++) {
        LLVMValueRef slot = acc[j * s->V + l];
        LLVMValueRef a = LLVMBuildLoad2(b, fz_emit_reg_type(e, t), slot, "");
        LLVMValueRef r =
            fz_reduce_combine(e, code, t, a, got[u * lanes + j * s->V + l]);
        if (!r)
          break;
        if (in[u])
          r = LLVMBuildSelect(b, in[u], r, a, "");
        LLVMBuildStore(b, r, slot);
      }
    }
  free(got);
  fz_emit_loop_end(e, &lp,
                   LLVMBuildMul(b, step, fz_emit_i64(e, SUM_UNROLL), ""));
  return !e->failed;
}

/* The lanes of each aligned group of `width` combined (butterfly), the
 * allocas acc[j][l] replaced by the group's result in every lane. */
static bool combine_slices(pers *s, LLVMValueRef *acc, int width,
                           unsigned mask) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  for (int j = 0; j < s->ncol; j++) {
    if (!in_round(s, j))
      continue;
    fz_dtype t = fz_pers_col_acc(s, j);
    fz_opcode code = s->p->nodes[s->colnode[j]].code;
    for (int l = 0; l < s->V; l++) {
      LLVMValueRef v =
          LLVMBuildLoad2(b, fz_emit_reg_type(e, t), acc[j * s->V + l], "");
      for (int off = width / 2; off >= 1 && v; off /= 2) {
        LLVMValueRef other = fz_emit_shfl_bfly(e, v, off, mask);
        v = other ? fz_reduce_combine(e, code, t, v, other) : NULL;
      }
      if (!v)
        return false;
      LLVMBuildStore(b, v, acc[j * s->V + l]);
    }
  }
  return !e->failed;
}

/* Up to plan->column_parts warps share a column group's blocks when the
 * grid has warps to spare, their sums meeting in PARTS_BYTES of shared
 * memory at most. */
enum { PARTS_BYTES = 4096 };

/* The warps a column group takes (i64, 1, 2 or 4; at most `most`): as
 * many as leave no trip of the pass longer, each with at least a warp of
 * blocks to sum. */
static LLVMValueRef parts_a_group(pers *s, LLVMValueRef groups,
                                  LLVMValueRef warps, LLVMValueRef rows,
                                  int most) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  LLVMValueRef w = fz_emit_i64(e, 1);
  for (int n = 2; n <= most; n *= 2) {
    LLVMValueRef fits = LLVMBuildAnd(
        b,
        LLVMBuildICmp(b, LLVMIntULE,
                      LLVMBuildMul(b, groups, fz_emit_i64(e, n), ""), warps, ""),
        LLVMBuildICmp(b, LLVMIntUGE, rows, fz_emit_i64(e, 32 * n), ""), "");
    w = LLVMBuildSelect(b, fits, fz_emit_i64(e, n), w, "col.parts");
  }
  return w;
}

/* The warps of a group past its first hand their sums (lane 0's allocas
 * acc) to the first through `slots` (a slot a warp of the block), which
 * combines them in part order: a fixed order, as the blocks' within a
 * part. Uniform across the block: two barriers, so that the slots are
 * free again for the next trip. */
static bool join_parts(pers *s, LLVMValueRef *acc, LLVMValueRef slots,
                       LLVMValueRef local, LLVMValueRef part,
                       LLVMValueRef parts, LLVMValueRef lane0, int most) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  int per_slot = s->ncol * s->V;
  LLVMTypeRef t8 = e->t_i64; /* a slot's lanes are 8 bytes apart */
  fz_emit_barrier(e); /* the last trip's first warps have read the slots */
  fz_if give;
  fz_if_begin(e, &give,
              LLVMBuildAnd(b, lane0,
                           LLVMBuildICmp(b, LLVMIntNE, part, fz_emit_i64(e, 0), ""),
                           ""),
              "col.give");
  for (int j = 0; j < s->ncol; j++) {
    if (!in_round(s, j))
      continue;
    LLVMTypeRef at = fz_emit_reg_type(e, fz_pers_col_acc(s, j));
    for (int l = 0; l < s->V; l++) {
      LLVMValueRef idx = LLVMBuildAdd(
          b, LLVMBuildMul(b, local, fz_emit_i64(e, per_slot), ""),
          fz_emit_i64(e, j * s->V + l), "");
      LLVMValueRef ptr = LLVMBuildInBoundsGEP2(b, t8, slots, &idx, 1, "");
      LLVMBuildStore(b, LLVMBuildLoad2(b, at, acc[j * s->V + l], ""), ptr);
    }
  }
  fz_if_end(e, &give);
  fz_emit_barrier(e);
  fz_if take;
  fz_if_begin(e, &take,
              LLVMBuildAnd(b, lane0,
                           LLVMBuildICmp(b, LLVMIntEQ, part, fz_emit_i64(e, 0), ""),
                           ""),
              "col.take");
  for (int q = 1; q < most; q++) {
    fz_if has;
    fz_if_begin(e, &has,
                LLVMBuildICmp(b, LLVMIntULT, fz_emit_i64(e, q), parts, ""),
                "col.part");
    LLVMValueRef from = LLVMBuildAdd(b, local, fz_emit_i64(e, q), "");
    for (int j = 0; j < s->ncol; j++) {
      if (!in_round(s, j))
        continue;
      fz_dtype t = fz_pers_col_acc(s, j);
      LLVMTypeRef at = fz_emit_reg_type(e, t);
      fz_opcode code = s->p->nodes[s->colnode[j]].code;
      for (int l = 0; l < s->V; l++) {
        LLVMValueRef idx = LLVMBuildAdd(
            b, LLVMBuildMul(b, from, fz_emit_i64(e, per_slot), ""),
            fz_emit_i64(e, j * s->V + l), "");
        LLVMValueRef ptr = LLVMBuildInBoundsGEP2(b, t8, slots, &idx, 1, "");
        LLVMValueRef mine = LLVMBuildLoad2(b, at, acc[j * s->V + l], "");
        LLVMValueRef r =
            fz_reduce_combine(e, code, t, mine, LLVMBuildLoad2(b, at, ptr, ""));
        if (!r)
          return false;
        LLVMBuildStore(b, r, acc[j * s->V + l]);
      }
    }
    fz_if_end(e, &has);
  }
  fz_if_end(e, &take);
  return !e->failed;
}

/* Step 4. The partials are gridDim.x rows of R values each, and R / V
 * column groups are few next to the grid's threads (2048 for an 8192-wide
 * f32 row, against 132 blocks of 512 threads): one thread per column
 * group would leave all but a few SMs idle and walk gridDim.x partials
 * one latency at a time. So each column group takes `slices` lanes of a
 * warp: lane q sums blocks q, q + slices, ... in order, then a butterfly
 * over the slices combines them. Where the groups are fewer than the
 * grid's warps (1024 for an 8192-wide bf16 row: half the SMs idle), a
 * group may take 2 or 4 warps instead, up to plan->column_parts
 * (parts_a_group; 1 by default until it has run on a GPU), warp p
 * summing the blocks p * slices + q, + parts * slices, ..., and the
 * first combining the others' sums (join_parts). Measured on an H100
 * with FZ_TRACE=phases (bf16 layer-norm backward, 2048x8192, 132
 * blocks), from the grid barrier to the slowest block's end, the pass
 * took 6.3 us with a warp a group, and the f32 kernel's, whose 2048
 * groups keep every SM busy, 4.1. All orders are fixed by the launch,
 * so the result does not depend on timing. The pass loop is uniform
 * across the block (every lane reaches the shuffles and barriers); the
 * warps a block covers per trip are threads / slices. */
static bool final_pass(pers *s, const wspace *w) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int nodes = p->num_nodes;
  int slices = p->threads >= 32 ? 32 : p->threads;
  unsigned mask = slices == 32 ? 0xffffffffu : (1u << slices) - 1;
  int shift = 0;
  while ((1 << shift) < slices)
    shift++;
  int warps_a_block = p->threads / slices;
  /* the slots of join_parts: a warp's sums, 8 bytes a lane */
  size_t slot_bytes = (size_t)s->ncol * (size_t)s->V * 8;
  /* a block's warps hold whole groups: a multiple of the parts */
  int most = 1;
  while (most * 2 <= p->column_parts && warps_a_block % (most * 2) == 0 &&
         (size_t)warps_a_block * slot_bytes <= PARTS_BYTES)
    most *= 2;

  LLVMValueRef *acc = calloc((size_t)s->ncol * (size_t)s->V + 1, sizeof *acc);
  colpass c = {0};
  c.vals = calloc((size_t)nodes * (size_t)s->V + 1, sizeof *c.vals);
  c.done = calloc((size_t)nodes + 1, sizeof *c.done);
  bool ok = acc && c.vals && c.done;
  if (!ok)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int j = 0; ok && j < s->ncol; j++)
    for (int l = 0; l < s->V; l++)
      acc[j * s->V + l] = fz_pers_entry_alloca(
          s, fz_emit_reg_type(e, fz_pers_col_acc(s, j)), "col.sum");
  LLVMValueRef slots = NULL;
  if (ok && most > 1) {
    LLVMTypeRef t = LLVMArrayType2(
        e->t_i64, (uint64_t)warps_a_block * (uint64_t)s->ncol * (uint64_t)s->V);
    slots = LLVMAddGlobalInAddressSpace(e->mod, t, "fz_column_parts", 3);
    LLVMSetLinkage(slots, LLVMInternalLinkage);
    LLVMSetInitializer(slots, LLVMGetUndef(t));
    LLVMSetAlignment(slots, 16);
  }

  LLVMValueRef tid = fz_emit_zext_i64(e, s->bs.tid);
  LLVMValueRef slice =
      LLVMBuildAnd(b, tid, fz_emit_i64(e, slices - 1), "col.slice");
  LLVMValueRef local = LLVMBuildLShr(b, tid, fz_emit_i64(e, shift), "col.local");
  LLVMValueRef per_block = fz_emit_i64(e, warps_a_block);
  LLVMValueRef start = LLVMBuildMul(
      b, fz_emit_zext_i64(e, fz_emit_sreg(e, "ctaid.x")), per_block, "col.first");
  LLVMValueRef stride = LLVMBuildMul(b, w->blocks, per_block, "col.stride");
  LLVMValueRef groups = fz_emit_zext_i64(e, s->r_groups);
  LLVMValueRef parts = most > 1
                           ? parts_a_group(s, groups, stride, w->rows, most)
                           : fz_emit_i64(e, 1);
  /* parts is 1, 2 or 4: its log for the divisions below */
  LLVMValueRef log_parts = LLVMBuildLShr(b, parts, fz_emit_i64(e, 1), "");
  LLVMValueRef units = LLVMBuildShl(b, groups, log_parts, "col.units");
  fz_loop cl;
  LLVMValueRef base =
      ok ? fz_emit_loop_begin(e, &cl, start, NULL, units, "col") : NULL;
  LLVMValueRef gc = NULL, valid = NULL, col = NULL, part = NULL;
  if (ok) {
    LLVMValueRef unit = LLVMBuildAdd(b, base, local, "col.unit");
    valid = LLVMBuildICmp(b, LLVMIntULT, unit, units, "col.valid");
    unit = LLVMBuildSelect(b, valid, unit, fz_emit_i64(e, 0), "");
    gc = LLVMBuildLShr(b, unit, log_parts, "col.group");
    part = LLVMBuildAnd(b, unit,
                        LLVMBuildSub(b, parts, fz_emit_i64(e, 1), ""), "col.part");
    for (int j = 0; j < s->ncol; j++) {
      const fz_plan_node *n = &p->nodes[s->colnode[j]];
      LLVMValueRef id = fz_reduce_identity(e, n->code, fz_pers_col_acc(s, j));
      for (int l = 0; l < s->V; l++)
        LLVMBuildStore(b, id, acc[j * s->V + l]);
    }
    col = LLVMBuildMul(b, gc, fz_emit_i64(e, s->V), "col.point");
    LLVMValueRef from = LLVMBuildAdd(
        b, LLVMBuildMul(b, part, fz_emit_i64(e, slices), ""), slice, "");
    LLVMValueRef step = LLVMBuildMul(b, parts, fz_emit_i64(e, slices), "");
    ok = sum_blocks(s, w, acc, col, from, w->rows, step) &&
         combine_slices(s, acc, slices, mask);
  }
  LLVMValueRef lane0 =
      ok ? LLVMBuildAnd(b, valid,
                        LLVMBuildICmp(b, LLVMIntEQ, slice, fz_emit_i64(e, 0), ""),
                        "")
         : NULL;
  if (ok && most > 1)
    ok = join_parts(s, acc, slots, local, part, parts, lane0, most);
  fz_if writer;
  if (ok) {
    fz_if_begin(e, &writer,
                LLVMBuildAnd(b, lane0,
                             LLVMBuildICmp(b, LLVMIntEQ, part, fz_emit_i64(e, 0), ""),
                             ""),
                "col.store");
    fz_pers_col_coords(s, &c, gc);
    for (int j = 0; j < s->ncol; j++) {
      int i = s->colnode[j];
      LLVMValueRef *out = fz_slot_val(p, c.vals, i);
      LLVMTypeRef at = fz_emit_reg_type(e, fz_pers_col_acc(s, j));
      LLVMValueRef got[FZ_LOWER_MAX_LANES];
      if (in_round(s, j)) {
        for (int l = 0; l < s->V; l++)
          got[l] = LLVMBuildLoad2(b, at, acc[j * s->V + l], "");
        /* an outer plan's rows read the results back */
        if (s->held)
          fz_pers_store_lanes(e, at, fz_dtype_size(fz_pers_col_acc(s, j)),
                      result_ptr(s, w, j, col), got, s->V);
      } else if (s->held && p->nodes[i].phase <= s->col_round) {
        /* an earlier round's result, for outputs that combine rounds */
        fz_pers_load_lanes(e, at, fz_dtype_size(fz_pers_col_acc(s, j)),
                   result_ptr(s, w, j, col), got, s->V);
      } else {
        continue;
      }
      for (int l = 0; l < s->V; l++)
        out[l] = fz_emit_convert(e, got[l], fz_pers_col_acc(s, j),
                                 p->nodes[i].dtype);
      c.done[i] = true;
    }
    ok = ok && fz_pers_col_stores(s, &c);
    fz_if_end(e, &writer);
    if (ok)
      fz_emit_loop_end(e, &cl, stride);
  }
  free(acc);
  free(c.vals);
  free(c.done);
  return ok && !e->failed;
}

bool fz_pers_columns(pers *s, int round) {
  fz_emit *e = &s->k->e;
  s->col_round = round;
  if (!s->k->workspace || !s->k->counters)
    return fz_emit_fail(e, FZ_ERR_INTERNAL,
                        "an inner-outer kernel without its workspace"),
           false;
  int lanes = s->G * s->V;
  LLVMValueRef *vals =
      calloc((size_t)(s->ncol ? s->ncol : 1) * (size_t)lanes, sizeof *vals);
  if (!vals)
    return fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory"), false;
  wspace w;
  bool ok = block_partials(s, vals);
  if (ok) {
    workspace_regions(s, &w);
    ok = s->p->column_cluster
             ? fz_pers_cluster_publish(s, w.region, w.points, vals)
             : publish(s, &w, vals);
  }
  free(vals);
  if (!ok || !fz_pers_trace(s, FZ_TRACE_PUBLISHED, NULL))
    return false;
  grid_barrier(s);
  if (!fz_pers_trace(s, FZ_TRACE_BARRIER, NULL))
    return false;
  /* every block of the cluster is past its reads of the others' shared
   * memory (they all passed the grid barrier), so a block may leave */
  if (s->p->column_cluster)
    fz_pers_cluster_wait(e);
  if (!final_pass(s, &w) || !fz_pers_trace(s, FZ_TRACE_END, NULL))
    return false;
  /* an outer plan's rows read the results: every block's must be out */
  if (s->held)
    grid_barrier(s);
  return !e->failed;
}

bool fz_pers_column_results(pers *s, int round, int j, LLVMValueRef *res) {
  fz_emit *e = &s->k->e;
  s->col_round = round;
  wspace w;
  workspace_regions(s, &w);
  fz_dtype acc = fz_pers_col_acc(s, j);
  LLVMTypeRef t = fz_emit_reg_type(e, acc);
  fz_dtype to = s->p->nodes[s->colnode[j]].dtype;
  for (int g = 0; g < s->G; g++) {
    LLVMValueRef at = LLVMBuildMul(e->b, fz_emit_zext_i64(e, s->g[g]), fz_emit_i64(e, s->V), "");
    fz_pers_load_lanes(e, t, fz_dtype_size(acc), result_ptr(s, &w, j, at),
               res + g * s->V, s->V);
    for (int l = 0; l < s->V; l++)
      if (!(res[g * s->V + l] = fz_emit_convert(e, res[g * s->V + l], acc, to)))
        return false;
  }
  return !e->failed;
}

/* ---- for column-sliced outer plans (persistent_slices.c) ----------------- */

bool fz_pers_block_partials(pers *s, int round, LLVMValueRef *vals) {
  s->col_round = round;
  return block_partials(s, vals);
}

bool fz_pers_publish(pers *s, LLVMValueRef *vals) {
  wspace w;
  workspace_regions(s, &w);
  return publish(s, &w, vals);
}

bool fz_pers_sum_partials(pers *s, LLVMValueRef *acc, LLVMValueRef col,
                          LLVMValueRef from, int step) {
  wspace w;
  workspace_regions(s, &w);
  return sum_blocks(s, &w, acc, col, from, w.rows, fz_emit_i64(&s->k->e, step));
}
