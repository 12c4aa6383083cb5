/* persistent_multipass.c - the kernel of a multipass plan: a row that
 * stays on chip nowhere, walked once a round (lib/sched/
 * persistent_multipass.c says when).
 *
 *   entry:  the row's length in groups; the CONST nodes once;
 *   rows:   for (row = ctaid.x; row < rows; row += nctaid.x), one block a
 *           row (block_y is 1), the row's offset bases; then rounds
 *           r = 0 .. phases:
 *     1. the row-constant values ready in round r (mean, rstd, the
 *        reductions of earlier rounds), and the row-space stores of r by
 *        thread 0: computed before the walk so that they dominate it and
 *        the later rounds;
 *     2. the walk: for (c = 0; c < groups; c += persistent * block_x) the
 *        thread's groups c + tx + k * block_x (k < persistent; a group
 *        past the row's end reads group 0 and counts for nothing): the
 *        loads the round needs, all of them before any arithmetic, then
 *        the values of the round's row REDUCE nodes folded into the
 *        thread's partials (registers), and the full-space stores of r;
 *     3. for r < phases, the partials combined over the block
 *        (persistent.c's row combine, alternating halves of the scratch
 *        as there).
 * Every value of a group is computed afresh in each walk: inputs are
 * read again from global memory, pointwise values recomputed, nothing of
 * the full space is kept between rounds.
 */
#include "persistent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static LLVMValueRef i32c(fz_emit *e, unsigned v) {
  return LLVMConstInt(e->t_i32, v, 0);
}

static LLVMValueRef *group_offsets(pers *s, int g) {
  return s->roff + (size_t)(s->G + g) * (size_t)s->p->num_accesses;
}

static bool entry(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  size_t half = fz_pers_row_half_bytes(s);
  s->row_scratch = half > 0;
  fz_reduce_layout shared = {0};
  shared.scratch_bytes = 2 * half;
  fz_reduce_declare_shared(k, &shared, &s->bs);
  s->bs.tid = fz_emit_sreg(e, "tid.x");
  if (!s->bs.tid)
    return false;
  s->bs.tx = s->bs.tid;
  s->bs.ty = i32c(e, 0);
  s->tx = LLVMBuildZExt(b, s->bs.tx, e->t_idx, "tx");
  s->ty = fz_kernel_idx(k, 0);
  s->row_tx = s->tx;
  s->row_threads = p->block_x;

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
  LLVMValueRef zero = fz_kernel_idx(k, 0);
  for (int d = 0; d < p->rank; d++)
    s->row_coord[d] = zero;
  for (int a = 0; a < p->num_accesses; a++)
    s->base[a] = k->access[a].offset;
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind != FZ_NODE_STORE && s->space[i] == PS_CONST &&
        !fz_pers_eval_row(s, i))
      return false;
  return !e->failed;
}

static void row_start(pers *s, LLVMValueRef row) {
  fz_kernel *k = s->k;
  const fz_plan *p = s->p;
  LLVMValueRef per_row = s->nk > 0 ? k->ext[s->kaxes[s->nk - 1]] : NULL;
  fz_kernel_decompose(k, row, s->kaxes, s->nk, 1, per_row, s->row_coord);
  for (int a = 0; a < p->num_accesses; a++) {
    s->base[a] =
        fz_kernel_offset(k, a, k->access[a].offset, s->row_coord, s->kmask);
    fz_set_name(s->base[a], "base.a%d", a);
  }
}

static bool stored_in(const fz_plan *p, const fz_plan_node *n, int round,
                      fz_space space) {
  return n->kind == FZ_NODE_STORE && n->space == space &&
         p->nodes[n->operands[0]].phase == round;
}

/* Step 1: the row-constant values of round `round`, and its row stores. */
static bool row_values(pers *s, int round) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  const fz_plan *p = s->p;
  bool stores = false;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    stores |= stored_in(p, n, round, FZ_SPACE_ROW);
    if (n->kind != FZ_NODE_STORE && n->kind != FZ_NODE_REDUCE &&
        s->space[i] == PS_ROW && n->phase <= round && !fz_pers_eval_row(s, i))
      return false;
  }
  if (!stores)
    return true;
  fz_if lead;
  char name[32];
  snprintf(name, sizeof name, "row.store.p%d", round);
  fz_if_begin(e, &lead,
              LLVMBuildICmp(e->b, LLVMIntEQ, s->bs.tx, i32c(e, 0), ""), name);
  for (int i = 0; i < p->num_nodes; i++)
    if (stored_in(p, &p->nodes[i], round, FZ_SPACE_ROW) &&
        !fz_kernel_store_node(k, i, s->rowt, s->base[p->nodes[i].access], 1))
      return false;
  fz_if_end(e, &lead);
  return !e->failed;
}

/* The groups of the trip starting at group c: positions, coordinates and
 * offsets, and fresh tables (every value is computed again). */
static void trip_groups(pers *s, LLVMValueRef c, bool masked) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  memset(s->done, 0, (size_t)s->G * (size_t)p->num_nodes * sizeof *s->done);
  LLVMValueRef zero = fz_kernel_idx(k, 0);
  LLVMValueRef first = LLVMBuildNUWAdd(b, c, s->tx, "");
  for (int g = 0; g < s->G; g++) {
    LLVMValueRef at = LLVMBuildNUWAdd(
        b, first, fz_kernel_idx(k, (int64_t)g * p->block_x), "");
    if (masked) {
      s->gactive[g] = LLVMBuildICmp(b, LLVMIntULT, at, s->r_groups, "");
      fz_set_name(s->gactive[g], "active.g%d", g);
      s->g[g] = LLVMBuildSelect(b, s->gactive[g], at, zero, "");
    } else {
      s->gactive[g] = LLVMConstInt(e->t_i1, 1, 0);
      s->g[g] = at;
    }
    fz_set_name(s->g[g], "g%d", g);
    LLVMValueRef *co = s->coord[g];
    for (int d = 0; d < p->rank; d++)
      co[d] = zero;
    fz_kernel_decompose(k, s->g[g], s->raxes, s->nr, s->V, s->r_per_row, co);
    for (int i = 0; i < s->nk; i++)
      co[s->kaxes[i]] = s->row_coord[s->kaxes[i]];
    for (int a = 0; a < p->num_accesses; a++)
      group_offsets(s, g)[a] = LLVMBuildNSWAdd(
          b, s->base[a], fz_kernel_offset(k, a, zero, co, s->rmask), "");
  }
}

/* Whether node i is computed in a walk (per group): FULL and COLC. */
static bool in_walk(const pers *s, int i) {
  return s->space[i] == PS_FULL || s->space[i] == PS_COLC;
}

/* From the roots marked in needed[], what a walk computes to get them:
 * the full-space nodes they read, through to their loads (operands come
 * before their users, so one sweep down the nodes is enough). */
static void mark_needed(const pers *s, bool *needed) {
  for (int i = s->p->num_nodes - 1; i >= 0; i--) {
    const fz_plan_node *n = &s->p->nodes[i];
    needed[i] = needed[i] && in_walk(s, i);
    for (int k = 0; k < n->num_operands && needed[i]; k++)
      needed[n->operands[k]] = true;
  }
}

static bool walk_trips(pers *s, int round, const fz_reduce_set *rs,
                       LLVMValueRef *acc, const bool *needed, bool stores);
static bool trip(pers *s, int round, const fz_reduce_set *rs,
                 LLVMValueRef *acc, const bool *needed, bool stores,
                 LLVMValueRef c, bool masked);

/* Step 2: the walk of round `round`; acc[r] holds the thread's partial of
 * the round's entry r. */
static bool walk(pers *s, int round, const fz_reduce_set *rs,
                 LLVMValueRef *acc) {
  fz_emit *e = &s->k->e;
  const fz_plan *p = s->p;
  bool *needed = calloc((size_t)p->num_nodes + 1, sizeof *needed);
  if (!needed)
    return fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory"), false;
  for (int r = 0; r < rs->count; r++) {
    const fz_plan_node *n = &p->nodes[rs->node[r]];
    for (int o = 0; o < n->num_operands; o++)
      needed[n->operands[o]] = true;
  }
  bool stores = false;
  for (int i = 0; i < p->num_nodes; i++)
    if (stored_in(p, &p->nodes[i], round, FZ_SPACE_FULL)) {
      needed[p->nodes[i].operands[0]] = true;
      stores = true;
    }
  mark_needed(s, needed);
  bool ok = (!rs->count && !stores) || walk_trips(s, round, rs, acc, needed,
                                                   stores);
  free(needed);
  return ok;
}

/* The walk: whole trips, whose groups all lie inside the row, in a
 * loop without masks (so that every load of a trip is issued before its
 * stores), then the last, partial trip, if any, masked. */
static bool walk_trips(pers *s, int round, const fz_reduce_set *rs,
                       LLVMValueRef *acc, const bool *needed, bool stores) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMValueRef step = fz_kernel_idx(k, (int64_t)s->G * (int64_t)s->p->block_x);
  char name[32];
  snprintf(name, sizeof name, "walk.p%d", round);
  fz_loop l;
  LLVMValueRef c = fz_emit_loop_begin(
      e, &l, fz_kernel_idx(k, 0),
      LLVMBuildSub(e->b, step, fz_kernel_idx(k, 1), ""), s->r_groups, name);
  if (!trip(s, round, rs, acc, needed, stores, c, false))
    return false;
  fz_emit_loop_end(e, &l, step);
  fz_if tail;
  snprintf(name, sizeof name, "walk.p%d.tail", round);
  fz_if_begin(e, &tail, LLVMBuildICmp(e->b, LLVMIntULT, l.iv, s->r_groups, ""),
              name);
  if (!trip(s, round, rs, acc, needed, stores, l.iv, true))
    return false;
  fz_if_end(e, &tail);
  return !e->failed;
}

/* One trip from group c: the loads, the values, the partials folded
 * into acc[], the stores. */
static bool trip(pers *s, int round, const fz_reduce_set *rs,
                 LLVMValueRef *acc, const bool *needed, bool stores,
                 LLVMValueRef c, bool masked) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  char name[32];
  trip_groups(s, c, masked);
  for (int i = 0; i < p->num_nodes; i++)
    for (int g = 0; g < s->G && needed[i] && p->nodes[i].kind == FZ_NODE_LOAD;
         g++)
      if (!fz_pers_eval_full(s, i, g))
        return false;
  for (int g = 0; g < s->G; g++) {
    for (int r = 0; r < rs->count; r++) {
      const fz_plan_node *n = &p->nodes[rs->node[r]];
      for (int o = 0; o < n->num_operands; o++) /* an arg's position too */
        if (!fz_pers_eval_full(s, n->operands[o], g))
          return false;
    }
    for (int i = 0; i < p->num_nodes; i++)
      if (stored_in(p, &p->nodes[i], round, FZ_SPACE_FULL) &&
          !fz_pers_eval_full(s, p->nodes[i].operands[0], g))
        return false;
  }
  for (int r = 0; r < rs->count; r++) {
    LLVMTypeRef t = fz_reduce_state_type(e, rs->code[r], rs->acc[r]);
    LLVMValueRef part = fz_pers_thread_partial(s, rs, r);
    LLVMValueRef sum =
        part ? fz_reduce_combine(e, rs->code[r], rs->acc[r],
                                 LLVMBuildLoad2(b, t, acc[r], ""), part)
             : NULL;
    if (!sum)
      return false;
    LLVMBuildStore(b, sum, acc[r]);
  }
  for (int g = 0; g < s->G && stores; g++) {
    fz_if st;
    snprintf(name, sizeof name, "store.p%d.g%d", round, g);
    fz_if_begin(e, &st, s->gactive[g], name);
    for (int i = 0; i < p->num_nodes; i++) {
      const fz_plan_node *n = &p->nodes[i];
      if (stored_in(p, n, round, FZ_SPACE_FULL) &&
          !fz_kernel_store_node(k, i, pers_full(s, g, 0),
                                group_offsets(s, g)[n->access], s->V))
        return false;
    }
    fz_if_end(e, &st);
  }
  return !e->failed;
}

static bool round_of_row(pers *s, int round) {
  fz_emit *e = &s->k->e;
  const fz_plan *p = s->p;
  if (!row_values(s, round))
    return false;
  fz_reduce_set rs = {0};
  if (round < p->phases)
    fz_pers_round_set(s, round, &rs);
  LLVMValueRef acc[FZ_LOWER_MAX_COLUMNS];
  for (int r = 0; r < rs.count; r++) {
    char name[32];
    snprintf(name, sizeof name, "partial.p%d.%d", round, r);
    acc[r] = fz_pers_entry_alloca(
        s, fz_reduce_state_type(e, rs.code[r], rs.acc[r]), name);
    LLVMBuildStore(e->b, fz_reduce_identity(e, rs.code[r], rs.acc[r]),
                   acc[r]);
  }
  if (!walk(s, round, &rs, acc))
    return false;
  if (!rs.count)
    return true;
  LLVMValueRef vals[FZ_LOWER_MAX_COLUMNS];
  for (int r = 0; r < rs.count; r++)
    vals[r] = LLVMBuildLoad2(
        e->b, fz_reduce_state_type(e, rs.code[r], rs.acc[r]), acc[r], "");
  return fz_pers_row_combine(s, round, &rs, vals);
}

bool fz_pers_multipass_body(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  const fz_plan *p = s->p;
  if (!entry(s))
    return false;
  LLVMValueRef ctaid = fz_kernel_sreg(k, "ctaid.x");
  LLVMValueRef nctaid = fz_kernel_sreg(k, "nctaid.x");
  if (!ctaid || !nctaid)
    return false;
  fz_loop rows;
  LLVMValueRef row = fz_emit_loop_begin(e, &rows, ctaid, NULL, k->groups, "row");
  row_start(s, row);
  for (int r = 0; r <= p->phases; r++)
    if (!round_of_row(s, r))
      return false;
  /* the next row's first round writes the half this row's last read */
  if (s->row_scratch && (p->phases & 1))
    fz_emit_barrier(e);
  fz_emit_loop_end(e, &rows, nctaid);
  LLVMBuildRetVoid(e->b);
  return !e->failed;
}
