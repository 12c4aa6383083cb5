/* combine.c - how partial results meet: accumulators, warps, blocks, grids.
 *
 * A reduction's partials live in the register form of its accumulator
 * dtype (fz_reduce_acc_dtype: f32 for f32/f16/bf16, f64, i64 for integers
 * and bool) and combine as the interpreter accumulates: sum adds, prod
 * multiplies, amax/amin take llvm.maximum/minimum on floats (NaN wins, as
 * in the interpreter) and smax/smin on integers. var and mean partials
 * are Welford states (welford.c), structs that move through the same
 * paths: shuffles field by field, shared memory and the workspace whole.
 *
 * Partials cross threads in three ways, each reached by every thread of
 * the block so that no barrier or full-warp shuffle sits behind a branch
 * (inactive threads carry identities, and only the shared-memory stores
 * and loads are predicated):
 *  - within a warp, a butterfly of shfl.sync.bfly (every lane ends with
 *    the result; 64-bit values move as two halves);
 *  - across the warps of a row (inner) or the threads of a column (outer),
 *    through static shared memory and bar.sync;
 *  - across the blocks of a split (gridDim.y), through the workspace: each
 *    block publishes its partial, fences, and counts itself in on the
 *    tile's counter; the last to arrive reads every split's partial back
 *    with volatile loads (L1 is not coherent) in split order, so the
 *    result does not depend on which block came last, and resets the
 *    counter for the next launch.
 * The layout questions (how many lanes shuffle, how much scratch, how many
 * columns fit) are answered first, in fz_reduce_layout_of, which emits
 * nothing.
 */
#include "emit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* Shared scratch for the outer tree: enough for several reductions of a
 * 256-thread block at once while leaving the SM room for many blocks. */
enum { SCRATCH_BUDGET = 16 * 1024 };

/* ---- the reductions of a plan -------------------------------------------- */

bool fz_reduce_set_of(fz_emit *e, fz_reduce_set *rs) {
  const fz_plan *p = e->plan;
  rs->count = 0;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_REDUCE || fz_reduce_shares_state(p, rs, i))
      continue;
    int lanes = p->kind == FZ_PLAN_OUTER_REDUCTION ? p->vector : 1;
    if ((rs->count + 1) * lanes > FZ_LOWER_MAX_COLUMNS) {
      fz_emit_fail_at(e, i, FZ_ERR_UNSUPPORTED,
                      "more than %d reductions of %d lanes in a kernel",
                      FZ_LOWER_MAX_COLUMNS / lanes, lanes);
      return false;
    }
    rs->node[rs->count] = i;
    rs->code[rs->count] = n->code;
    rs->acc[rs->count] = fz_plan_reduce_acc(p, n);
    rs->count++;
  }
  if (rs->count == 0) {
    fz_emit_fail(e, FZ_ERR_INTERNAL, "a reduction plan without a reduction");
    return false;
  }
  return true;
}

static bool is_arg(fz_opcode code) {
  return fz_op_table[code].flags & FZ_F_ARG;
}

LLVMTypeRef fz_reduce_state_type(fz_emit *e, fz_opcode code, fz_dtype acc) {
  if (is_arg(code))
    return fz_arg_state_type(e, acc);
  if (fz_reduce_is_welford(code))
    return fz_welford_state_type(e, acc);
  return fz_emit_reg_type(e, acc);
}

size_t fz_reduce_state_bytes(fz_opcode code, fz_dtype acc) {
  if (is_arg(code))
    return FZ_ARG_STATE_BYTES;
  return (fz_reduce_is_welford(code) ? 3 : 1) * fz_dtype_size(acc);
}

LLVMValueRef fz_reduce_input(fz_emit *e, fz_opcode code, fz_dtype acc,
                             LLVMValueRef x, fz_dtype from,
                             LLVMValueRef position) {
  if (is_arg(code))
    return fz_arg_input(e, acc, x, from, position);
  return fz_emit_convert(e, x, from, acc);
}

/* The type and bytes of reduction r's partials. */
static LLVMTypeRef state_type(fz_emit *e, const fz_reduce_set *rs, int r) {
  return fz_reduce_state_type(e, rs->code[r], rs->acc[r]);
}

static size_t state_bytes(const fz_reduce_set *rs, int r) {
  return fz_reduce_state_bytes(rs->code[r], rs->acc[r]);
}

/* The alignment of reduction r's partials: an arg-reduction's pair holds
 * an i64 position, every other state is made of accumulators. */
static size_t state_align(const fz_reduce_set *rs, int r) {
  return is_arg(rs->code[r]) ? 8 : fz_dtype_size(rs->acc[r]);
}

void fz_reduce_layout_of(const fz_plan *p, const fz_reduce_set *rs,
                         fz_reduce_layout *l) {
  bool inner = p->kind == FZ_PLAN_INNER_REDUCTION;
  *l = (fz_reduce_layout){0};
  l->lanes = inner ? 1 : p->vector;
  l->warp_mask = p->threads >= 32 ? 0xffffffffu : (1u << p->threads) - 1;
  l->shuffle_width = p->block_x < 32 ? p->block_x : 32;
  l->warps_per_row = p->block_x > 32 ? p->block_x / 32 : 1;
  if (inner) {
    /* one value per warp of each row, every reduction at once: at most
     * 32 warps per block, so at most 32 values per reduction */
    if (l->warps_per_row > 1) {
      for (int r = 0; r < rs->count; r++)
        l->scratch_bytes += state_bytes(rs, r) * (size_t)p->block_y *
                            (size_t)l->warps_per_row;
      l->columns_per_pass = rs->count;
    }
    return;
  }
  if (p->block_y == 1)
    return;
  /* outer: one column of `threads` values per (reduction, lane), as many
   * columns per pass as the budget holds (at least one) */
  size_t widest = 0;
  for (int r = 0; r < rs->count; r++)
    if (state_bytes(rs, r) > widest)
      widest = state_bytes(rs, r);
  size_t column = widest * (size_t)p->threads;
  int total = rs->count * l->lanes;
  int fit = (int)(SCRATCH_BUDGET / column);
  l->columns_per_pass = fit < 1 ? 1 : fit > total ? total : fit;
  l->column_bytes = column;
  l->scratch_bytes = column * (size_t)l->columns_per_pass;
}

/* ---- identities and combining ---------------------------------------------
 */

LLVMValueRef fz_reduce_identity(fz_emit *e, fz_opcode code, fz_dtype acc) {
  bool fl = fz_dtype_is_float(acc);
  LLVMTypeRef t = fz_emit_reg_type(e, acc);
  switch (code) {
  case FZ_OP_SUM:
    return fl ? LLVMConstReal(t, 0.0) : LLVMConstInt(t, 0, 0);
  case FZ_OP_PROD:
    return fl ? LLVMConstReal(t, 1.0) : LLVMConstInt(t, 1, 0);
  case FZ_OP_AMAX:
    return fl ? LLVMConstReal(t, -INFINITY)
              : LLVMConstInt(t, (unsigned long long)INT64_MIN, 1);
  case FZ_OP_AMIN:
    return fl ? LLVMConstReal(t, INFINITY)
              : LLVMConstInt(t, (unsigned long long)INT64_MAX, 1);
  case FZ_OP_ARGMAX:
  case FZ_OP_ARGMIN:
    return fz_arg_identity(e, code, acc);
  case FZ_OP_VAR:
  case FZ_OP_MEAN:
    return fz_welford_identity(e, acc);
  default:
    return fz_emit_fail(e, FZ_ERR_UNSUPPORTED, "%s is not a reduction",
                        fz_op_table[code].name);
  }
}

LLVMValueRef fz_reduce_accumulate(fz_emit *e, fz_opcode code, fz_dtype acc,
                                  LLVMValueRef partial, LLVMValueRef x) {
  if (!x)
    return NULL;
  if (fz_reduce_is_welford(code))
    return fz_welford_update(e, acc, partial, x);
  return fz_reduce_combine(e, code, acc, partial, x);
}

LLVMValueRef fz_reduce_combine(fz_emit *e, fz_opcode code, fz_dtype acc,
                               LLVMValueRef a, LLVMValueRef b) {
  bool fl = fz_dtype_is_float(acc);
  switch (code) {
  case FZ_OP_SUM:
    return fl ? LLVMBuildFAdd(e->b, a, b, "") : LLVMBuildAdd(e->b, a, b, "");
  case FZ_OP_PROD:
    return fl ? LLVMBuildFMul(e->b, a, b, "") : LLVMBuildMul(e->b, a, b, "");
  case FZ_OP_AMAX:
    return fz_emit_intrinsic2(e, fl ? "llvm.maximum" : "llvm.smax", a, b);
  case FZ_OP_AMIN:
    return fz_emit_intrinsic2(e, fl ? "llvm.minimum" : "llvm.smin", a, b);
  case FZ_OP_ARGMAX:
  case FZ_OP_ARGMIN:
    return fz_arg_combine(e, code, acc, a, b);
  case FZ_OP_VAR:
  case FZ_OP_MEAN:
    return fz_welford_combine(e, acc, a, b);
  default:
    return fz_emit_fail(e, FZ_ERR_UNSUPPORTED, "%s is not a reduction",
                        fz_op_table[code].name);
  }
}

/* ---- shared memory --------------------------------------------------------
 */

static LLVMValueRef shared_global(fz_kernel *k, LLVMTypeRef t, const char *name,
                                  unsigned align) {
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(k->e.mod, t, name, 3);
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMSetInitializer(g, LLVMGetUndef(t)); /* shared memory has no init */
  LLVMSetAlignment(g, align);
  return g;
}

void fz_reduce_declare_shared(fz_kernel *k, const fz_reduce_layout *l,
                              fz_block_state *bs) {
  fz_emit *e = &k->e;
  if (l->scratch_bytes)
    bs->scratch =
        shared_global(k, LLVMArrayType2(e->t_i8, (uint64_t)l->scratch_bytes),
                      "fz_scratch", 16);
  if (e->plan->split > 1)
    bs->last_flag = shared_global(k, e->t_i32, "fz_last_block", 4);
}

/* Element `index` (i32) of type t in the scratch, at byte `base`. */
static LLVMValueRef scratch_ptr(fz_kernel *k, const fz_block_state *bs,
                                size_t base, LLVMTypeRef t,
                                LLVMValueRef index) {
  fz_emit *e = &k->e;
  LLVMValueRef off = LLVMConstInt(e->t_i32, (unsigned long long)base, 0);
  LLVMValueRef col =
      LLVMBuildInBoundsGEP2(e->b, e->t_i8, bs->scratch, &off, 1, "");
  return LLVMBuildInBoundsGEP2(e->b, t, col, &index, 1, "");
}

/* ---- within a warp --------------------------------------------------------
 */

/* Butterfly over `width` lanes (a power of two up to 32): afterwards every
 * lane of each aligned group of `width` holds the group's combination. */
static LLVMValueRef warp_reduce(fz_emit *e, fz_opcode code, fz_dtype acc,
                                LLVMValueRef v, int width, unsigned mask) {
  for (int off = width / 2; off >= 1 && v; off /= 2) {
    LLVMValueRef other = fz_emit_shfl_bfly(e, v, off, mask);
    v = other ? fz_reduce_combine(e, code, acc, v, other) : NULL;
  }
  return v;
}

/* ---- inner: across the threads of a row ------------------------------------
 */

bool fz_emit_row_combine(fz_kernel *k, const fz_reduce_set *rs,
                         const fz_reduce_layout *l, const fz_block_state *bs,
                         LLVMValueRef *vals) {
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  /* 1. within the warp (or the row's part of it) */
  for (int r = 0; r < rs->count; r++)
    if (!(vals[r] = warp_reduce(e, rs->code[r], rs->acc[r], vals[r],
                                l->shuffle_width, l->warp_mask)))
      return false;
  if (l->warps_per_row == 1)
    return true;

  /* 2. lane 0 of each warp stores the warp's value at [ty][warp] */
  int wpr = l->warps_per_row;
  LLVMValueRef lane = LLVMBuildAnd(b, bs->tid, fz_emit_i32(e, 31), "lane");
  LLVMValueRef warp = LLVMBuildLShr(b, bs->tx, fz_emit_i32(e, 5), "warp_in_row");
  LLVMValueRef slot = LLVMBuildAdd(
      b, LLVMBuildMul(b, bs->ty, fz_emit_i32(e, (unsigned)wpr), ""), warp, "");
  fz_if w;
  fz_if_begin(e, &w, LLVMBuildICmp(b, LLVMIntEQ, lane, fz_emit_i32(e, 0), ""),
              "warp.publish");
  size_t base = 0;
  for (int r = 0; r < rs->count; r++) {
    LLVMTypeRef t = state_type(e, rs, r);
    LLVMBuildStore(b, vals[r], scratch_ptr(k, bs, base, t, slot));
    base += state_bytes(rs, r) * (size_t)p->block_y * (size_t)wpr;
  }
  fz_if_end(e, &w);
  fz_emit_barrier(e);

  /* 3. every warp reads its row's warp values into its first lanes and
   * runs the butterfly again; the row's first warp holds the result */
  LLVMValueRef has = LLVMBuildICmp(
      b, LLVMIntULT, lane, l->warps ? l->warps : fz_emit_i32(e, (unsigned)wpr), "");
  LLVMValueRef from =
      LLVMBuildAdd(b, LLVMBuildMul(b, bs->ty, fz_emit_i32(e, (unsigned)wpr), ""),
                   LLVMBuildSelect(b, has, lane, fz_emit_i32(e, 0), ""), "");
  base = 0;
  for (int r = 0; r < rs->count; r++) {
    LLVMTypeRef t = state_type(e, rs, r);
    LLVMValueRef v =
        LLVMBuildLoad2(b, t, scratch_ptr(k, bs, base, t, from), "");
    LLVMValueRef id = fz_reduce_identity(e, rs->code[r], rs->acc[r]);
    v = LLVMBuildSelect(b, has, v, id, "");
    if (!(vals[r] =
              warp_reduce(e, rs->code[r], rs->acc[r], v, wpr, l->warp_mask)))
      return false;
    base += state_bytes(rs, r) * (size_t)p->block_y * (size_t)wpr;
  }
  return !e->failed;
}

/* ---- outer: across the threads of a column ----------------------------------
 */

/* One pass over columns [first, first + n): every thread stores its values
 * at [column][tid], then the tree halves the live ty range: ty < s combines
 * with ty + s (tid + s * block_x) and, unless it is the last step, stores
 * the result for the next one. A barrier follows every step, the last one
 * included, so the next pass may reuse the scratch. */
static bool column_pass(fz_kernel *k, const fz_reduce_set *rs,
                        const fz_reduce_layout *l, const fz_block_state *bs,
                        LLVMValueRef *vals, int first, int n) {
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  size_t column = l->column_bytes;
  for (int j = 0; j < n; j++) {
    int r = (first + j) / l->lanes;
    LLVMTypeRef t = state_type(e, rs, r);
    LLVMBuildStore(b, vals[first + j],
                   scratch_ptr(k, bs, column * (size_t)j, t, bs->tid));
  }
  fz_emit_barrier(e);
  for (int s = p->block_y / 2; s >= 1; s /= 2) {
    fz_if live;
    char name[32];
    snprintf(name, sizeof name, "tree.%d", s);
    fz_if_begin(e, &live,
                LLVMBuildICmp(b, LLVMIntULT, bs->ty, fz_emit_i32(e, (unsigned)s), ""),
                name);
    LLVMValueRef partner =
        LLVMBuildAdd(b, bs->tid, fz_emit_i32(e, (unsigned)(s * p->block_x)), "");
    LLVMValueRef next[FZ_LOWER_MAX_COLUMNS];
    for (int j = 0; j < n; j++) {
      int r = (first + j) / l->lanes;
      LLVMTypeRef t = state_type(e, rs, r);
      LLVMValueRef o = LLVMBuildLoad2(
          b, t, scratch_ptr(k, bs, column * (size_t)j, t, partner), "");
      next[j] =
          fz_reduce_combine(e, rs->code[r], rs->acc[r], vals[first + j], o);
      if (!next[j])
        return false;
      if (s > 1)
        LLVMBuildStore(b, next[j],
                       scratch_ptr(k, bs, column * (size_t)j, t, bs->tid));
    }
    fz_if_end(e, &live);
    for (int j = 0; j < n; j++)
      vals[first + j] = fz_if_merge(e, &live, next[j], vals[first + j]);
    fz_emit_barrier(e);
  }
  return !e->failed;
}

bool fz_emit_column_combine(fz_kernel *k, const fz_reduce_set *rs,
                            const fz_reduce_layout *l, const fz_block_state *bs,
                            LLVMValueRef *vals) {
  if (k->e.plan->block_y == 1)
    return true;
  int total = rs->count * l->lanes;
  int per = l->columns_per_pass;
  for (int first = 0; first < total; first += per) {
    int n = total - first < per ? total - first : per;
    if (!column_pass(k, rs, l, bs, vals, first, n))
      return false;
  }
  return true;
}

/* ---- across the blocks of a split ---------------------------------------- */

/* Element `index` (i64) of reduction r's workspace region: kept * split
 * partials a region, the most aligned regions first (then the widest,
 * then in reduction order). A state's size is a multiple of its
 * alignment and alignments are powers of two, so every region starts at
 * a multiple of its own alignment: an f32 region of 5 partials placed
 * before an i64 one left the i64 partials at byte 20, and a 12-byte f32
 * Welford region of 341 partials before an i64 one left them at byte
 * 4092; the H200 faulted on both. */
static bool region_before(const fz_reduce_set *rs, int q, int r) {
  size_t qa = state_align(rs, q), ra = state_align(rs, r);
  if (qa != ra)
    return qa > ra;
  size_t qs = state_bytes(rs, q), rsz = state_bytes(rs, r);
  return qs > rsz || (qs == rsz && q < r);
}

static LLVMValueRef workspace_ptr(fz_kernel *k, const fz_reduce_set *rs, int r,
                                  LLVMValueRef kept_split, LLVMValueRef index) {
  fz_emit *e = &k->e;
  size_t before = 0;
  for (int q = 0; q < rs->count; q++)
    if (q != r && region_before(rs, q, r))
      before += state_bytes(rs, q);
  LLVMValueRef region = k->workspace;
  if (before) {
    LLVMValueRef bytes =
        LLVMBuildMul(e->b, kept_split,
                     LLVMConstInt(e->t_i64, (unsigned long long)before, 0), "");
    region = LLVMBuildInBoundsGEP2(e->b, e->t_i8, region, &bytes, 1, "");
  }
  LLVMTypeRef t = state_type(e, rs, r);
  return LLVMBuildInBoundsGEP2(e->b, t, region, &index, 1, "");
}

LLVMValueRef fz_emit_grid_combine(fz_kernel *k, const fz_reduce_set *rs,
                                  const fz_reduce_layout *l,
                                  const fz_block_state *bs, LLVMValueRef writer,
                                  LLVMValueRef point, LLVMValueRef tile,
                                  LLVMValueRef *vals) {
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  int lanes = l->lanes, total = rs->count * lanes;
  LLVMValueRef ys = fz_emit_sreg(e, "ctaid.y"),
               ny = fz_emit_sreg(e, "nctaid.y");
  if (!ys || !ny)
    return NULL;
  LLVMValueRef kept = fz_emit_zext_i64(e, k->groups), split = fz_emit_zext_i64(e, ny);
  LLVMValueRef kept_split = LLVMBuildMul(b, kept, split, "kept_split");
  LLVMValueRef at = fz_emit_zext_i64(e, point);

  /* 1. publish this split's partials, make them visible, count in */
  fz_if pub;
  fz_if_begin(e, &pub, writer, "grid.publish");
  LLVMValueRef mine =
      LLVMBuildAdd(b, LLVMBuildMul(b, fz_emit_zext_i64(e, ys), kept, ""), at, "");
  for (int r = 0; r < rs->count; r++)
    for (int ln = 0; ln < lanes; ln++) {
      LLVMValueRef idx = LLVMBuildAdd(
          b, mine, LLVMConstInt(e->t_i64, (unsigned long long)ln, 0), "");
      LLVMBuildStore(b, vals[r * lanes + ln],
                     workspace_ptr(k, rs, r, kept_split, idx));
    }
  fz_emit_fence_gpu(e);
  fz_if_end(e, &pub);
  fz_emit_barrier(e);

  fz_if count;
  fz_if_begin(e, &count, LLVMBuildICmp(b, LLVMIntEQ, bs->tid, fz_emit_i32(e, 0), ""),
              "grid.count");
  LLVMValueRef counter =
      LLVMBuildInBoundsGEP2(b, e->t_i32, k->counters, &tile, 1, "");
  LLVMValueRef old =
      LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpAdd, counter, fz_emit_i32(e, 1),
                         LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef is_last = LLVMBuildICmp(
      b, LLVMIntEQ, old, LLVMBuildSub(b, ny, fz_emit_i32(e, 1), ""), "is_last");
  LLVMBuildStore(b, LLVMBuildZExt(b, is_last, e->t_i32, ""), bs->last_flag);
  fz_if reset;
  fz_if_begin(e, &reset, is_last, "grid.reset");
  LLVMBuildStore(b, fz_emit_i32(e, 0), counter); /* the next launch starts at 0 */
  fz_emit_fence_gpu(e); /* what the other splits published, before we read */
  fz_if_end(e, &reset);
  fz_if_end(e, &count);
  fz_emit_barrier(e);
  LLVMValueRef flag = LLVMBuildLoad2(b, e->t_i32, bs->last_flag, "");
  LLVMValueRef last = LLVMBuildICmp(b, LLVMIntNE, flag, fz_emit_i32(e, 0), "last");

  /* 2. the last block combines every split's partial. Its threads share
   * the splits (tx for inner, ty for outer: the threads of one kept point),
   * each walking its share in split order, then combine as within a block,
   * so the finish costs split / threads loads per thread instead of split
   * (a serial walk by the writers was the bottleneck of skinny shapes). */
  const fz_plan *p = e->plan;
  bool inner = p->kind == FZ_PLAN_INNER_REDUCTION;
  LLVMValueRef part = LLVMBuildZExt(b, inner ? bs->tx : bs->ty, e->t_i64, "");
  LLVMValueRef step = LLVMConstInt(
      e->t_i64, (unsigned long long)(inner ? p->block_x : p->block_y), 0);
  LLVMValueRef active = LLVMBuildICmp(b, LLVMIntULT, at, kept, "active");
  fz_if fin;
  fz_if_begin(e, &fin, last, "grid.finish");
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef head =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "grid.split");
  LLVMBasicBlockRef body =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "grid.split.body");
  LLVMBasicBlockRef done =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "grid.split.done");
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef s = LLVMBuildPhi(b, e->t_i64, "s");
  LLVMValueRef acc[FZ_LOWER_MAX_COLUMNS];
  for (int j = 0; j < total; j++)
    acc[j] = LLVMBuildPhi(b, state_type(e, rs, j / lanes), "");
  LLVMBuildCondBr(
      b, LLVMBuildAnd(b, active, LLVMBuildICmp(b, LLVMIntULT, s, split, ""), ""),
      body, done);

  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef theirs = LLVMBuildAdd(b, LLVMBuildMul(b, s, kept, ""), at, "");
  LLVMValueRef next[FZ_LOWER_MAX_COLUMNS];
  for (int j = 0; j < total; j++) {
    int r = j / lanes, ln = j % lanes;
    LLVMTypeRef t = state_type(e, rs, r);
    LLVMValueRef idx = LLVMBuildAdd(
        b, theirs, LLVMConstInt(e->t_i64, (unsigned long long)ln, 0), "");
    LLVMValueRef v =
        LLVMBuildLoad2(b, t, workspace_ptr(k, rs, r, kept_split, idx), "");
    LLVMSetVolatile(v, 1);
    if (!(next[j] = fz_reduce_combine(e, rs->code[r], rs->acc[r], acc[j], v)))
      return NULL;
  }
  LLVMValueRef s_next = LLVMBuildAdd(b, s, step, "s.next");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, head);
  LLVMBasicBlockRef from[2] = {pre, latch};
  LLVMValueRef s_in[2] = {part, s_next};
  LLVMAddIncoming(s, s_in, from, 2);
  for (int j = 0; j < total; j++) {
    int r = j / lanes;
    LLVMValueRef in[2] = {fz_reduce_identity(e, rs->code[r], rs->acc[r]),
                          next[j]};
    LLVMAddIncoming(acc[j], in, from, 2);
  }
  LLVMPositionBuilderAtEnd(b, done);
  LLVMValueRef mine_all[FZ_LOWER_MAX_COLUMNS];
  for (int j = 0; j < total; j++)
    mine_all[j] = acc[j];
  /* every thread of the (uniformly) last block takes part: barriers inside */
  bool ok = inner ? fz_emit_row_combine(k, rs, l, bs, mine_all)
                  : fz_emit_column_combine(k, rs, l, bs, mine_all);
  if (!ok)
    return NULL;
  fz_if_end(e, &fin);
  for (int j = 0; j < total; j++)
    vals[j] = fz_if_merge(e, &fin, mine_all[j], vals[j]);
  return e->failed ? NULL : last;
}
