/* persistent.c - the kernel of a persistent normalization plan (softmax,
 * layer norm, RMS norm, and the row half of their backwards), as a script:
 *
 *   entry:  a guard that the row length is what the groups cover (else
 *           trap); the thread's position (tx, ty) and its groups g_k =
 *           tx + k * block_x, k < persistent (those from
 *           persistent_full on may pass the row's end: clamped to group
 *           0 and marked inactive),
 *           their R coordinates and offset terms, once for every row the
 *           thread will see (a dynamic block with one row axis
 *           builds each access's group offsets where first used, one
 *           step of block_x groups apart, instead: group_offsets); the
 *           CONST nodes once; for inner-outer plans,
 *           whose blocks walk many rows, the COLC nodes (a weight row)
 *           once per group (other plans load them where first used, or,
 *           with plan->weights_early, before the last row combine); the column accumulators set to identities;
 *   tiles:  for (tile = ctaid.x; tile < ceil(kept / block_y); tile +=
 *           nctaid.x) the row tile * block_y + ty (a row past the end is
 *           clamped to the last one: its loads stay in bounds and its
 *           threads still meet the row's shuffles and barriers); a
 *           dynamic block (one block a row) has no loop, only the test;
 *     1. the row's loads, every group at once: the only pass over the
 *        row's memory;
 *     2. rounds r = 0 .. phases: in round r, what becomes ready in it is
 *        used at once: column partials accumulated and stores issued for
 *        the values of phase r (a row past the end stores nothing and
 *        accumulates nothing; full-space stores only for groups inside
 *        the row, a dynamic block's masked group computing what it
 *        stores there, row-space ones by tx == 0); then, for r < phases, the
 *        row REDUCE nodes of phase r + 1: the thread's groups and lanes
 *        accumulated (an inactive group gives the identity), an
 *        all-reduce over the row's block_x threads (combine.c's butterfly
 *        and, across warps, its shared-memory step, then one shuffle from
 *        lane 0 so that every thread of the row has the value), rounded
 *        to the node's dtype as the interpreter rounds it;
 *   columns (INNER_OUTER only): persistent_columns.c.
 *
 * A multipass plan (plan->multipass: a row that stays on chip nowhere)
 * walks each row once a round instead of holding it:
 * persistent_multipass.c (lower.c calls it), with this file's setup,
 * evaluation and combines.
 *
 * A cluster plan (plan->cluster, sm_90) is the same kernel with a row
 * spread over the cluster's blocks: a thread's groups start at rank *
 * block_x + tx and step by cluster * block_x, clusters walk the rows
 * (clusterid, nclusterid), each row reduction adds an exchange across
 * the cluster after the block's combine (persistent_cluster.c), and a
 * row-space store is made by the first block only. With one prefetch
 * buffer (plan->prefetch_single) the next row's copies go out in round
 * 0, between the block's combine and the cluster's exchange
 * (persistent_prefetch.c says why there).
 *
 * An OUTER plan (batch norm: body_held) has no row reductions and no row
 * loop: each thread loads its `held` rows once, then runs every round of
 * every held row, and between rounds the grid combines the round's
 * column reductions (persistent_columns.c), whose results become values
 * of every held row for the next round.
 *
 * Nodes are computed on demand, each at most once per row and group, in
 * the round that first needs it, so that a value dies as early as it can
 * and few are live across a round's barrier. How often a node is computed
 * comes from what it varies along (persistent.h), not only from the
 * plan's spaces: rstd * rstd is computed once per row, not per element.
 * Rounds alternate between two halves of the shared scratch, so one
 * barrier per round is enough; an odd number of rounds adds one at the
 * end of the tile.
 */
#include "persistent.h"
#include "skeleton.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lowering's limits --------------------------------------------------- */

fz_status fz_check_persistent(const fz_plan *p, fz_error *err) {
  if (p->kind == FZ_PLAN_OUTER_PERSISTENT &&
      (int64_t)p->unroll * p->persistent * p->vector > FZ_PERS_MAX_VALUES)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: %d rows held of %d groups of %d lanes",
                        p->unroll, p->persistent, p->vector);
  if (p->persistent * p->vector > FZ_PERS_MAX_VALUES)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: %d persistent groups of %d lanes",
                        p->persistent, p->vector);
  return FZ_OK;
}

/* ---- small pieces -------------------------------------------------------- */

/* shfl.sync.idx from lane 0 of the warp: what lane 0 holds, everywhere. */
static LLVMValueRef shfl_lane0(fz_emit *e, LLVMValueRef v, unsigned mask);

static LLVMValueRef lane0_field(fz_emit *e, LLVMValueRef v, void *mask) {
  return shfl_lane0(e, v, *(const unsigned *)mask);
}

static LLVMValueRef shfl_lane0(fz_emit *e, LLVMValueRef v, unsigned mask) {
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMBuilderRef b = e->b;
  if (LLVMGetTypeKind(t) == LLVMStructTypeKind) /* a Welford state */
    return fz_emit_map_fields(e, v, lane0_field, &mask);
  if (t == e->t_f32 || t == e->t_i32) {
    LLVMValueRef args[4] = {fz_emit_i32(e, mask), v, fz_emit_i32(e, 0), fz_emit_i32(e, 0x1f)};
    return fz_emit_intrinsic(e,
                             t == e->t_f32 ? "llvm.nvvm.shfl.sync.idx.f32"
                                           : "llvm.nvvm.shfl.sync.idx.i32",
                             NULL, 0, args, 4);
  }
  if (LLVMGetTypeKind(t) == LLVMStructTypeKind) { /* a pair, by fields */
    LLVMValueRef r = LLVMGetUndef(t);
    for (unsigned f = 0; f < LLVMCountStructElementTypes(t) && r; f++) {
      LLVMValueRef x = shfl_lane0(e, LLVMBuildExtractValue(b, v, f, ""), mask);
      r = x ? LLVMBuildInsertValue(b, r, x, f, "") : NULL;
    }
    return r;
  }
  if (t != e->t_f64 && t != e->t_i64)
    return fz_emit_fail(e, FZ_ERR_INTERNAL, "no shuffle for this type");
  LLVMValueRef bits = t == e->t_f64 ? LLVMBuildBitCast(b, v, e->t_i64, "") : v;
  LLVMValueRef c32 = LLVMConstInt(e->t_i64, 32, 0);
  LLVMValueRef lo = shfl_lane0(e, LLVMBuildTrunc(b, bits, e->t_i32, ""), mask);
  LLVMValueRef hi = shfl_lane0(
      e, LLVMBuildTrunc(b, LLVMBuildLShr(b, bits, c32, ""), e->t_i32, ""),
      mask);
  if (!lo || !hi)
    return NULL;
  LLVMValueRef r = LLVMBuildOr(
      b, LLVMBuildZExt(b, lo, e->t_i64, ""),
      LLVMBuildShl(b, LLVMBuildZExt(b, hi, e->t_i64, ""), c32, ""), "");
  return t == e->t_f64 ? LLVMBuildBitCast(b, r, e->t_f64, "") : r;
}

/* ---- spaces -------------------------------------------------------------- */

/* What a value varies along: from row to row (the axes no row spans),
 * along a row (plan->row_axes). */
enum { VARY_ACROSS_ROWS = 1, VARY_ALONG_ROW = 2 };

/* Whether access a varies along a row (row_axes) or from row to row. */
static bool varies_along(const fz_plan *p, const fz_plan_access *a,
                         bool row_axes) {
  for (int d = 0; d < p->rank; d++)
    if (p->row_axes[d] == row_axes && a->strides[d] != 0)
      return true;
  return false;
}

/* What each node varies along, then its space (persistent.h). */
static bool classify(pers *s) {
  const fz_plan *p = s->p;
  fz_emit *e = &s->k->e;
  unsigned char *vary = calloc((size_t)p->num_nodes + 1, 1);
  if (!vary) {
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    return false;
  }
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    unsigned v = 0;
    switch (n->kind) {
    case FZ_NODE_LOAD:
    case FZ_NODE_STORE: {
      const fz_plan_access *a = &p->accesses[n->access];
      v = (varies_along(p, a, false) ? VARY_ACROSS_ROWS : 0) |
          (varies_along(p, a, true) ? VARY_ALONG_ROW : 0);
      break;
    }
    case FZ_NODE_IOTA:
      for (int d = 0; d < p->rank; d++)
        if (n->coeff[d] != 0)
          v |= p->row_axes[d] ? VARY_ALONG_ROW : VARY_ACROSS_ROWS;
      break;
    case FZ_NODE_RANDOM: /* its index, and its seed and offset */
      for (int d = 0; d < p->rank; d++)
        if (n->coeff[d] != 0)
          v |= p->row_axes[d] ? VARY_ALONG_ROW : VARY_ACROSS_ROWS;
      v |= vary[n->operands[0]] | vary[n->operands[1]];
      break;
    case FZ_NODE_REDUCE:
      v = n->space == FZ_SPACE_ROW ? VARY_ACROSS_ROWS : VARY_ALONG_ROW;
      break;
    case FZ_NODE_GATHER: {
      const fz_plan_access *a = &p->accesses[n->access];
      v = vary[n->operands[0]] |
          (varies_along(p, a, false) ? VARY_ACROSS_ROWS : 0) |
          (varies_along(p, a, true) ? VARY_ALONG_ROW : 0);
      break;
    }
    default:
      for (int k = 0; k < n->num_operands; k++)
        v |= vary[n->operands[k]];
      break;
    }
    vary[i] = (unsigned char)v;
    pers_space sp;
    if (n->space == FZ_SPACE_COLUMN)
      sp = PS_COLUMN;
    else if (n->kind == FZ_NODE_REDUCE || n->space == FZ_SPACE_ROW)
      sp = n->kind != FZ_NODE_REDUCE && !(v & VARY_ACROSS_ROWS) ? PS_CONST
                                                                : PS_ROW;
    else
      sp = v == 0                  ? PS_CONST
           : v == VARY_ACROSS_ROWS ? PS_ROW
           : v == VARY_ALONG_ROW   ? PS_COLC
                                   : PS_FULL;
    s->space[i] = (unsigned char)sp;
  }
  free(vary);
  return true;
}

/* ---- evaluation on demand ------------------------------------------------ */

static bool *row_done(pers *s, int i) {
  return &s->done[(size_t)s->G * (size_t)s->p->num_nodes + (size_t)i];
}

static bool *group_done(pers *s, int k, int i) {
  return &s->done[(size_t)k * (size_t)s->p->num_nodes + (size_t)i];
}

static LLVMValueRef *offs(pers *s, int k) {
  return s->roff + (size_t)(s->G + k) * (size_t)s->p->num_accesses;
}

/* Which full-space values a row of a refetch_bf16 plan forgets after its
 * combines: a bf16
 * input read straight from global memory (not from a prefetch buffer or
 * held rows, which may be refilled after the barrier), and the cheap
 * ops (casts, negation, add, sub, mul) of such values with row values
 * and constants. Held across a barrier as f32, the 8 lanes of a 16-byte
 * bf16 load take 8 registers; forgotten, LLVM merges the load made again
 * with the first one and keeps its 4 registers of bits, each lane
 * widened again where used (fz_emit's bf16_by_bits). */
static void mark_refetch(pers *s) {
  const fz_plan *p = s->p;
  if (!p->refetch_bf16)
    return;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (s->space[i] != PS_FULL)
      continue;
    if (n->kind == FZ_NODE_LOAD) {
      s->refetch[i] = fz_plan_refetchable_bf16(p, n->access);
      continue;
    }
    bool cheap = n->kind == FZ_NODE_OP &&
                 (n->code == FZ_OP_CAST || n->code == FZ_OP_NEG ||
                  n->code == FZ_OP_ADD || n->code == FZ_OP_SUB ||
                  n->code == FZ_OP_MUL);
    bool from_refetch = false;
    for (int k = 0; k < n->num_operands && cheap; k++) {
      int o = n->operands[k];
      from_refetch |= s->refetch[o];
      cheap = s->refetch[o] || s->space[o] == PS_CONST || s->space[o] == PS_ROW;
    }
    s->refetch[i] = cheap && from_refetch && n->dtype != FZ_F64;
  }
}

/* After a row combine: the refetchable values, computed again where next
 * used, their bf16 loads widened by bits (merged loads, distinct
 * widenings). */
static void forget_refetchable(pers *s) {
  if (!s->p->refetch_bf16)
    return;
  for (int i = 0; i < s->p->num_nodes; i++)
    for (int g = 0; g < s->G && s->refetch[i]; g++)
      *group_done(s, g, i) = false;
  s->k->e.bf16_by_bits = true;
}

/* Every group's offset into access a for the current row, built here
 * when the plan chains them (s->chain) and this row has none yet: group
 * 0's, then each a step past the one before; a masked group reads group
 * 0's place when it lies past the row (its values are never used). Built
 * where first used, after the row's start, so that a dynamic block's
 * offsets (no immediate distances: the width is the launch's) are not
 * held from the loads to the stores; they must be built in code that
 * every later use follows (not inside a store's branch). */
static void group_offsets(pers *s, int a) {
  fz_kernel *k = s->k;
  LLVMBuilderRef b = k->e.b;
  if (!s->chain || offs(s, 0)[a])
    return;
  LLVMValueRef o = LLVMBuildNSWAdd(b, s->base[a], s->roff[a], "");
  LLVMValueRef first = o;
  offs(s, 0)[a] = o;
  for (int g = 1; g < s->G; g++) {
    /* a masked group's may pass the tensor's end (and int32): it wraps,
     * and is then not selected */
    bool inside = g < s->p->persistent_full;
    o = inside ? LLVMBuildNSWAdd(b, o, s->step[a], "")
               : LLVMBuildAdd(b, o, s->step[a], "");
    offs(s, g)[a] = inside ? o : LLVMBuildSelect(b, s->gactive[g], o, first, "");
  }
}

static LLVMValueRef group_offset(pers *s, int g, int a) {
  if (s->in_branch && !offs(s, 0)[a]) {
    /* not built yet: this group's alone, dying with the branch */
    LLVMBuilderRef b = s->k->e.b;
    LLVMValueRef o = LLVMBuildNSWAdd(b, s->base[a], s->roff[a], "");
    return LLVMBuildAdd(
        b, o, LLVMBuildMul(b, s->step[a], fz_kernel_idx(s->k, g), ""), "");
  }
  group_offsets(s, a);
  return offs(s, g)[a];
}

/* A masked group of a chain plan computes what it only stores inside its
 * store branch: nothing for the threads whose group lies past the row,
 * and not held across the other groups' stores. */
static bool deferred(const pers *s, int g) {
  return s->chain && g >= s->p->persistent_full;
}

/* A CONST or ROW node, one lane, in the row table (walk.c evaluates the
 * operands it reads first). */
static fz_walk_step row_enter(void *ctx, int i) {
  pers *s = ctx;
  fz_kernel *k = s->k;
  const fz_plan_node *n = &s->p->nodes[i];
  if (*row_done(s, i))
    return FZ_WALK_DONE;
  if (s->space[i] != PS_CONST && s->space[i] != PS_ROW)
    return fz_emit_fail_at(&k->e, i, FZ_ERR_INTERNAL,
                           "n%d is not constant along the row", i),
           FZ_WALK_FAIL;
  if (n->kind == FZ_NODE_REDUCE)
    return fz_emit_fail_at(&k->e, i, FZ_ERR_INTERNAL,
                           "row reduce n%d used before its round", i),
           FZ_WALK_FAIL;
  return FZ_WALK_OPERANDS;
}

static bool row_leave(void *ctx, int i) {
  pers *s = ctx;
  fz_kernel *k = s->k;
  const fz_plan_node *n = &s->p->nodes[i];
  bool ok = n->kind == FZ_NODE_LOAD
                ? fz_kernel_load_node(k, i, s->rowt, s->base[n->access], 1)
                : fz_kernel_value_node(k, i, s->rowt, s->row_coord, 1);
  *row_done(s, i) = ok;
  return ok;
}

static bool eval_row(pers *s, int i) {
  return fz_walk_nodes(&s->k->e, i, row_enter, row_leave, s);
}

/* Node i for group k, all lanes, in the group's table: row values are
 * the same in every lane. */
typedef struct full_walk {
  pers *s;
  int k;
} full_walk;

static fz_walk_step full_enter(void *ctx, int i) {
  full_walk *w = ctx;
  pers *s = w->s;
  if (*group_done(s, w->k, i))
    return FZ_WALK_DONE;
  switch ((pers_space)s->space[i]) {
  case PS_CONST:
  case PS_ROW:
    return FZ_WALK_LEAF; /* from the row table */
  case PS_COLC:
  case PS_FULL:
    return FZ_WALK_OPERANDS;
  case PS_COLUMN:
    break;
  }
  return fz_emit_fail_at(&s->k->e, i, FZ_ERR_INTERNAL,
                         "column node n%d read in a row", i),
         FZ_WALK_FAIL;
}

static bool full_leave(void *ctx, int i) {
  full_walk *w = ctx;
  pers *s = w->s;
  int k = w->k;
  const fz_plan *p = s->p;
  const fz_plan_node *n = &p->nodes[i];
  LLVMValueRef *t = pers_full(s, k, i);
  if (s->space[i] == PS_CONST || s->space[i] == PS_ROW) {
    if (!eval_row(s, i))
      return false;
    for (int l = 0; l < s->V; l++)
      t[l] = s->rowt[(size_t)i * (size_t)s->V];
  } else {
    LLVMValueRef *table = pers_full(s, k, 0);
    bool ok =
        n->kind != FZ_NODE_LOAD ? fz_kernel_value_node(s->k, i, table,
                                                      s->coord[k], s->V)
        : fz_plan_prefetched(p, n->access)
            ? fz_pers_prefetch_load(s, i, k)
        : fz_plan_held_in_shared(p, n->access)
            ? fz_pers_held_load(s, i, k)
            : fz_kernel_load_node(s->k, i, table, group_offset(s, k, n->access),
                                  s->V);
    if (!ok)
      return false;
  }
  *group_done(s, k, i) = true;
  return true;
}

static bool eval_full(pers *s, int i, int k) {
  full_walk w = {s, k};
  return fz_walk_nodes(&s->k->e, i, full_enter, full_leave, &w);
}

/* ---- setup --------------------------------------------------------------- */

static bool setup(pers *s, fz_kernel *k) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  s->k = k;
  s->p = p;
  s->G = p->persistent;
  s->V = p->vector;
  s->outer = fz_plan_has_grid_columns(p);
  s->held = p->kind == FZ_PLAN_OUTER_PERSISTENT ? p->unroll : 0;
  for (int d = 0; d < p->rank; d++) {
    if (p->row_axes[d]) {
      s->raxes[s->nr++] = d;
      s->rmask |= 1u << d;
    } else {
      s->kaxes[s->nk++] = d;
      s->kmask |= 1u << d;
    }
  }
  size_t nodes = (size_t)p->num_nodes, G = (size_t)s->G, V = (size_t)s->V,
         acc = (size_t)p->num_accesses;
  s->space = calloc(nodes ? nodes : 1, 1);
  s->g = calloc(G, sizeof *s->g);
  s->gactive = calloc(G, sizeof *s->gactive);
  s->coord = calloc(G, sizeof *s->coord);
  s->roff = calloc(2 * G * acc, sizeof *s->roff);
  s->full = calloc(G * nodes * V + 1, sizeof *s->full);
  s->rowt = calloc(nodes * V + 1, sizeof *s->rowt);
  s->done = calloc((G + 1) * nodes + 1, sizeof *s->done);
  s->refetch = calloc(nodes + 1, sizeof *s->refetch);
  s->base = calloc(acc, sizeof *s->base);
  s->step = calloc(acc + 1, sizeof *s->step);
  s->pf_rowval = calloc(nodes + 1, sizeof *s->pf_rowval);
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_REDUCE &&
        p->nodes[i].space == FZ_SPACE_COLUMN) {
      if (s->ncol == PERS_MAX_COLUMN_REDUCES) {
        fz_emit_fail_at(e, i, FZ_ERR_UNSUPPORTED,
                        "more than %d column reductions in a kernel",
                        PERS_MAX_COLUMN_REDUCES);
        return false;
      }
      s->colnode[s->ncol++] = i;
    }
  s->colacc = calloc((size_t)s->ncol * G * V + 1, sizeof *s->colacc);
  s->slice_res = calloc((size_t)s->ncol * V + 1, sizeof *s->slice_res);
  if (!s->space || !s->g || !s->gactive || !s->coord || !s->roff || !s->full ||
      !s->rowt || !s->done || !s->refetch || !s->base || !s->colacc || !s->pf_rowval ||
      !s->slice_res || !s->step) {
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    return false;
  }
  if (!classify(s))
    return false;
  mark_refetch(s);
  return true;
}

static void teardown(pers *s) {
  free(s->space);
  free(s->g);
  free(s->gactive);
  free(s->coord);
  free(s->roff);
  free(s->full);
  free(s->rowt);
  free(s->done);
  free(s->refetch);
  free(s->base);
  free(s->step);
  free(s->colacc);
  free(s->pf_rowval);
  free(s->slice_res);
}

/* ---- the row combine's layout -------------------------------------------- */

/* The row REDUCE nodes of round p (phase p + 1). */
static void round_set(pers *s, int round, fz_reduce_set *rs) {
  const fz_plan *p = s->p;
  rs->count = 0;
  for (int i = 0; i < p->num_nodes && rs->count < FZ_LOWER_MAX_COLUMNS; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_REDUCE || n->space != FZ_SPACE_ROW ||
        n->phase != round + 1 || fz_reduce_shares_state(p, rs, i))
      continue;
    rs->node[rs->count] = i;
    rs->code[rs->count] = n->code;
    rs->acc[rs->count] = fz_plan_reduce_acc(p, n);
    rs->count++;
  }
}

/* combine.c's inner layout for a row of block_x threads: a butterfly
 * within the row's part of a warp, then one value per warp and row in
 * shared memory. */
static void row_layout(const fz_plan *p, const fz_reduce_set *rs,
                       fz_reduce_layout *l) {
  *l = (fz_reduce_layout){0};
  l->lanes = 1;
  l->warp_mask = p->threads >= 32 ? 0xffffffffu : (1u << p->threads) - 1;
  /* a dynamic block has room for the most warps it may be launched with */
  int bx = p->dynamic_block ? FZ_PLAN_DYNAMIC_MAX_THREADS : p->block_x;
  l->shuffle_width = bx < 32 ? bx : 32;
  l->warps_per_row = bx > 32 ? bx / 32 : 1;
  if (l->warps_per_row > 1) {
    for (int r = 0; r < rs->count; r++)
      l->scratch_bytes += fz_reduce_state_bytes(rs->code[r], rs->acc[r]) *
                          (size_t)p->block_y * (size_t)l->warps_per_row;
    l->columns_per_pass = rs->count;
  }
}

/* The largest round's scratch: each of the two halves holds it. */
static size_t row_half_bytes(pers *s) {
  size_t most = 0;
  for (int r = 0; r < s->p->phases; r++) {
    fz_reduce_set rs;
    fz_reduce_layout l;
    round_set(s, r, &rs);
    row_layout(s->p, &rs, &l);
    if (l.scratch_bytes > most)
      most = l.scratch_bytes;
  }
  return (most + 15) & ~(size_t)15;
}

/* n times the threads that share a row (block_x, or a cluster's
 * c * block_x), in the index type: a constant unless the block is
 * dynamic (never a cluster). */
static LLVMValueRef times_bx(pers *s, int64_t n) {
  fz_kernel *k = s->k;
  if (!s->p->dynamic_block)
    return fz_kernel_idx(k, n * s->row_threads);
  return LLVMBuildNUWMul(k->e.b, s->bx, fz_kernel_idx(k, n), "");
}

/* The kernel covers a row with `persistent` groups per thread, the first
 * `persistent_full` inside every row: persistent_full * block_x < groups
 * <= persistent * block_x (threads of the row), which is how the scheduler sizes them (and the
 * plan key holds both; a dynamic block_x is the launch's). A launch
 * outside that would skip elements or read past the row, so it traps
 * instead: a failed launch, never a wrong answer. */
static bool guard_row_length(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  LLVMValueRef few = LLVMBuildICmp(b, LLVMIntULE, s->r_groups,
                                   times_bx(s, s->p->persistent_full), "");
  LLVMValueRef many =
      LLVMBuildICmp(b, LLVMIntUGT, s->r_groups, times_bx(s, s->G), "");
  return fz_pers_trap_if(s, LLVMBuildOr(b, few, many, ""), "row.length");
}

void fz_pers_row_groups(pers *s) {
  fz_kernel *k = s->k;
  LLVMBuilderRef b = k->e.b;
  LLVMValueRef points = fz_kernel_idx(k, 1);
  for (int i = 0; i < s->nr; i++)
    points = LLVMBuildNUWMul(b, points, k->ext[s->raxes[i]], "");
  s->r_groups =
      s->V == 1 ? points : LLVMBuildUDiv(b, points, fz_kernel_idx(k, s->V), "");
  fz_set_name(s->r_groups, "r_groups");
  if (s->nr > 1) {
    LLVMValueRef x = k->ext[s->raxes[s->nr - 1]];
    s->r_per_row =
        s->V == 1 ? x : LLVMBuildUDiv(b, x, fz_kernel_idx(k, s->V), "");
  }
}

/* ---- entry --------------------------------------------------------------- */

static bool entry(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int A = p->num_accesses;

  /* column accumulators, set to identities once */
  for (int j = 0; j < s->ncol; j++) {
    const fz_plan_node *n = &p->nodes[s->colnode[j]];
    fz_dtype acc = fz_reduce_acc_dtype(n->dtype);
    LLVMValueRef id = fz_reduce_identity(e, n->code, acc);
    for (int g = 0; g < s->G; g++)
      for (int l = 0; l < s->V; l++) {
        LLVMValueRef a = LLVMBuildAlloca(b, fz_emit_reg_type(e, acc), "");
        fz_set_name(a, "col%d.%d.%d", j, g, l);
        LLVMBuildStore(b, id, a);
        *pers_colacc(s, j, g, l) = a;
      }
  }

  /* shared memory: the two halves of the row scratch, or the column
   * combine's, whichever is larger */
  size_t half = row_half_bytes(s);
  s->row_scratch = half > 0;
  fz_reduce_layout shared = {0};
  shared.scratch_bytes = 2 * half;
  size_t cols = s->outer ? fz_pers_column_scratch(s) : 0;
  if (cols > shared.scratch_bytes)
    shared.scratch_bytes = cols;
  fz_reduce_declare_shared(k, &shared, &s->bs);

  s->bs.tid = fz_emit_sreg(e, "tid.x");
  if (!s->bs.tid)
    return false;
  if (p->dynamic_block) {
    /* one row a block, as wide as the launch */
    LLVMValueRef ntid = fz_emit_sreg(e, "ntid.x");
    if (!ntid)
      return false;
    s->bs.tx = s->bs.tid;
    s->bs.ty = fz_emit_i32(e, 0);
    s->bx = LLVMBuildZExt(b, ntid, e->t_idx, "bx");
    s->warps = LLVMBuildLShr(b, ntid, fz_emit_i32(e, 5), "warps");
  } else {
    int shift = 0;
    while ((1 << shift) < p->block_x)
      shift++;
    s->bs.tx =
        LLVMBuildAnd(b, s->bs.tid, fz_emit_i32(e, (unsigned)p->block_x - 1), "tx");
    s->bs.ty = LLVMBuildLShr(b, s->bs.tid, fz_emit_i32(e, (unsigned)shift), "ty");
  }
  s->tx = LLVMBuildZExt(b, s->bs.tx, e->t_idx, "");
  s->ty = LLVMBuildZExt(b, s->bs.ty, e->t_idx, "");
  s->row_tx = s->tx;
  s->row_threads = p->block_x;
  if (p->cluster && !fz_pers_cluster_entry(s))
    return false;
  if (p->column_slices > 1 && !fz_pers_slices_entry(s))
    return false;

  /* the thread's groups: the same R coordinates for every row */
  fz_pers_row_groups(s);
  if (!guard_row_length(s))
    return false;
  LLVMValueRef zero = fz_kernel_idx(k, 0);
  s->chain = p->dynamic_block && s->nr == 1;
  if (s->chain) {
    /* the offset terms of a step of block_x groups along the row */
    LLVMValueRef c[FZ_MAX_RANK];
    for (int d = 0; d < p->rank; d++)
      c[d] = zero;
    fz_kernel_decompose(k, times_bx(s, 1), s->raxes, s->nr, s->V, s->r_per_row,
                        c);
    for (int a = 0; a < A; a++)
      s->step[a] = fz_kernel_offset(k, a, zero, c, s->rmask);
  }
  for (int g = 0; g < s->G; g++) {
    LLVMValueRef at = LLVMBuildAdd(b, s->row_tx, times_bx(s, g), "");
    if (g < p->persistent_full) {
      /* inside every row (guard_row_length): no clamp, so the offsets of
       * the groups are steps of block_x apart */
      s->gactive[g] = LLVMConstInt(e->t_i1, 1, 0);
      s->g[g] = at;
    } else {
      s->gactive[g] = LLVMBuildICmp(b, LLVMIntULT, at, s->r_groups, "");
      fz_set_name(s->gactive[g], "active.g%d", g);
      s->g[g] = LLVMBuildSelect(b, s->gactive[g], at, zero, "");
    }
    fz_set_name(s->g[g], "g%d", g);
    LLVMValueRef *c = s->coord[g];
    for (int d = 0; d < p->rank; d++)
      c[d] = zero;
    fz_kernel_decompose(k, s->g[g], s->raxes, s->nr, s->V, s->r_per_row, c);
    for (int a = 0; a < A; a++) {
      LLVMValueRef t = fz_kernel_offset(k, a, zero, c, s->rmask);
      s->roff[(size_t)g * (size_t)A + (size_t)a] = t;
      offs(s, g)[a] = LLVMBuildAdd(b, k->access[a].offset, t, "");
    }
  }

  /* nodes constant along the rows: once. A weight row (COLC) is loaded
   * here only where a block walks many rows (inner-outer plans); an
   * inner plan's block mostly has one row, and there it is cheaper to
   * load it where it is first used, after the rounds, than to keep it
   * live across their barriers. */
  for (int d = 0; d < p->rank; d++)
    s->row_coord[d] = zero;
  for (int a = 0; a < A; a++)
    s->base[a] = k->access[a].offset;
  for (int i = 0; i < p->num_nodes; i++) {
    if (p->nodes[i].kind == FZ_NODE_STORE)
      continue;
    if (s->space[i] == PS_CONST && !eval_row(s, i))
      return false;
    /* (an outer plan's column results are read back in later rounds) */
    for (int g = 0; g < s->G && s->space[i] == PS_COLC && s->outer &&
                    p->nodes[i].phase == 0;
         g++)
      if (!eval_full(s, i, g))
        return false;
  }
  return !e->failed;
}

/* ---- a row --------------------------------------------------------------- */

static void row_start(pers *s, LLVMValueRef row) {
  fz_kernel *k = s->k;
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = s->p;
  int A = p->num_accesses;
  LLVMValueRef per_row = s->nk > 0 ? k->ext[s->kaxes[s->nk - 1]] : NULL;
  fz_kernel_decompose(k, row, s->kaxes, s->nk, 1, per_row, s->row_coord);
  for (int a = 0; a < A; a++) {
    s->base[a] =
        fz_kernel_offset(k, a, k->access[a].offset, s->row_coord, s->kmask);
    fz_set_name(s->base[a], "base.a%d", a);
    for (int g = 0; g < s->G; g++) {
      offs(s, g)[a] =
          s->chain ? NULL /* group_offsets, where first used */
                   : LLVMBuildNSWAdd(
                         b, s->base[a],
                         s->roff[(size_t)g * (size_t)A + (size_t)a], "");
    }
  }
  for (int g = 0; g < s->G; g++)
    for (int i = 0; i < s->nk; i++)
      s->coord[g][s->kaxes[i]] = s->row_coord[s->kaxes[i]];
}

/* Every load of the row, before any arithmetic. */
static bool row_loads(pers *s) {
  const fz_plan *p = s->p;
  s->k->e.bf16_by_bits = false;
  for (int i = 0; i < p->num_nodes; i++) {
    if (p->nodes[i].kind != FZ_NODE_LOAD)
      continue;
    if (s->space[i] == PS_ROW && !eval_row(s, i))
      return false;
    for (int g = 0; g < s->G && s->space[i] == PS_FULL; g++)
      if (!eval_full(s, i, g))
        return false;
  }
  return true;
}

/* The phase whose round first has node i's value. */
static int ready_in(const fz_plan *p, int i) { return p->nodes[i].phase; }

/* The thread's groups and lanes of row REDUCE node `o`'s operand, one
 * value (groups past the row's end give the identity). */
static LLVMValueRef thread_partial(pers *s, const fz_reduce_set *rs, int r) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  const fz_plan_node *n = &p->nodes[rs->node[r]];
  int o = n->operands[0], at = n->num_operands > 1 ? n->operands[1] : -1;
  fz_dtype from = p->nodes[o].dtype;
  LLVMValueRef id = fz_reduce_identity(e, rs->code[r], rs->acc[r]);
  /* one chain per lane over the groups, then the lanes pairwise */
  LLVMValueRef lane[FZ_LOWER_MAX_LANES];
  for (int l = 0; l < s->V; l++) {
    lane[l] = id;
    for (int g = 0; g < s->G; g++) {
      LLVMValueRef v =
          fz_reduce_input(e, rs->code[r], rs->acc[r], pers_full(s, g, o)[l],
                          from, at >= 0 ? pers_full(s, g, at)[l] : NULL);
      if (!v)
        return NULL;
      if (fz_reduce_is_welford(rs->code[r])) { /* a group past the end: none */
        LLVMValueRef u = fz_welford_update(e, rs->acc[r], lane[l], v);
        lane[l] = LLVMBuildSelect(b, s->gactive[g], u, lane[l], "");
        continue;
      }
      v = LLVMBuildSelect(b, s->gactive[g], v, id, "");
      lane[l] = fz_reduce_combine(e, rs->code[r], rs->acc[r], lane[l], v);
      if (!lane[l])
        return NULL;
    }
  }
  for (int w = 1; w < s->V; w *= 2)
    for (int l = 0; l + w < s->V; l += 2 * w)
      if (!(lane[l] = fz_reduce_combine(e, rs->code[r], rs->acc[r], lane[l],
                                        lane[l + w])))
        return NULL;
  return lane[0];
}

/* The vars and means of the round that share an entry's Welford state:
 * their values from that state. */
static bool welford_partners(pers *s, const fz_reduce_set *rs,
                             LLVMValueRef *vals) {
  fz_emit *e = &s->k->e;
  const fz_plan *p = s->p;
  for (int i = 0; i < p->num_nodes; i++) {
    if (p->nodes[i].kind != FZ_NODE_REDUCE || *row_done(s, i) ||
        !fz_reduce_shares_state(p, rs, i))
      continue;
    int r = fz_reduce_entry_of(p, rs, i);
    LLVMValueRef v = fz_reduce_value(e, &p->nodes[i], rs->acc[r], vals[r]);
    if (!v)
      return false;
    fz_set_name(v, "row.n%d", i);
    s->rowt[(size_t)i * (size_t)s->V] = v;
    *row_done(s, i) = true;
  }
  return !e->failed;
}

/* The row REDUCE nodes of phase round + 1 from the threads' partials
 * vals[r], all-reduced over the row. */
static bool row_combine(pers *s, int round, const fz_reduce_set *rs,
                        LLVMValueRef *vals) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  const fz_plan *p = s->p;
  fz_reduce_layout lay;
  row_layout(p, rs, &lay);
  lay.warps = s->warps;
  fz_block_state bs = s->bs;
  if (lay.warps_per_row > 1 && (round & 1)) {
    LLVMValueRef off = fz_emit_i32(e, (unsigned)row_half_bytes(s));
    bs.scratch = LLVMBuildInBoundsGEP2(e->b, e->t_i8, s->bs.scratch, &off, 1,
                                       "scratch.odd");
  }
  if (!fz_emit_row_combine(k, rs, &lay, &bs, vals))
    return false;
  /* a single prefetch buffer is refilled after the row's first block
   * barrier (persistent_prefetch.c says why): the combine's, with more
   * than one warp a row */
  if (s->pf_next) {
    if (lay.warps_per_row == 1)
      fz_emit_barrier(e);
    if (!fz_pers_prefetch_refill(s))
      return false;
  }
  if (p->cluster && !fz_pers_cluster_combine(s, rs, vals))
    return false;
  for (int r = 0; r < rs->count; r++) {
    if (lay.warps_per_row > 1 && !p->cluster &&
        !(vals[r] = shfl_lane0(e, vals[r], lay.warp_mask)))
      return false;
    int i = rs->node[r];
    LLVMValueRef v = fz_reduce_value(e, &p->nodes[i], rs->acc[r], vals[r]);
    if (!v)
      return false;
    fz_set_name(v, "row.n%d", i);
    s->rowt[(size_t)i * (size_t)s->V] = v;
    *row_done(s, i) = true;
  }
  return welford_partners(s, rs, vals);
}

/* A weights_early plan's weight rows (COLC loads), every group's, issued
 * once the last row reduction's partials are summed: their latency then
 * overlaps the combine's shuffles and barrier. */
static bool weight_loads(pers *s) {
  const fz_plan *p = s->p;
  for (int i = 0; i < p->num_nodes; i++)
    for (int g = 0; g < s->G && p->nodes[i].kind == FZ_NODE_LOAD &&
                    s->space[i] == PS_COLC;
         g++)
      if (!eval_full(s, i, g))
        return false;
  return true;
}

/* The row REDUCE nodes of phase round + 1, all-reduced over the row. */
static bool row_reduce(pers *s, int round, const fz_reduce_set *rs) {
  LLVMValueRef vals[FZ_LOWER_MAX_COLUMNS];
  for (int r = 0; r < rs->count; r++)
    if (!(vals[r] = thread_partial(s, rs, r)))
      return false;
  if (s->p->weights_early && round == s->p->phases - 1 && !weight_loads(s))
    return false;
  if (!row_combine(s, round, rs, vals))
    return false;
  forget_refetchable(s);
  return true;
}

/* Column partials of the nodes whose operand is ready in this round, for
 * a row inside the space (an inactive group's are never published). */
static bool column_accumulate(pers *s, int round, LLVMValueRef live) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  for (int j = 0; j < s->ncol; j++) {
    const fz_plan_node *n = &p->nodes[s->colnode[j]];
    int o = n->operands[0];
    if (ready_in(p, o) != round)
      continue;
    fz_dtype acc = fz_reduce_acc_dtype(n->dtype);
    LLVMTypeRef t = fz_emit_reg_type(e, acc);
    for (int g = 0; g < s->G; g++)
      for (int l = 0; l < s->V; l++) {
        LLVMValueRef v =
            fz_emit_convert(e, pers_full(s, g, o)[l], p->nodes[o].dtype, acc);
        LLVMValueRef slot = *pers_colacc(s, j, g, l);
        LLVMValueRef a = LLVMBuildLoad2(b, t, slot, "");
        LLVMValueRef sum = v ? fz_reduce_combine(e, n->code, acc, a, v) : NULL;
        if (!sum)
          return false;
        LLVMBuildStore(b, LLVMBuildSelect(b, live, sum, a, ""), slot);
      }
  }
  return !e->failed;
}

static bool stored_in(const fz_plan *p, const fz_plan_node *n, int round) {
  return n->kind == FZ_NODE_STORE && n->space != FZ_SPACE_COLUMN &&
         ready_in(p, n->operands[0]) == round;
}

/* Stores whose value is ready in this round, for a row inside the space:
 * full-space ones for the groups inside the row, row-space ones by
 * tx == 0. Only stores sit behind the branches: every value they need
 * was computed before, where it dominates the rest of the row. */
static bool row_stores(pers *s, int round, LLVMValueRef live) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  const fz_plan *p = s->p;
  bool full = false, row = false;
  for (int i = 0; i < p->num_nodes; i++)
    if (stored_in(p, &p->nodes[i], round)) {
      full |= p->nodes[i].space != FZ_SPACE_ROW;
      row |= p->nodes[i].space == FZ_SPACE_ROW;
    }
  if (!full && !row)
    return true;
  for (int i = 0; i < p->num_nodes && full; i++)
    if (stored_in(p, &p->nodes[i], round) &&
        p->nodes[i].space != FZ_SPACE_ROW)
      group_offsets(s, p->nodes[i].access);
  char name[32];
  snprintf(name, sizeof name, "row.live.p%d", round);
  fz_if in_space;
  fz_if_begin(e, &in_space, live, name);
  size_t nodes = (size_t)p->num_nodes;
  bool *was = s->chain ? calloc(2 * nodes + 1, sizeof *was) : NULL;
  if (s->chain && !was) {
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    return false;
  }
  for (int g = 0; g < s->G && full; g++) {
    fz_if st;
    snprintf(name, sizeof name, "store.p%d.g%d", round, g);
    fz_if_begin(e, &st, s->gactive[g], name);
    bool late = deferred(s, g);
    if (late) { /* what the branch computes is forgotten after it */
      memcpy(was, group_done(s, g, 0), nodes * sizeof *was);
      memcpy(was + nodes, row_done(s, 0), nodes * sizeof *was);
      s->in_branch = true;
    }
    for (int i = 0; i < p->num_nodes; i++) {
      const fz_plan_node *n = &p->nodes[i];
      if (!stored_in(p, n, round) || n->space == FZ_SPACE_ROW)
        continue;
      if ((late && !eval_full(s, n->operands[0], g)) ||
          !fz_kernel_store_node(k, i, pers_full(s, g, 0),
                                group_offset(s, g, n->access), s->V)) {
        free(was);
        return false;
      }
    }
    if (late) {
      memcpy(group_done(s, g, 0), was, nodes * sizeof *was);
      memcpy(row_done(s, 0), was + nodes, nodes * sizeof *was);
      s->in_branch = false;
    }
    fz_if_end(e, &st);
  }
  free(was);
  if (row) {
    fz_if lead;
    snprintf(name, sizeof name, "row.store.p%d", round);
    /* one thread of the row: of the cluster's first block */
    LLVMValueRef first =
        LLVMBuildICmp(e->b, LLVMIntEQ, s->bs.tx, fz_emit_i32(e, 0), "");
    if (p->cluster)
      first = LLVMBuildAnd(
          e->b, first,
          LLVMBuildICmp(e->b, LLVMIntEQ, s->cl_rank, fz_emit_i32(e, 0), ""), "");
    fz_if_begin(e, &lead, first, name);
    for (int i = 0; i < p->num_nodes; i++) {
      const fz_plan_node *n = &p->nodes[i];
      if (stored_in(p, n, round) && n->space == FZ_SPACE_ROW &&
          !fz_kernel_store_node(k, i, s->rowt, s->base[n->access], 1))
        return false;
    }
    fz_if_end(e, &lead);
  }
  fz_if_end(e, &in_space);
  return !e->failed;
}

/* Round r of a row (r == phases: the last, without a row reduction):
 * what becomes ready in it is used at once, so that values die early
 * and few are live across the round's barrier:
 *   1. the values the round needs: operands of stores and column
 *      reductions ready in it, and of the row REDUCE nodes of phase r+1;
 *   2. column partials; 3. stores; 4. the row reduction. */
static bool row_round(pers *s, int round, LLVMValueRef live) {
  const fz_plan *p = s->p;
  fz_reduce_set rs = {0};
  if (round < p->phases)
    round_set(s, round, &rs);
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    bool wanted = (n->kind == FZ_NODE_REDUCE && n->space == FZ_SPACE_COLUMN &&
                   ready_in(p, n->operands[0]) == round) ||
                  stored_in(p, n, round);
    for (int r = 0; r < rs.count && !wanted; r++)
      wanted = rs.node[r] == i;
    if (!wanted)
      continue;
    if (n->kind == FZ_NODE_STORE && n->space == FZ_SPACE_ROW) {
      if (!eval_row(s, n->operands[0]))
        return false;
      continue;
    }
    for (int g = 0; g < s->G; g++) {
      if (n->kind == FZ_NODE_STORE && deferred(s, g))
        continue; /* in its store branch (row_stores) */
      for (int k = 0; k < (n->kind == FZ_NODE_REDUCE ? n->num_operands : 1);
           k++) /* an arg-reduction's position too */
        if (!eval_full(s, n->operands[k], g))
          return false;
    }
  }
  if (!column_accumulate(s, round, live) || !row_stores(s, round, live))
    return false;
  return rs.count == 0 || row_reduce(s, round, &rs);
}

/* ---- the kernel ---------------------------------------------------------- */

/* The tiles a block walks: block_y rows each, from tile ctaid in steps
 * of nctaid; `last` is the last row of the space. */
typedef struct tile_walk {
  LLVMValueRef kept, tiles, ctaid, nctaid, last;
} tile_walk;

static bool tile_walk_init(pers *s, tile_walk *w) {
  fz_kernel *k = s->k;
  LLVMBuilderRef b = k->e.b;
  w->kept = k->groups;
  w->tiles = LLVMBuildUDiv(
      b, LLVMBuildAdd(b, w->kept, fz_kernel_idx(k, s->p->block_y - 1), ""),
      fz_kernel_idx(k, s->p->block_y), "tiles");
  /* a cluster plan's rows are walked by clusters */
  w->ctaid = fz_kernel_sreg(k, s->p->cluster ? "clusterid.x" : "ctaid.x");
  w->nctaid = fz_kernel_sreg(k, s->p->cluster ? "nclusterid.x" : "nctaid.x");
  w->last = NULL; /* tile_walk_last, where the caller's guards are done */
  if (w->ctaid && w->nctaid && s->p->column_slices > 1) {
    /* the blocks of one slice walk the tiles (plan.h) */
    LLVMValueRef S = fz_kernel_idx(k, s->p->column_slices);
    w->ctaid = LLVMBuildUDiv(b, w->ctaid, S, "slice.block");
    w->nctaid = LLVMBuildUDiv(b, w->nctaid, S, "slice.blocks");
  }
  return w->ctaid && w->nctaid;
}

static void tile_walk_last(pers *s, tile_walk *w) {
  w->last = LLVMBuildSub(s->k->e.b, w->kept, fz_kernel_idx(s->k, 1), "");
}

/* This thread's row of tile `tile`, and whether it lies inside the space
 * (*live); a row past the end is clamped to the last one. */
static LLVMValueRef tile_row(pers *s, const tile_walk *w, LLVMValueRef tile,
                             LLVMValueRef *live) {
  LLVMBuilderRef b = s->k->e.b;
  LLVMValueRef row = LLVMBuildAdd(
      b, LLVMBuildMul(b, tile, fz_kernel_idx(s->k, s->p->block_y), ""), s->ty,
      "row");
  *live = LLVMBuildICmp(b, LLVMIntULT, row, w->kept, "row.in");
  return LLVMBuildSelect(b, *live, row, w->last, "row.clamped");
}

/* This thread's row of tile `tile`, clamped to the last row (a row only
 * read: a prefetch). */
static LLVMValueRef clamped_row(pers *s, const tile_walk *w,
                                LLVMValueRef tile) {
  LLVMBuilderRef b = s->k->e.b;
  LLVMValueRef row = LLVMBuildAdd(
      b, LLVMBuildMul(b, tile, fz_kernel_idx(s->k, s->p->block_y), ""), s->ty,
      "");
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULE, row, w->last, ""),
                         row, w->last, "");
}

static bool body(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  tile_walk w;
  if (!entry(s) || !tile_walk_init(s, &w))
    return false;
  tile_walk_last(s, &w);
  if (!fz_pers_trace(s, FZ_TRACE_START, NULL))
    return false;
  if (p->prefetch) {
    LLVMValueRef first = clamped_row(s, &w, w.ctaid);
    LLVMValueRef any = LLVMBuildICmp(b, LLVMIntULT, w.ctaid, w.tiles, "");
    LLVMValueRef second = NULL, any_second = NULL;
    if (p->prefetch_deep) { /* three buffers: the tile after the first too */
      LLVMValueRef t = LLVMBuildAdd(b, w.ctaid, w.nctaid, "tile.second");
      second = clamped_row(s, &w, t);
      any_second = LLVMBuildICmp(b, LLVMIntULT, t, w.tiles, "");
    }
    if (!fz_pers_prefetch_begin(s, first, any, second, any_second))
      return false;
  }
  /* A dynamic block has one block a row (plan.h): no loop over rows,
   * whose backend would keep each group's run-time offset as an
   * induction variable of its own. */
  bool walk = !p->dynamic_block;
  fz_loop tl;
  fz_if one;
  LLVMValueRef tile = w.ctaid;
  if (walk)
    tile = fz_emit_loop_begin(e, &tl, w.ctaid, NULL, w.tiles, "tile");
  else
    fz_if_begin(e, &one,
                LLVMBuildICmp(b, LLVMIntULT, w.ctaid, w.tiles, ""), "tile");
  LLVMValueRef live;
  row_start(s, tile_row(s, &w, tile, &live));
  bool single = p->prefetch && p->prefetch_single;
  if (p->prefetch) {
    LLVMValueRef next = LLVMBuildAdd(b, tile, w.nctaid, "tile.next");
    LLVMValueRef row = clamped_row(s, &w, next);
    LLVMValueRef more = LLVMBuildICmp(b, LLVMIntULT, next, w.tiles, "");
    if (single) { /* the copies go out within the row (row_combine) */
      s->pf_next = row;
      s->pf_more = more;
    }
    /* three buffers: the copies go out for the tile after the next */
    LLVMValueRef ahead = row, more_ahead = more;
    if (p->prefetch_deep) {
      LLVMValueRef after = LLVMBuildAdd(b, next, w.nctaid, "tile.ahead");
      ahead = clamped_row(s, &w, after);
      more_ahead = LLVMBuildICmp(b, LLVMIntULT, after, w.tiles, "");
    }
    if (!(single ? fz_pers_prefetch_wait(s)
                 : fz_pers_prefetch_next(s, row, ahead, more_ahead)))
      return false;
  }
  if (!row_loads(s))
    return false;
  for (int r = 0; r <= p->phases; r++)
    if (!row_round(s, r, live))
      return false;
  /* a row without a row reduction gave no barrier to refill after */
  if (s->pf_next) {
    fz_emit_barrier(e);
    if (!fz_pers_prefetch_refill(s))
      return false;
  }
  /* the next tile's first round writes the half this tile's last read */
  if (walk && s->row_scratch && (p->phases & 1))
    fz_emit_barrier(e);
  if (p->prefetch && !single)
    fz_pers_prefetch_end(s);
  if (p->trace_phases &&
      !fz_pers_trace(s, FZ_TRACE_FIRST_ROW,
                     LLVMBuildICmp(b, LLVMIntEQ, tile, w.ctaid, "")))
    return false;
  if (walk)
    fz_emit_loop_end(e, &tl, w.nctaid);
  else
    fz_if_end(e, &one);

  if (!fz_pers_trace(s, FZ_TRACE_ROWS, NULL) ||
      (s->outer && !fz_pers_columns(s, -1)))
    return false;
  if (p->cluster)
    fz_pers_cluster_exit(s);
  LLVMBuildRetVoid(b);
  return !e->failed;
}

/* ---- outer plans: rows held across the grid ------------------------------ */

/* The tables of held row t: values, evaluation flags and the row table
 * (each row has its own row-constant values). */
typedef struct held_row {
  LLVMValueRef *full, *rowt, row, live;
  bool *done;
} held_row;

static void use_row(pers *s, held_row *h) {
  s->full = h->full;
  s->rowt = h->rowt;
  s->done = h->done;
  row_start(s, h->row);
}

/* Column node i's results, res[g * V + l], as a value of `count` held
 * rows' tables: what the rows' later rounds read. */
static void inject_column(pers *s, held_row *rows, int count, int i,
                          const LLVMValueRef *res) {
  for (int t = 0; t < count; t++)
    for (int g = 0; g < s->G; g++) {
      LLVMValueRef *slot = rows[t].full + ((size_t)g * (size_t)s->p->num_nodes +
                                           (size_t)i) * (size_t)s->V;
      for (int l = 0; l < s->V; l++)
        slot[l] = res[g * s->V + l];
      rows[t].done[(size_t)g * (size_t)s->p->num_nodes + (size_t)i] = true;
    }
}

/* A launch with fewer blocks than the plan's would leave rows unread: it
 * traps (a failed launch, never a wrong answer); the executor refuses
 * such a launch before it happens. */
static bool guard_rows_held(pers *s, LLVMValueRef tiles, LLVMValueRef nctaid) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  LLVMValueRef cover = LLVMBuildMul(
      b, nctaid, fz_kernel_idx(s->k, s->held), "tiles.held");
  return fz_pers_trap_if(s, LLVMBuildICmp(b, LLVMIntULT, cover, tiles, ""), "grid");
}

static void held_tables_free(held_row *rows, int count) {
  for (int t = 0; rows && t < count; t++) {
    free(rows[t].full);
    free(rows[t].rowt);
    free(rows[t].done);
  }
  free(rows);
}

/* Tables for `count` held rows, each a copy of what the entry computed
 * (constants and phase-0 weight rows); NULL when out of memory. */
static held_row *held_tables(pers *s, int count) {
  size_t nodes = (size_t)s->p->num_nodes, G = (size_t)s->G, V = (size_t)s->V;
  held_row *rows = calloc((size_t)count, sizeof *rows);
  bool ok = rows != NULL;
  for (int t = 0; ok && t < count; t++) {
    rows[t].full = calloc(G * nodes * V + 1, sizeof *rows[t].full);
    rows[t].rowt = calloc(nodes * V + 1, sizeof *rows[t].rowt);
    rows[t].done = calloc((G + 1) * nodes + 1, sizeof *rows[t].done);
    ok = rows[t].full && rows[t].rowt && rows[t].done;
    if (ok) {
      memcpy(rows[t].full, s->full, (G * nodes * V + 1) * sizeof *s->full);
      memcpy(rows[t].rowt, s->rowt, (nodes * V + 1) * sizeof *s->rowt);
      memcpy(rows[t].done, s->done, ((G + 1) * nodes + 1) * sizeof *s->done);
    }
  }
  if (ok)
    return rows;
  fz_emit_fail(&s->k->e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  held_tables_free(rows, count);
  return NULL;
}

/* Between rounds r and r + 1: the combine of round r's column reductions
 * across the slice or the grid (persistent_slices.c,
 * persistent_columns.c), whose results then become values of the `count`
 * tables of rows. res has room for a round's column results: [g * V + l],
 * or for a column-sliced plan (one group) [j * V + l]. */
static bool combine_round(pers *s, int r, held_row *rows, int count,
                          LLVMValueRef *res) {
  const fz_plan *p = s->p;
  bool ok = true;
  if (p->column_slices > 1) {
    ok = fz_pers_slice_columns(s, r, res);
    for (int j = 0; ok && j < s->ncol; j++)
      if (p->nodes[s->colnode[j]].phase == r + 1)
        inject_column(s, rows, count, s->colnode[j],
                      res + (size_t)j * (size_t)s->V);
    return ok;
  }
  ok = fz_pers_columns(s, r);
  for (int j = 0; ok && j < s->ncol; j++) {
    if (p->nodes[s->colnode[j]].phase != r + 1)
      continue;
    ok = fz_pers_column_results(s, r, j, res);
    if (ok)
      inject_column(s, rows, count, s->colnode[j], res);
  }
  return ok;
}

/* An outer plan (batch norm): the block's `held` tiles (tile ctaid + t *
 * nctaid) are loaded once, then for each round r: every held row's round
 * (column partials of the reductions whose operand is ready in r, stores
 * of what is ready in r), and, between rounds, the grid-wide combine of
 * round r's column reductions (persistent_columns.c), whose results are
 * then values of every held row. */
static bool body_held(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  if (!entry(s))
    return false;
  size_t G = (size_t)s->G, V = (size_t)s->V;
  held_row *rows = held_tables(s, s->held);
  LLVMValueRef *res = calloc((G + (size_t)s->ncol) * V + 1, sizeof *res);
  bool ok = rows && res;
  LLVMValueRef *own_full = s->full, *own_rowt = s->rowt;
  bool *own_done = s->done;
  if (rows && !res)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");

  tile_walk w;
  ok = ok && tile_walk_init(s, &w) && guard_rows_held(s, w.tiles, w.nctaid);
  if (ok)
    tile_walk_last(s, &w);
  for (int t = 0; ok && t < s->held; t++) {
    LLVMValueRef tile = LLVMBuildAdd(
        b, w.ctaid, LLVMBuildMul(b, w.nctaid, fz_kernel_idx(k, t), ""), "");
    rows[t].row = tile_row(s, &w, tile, &rows[t].live);
    use_row(s, &rows[t]);
    ok = row_loads(s);
  }
  for (int r = 0; ok && r <= p->phases; r++) {
    for (int t = 0; ok && t < s->held; t++) {
      use_row(s, &rows[t]);
      ok = row_round(s, r, rows[t].live);
    }
    if (!ok || r == p->phases)
      break;
    ok = combine_round(s, r, rows, s->held, res);
  }
  s->full = own_full;
  s->rowt = own_rowt;
  s->done = own_done;
  held_tables_free(rows, s->held);
  free(res);
  if (!ok)
    return false;
  LLVMBuildRetVoid(b);
  return !e->failed;
}

/* The thread's held rows inside the space (index type): rows first,
 * first + step, ... of which the plan holds `held`, up to the last row. */
static LLVMValueRef held_inside(pers *s, const tile_walk *w, LLVMValueRef first,
                                LLVMValueRef step) {
  fz_kernel *k = s->k;
  LLVMBuilderRef b = k->e.b;
  LLVMValueRef after = LLVMBuildAdd(
      b, LLVMBuildUDiv(b, LLVMBuildSub(b, w->last, first, ""), step, ""),
      fz_kernel_idx(k, 1), "");
  LLVMValueRef held = fz_kernel_idx(k, s->held);
  LLVMValueRef most = LLVMBuildSelect(
      b, LLVMBuildICmp(b, LLVMIntULT, after, held, ""), after, held, "");
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULE, first, w->last, ""),
                         most, fz_kernel_idx(k, 0), "held.inside");
}

/* An outer plan whose held rows live in shared memory (plan->held_shared,
 * persistent_held.c): the thread's rows first + t * step, t < inside (its
 * held rows inside the space), are copied into shared memory once; then
 * each round walks them in a loop, every trip starting from a copy of
 * rows[0]'s tables (the entry's values and the column results so far),
 * its row's inputs read back from the slots and all else recomputed.
 * Rows past the end have no trip: nothing to mask. */
static bool body_held_shared(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  if (!entry(s))
    return false;
  size_t G = (size_t)s->G, V = (size_t)s->V;
  /* start: [0], a trip's working copy: [1] */
  held_row *rows = held_tables(s, 2);
  LLVMValueRef *res = calloc((G + (size_t)s->ncol) * V + 1, sizeof *res);
  bool ok = rows && res;
  LLVMValueRef *own_full = s->full, *own_rowt = s->rowt;
  bool *own_done = s->done;
  if (rows && !res)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");

  tile_walk w;
  ok = ok && tile_walk_init(s, &w) && guard_rows_held(s, w.tiles, w.nctaid);
  LLVMValueRef first = NULL, step = NULL, inside = NULL;
  if (ok) {
    tile_walk_last(s, &w);
    LLVMValueRef by = fz_kernel_idx(k, p->block_y);
    first = LLVMBuildAdd(b, LLVMBuildMul(b, w.ctaid, by, ""), s->ty, "first");
    step = LLVMBuildMul(b, w.nctaid, by, "step");
    inside = held_inside(s, &w, first, step);
    fz_pers_held_declare(s);
  }
  LLVMValueRef zero = fz_kernel_idx(k, 0), one = fz_kernel_idx(k, 1);
  fz_loop copies;
  if (ok) {
    LLVMValueRef t = fz_emit_loop_begin(e, &copies, zero, NULL, inside, "held");
    row_start(s, LLVMBuildAdd(b, first, LLVMBuildMul(b, t, step, ""), "row"));
    ok = fz_pers_held_copy(s, t);
    fz_emit_loop_end(e, &copies, one);
    fz_pers_held_wait(s);
  }
  size_t nodes = (size_t)p->num_nodes;
  LLVMValueRef live = LLVMConstInt(e->t_i1, 1, 0);
  for (int r = 0; ok && r <= p->phases; r++) {
    fz_loop trip;
    LLVMValueRef t = fz_emit_loop_begin(e, &trip, zero, NULL, inside, "held");
    held_row *now = &rows[1];
    memcpy(now->full, rows[0].full, (G * nodes * V + 1) * sizeof *now->full);
    memcpy(now->rowt, rows[0].rowt, (nodes * V + 1) * sizeof *now->rowt);
    memcpy(now->done, rows[0].done, ((G + 1) * nodes + 1) * sizeof *now->done);
    now->row = LLVMBuildAdd(b, first, LLVMBuildMul(b, t, step, ""), "row");
    use_row(s, now);
    s->held_t = t;
    ok = row_round(s, r, live);
    s->held_t = NULL;
    fz_emit_loop_end(e, &trip, one);
    if (!ok || r == p->phases)
      break;
    /* (the trip's values stay in its loop) */
    s->full = rows[0].full;
    s->rowt = rows[0].rowt;
    s->done = rows[0].done;
    ok = combine_round(s, r, rows, 1, res);
  }
  s->full = own_full;
  s->rowt = own_rowt;
  s->done = own_done;
  held_tables_free(rows, 2);
  free(res);
  if (!ok)
    return false;
  LLVMBuildRetVoid(b);
  return !e->failed;
}

/* ---- for persistent_multipass.c ----------------------------------------- */

bool fz_pers_setup(pers *s, fz_kernel *k) { return setup(s, k); }
void fz_pers_teardown(pers *s) { teardown(s); }

bool fz_pers_eval_row(pers *s, int i) { return eval_row(s, i); }
bool fz_pers_eval_full(pers *s, int i, int g) { return eval_full(s, i, g); }
void fz_pers_round_set(pers *s, int round, fz_reduce_set *rs) {
  round_set(s, round, rs);
}
size_t fz_pers_row_half_bytes(pers *s) { return row_half_bytes(s); }
LLVMValueRef fz_pers_thread_partial(pers *s, const fz_reduce_set *rs, int r) {
  return thread_partial(s, rs, r);
}
bool fz_pers_row_combine(pers *s, int round, const fz_reduce_set *rs,
                         LLVMValueRef *vals) {
  return row_combine(s, round, rs, vals);
}

bool fz_emit_persistent(fz_kernel *k) {
  pers s = {0};
  bool ok = setup(&s, k) && (!s.held                ? body(&s)
                              : k->e.plan->held_shared ? body_held_shared(&s)
                                                       : body_held(&s));
  teardown(&s);
  return ok && !k->e.failed;
}
