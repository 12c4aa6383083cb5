/* reduction.c - the two reduction skeletons, as scripts.
 *
 * Both walk tiles of the kept (I) space in a grid-stride loop over
 * blockIdx.x, while blockIdx.y picks one of `split` slices of R:
 *
 *   inner (R innermost): a tile is block_y rows, one per ty, and the
 *     block_x threads of a row walk its R groups of `vector` lanes;
 *   outer (I innermost): a tile is block_x groups of `vector` kept points,
 *     one per tx, and the block_y threads of a column walk R;
 *
 * and each tile goes the same way:
 *   1. kept coordinates and every access's offset without its R terms;
 *      accumulators (one per reduction per lane) set to the identity;
 *   2. the R loop: unroll slots per trip, every slot's loads first, then
 *      the full-space (pre) nodes, their stores, and the accumulation;
 *      trips where every slot is inside R, then a one-slot tail, so no
 *      load is predicated; threads without a kept point (past the end of
 *      the last tile) run no trips;
 *   3. the combine (combine.c): inner, the lanes, then the row's threads
 *      by butterfly shuffles and shared memory across warps; outer, the
 *      column's threads by a shared-memory tree over ty;
 *   4. split plans: the grid combine, after which only the tile's last
 *      block goes on;
 *   5. the epilogue: the kept-space (post) nodes, once per kept point (a
 *      row for inner, `vector` lanes for outer), by the threads that hold
 *      the result (tx == 0, or ty == 0);
 *   6. a barrier before the next tile reuses shared memory.
 *
 * Index math: R is one canonical axis in the common case, and then a
 * slot's R coordinate is its loop index (times the vector): no division
 * in the R loop. Several R axes are decomposed per slot; kept coordinates
 * are decomposed once per tile.
 */
#include "emit.h"
#include "skeleton.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct red {
  fz_kernel *k;
  bool inner;
  fz_reduce_set rs;
  fz_reduce_layout lay;
  fz_block_state bs;
  int kaxes[FZ_MAX_RANK], nk; /* kept axes, outermost first */
  int raxes[FZ_MAX_RANK], nr; /* reduced axes, outermost first */
  unsigned kmask, rmask;
  bool *pre_access;       /* accesses of the full-space nodes */
  LLVMValueRef k_per_row; /* divisors of the decompositions, hoisted */
  LLVMValueRef r_per_row;
  LLVMValueRef c[FZ_MAX_RANK];     /* the tile's kept coordinates; R are 0 */
  LLVMValueRef *base;              /* [access] offset + kept terms */
  LLVMValueRef *acc;               /* [reduction][vector] allocas */
  LLVMValueRef *vals;              /* [unroll + 1][node][vector] */
  LLVMValueRef *offs;              /* [unroll][access] */
  LLVMValueRef (*sc)[FZ_MAX_RANK]; /* [unroll] slot coordinates */
} red;

static LLVMValueRef *table(red *r, int u) {
  const fz_plan *p = r->k->e.plan;
  return r->vals + (size_t)u * (size_t)p->num_nodes * (size_t)p->vector;
}

static LLVMValueRef *slot_offs(red *r, int u) {
  return r->offs + (size_t)u * (size_t)r->k->e.plan->num_accesses;
}

static LLVMValueRef *acc_slot(red *r, int j, int lane) {
  return &r->acc[(size_t)j * (size_t)r->k->e.plan->vector + (size_t)lane];
}

/* ---- loops ----------------------------------------------------------------
 */

/* ---- setup ------------------------------------------------------------------
 */

static bool setup(red *r, fz_kernel *k) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  r->k = k;
  r->inner = p->kind == FZ_PLAN_INNER_REDUCTION;
  if (!fz_reduce_set_of(e, &r->rs))
    return false;
  fz_reduce_layout_of(p, &r->rs, &r->lay);
  for (int d = 0; d < p->rank; d++) {
    if (p->reduced[d]) {
      r->raxes[r->nr++] = d;
      r->rmask |= 1u << d;
    } else {
      r->kaxes[r->nk++] = d;
      r->kmask |= 1u << d;
    }
  }
  size_t u = (size_t)p->unroll, v = (size_t)p->vector;
  size_t nvals = (u + 1) * (size_t)p->num_nodes * v;
  r->pre_access = calloc((size_t)p->num_accesses, sizeof *r->pre_access);
  r->base = calloc((size_t)p->num_accesses, sizeof *r->base);
  r->acc = calloc((size_t)r->rs.count * v, sizeof *r->acc);
  r->vals = calloc(nvals ? nvals : 1, sizeof *r->vals);
  r->offs = calloc(u * (size_t)p->num_accesses, sizeof *r->offs);
  r->sc = calloc(u, sizeof *r->sc);
  if (!r->pre_access || !r->base || !r->acc || !r->vals || !r->offs || !r->sc) {
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    return false;
  }
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->space != FZ_SPACE_ROW &&
        (n->kind == FZ_NODE_LOAD || n->kind == FZ_NODE_STORE))
      r->pre_access[n->access] = true;
  }
  return true;
}

static void teardown(red *r) {
  free(r->pre_access);
  free(r->base);
  free(r->acc);
  free(r->vals);
  free(r->offs);
  free(r->sc);
}

/* Thread position (tx, ty as i32 in bs and in the index type), the
 * accumulators' allocas, shared memory; in the entry block. */
static bool entry(red *r, LLVMValueRef *tx, LLVMValueRef *ty) {
  fz_kernel *k = r->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  for (int j = 0; j < r->rs.count; j++)
    for (int l = 0; l < p->vector; l++) {
      *acc_slot(r, j, l) = LLVMBuildAlloca(
          b, fz_reduce_state_type(e, r->rs.code[j], r->rs.acc[j]), "");
      fz_set_name(*acc_slot(r, j, l), "acc%d.%d", j, l);
    }
  fz_reduce_declare_shared(k, &r->lay, &r->bs);
  r->bs.tid = fz_emit_sreg(e, "tid.x");
  if (!r->bs.tid)
    return false;
  int shift = 0;
  while ((1 << shift) < p->block_x)
    shift++;
  r->bs.tx = LLVMBuildAnd(
      b, r->bs.tid, LLVMConstInt(e->t_i32, (unsigned)p->block_x - 1, 0), "tx");
  r->bs.ty = LLVMBuildLShr(b, r->bs.tid,
                           LLVMConstInt(e->t_i32, (unsigned)shift, 0), "ty");
  *tx = LLVMBuildZExt(b, r->bs.tx, e->t_idx, "");
  *ty = LLVMBuildZExt(b, r->bs.ty, e->t_idx, "");
  /* the divisors of the decompositions: the innermost axis of an index
   * that counts vectors holds extent / vector of them */
  int vk = r->inner ? 1 : p->vector, vr = r->inner ? p->vector : 1;
  if (r->nk > 1) {
    LLVMValueRef x = k->ext[r->kaxes[r->nk - 1]];
    r->k_per_row = vk == 1 ? x : LLVMBuildUDiv(b, x, fz_kernel_idx(k, vk), "");
  }
  if (r->nr > 1) {
    LLVMValueRef x = k->ext[r->raxes[r->nr - 1]];
    r->r_per_row = vr == 1 ? x : LLVMBuildUDiv(b, x, fz_kernel_idx(k, vr), "");
  }
  return !e->failed;
}

/* Length of the R loop: R points, in vectors for inner; 1 when every
 * reduced axis had size 1 and the canonical space kept none. */
static LLVMValueRef r_length(red *r) {
  fz_kernel *k = r->k;
  LLVMBuilderRef b = k->e.b;
  if (r->nr == 0)
    return fz_kernel_idx(k, 1);
  LLVMValueRef n = NULL;
  for (int i = 0; i < r->nr; i++)
    n = n ? LLVMBuildNUWMul(b, n, k->ext[r->raxes[i]], "")
          : k->ext[r->raxes[i]];
  if (r->inner && k->e.plan->vector > 1)
    n = LLVMBuildUDiv(b, n, fz_kernel_idx(k, k->e.plan->vector), "");
  fz_set_name(n, "r_len");
  return n;
}

/* ctaid.y and nctaid.y; constants when the plan does not split (the
 * kernel key tells a split plan from one that never is), which makes the
 * R loop's step a constant. */
static bool split_position(red *r, LLVMValueRef *part, LLVMValueRef *parts) {
  fz_kernel *k = r->k;
  if (k->e.plan->split == 1) {
    *part = fz_kernel_idx(k, 0);
    *parts = fz_kernel_idx(k, 1);
    return true;
  }
  *part = fz_kernel_sreg(k, "ctaid.y");
  *parts = fz_kernel_sreg(k, "nctaid.y");
  return *part && *parts;
}

/* ---- step 1: the tile's kept coordinates, offsets, accumulators ---------- */

static void tile_start(red *r, LLVMValueRef kept_index) {
  fz_kernel *k = r->k;
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  fz_kernel_decompose(k, kept_index, r->kaxes, r->nk, r->inner ? 1 : p->vector,
                      r->k_per_row, r->c);
  for (int i = 0; i < r->nr; i++)
    r->c[r->raxes[i]] = fz_kernel_idx(k, 0);
  for (int a = 0; a < p->num_accesses; a++) {
    r->base[a] = fz_kernel_offset(k, a, k->access[a].offset, r->c, r->kmask);
    fz_set_name(r->base[a], "base.a%d", a);
  }
  for (int j = 0; j < r->rs.count; j++) {
    LLVMValueRef id = fz_reduce_identity(e, r->rs.code[j], r->rs.acc[j]);
    for (int l = 0; l < p->vector; l++)
      LLVMBuildStore(e->b, id, *acc_slot(r, j, l));
  }
}

/* ---- step 2: the R loop ----------------------------------------------------
 */

static bool slot_loads(red *r, int u, LLVMValueRef index) {
  fz_kernel *k = r->k;
  const fz_plan *p = k->e.plan;
  LLVMValueRef *c = r->sc[u];
  for (int d = 0; d < p->rank; d++)
    c[d] = r->c[d];
  fz_kernel_decompose(k, index, r->raxes, r->nr, r->inner ? p->vector : 1,
                      r->r_per_row, c);
  LLVMValueRef *offs = slot_offs(r, u);
  for (int a = 0; a < p->num_accesses; a++) {
    if (!r->pre_access[a])
      continue;
    offs[a] = fz_kernel_offset(k, a, r->base[a], c, r->rmask);
    fz_set_name(offs[a], "off.a%d.u%d", a, u);
  }
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind == FZ_NODE_LOAD && n->space != FZ_SPACE_ROW &&
        !fz_kernel_load_node(k, i, table(r, u), offs[n->access], p->vector))
      return false;
  }
  return !k->e.failed;
}

static bool slot_compute(red *r, int u) {
  const fz_plan *p = r->k->e.plan;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->space == FZ_SPACE_ROW || n->kind == FZ_NODE_LOAD ||
        n->kind == FZ_NODE_STORE)
      continue;
    if (!fz_kernel_value_node(r->k, i, table(r, u), r->sc[u], p->vector))
      return false;
  }
  return true;
}

static bool slot_stores(red *r, int u) {
  const fz_plan *p = r->k->e.plan;
  LLVMValueRef *offs = slot_offs(r, u);
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind == FZ_NODE_STORE && n->space != FZ_SPACE_ROW &&
        !fz_kernel_store_node(r->k, i, table(r, u), offs[n->access], p->vector))
      return false;
  }
  return true;
}

static bool slot_accumulate(red *r, int u) {
  fz_emit *e = &r->k->e;
  const fz_plan *p = e->plan;
  for (int j = 0; j < r->rs.count; j++) {
    const fz_plan_node *n = &p->nodes[r->rs.node[j]];
    int o = n->operands[0];
    LLVMValueRef *x = fz_slot_val(p, table(r, u), o);
    LLVMValueRef *pos = n->num_operands > 1
                            ? fz_slot_val(p, table(r, u), n->operands[1])
                            : NULL;
    LLVMTypeRef t = fz_reduce_state_type(e, r->rs.code[j], r->rs.acc[j]);
    for (int l = 0; l < p->vector; l++) {
      LLVMValueRef v =
          fz_reduce_input(e, r->rs.code[j], r->rs.acc[j], x[l],
                          p->nodes[o].dtype, pos ? pos[l] : NULL);
      LLVMValueRef a = LLVMBuildLoad2(e->b, t, *acc_slot(r, j, l), "");
      LLVMValueRef s =
          fz_reduce_accumulate(e, r->rs.code[j], r->rs.acc[j], a, v);
      if (!s)
        return false;
      LLVMBuildStore(e->b, s, *acc_slot(r, j, l));
    }
  }
  return true;
}

/* `slots` slots at index, index + step, ...: loads, compute, stores,
 * accumulation, each for every slot before the next. */
static bool r_trip(red *r, int slots, LLVMValueRef index, LLVMValueRef step) {
  LLVMBuilderRef b = r->k->e.b;
  bool ok = true;
  for (int u = 0; ok && u < slots; u++) {
    LLVMValueRef at = index;
    if (u > 0)
      at = LLVMBuildAdd(
          b, index,
          u == 1 ? step : LLVMBuildMul(b, step, fz_kernel_idx(r->k, u), ""),
          "");
    ok = slot_loads(r, u, at);
  }
  for (int u = 0; ok && u < slots; u++)
    ok = slot_compute(r, u);
  for (int u = 0; ok && u < slots; u++)
    ok = slot_stores(r, u);
  for (int u = 0; ok && u < slots; u++)
    ok = slot_accumulate(r, u);
  return ok;
}

/* for (i = start; i < end; i += step), unroll slots per trip while they
 * all fit, then one at a time. */
static bool r_loops(red *r, LLVMValueRef start, LLVMValueRef step,
                    LLVMValueRef end) {
  fz_kernel *k = r->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  int unroll = e->plan->unroll;
  fz_loop main;
  LLVMValueRef ahead =
      unroll == 1 ? NULL
                  : LLVMBuildMul(b, step, fz_kernel_idx(k, unroll - 1), "");
  LLVMValueRef trip =
      unroll == 1 ? step : LLVMBuildMul(b, step, fz_kernel_idx(k, unroll), "");
  LLVMValueRef i = fz_emit_loop_begin(e, &main, start, ahead, end, "r.main");
  if (!r_trip(r, unroll, i, step))
    return false;
  fz_emit_loop_end(e, &main, trip);
  if (unroll == 1)
    return true;
  fz_loop tail;
  LLVMValueRef j = fz_emit_loop_begin(e, &tail, main.iv, NULL, end, "r.tail");
  if (!r_trip(r, 1, j, step))
    return false;
  fz_emit_loop_end(e, &tail, step);
  return true;
}

/* ---- step 5: the epilogue ------------------------------------------------ */

/* The post nodes at the tile's kept point, `lanes` wide; the reductions'
 * values from finals[j * lanes + lane]. */
static bool epilogue(red *r, const LLVMValueRef *finals, int lanes) {
  fz_kernel *k = r->k;
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  LLVMValueRef *t = table(r, p->unroll);
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->space != FZ_SPACE_ROW)
      continue;
    bool ok;
    switch (n->kind) {
    case FZ_NODE_REDUCE: {
      int j = fz_reduce_entry_of(p, &r->rs, i);
      LLVMValueRef *out = fz_slot_val(p, t, i);
      for (int l = 0; l < lanes; l++)
        out[l] = fz_reduce_value(e, n, r->rs.acc[j], finals[j * lanes + l]);
      ok = !e->failed;
      break;
    }
    case FZ_NODE_LOAD:
      ok = fz_kernel_load_node(k, i, t, r->base[n->access], lanes);
      break;
    case FZ_NODE_STORE:
      ok = fz_kernel_store_node(k, i, t, r->base[n->access], lanes);
      break;
    default:
      ok = fz_kernel_value_node(k, i, t, r->c, lanes);
      break;
    }
    if (!ok)
      return false;
  }
  return true;
}

/* Steps 4 to 6, shared by both kinds: the grid combine when split, the
 * epilogue in `writer` threads, the barrier when shared memory is reused. */
static bool finish_tile(red *r, LLVMValueRef writer, LLVMValueRef point,
                        LLVMValueRef tile, LLVMValueRef *vals) {
  fz_kernel *k = r->k;
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  if (p->split > 1) {
    LLVMValueRef last = fz_emit_grid_combine(k, &r->rs, &r->lay, &r->bs, writer,
                                             point, tile, vals);
    if (!last)
      return false;
    writer = LLVMBuildAnd(e->b, writer, last, "");
  }
  fz_if epi;
  fz_if_begin(e, &epi, writer, "epilogue");
  if (!epilogue(r, vals, r->lay.lanes))
    return false;
  fz_if_end(e, &epi);
  if (r->bs.scratch || r->bs.last_flag)
    fz_emit_barrier(e);
  return !e->failed;
}

/* ---- inner --------------------------------------------------------------- */

static bool inner_body(red *r) {
  fz_kernel *k = r->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  LLVMValueRef tx, ty;
  if (!entry(r, &tx, &ty))
    return false;
  LLVMValueRef kept = k->groups, r_len = r_length(r);
  LLVMValueRef by = fz_kernel_idx(k, p->block_y),
               bx = fz_kernel_idx(k, p->block_x);
  LLVMValueRef tiles = LLVMBuildUDiv(
      b, LLVMBuildAdd(b, kept, fz_kernel_idx(k, p->block_y - 1), ""), by,
      "tiles");
  LLVMValueRef ctaid = fz_kernel_sreg(k, "ctaid.x"),
               nctaid = fz_kernel_sreg(k, "nctaid.x"), part, parts;
  if (!ctaid || !nctaid || !split_position(r, &part, &parts))
    return false;
  /* this split's first R group, and the step between a thread's groups */
  LLVMValueRef start =
      LLVMBuildAdd(b, LLVMBuildMul(b, part, bx, ""), tx, "r_start");
  LLVMValueRef step = LLVMBuildMul(b, bx, parts, "r_step");

  fz_loop tl;
  LLVMValueRef tile = fz_emit_loop_begin(e, &tl, ctaid, NULL, tiles, "tile");
  LLVMValueRef row = LLVMBuildAdd(b, LLVMBuildMul(b, tile, by, ""), ty, "row");
  LLVMValueRef active = LLVMBuildICmp(b, LLVMIntULT, row, kept, "active");
  tile_start(r, row);
  LLVMValueRef end =
      LLVMBuildSelect(b, active, r_len, fz_kernel_idx(k, 0), "r_end");
  if (!r_loops(r, start, step, end))
    return false;

  /* 3. the lanes, then the row's threads */
  LLVMValueRef vals[FZ_LOWER_MAX_COLUMNS];
  for (int j = 0; j < r->rs.count; j++) {
    LLVMTypeRef t = fz_reduce_state_type(e, r->rs.code[j], r->rs.acc[j]);
    vals[j] = LLVMBuildLoad2(b, t, *acc_slot(r, j, 0), "");
    for (int l = 1; l < p->vector && vals[j]; l++)
      vals[j] = fz_reduce_combine(e, r->rs.code[j], r->rs.acc[j], vals[j],
                                  LLVMBuildLoad2(b, t, *acc_slot(r, j, l), ""));
    if (!vals[j])
      return false;
  }
  if (!fz_emit_row_combine(k, &r->rs, &r->lay, &r->bs, vals))
    return false;
  LLVMValueRef writer =
      LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, tx, fz_kernel_idx(k, 0), ""),
                   active, "writer");
  if (!finish_tile(r, writer, row, tile, vals))
    return false;
  fz_emit_loop_end(e, &tl, nctaid);
  LLVMBuildRetVoid(b);
  return true;
}

bool fz_emit_inner_reduction(fz_kernel *k) {
  red r = {0};
  bool ok = setup(&r, k) && inner_body(&r);
  teardown(&r);
  return ok && !k->e.failed;
}

/* ---- outer --------------------------------------------------------------- */

static bool outer_body(red *r) {
  fz_kernel *k = r->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  LLVMValueRef tx, ty;
  if (!entry(r, &tx, &ty))
    return false;
  LLVMValueRef vec = fz_kernel_idx(k, p->vector);
  LLVMValueRef kept_groups =
      p->vector == 1 ? k->groups : LLVMBuildUDiv(b, k->groups, vec, "");
  fz_set_name(kept_groups, "kept_groups");
  LLVMValueRef r_len = r_length(r);
  LLVMValueRef by = fz_kernel_idx(k, p->block_y),
               bx = fz_kernel_idx(k, p->block_x);
  LLVMValueRef tiles = LLVMBuildUDiv(
      b, LLVMBuildAdd(b, kept_groups, fz_kernel_idx(k, p->block_x - 1), ""), bx,
      "tiles");
  LLVMValueRef ctaid = fz_kernel_sreg(k, "ctaid.x"),
               nctaid = fz_kernel_sreg(k, "nctaid.x"), part, parts;
  if (!ctaid || !nctaid || !split_position(r, &part, &parts))
    return false;
  LLVMValueRef start =
      LLVMBuildAdd(b, LLVMBuildMul(b, part, by, ""), ty, "r_start");
  LLVMValueRef step = LLVMBuildMul(b, by, parts, "r_step");

  fz_loop tl;
  LLVMValueRef tile = fz_emit_loop_begin(e, &tl, ctaid, NULL, tiles, "tile");
  LLVMValueRef col = LLVMBuildAdd(b, LLVMBuildMul(b, tile, bx, ""), tx, "col");
  LLVMValueRef active =
      LLVMBuildICmp(b, LLVMIntULT, col, kept_groups, "active");
  tile_start(r, col);
  LLVMValueRef end =
      LLVMBuildSelect(b, active, r_len, fz_kernel_idx(k, 0), "r_end");
  if (!r_loops(r, start, step, end))
    return false;

  /* 3. the column's threads, lane by lane */
  LLVMValueRef vals[FZ_LOWER_MAX_COLUMNS];
  for (int j = 0; j < r->rs.count; j++)
    for (int l = 0; l < p->vector; l++)
      vals[j * p->vector + l] = LLVMBuildLoad2(
          b, fz_reduce_state_type(e, r->rs.code[j], r->rs.acc[j]),
          *acc_slot(r, j, l), "");
  if (!fz_emit_column_combine(k, &r->rs, &r->lay, &r->bs, vals))
    return false;
  LLVMValueRef writer =
      LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, ty, fz_kernel_idx(k, 0), ""),
                   active, "writer");
  LLVMValueRef point = p->vector == 1 ? col : LLVMBuildMul(b, col, vec, "");
  if (!finish_tile(r, writer, point, tile, vals))
    return false;
  fz_emit_loop_end(e, &tl, nctaid);
  LLVMBuildRetVoid(b);
  return true;
}

bool fz_emit_outer_reduction(fz_kernel *k) {
  red r = {0};
  bool ok = setup(&r, k) && outer_body(&r);
  teardown(&r);
  return ok && !k->e.failed;
}
