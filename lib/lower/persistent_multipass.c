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
 * the full space is kept between rounds. A row max whose next round's
 * sum is sum(exp(x - max)) (softmax) takes that sum along in its own
 * walk (an online sum, below), so softmax reads its row twice, not
 * three times; a round left without reductions or stores has no walk.
 */
#include "persistent.h"
#include "skeleton.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  s->bs.ty = fz_emit_i32(e, 0);
  s->tx = LLVMBuildZExt(b, s->bs.tx, e->t_idx, "tx");
  s->ty = fz_kernel_idx(k, 0);
  s->row_tx = s->tx;
  s->row_threads = p->block_x;

  fz_pers_row_groups(s);
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
              LLVMBuildICmp(e->b, LLVMIntEQ, s->bs.tx, fz_emit_i32(e, 0), ""), name);
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

/* A round's walk: its row REDUCE entries, the thread's partial of each
 * (acc[r], an alloca), for an amax entry that feeds an online sum the sum
 * node (online[r], else -1) and its partial (sum_acc[r]), what the walk
 * computes (needed[]) and whether it stores. */
typedef struct walk_ctx {
  int round;
  const fz_reduce_set *rs;
  LLVMValueRef acc[FZ_LOWER_MAX_COLUMNS];
  int online[FZ_LOWER_MAX_COLUMNS];
  LLVMValueRef sum_acc[FZ_LOWER_MAX_COLUMNS];
  int num_online;
  bool *needed;
  bool stores;
} walk_ctx;

/* ---- online softmax ------------------------------------------------------ *
 * A row max m = amax(x) whose only way into the next round's row sum is
 * s = sum(exp(x - m)) (softmax, log-softmax) need not wait for m: each
 * thread keeps a running max m_t and a sum s_t of exp(x - m_t), rescaled
 * by exp(m_old - m_new) whenever m_t grows, and after the walk s_t is
 * rescaled to the row's max (exp(m_t - m)) and summed over the block. So
 * the max and the sum take one walk instead of two. The exp(x - m_t) are
 * the plan's own sub and exp nodes (their dtypes and rounding) evaluated
 * at m_t instead of m; the sum differs from the sum at m only by those
 * roundings. */

/* The row sum node that round entry r (an amax) feeds that way
 * (fz_multipass_online_sum), with the exp and the sub evaluated per
 * element, or -1. */
static int online_sum(const pers *s, const fz_reduce_set *rs, int r) {
  const fz_plan *p = s->p;
  if (rs->code[r] != FZ_OP_AMAX)
    return -1;
  int i = fz_multipass_online_sum(p, rs->node[r]);
  if (i < 0 || fz_plan_reduce_acc(p, &p->nodes[i]) != rs->acc[r])
    return -1;
  int ex = p->nodes[i].operands[0];
  return s->space[ex] == PS_FULL && s->space[p->nodes[ex].operands[0]] == PS_FULL
             ? i
             : -1;
}

static LLVMValueRef float_const(fz_emit *e, fz_dtype d, double v) {
  return LLVMConstReal(fz_emit_reg_type(e, d), v);
}

/* exp(from - to), or exactly 1 where from == to (both -inf: no NaN). */
static LLVMValueRef rescale(fz_emit *e, fz_dtype acc, LLVMValueRef from,
                            LLVMValueRef to) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef diff = LLVMBuildFSub(b, from, to, "");
  LLVMValueRef ex = fz_emit_libdevice(e, "exp", &diff, 1);
  if (!ex)
    return NULL;
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, from, to, ""),
                         float_const(e, acc, 1.0), ex, "");
}

/* In a trip, after entry r's running max went from m_old to m_new: the
 * thread's online sum rescaled to m_new plus the trip's exp(x - m_new). */
static bool online_trip(pers *s, walk_ctx *w, int r, LLVMValueRef m_old,
                        LLVMValueRef m_new) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  fz_dtype acc = w->rs->acc[r];
  const fz_plan_node *mn = &p->nodes[w->rs->node[r]];
  const fz_plan_node *sn = &p->nodes[w->online[r]];
  int ex = sn->operands[0], d = p->nodes[ex].operands[0], x = mn->operands[0];
  LLVMValueRef m = fz_emit_convert(e, m_new, acc, mn->dtype);
  LLVMValueRef part = float_const(e, acc, 0.0);
  for (int g = 0; g < s->G && m; g++)
    for (int l = 0; l < s->V; l++) {
      LLVMValueRef args[2] = {pers_full(s, g, x)[l], m};
      LLVMValueRef dv = fz_emit_op_node(e, &p->nodes[d], args);
      LLVMValueRef ev = dv ? fz_emit_op_node(e, &p->nodes[ex], &dv) : NULL;
      LLVMValueRef v = ev ? fz_emit_convert(e, ev, p->nodes[ex].dtype, acc)
                          : NULL;
      if (!v)
        return false;
      v = LLVMBuildSelect(b, s->gactive[g], v, float_const(e, acc, 0.0), "");
      part = LLVMBuildFAdd(b, part, v, "");
    }
  LLVMValueRef scale = m ? rescale(e, acc, m_old, m_new) : NULL;
  if (!scale)
    return false;
  LLVMTypeRef t = fz_emit_reg_type(e, acc);
  LLVMValueRef sum = LLVMBuildLoad2(b, t, w->sum_acc[r], "");
  LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildFMul(b, sum, scale, ""), part, ""),
                 w->sum_acc[r]);
  return !e->failed;
}

/* After the round's combine: each thread's online sums rescaled to the
 * row's max (thread_max[r]: the thread's running max) and combined over
 * the block into the sum nodes' values, a round early. */
static bool online_combine(pers *s, walk_ctx *w, LLVMValueRef *thread_max) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  fz_reduce_set sums = {0};
  LLVMValueRef vals[FZ_LOWER_MAX_COLUMNS];
  for (int r = 0; r < w->rs->count; r++) {
    if (w->online[r] < 0)
      continue;
    fz_dtype acc = w->rs->acc[r];
    int m = w->rs->node[r];
    LLVMValueRef row_max = fz_emit_convert(
        e, s->rowt[(size_t)m * (size_t)s->V], p->nodes[m].dtype, acc);
    LLVMValueRef scale = row_max ? rescale(e, acc, thread_max[r], row_max)
                                 : NULL;
    if (!scale)
      return false;
    LLVMValueRef sum =
        LLVMBuildLoad2(b, fz_emit_reg_type(e, acc), w->sum_acc[r], "");
    sums.node[sums.count] = w->online[r];
    sums.code[sums.count] = FZ_OP_SUM;
    sums.acc[sums.count] = acc;
    vals[sums.count++] = LLVMBuildFMul(b, sum, scale, "");
  }
  /* the other half of the scratch than the max's combine, and a barrier
   * after it: the next combine may write either half */
  if (!fz_pers_row_combine(s, w->round + 1, &sums, vals))
    return false;
  fz_emit_barrier(e);
  return !e->failed;
}

/* ---- the walk ------------------------------------------------------------ */

/* One trip from group c: the loads, the values, the partials folded
 * into acc[] (and the online sums), the stores. */
static bool trip(pers *s, walk_ctx *w, LLVMValueRef c, bool masked) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  const fz_reduce_set *rs = w->rs;
  char name[32];
  trip_groups(s, c, masked);
  for (int i = 0; i < p->num_nodes; i++)
    for (int g = 0;
         g < s->G && w->needed[i] && p->nodes[i].kind == FZ_NODE_LOAD; g++)
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
      if (stored_in(p, &p->nodes[i], w->round, FZ_SPACE_FULL) &&
          !fz_pers_eval_full(s, p->nodes[i].operands[0], g))
        return false;
  }
  for (int r = 0; r < rs->count; r++) {
    LLVMTypeRef t = fz_reduce_state_type(e, rs->code[r], rs->acc[r]);
    LLVMValueRef part = fz_pers_thread_partial(s, rs, r);
    LLVMValueRef old = LLVMBuildLoad2(b, t, w->acc[r], "");
    LLVMValueRef sum =
        part ? fz_reduce_combine(e, rs->code[r], rs->acc[r], old, part) : NULL;
    if (!sum)
      return false;
    LLVMBuildStore(b, sum, w->acc[r]);
    if (w->online[r] >= 0 && !online_trip(s, w, r, old, sum))
      return false;
  }
  for (int g = 0; g < s->G && w->stores; g++) {
    fz_if st;
    snprintf(name, sizeof name, "store.p%d.g%d", w->round, g);
    fz_if_begin(e, &st, s->gactive[g], name);
    for (int i = 0; i < p->num_nodes; i++) {
      const fz_plan_node *n = &p->nodes[i];
      if (stored_in(p, n, w->round, FZ_SPACE_FULL) &&
          !fz_kernel_store_node(k, i, pers_full(s, g, 0),
                                group_offsets(s, g)[n->access], s->V))
        return false;
    }
    fz_if_end(e, &st);
  }
  return !e->failed;
}

/* The walk: whole trips, whose groups all lie inside the row, in a
 * loop without masks (so that every load of a trip is issued before its
 * stores), then the last, partial trip, if any, masked. */
static bool walk_trips(pers *s, walk_ctx *w) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMValueRef step = fz_kernel_idx(k, (int64_t)s->G * (int64_t)s->p->block_x);
  char name[32];
  snprintf(name, sizeof name, "walk.p%d", w->round);
  fz_loop l;
  LLVMValueRef c = fz_emit_loop_begin(
      e, &l, fz_kernel_idx(k, 0),
      LLVMBuildSub(e->b, step, fz_kernel_idx(k, 1), ""), s->r_groups, name);
  if (!trip(s, w, c, false))
    return false;
  fz_emit_loop_end(e, &l, step);
  fz_if tail;
  snprintf(name, sizeof name, "walk.p%d.tail", w->round);
  fz_if_begin(e, &tail, LLVMBuildICmp(e->b, LLVMIntULT, l.iv, s->r_groups, ""),
              name);
  if (!trip(s, w, l.iv, true))
    return false;
  fz_if_end(e, &tail);
  return !e->failed;
}

/* Step 2: the walk of the round, over what its reductions and stores
 * need. */
static bool walk(pers *s, walk_ctx *w) {
  fz_emit *e = &s->k->e;
  const fz_plan *p = s->p;
  w->needed = calloc((size_t)p->num_nodes + 1, sizeof *w->needed);
  if (!w->needed)
    return fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory"), false;
  for (int r = 0; r < w->rs->count; r++) {
    const fz_plan_node *n = &p->nodes[w->rs->node[r]];
    for (int o = 0; o < n->num_operands; o++)
      w->needed[n->operands[o]] = true;
  }
  w->stores = false;
  for (int i = 0; i < p->num_nodes; i++)
    if (stored_in(p, &p->nodes[i], w->round, FZ_SPACE_FULL)) {
      w->needed[p->nodes[i].operands[0]] = true;
      w->stores = true;
    }
  mark_needed(s, w->needed);
  bool ok = (!w->rs->count && !w->stores) || walk_trips(s, w);
  free(w->needed);
  w->needed = NULL;
  return ok;
}

/* The row REDUCE entries of round `round` not yet computed (an online
 * sum was, a round early). */
static void round_entries(pers *s, int round, fz_reduce_set *rs) {
  fz_reduce_set all;
  fz_pers_round_set(s, round, &all);
  const bool *row_done = s->done + (size_t)s->G * (size_t)s->p->num_nodes;
  *rs = (fz_reduce_set){0};
  for (int r = 0; r < all.count; r++) {
    if (row_done[all.node[r]])
      continue;
    rs->node[rs->count] = all.node[r];
    rs->code[rs->count] = all.code[r];
    rs->acc[rs->count] = all.acc[r];
    rs->count++;
  }
}

static bool round_of_row(pers *s, int round) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  if (!row_values(s, round))
    return false;
  fz_reduce_set rs = {0};
  if (round < p->phases)
    round_entries(s, round, &rs);
  walk_ctx w = {.round = round, .rs = &rs};
  for (int r = 0; r < rs.count; r++) {
    char name[32];
    snprintf(name, sizeof name, "partial.p%d.%d", round, r);
    w.acc[r] = fz_pers_entry_alloca(
        s, fz_reduce_state_type(e, rs.code[r], rs.acc[r]), name);
    LLVMBuildStore(b, fz_reduce_identity(e, rs.code[r], rs.acc[r]), w.acc[r]);
    w.online[r] = online_sum(s, &rs, r);
    if (w.online[r] < 0)
      continue;
    w.num_online++;
    snprintf(name, sizeof name, "online.p%d.%d", round, r);
    w.sum_acc[r] =
        fz_pers_entry_alloca(s, fz_emit_reg_type(e, rs.acc[r]), name);
    LLVMBuildStore(b, float_const(e, rs.acc[r], 0.0), w.sum_acc[r]);
  }
  if (!walk(s, &w))
    return false;
  if (!rs.count)
    return true;
  LLVMValueRef vals[FZ_LOWER_MAX_COLUMNS], thread_max[FZ_LOWER_MAX_COLUMNS];
  for (int r = 0; r < rs.count; r++) {
    vals[r] = LLVMBuildLoad2(
        b, fz_reduce_state_type(e, rs.code[r], rs.acc[r]), w.acc[r], "");
    thread_max[r] = vals[r];
  }
  if (!fz_pers_row_combine(s, round, &rs, vals))
    return false;
  return !w.num_online || online_combine(s, &w, thread_max);
}

static bool body(pers *s) {
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

bool fz_emit_multipass(fz_kernel *k) {
  pers s = {0};
  bool ok = fz_pers_setup(&s, k) && body(&s);
  fz_pers_teardown(&s);
  return ok && !k->e.failed;
}
