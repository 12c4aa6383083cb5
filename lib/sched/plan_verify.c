/* plan_verify.c - the rules every kernel plan obeys (plan.h), checked
 * where plans are made.
 *
 * fz_schedule verifies each plan a scheduler returns, so a scheduler's
 * mistake is an internal error at the scheduler, not a miscompiled
 * kernel; lowering verifies once more at its entry, for plans built by
 * hand (the C API, unit tests), and from then on trusts the plan: every
 * rule here is one some part of lib/lower relies on without looking.
 * Limits of lowering itself (how many lanes it unrolls, how many values
 * a thread holds, what fits in static shared memory) are not rules of the
 * plan and stay in lib/lower.
 *
 * Every failure is FZ_ERR_INTERNAL (a plan breaking these rules is a bug
 * in whatever built it) with a message naming the node (nN) or access
 * (aN) and the rule; a node's error points at the op its value comes
 * from.
 */
#include "sched/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

static bool is_reduction(const fz_plan *p) {
  return p->kind == FZ_PLAN_INNER_REDUCTION ||
         p->kind == FZ_PLAN_OUTER_REDUCTION;
}

static bool is_known_kind(fz_plan_kind k) {
  switch (k) {
  case FZ_PLAN_POINTWISE:
  case FZ_PLAN_INNER_REDUCTION:
  case FZ_PLAN_OUTER_REDUCTION:
  case FZ_PLAN_INNER_PERSISTENT:
  case FZ_PLAN_INNER_OUTER_PERSISTENT:
  case FZ_PLAN_TRANSPOSE:
  case FZ_PLAN_OUTER_PERSISTENT:
    return true;
  }
  return false;
}

/* The error every rule reports: FZ_ERR_INTERNAL, "plan: " and the rule. */
static fz_status bad(fz_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static fz_status bad(fz_error *err, const char *fmt, ...) {
  char text[sizeof((fz_error *)0)->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return fz_error_set(err, FZ_ERR_INTERNAL, "plan: %s", text);
}

/* ---- every plan ---------------------------------------------------------- */

static fz_status verify_shape(const fz_plan *p, fz_error *err) {
  if (!is_known_kind(p->kind))
    return bad(err, "unknown plan kind %d", (int)p->kind);
  if (!p->kernel_name || !p->kernel_name[0])
    return bad(err, "the plan has no kernel name");
  if (p->rank < 1 || p->rank > FZ_MAX_RANK)
    return bad(err, "rank %d is outside 1..%d", p->rank, FZ_MAX_RANK);
  if (p->vector < 1 || p->unroll < 1 || p->unroll > FZ_PLAN_MAX_UNROLL ||
      p->threads < 1 || p->threads > 1024)
    return bad(err,
               "launch shape vector %d unroll %d threads %d (vector >= 1, "
               "unroll 1..%d, threads 1..1024)",
               p->vector, p->unroll, p->threads, FZ_PLAN_MAX_UNROLL);
  if (p->num_accesses < 1 || !p->accesses || (p->num_nodes > 0 && !p->nodes))
    return bad(err, "the plan touches no memory");
  return FZ_OK;
}

/* An access's vector divides the plan's and runs along a unit innermost
 * stride. Tiled accesses of a transpose plan vectorize along the tile
 * axis instead (verify_transpose). */
static fz_status verify_access(const fz_plan *p, int i, fz_error *err) {
  const fz_plan_access *a = &p->accesses[i];
  if ((unsigned)a->dtype >= FZ_NUM_DTYPES)
    return bad(err, "access a%d has no dtype", i);
  if (p->kind == FZ_PLAN_TRANSPOSE && p->tiled && p->tiled[i])
    return FZ_OK;
  if (a->vector < 1 || a->vector > p->vector || p->vector % a->vector != 0 ||
      (a->vector > 1 && !is_pow2(a->vector)))
    return bad(err, "access a%d has vector %d in a plan of %d lanes", i,
               a->vector, p->vector);
  if (a->vector > 1 && a->strides[p->rank - 1] != 1)
    return bad(err,
               "access a%d is a vector of %d but its innermost stride is "
               "%lld",
               i, a->vector, (long long)a->strides[p->rank - 1]);
  return FZ_OK;
}

static bool is_reduce_code(fz_opcode code) {
  return code == FZ_OP_SUM || code == FZ_OP_PROD || code == FZ_OP_AMAX ||
         code == FZ_OP_AMIN || code == FZ_OP_ARGMAX || code == FZ_OP_ARGMIN ||
         fz_reduce_is_welford(code);
}

static const char *op_name(fz_opcode code) {
  return (unsigned)code < FZ_NUM_OPCODES ? fz_op_table[code].name : "?";
}

/* What every node obeys whatever the plan kind: operands are earlier
 * value nodes, loads read inputs and stores write outputs, ops are
 * pointwise with their arity, REDUCE nodes only in plans that reduce. */
static fz_status verify_node(const fz_plan *p, int i, fz_error *err) {
  const fz_plan_node *n = &p->nodes[i];
  if ((unsigned)n->dtype >= FZ_NUM_DTYPES)
    return bad(err, "node n%d has no dtype", i);
  if ((unsigned)n->space > FZ_SPACE_COLUMN)
    return bad(err, "node n%d has no space (%d)", i, (int)n->space);
  if (n->space != FZ_SPACE_FULL &&
      (p->kind == FZ_PLAN_POINTWISE || p->kind == FZ_PLAN_TRANSPOSE))
    return bad(err, "node n%d is outside the full space of a %s plan", i,
               p->kind == FZ_PLAN_TRANSPOSE ? "transpose" : "pointwise");
  if (n->num_operands < 0 || n->num_operands > 3)
    return bad(err, "node n%d has %d operands", i, n->num_operands);
  for (int k = 0; k < n->num_operands; k++) {
    int o = n->operands[k];
    if (o < 0 || o >= i || p->nodes[o].kind == FZ_NODE_STORE)
      return bad(err, "node n%d: operand %d (n%d) is not an earlier value node",
                 i, k, o);
  }
  switch (n->kind) {
  case FZ_NODE_LOAD:
  case FZ_NODE_STORE: {
    bool store = n->kind == FZ_NODE_STORE;
    if (n->access < 0 || n->access >= p->num_accesses ||
        p->accesses[n->access].is_output != store)
      return bad(err, "node n%d: %s through a%d, not an %s access", i,
                 store ? "store" : "load", n->access,
                 store ? "output" : "input");
    if (n->num_operands != (store ? 1 : 0))
      return bad(err, "%s n%d has %d operands, not %d",
                 store ? "store" : "load", i, n->num_operands, store ? 1 : 0);
    if (p->accesses[n->access].gathered)
      return bad(err, "%s n%d goes through a%d, a gathered access",
                 store ? "store" : "load", i, n->access);
    return FZ_OK;
  }
  case FZ_NODE_GATHER: {
    if (n->access < 0 || n->access >= p->num_accesses ||
        !p->accesses[n->access].gathered || p->accesses[n->access].is_output)
      return bad(err, "gather n%d reads a%d, not a gathered input access", i,
                 n->access);
    fz_dtype id = n->num_operands == 1 ? p->nodes[n->operands[0]].dtype
                                       : FZ_F32;
    if (id != FZ_I64 && id != FZ_I32)
      return bad(err, "gather n%d needs one operand, an i64 or i32 index", i);
    return FZ_OK;
  }
  case FZ_NODE_SYMBOL: {
    bool passed = false;
    for (int k = 0; k < p->num_symbols; k++)
      passed |= p->symbols[k] == n->symbol;
    if (!passed)
      return bad(err, "symbol n%d reads symbol %d, which the plan does not "
                      "pass",
                 i, n->symbol);
    if (n->dtype != FZ_I64 || n->num_operands != 0)
      return bad(err, "symbol n%d is not an i64 without operands", i);
    return FZ_OK;
  }
  case FZ_NODE_LITERAL:
  case FZ_NODE_IOTA:
    if (n->num_operands != 0)
      return bad(err, "%s n%d has %d operands",
                 n->kind == FZ_NODE_IOTA ? "iota" : "literal", i,
                 n->num_operands);
    return FZ_OK;
  case FZ_NODE_REDUCE:
    if (p->kind == FZ_PLAN_POINTWISE || p->kind == FZ_PLAN_TRANSPOSE)
      return bad(err, "node n%d: a reduction in a pointwise plan", i);
    if (!is_reduce_code(n->code))
      return bad(err, "reduce n%d: %s is not a reduction", i, op_name(n->code));
    if (fz_plan_node_is_arg(n))
      return fz_plan_verify_arg(p, i, err);
    if (n->num_operands != 1)
      return bad(err, "reduce n%d has %d operands, not 1", i, n->num_operands);
    return FZ_OK;
  case FZ_NODE_OP: {
    if ((unsigned)n->code >= FZ_NUM_OPCODES)
      return bad(err, "node n%d: opcode %d is not an op", i, (int)n->code);
    const fz_op_info *info = &fz_op_table[n->code];
    if (info->kind != FZ_KIND_UNARY && info->kind != FZ_KIND_CAST &&
        info->kind != FZ_KIND_BINARY && info->kind != FZ_KIND_TERNARY)
      return bad(err, "node n%d: %s is not a pointwise op", i, info->name);
    if (n->num_operands != info->arity)
      return bad(err, "node n%d: %s takes %d operands, not %d", i, info->name,
                 info->arity, n->num_operands);
    return FZ_OK;
  }
  case FZ_NODE_RANDOM:
    if (n->code != FZ_OP_RAND && n->code != FZ_OP_RANDN)
      return bad(err, "random n%d: %s is not rand or randn", i,
                 op_name(n->code));
    if (!fz_dtype_is_float(n->dtype) || n->num_operands != 2)
      return bad(err, "random n%d is not a float with 2 operands", i);
    for (int k = 0; k < 2; k++)
      if (p->nodes[n->operands[k]].dtype != FZ_I64)
        return bad(err, "random n%d: operand %d (n%d) is not an i64", i, k,
                   n->operands[k]);
    return FZ_OK;
  }
  return bad(err, "node n%d has no kind (%d)", i, (int)n->kind);
}

/* ---- reduction plans ----------------------------------------------------- */

/* The launch shape of a reduction: block_x by block_y threads, powers of
 * two (the butterfly and the tree halve them), whole warps or one partial
 * warp, R and I where the kind says. An outer plan may have no R axis at
 * all (the reduced axes had size 1): R is then one point. */
static fz_status verify_reduction(const fz_plan *p, fz_error *err) {
  int last = p->rank - 1;
  bool inner = p->kind == FZ_PLAN_INNER_REDUCTION;
  if (!is_pow2(p->block_x) || !is_pow2(p->block_y) ||
      (int64_t)p->block_x * p->block_y != p->threads ||
      (p->threads > 32 && p->threads % 32 != 0) || p->split < 1 ||
      p->grid_x < 1)
    return bad(err, "reduction block %dx%d, %d threads, grid %lldx%d",
               p->block_x, p->block_y, p->threads, (long long)p->grid_x,
               p->split);
  if (p->reduced[last] != inner)
    return bad(err, "%s reduction whose innermost axis is %s",
               inner ? "an inner" : "an outer",
               p->reduced[last] ? "reduced" : "kept");
  if (p->extents[last] % p->vector != 0)
    return bad(err, "innermost extent %lld is not a multiple of %d lanes",
               (long long)p->extents[last], p->vector);
  return FZ_OK;
}

/* A node of the row space (one per kept point) reads only row values and
 * memory constant along R; a node of the full space only full-space
 * values; a REDUCE node turns a full-space value into a row one. */
static fz_status verify_reduction_node(const fz_plan *p, int i, fz_error *err) {
  const fz_plan_node *n = &p->nodes[i];
  if (n->space == FZ_SPACE_COLUMN)
    return bad(err, "node n%d is in the column space of a reduction plan", i);
  bool row = n->space == FZ_SPACE_ROW;
  if (n->kind == FZ_NODE_REDUCE) {
    if (!row || p->nodes[n->operands[0]].space != FZ_SPACE_FULL)
      return bad(err,
                 "reduce n%d must turn a full-space value into a row value", i);
    return FZ_OK;
  }
  for (int k = 0; k < n->num_operands; k++)
    if (p->nodes[n->operands[k]].space != n->space)
      return bad(err, "node n%d (%s space) reads n%d of the other space", i,
                 row ? "row" : "full", n->operands[k]);
  if ((n->kind == FZ_NODE_LOAD || n->kind == FZ_NODE_STORE ||
       n->kind == FZ_NODE_GATHER) &&
      row) {
    const fz_plan_access *a = &p->accesses[n->access];
    for (int d = 0; d < p->rank; d++)
      if (p->reduced[d] && a->strides[d] != 0)
        return bad(err, "row node n%d: a%d varies along R axis %d", i,
                   n->access, d);
    if (p->kind == FZ_PLAN_INNER_REDUCTION && a->vector != 1)
      return bad(err, "row node n%d: a%d is a vector in an inner reduction", i,
                 n->access);
  }
  return FZ_OK;
}

/* ---- persistent plans ---------------------------------------------------- */

/* A dynamic block is whole warps of one row, up to the width its kernel
 * is compiled for, one block a row (its kernel has no loop over rows);
 * a static one, powers of two. */
static bool block_ok(const fz_plan *p) {
  if (p->dynamic_block)
    return p->kind == FZ_PLAN_INNER_PERSISTENT && p->block_y == 1 &&
           p->block_x % 32 == 0 &&
           p->block_x <= FZ_PLAN_DYNAMIC_MAX_THREADS && !p->prefetch &&
           p->grid_x == fz_plan_rows(p);
  return is_pow2(p->block_x) && is_pow2(p->block_y);
}

/* Rows held in shared memory: an outer plan's, copied by cp.async in
 * whole 4-, 8- or 16-byte pieces a group, at least one input held. */
static bool held_shared_ok(const fz_plan *p) {
  return p->kind == FZ_PLAN_OUTER_PERSISTENT && fz_plan_held_pieces_fit(p);
}

static fz_status verify_persistent(const fz_plan *p, fz_error *err) {
  int last = p->rank - 1;
  if (!block_ok(p) ||
      (int64_t)p->block_x * p->block_y != p->threads ||
      (p->threads > 32 && p->threads % 32 != 0) || p->grid_x < 1 ||
      p->split != 1)
    return bad(err, "persistent block %dx%d, %d threads, grid %lldx%d",
               p->block_x, p->block_y, p->threads, (long long)p->grid_x,
               p->split);
  if (!p->row_axes[last] || p->extents[last] % p->vector != 0)
    return bad(err,
               "a persistent row must be innermost and a multiple of %d "
               "lanes",
               p->vector);
  bool outer = p->kind == FZ_PLAN_OUTER_PERSISTENT;
  for (int k = 0; k < p->rank; k++)
    if (p->row_axes[k] != (p->reduced[k] != outer))
      return bad(err, "axis %d is %s, and a row of an %s plan %s it", k,
                 p->reduced[k] ? "reduced" : "kept", outer ? "outer" : "inner",
                 p->row_axes[k] ? "spans" : "does not span");
  if (p->persistent < 1 || p->phases < 0 || p->phases > FZ_PLAN_MAX_PHASES)
    return bad(err, "%d persistent groups, %d phases (at most %d)",
               p->persistent, p->phases, FZ_PLAN_MAX_PHASES);
  if (p->cluster &&
      (p->kind != FZ_PLAN_INNER_PERSISTENT || p->cluster < 2 ||
       p->cluster > FZ_PLAN_MAX_CLUSTER || p->block_y != 1 ||
       p->grid_x % p->cluster != 0))
    return bad(err,
               "a cluster of %d blocks (2..%d) on a %s plan, block %dx%d, "
               "grid %lld",
               p->cluster, FZ_PLAN_MAX_CLUSTER,
               p->kind == FZ_PLAN_INNER_PERSISTENT ? "inner" : "non-inner",
               p->block_x, p->block_y, (long long)p->grid_x);
  if (p->prefetch && !fz_plan_prefetch_pieces_fit(p))
    return bad(err,
               "a prefetching plan whose prefetched inputs do not move in "
               "whole 4-, 8- or 16-byte cp.async pieces");
  if (p->column_slices > 1 &&
      (!outer || p->persistent != 1 || p->grid_x % p->column_slices != 0))
    return bad(err,
               "%d column slices on a %s plan, %d groups a thread, grid %lld",
               p->column_slices, outer ? "outer" : "non-outer", p->persistent,
               (long long)p->grid_x);
  if (p->held_shared && !held_shared_ok(p))
    return bad(err,
               "rows held in shared memory on %s plan whose held inputs "
               "do not move in whole 4-, 8- or 16-byte pieces",
               outer ? "an outer" : "a non-outer");
  /* a multipass row: one block walks it, every group masked */
  if (p->multipass)
    return p->kind == FZ_PLAN_INNER_PERSISTENT && p->block_y == 1 &&
                   !p->cluster && !p->prefetch && !p->dynamic_block &&
                   p->persistent_full == 0
               ? FZ_OK
               : bad(err,
                     "a multipass row on a %s plan, block %dx%d, cluster "
                     "%d%s%s, %d groups unmasked",
                     p->kind == FZ_PLAN_INNER_PERSISTENT ? "inner"
                                                         : "non-inner",
                     p->block_x, p->block_y, p->cluster,
                     p->prefetch ? ", prefetching" : "",
                     p->dynamic_block ? ", dynamic" : "", p->persistent_full);
  /* the row's groups: the kernel masks only those from persistent_full on */
  int64_t groups = fz_plan_row_points(p) / p->vector;
  int64_t row_threads = (int64_t)p->block_x * (p->cluster ? p->cluster : 1) *
                        (p->column_slices > 1 ? p->column_slices : 1);
  if (p->persistent_full < 0 || p->persistent_full >= p->persistent ||
      groups <= (int64_t)p->persistent_full * row_threads ||
      groups > (int64_t)p->persistent * row_threads)
    return bad(err,
               "a row of %lld groups on %lld threads holding %d groups, the "
               "first %d unmasked",
               (long long)groups, (long long)row_threads, p->persistent,
               p->persistent_full);
  return FZ_OK;
}

/* A column_cluster plan (plan.h): an inner-outer plan in clusters of 2,
 * 4 or 8 whole-warp blocks (a chunk of a cluster's slots splits evenly
 * among its blocks, and every node's part of the exchange buffer stays
 * 16-byte aligned), a grid of whole clusters, chunks of 1 to persistent
 * groups, and plain column sums, products, maxima or minima: the
 * exchange moves one accumulator a lane. */
static fz_status verify_column_cluster(const fz_plan *p, fz_error *err) {
  int c = p->column_cluster;
  if (p->kind != FZ_PLAN_INNER_OUTER_PERSISTENT || c < 2 ||
      c > FZ_PLAN_MAX_CLUSTER || !is_pow2(c) || p->cluster ||
      p->dynamic_block || !p->cooperative || p->block_x < 32 ||
      !is_pow2(p->block_x) || p->grid_x % c != 0)
    return bad(err,
               "column partials combined in clusters of %d blocks (2, 4 or "
               "8) on a%s plan, block %dx%d, grid %lld, row cluster %d%s",
               c,
               p->kind == FZ_PLAN_INNER_OUTER_PERSISTENT ? "n inner-outer"
                                                         : " non-inner-outer",
               p->block_x, p->block_y,
               (long long)p->grid_x, p->cluster,
               p->cooperative ? "" : ", not cooperative");
  if (p->column_chunk < 1 || p->column_chunk > p->persistent)
    return bad(err, "column exchange chunks of %d groups, %d held",
               p->column_chunk, p->persistent);
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind == FZ_NODE_REDUCE && n->space == FZ_SPACE_COLUMN &&
        fz_plan_reduce_bytes(p, n) != fz_dtype_size(fz_plan_reduce_acc(p, n)))
      return bad(err,
                 "n%d: a column reduction whose partial is not one "
                 "accumulator, combined in a cluster",
                 i);
  }
  return FZ_OK;
}

/* Whether access a varies along a row (row_axes) or from row to row. */
static bool varies_along(const fz_plan *p, const fz_plan_access *a,
                         bool row_axes) {
  for (int d = 0; d < p->rank; d++)
    if (p->row_axes[d] == row_axes && a->strides[d] != 0)
      return true;
  return false;
}

/* Whether node i's value varies along a row, from its operands' (along[]
 * holds the earlier nodes'). */
static bool node_varies_along_row(const fz_plan *p, int i, const bool *along) {
  const fz_plan_node *n = &p->nodes[i];
  switch (n->kind) {
  case FZ_NODE_LOAD:
  case FZ_NODE_STORE:
    return varies_along(p, &p->accesses[n->access], true);
  case FZ_NODE_IOTA:
    for (int d = 0; d < p->rank; d++)
      if (p->row_axes[d] && n->coeff[d] != 0)
        return true;
    return false;
  case FZ_NODE_RANDOM:
    for (int d = 0; d < p->rank; d++)
      if (p->row_axes[d] && n->coeff[d] != 0)
        return true;
    return along[n->operands[0]] || along[n->operands[1]];
  case FZ_NODE_REDUCE:
    return n->space != FZ_SPACE_ROW;
  case FZ_NODE_GATHER:
    if (varies_along(p, &p->accesses[n->access], true))
      return true;
    return along[n->operands[0]];
  default:
    for (int k = 0; k < n->num_operands; k++)
      if (along[n->operands[k]])
        return true;
    return false;
  }
}

/* Spaces and phases: see plan.h on fz_plan_node. */
static fz_status verify_persistent_node(const fz_plan *p, int i, bool *along,
                                        fz_error *err) {
  const fz_plan_node *n = &p->nodes[i];
  bool outer = fz_plan_has_grid_columns(p);
  bool held = p->kind == FZ_PLAN_OUTER_PERSISTENT;
  bool row = n->space == FZ_SPACE_ROW, column = n->space == FZ_SPACE_COLUMN;
  if (n->phase < 0 || n->phase > p->phases)
    return bad(err, "node n%d has phase %d of %d", i, n->phase, p->phases);
  along[i] = node_varies_along_row(p, i, along);
  if (n->kind == FZ_NODE_REDUCE) {
    const fz_plan_node *o = &p->nodes[n->operands[0]];
    if (n->space == FZ_SPACE_FULL || o->space != FZ_SPACE_FULL)
      return bad(err,
                 "reduce n%d must turn a full-space value into a row or "
                 "column value",
                 i);
    if (column && !outer)
      return bad(err, "column reduce n%d in an inner plan", i);
    if (held && column && n->phase != o->phase + 1)
      return bad(err, "column reduce n%d of phase %d reads n%d of phase %d", i,
                 n->phase, n->operands[0], o->phase);
    if (row && (n->phase < 1 || o->phase > n->phase - 1))
      return bad(err, "row reduce n%d of phase %d reads n%d of phase %d", i,
                 n->phase, n->operands[0], o->phase);
    return FZ_OK;
  }
  for (int k = 0; k < n->num_operands; k++) {
    const fz_plan_node *o = &p->nodes[n->operands[k]];
    /* an outer plan's rows read column results back (after their round) */
    if (o->space == FZ_SPACE_COLUMN && !column && (!held || row))
      return bad(err, "node n%d reads column node n%d", i, n->operands[k]);
    if ((!column || held) && o->phase > n->phase)
      return bad(err, "node n%d of phase %d reads n%d of phase %d", i, n->phase,
                 n->operands[k], o->phase);
  }
  if ((n->kind == FZ_NODE_LOAD || n->kind == FZ_NODE_STORE) &&
      (row || column)) {
    const fz_plan_access *a = &p->accesses[n->access];
    if (varies_along(p, a, row))
      return bad(err, "%s node n%d: a%d varies %s", row ? "row" : "column", i,
                 n->access, row ? "along a row" : "from row to row");
  }
  if (row && along[i])
    return bad(err, "row node n%d depends on values that vary along a row", i);
  return FZ_OK;
}

/* ---- transpose plans ----------------------------------------------------- */

/* A phase of rows x cols elements in groups of v along cols: every warp
 * covers v rows by 32 columns, every pass the whole block. */
static bool phase_fits(const fz_plan *p, int rows, int cols, int v) {
  return is_pow2(v) && v <= 16 && rows % v == 0 && cols % 32 == 0 &&
         ((int64_t)rows * cols / v) % p->threads == 0;
}

static fz_status verify_transpose(const fz_plan *p, fz_error *err) {
  int a = p->rank - 1, b = p->tile_axis;
  if (p->rank < 2 || b < 0 || b >= a)
    return bad(err, "transpose tile axis %d in a rank-%d space", b, p->rank);
  if (!is_pow2(p->tile_a) || !is_pow2(p->tile_b) || p->tile_a < 32 ||
      p->tile_b < 32 || p->threads % 32 != 0 || p->blocks < 1)
    return bad(err, "transpose tile %dx%d, %d threads, %lld blocks", p->tile_a,
               p->tile_b, p->threads, (long long)p->blocks);
  if (!phase_fits(p, p->tile_b, p->tile_a, p->vector) ||
      (p->vector > 1 && p->extents[a] % p->vector != 0))
    return bad(err,
               "transpose stores of %d lanes in %dx%d tiles of extent %lld",
               p->vector, p->tile_a, p->tile_b, (long long)p->extents[a]);
  int tiled = 0;
  for (int i = 0; p->tiled && i < p->num_accesses; i++) {
    const fz_plan_access *x = &p->accesses[i];
    if (!p->tiled[i])
      continue;
    tiled++;
    if (x->is_output || x->strides[a] == 0 || x->strides[b] != 1)
      return bad(err,
                 "tiled access a%d must be an input with stride 1 along "
                 "axis %d and non-zero along %d",
                 i, b, a);
    if (!phase_fits(p, p->tile_a, p->tile_b, x->vector) ||
        (x->vector > 1 && p->extents[b] % x->vector != 0))
      return bad(err,
                 "tiled access a%d: %d lanes in %dx%d tiles of extent %lld", i,
                 x->vector, p->tile_a, p->tile_b, (long long)p->extents[b]);
  }
  if (tiled == 0)
    return bad(err, "a transpose plan without tiled accesses");
  return FZ_OK;
}

/* ---- symbols ------------------------------------------------------------- */

/* The symbols a plan passes are distinct symbols of its fusion, each read
 * by a SYMBOL node: the key, which names the nodes' parameters and not
 * plan->symbols, then tells how many parameters the kernel takes. */
static fz_status verify_symbols(const fz_plan *p, fz_error *err) {
  if (p->num_symbols == 0)
    return FZ_OK;
  int in_fusion = p->fusion ? p->fusion->num_symbols : 0;
  if (p->num_symbols < 0 || p->num_symbols > in_fusion || !p->symbols ||
      !p->symbol_values)
    return bad(err, "the plan passes %d symbols of a fusion of %d",
               p->num_symbols, in_fusion);
  for (int k = 0; k < p->num_symbols; k++) {
    int s = p->symbols[k];
    bool read = false;
    for (int i = 0; i < p->num_nodes; i++)
      read |= p->nodes[i].kind == FZ_NODE_SYMBOL && p->nodes[i].symbol == s;
    for (int j = 0; j < k; j++)
      if (p->symbols[j] == s)
        return bad(err, "the plan passes symbol %d twice (s%d, s%d)", s, j,
                   k);
    if (s < 0 || s >= in_fusion || !read)
      return bad(err, "the plan passes symbol %d as s%d, which %s", s, k,
                 s < 0 || s >= in_fusion ? "is no symbol of its fusion"
                                         : "no node reads");
  }
  return FZ_OK;
}

/* ---- entry --------------------------------------------------------------- */

fz_status fz_plan_verify(const fz_plan *p, fz_error *err) {
  if (!p)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "plan: no plan");
  fz_status st;
  if ((st = verify_shape(p, err)))
    return st;
  bool persistent = fz_plan_is_persistent(p);
  if (is_reduction(p) && (st = verify_reduction(p, err)))
    return st;
  if (p->cluster && !persistent)
    return bad(err, "a cluster of %d blocks on a plan that is not persistent",
               p->cluster);
  if (p->multipass && !persistent)
    return bad(err, "a multipass row on a plan that is not persistent");
  if (p->held_shared && !persistent)
    return bad(err, "rows held in shared memory on a plan that is not "
                    "persistent");
  /* the lowering refills one buffer within a cluster plan's row loop
   * only (persistent_prefetch.c); an inner-outer plan's column exchange
   * overlays its buffers */
  if (p->prefetch_single && (!p->prefetch || !p->cluster))
    return bad(err, "a single prefetch buffer on a plan that %s",
               !p->prefetch ? "does not prefetch" : "is not a cluster plan");
  if (p->prefetch_deep && (!p->prefetch || p->prefetch_single))
    return bad(err, "three prefetch buffers on a plan that %s",
               !p->prefetch ? "does not prefetch" : "has a single one");
  if (p->prefetch_row_values && (!p->prefetch || !fz_plan_has_row_values(p)))
    return bad(err, "row values staged in the prefetch buffers of a plan "
                    "that %s",
               !p->prefetch ? "does not prefetch" : "has none");
  /* the lowering moves the weight loads in persistent.c's row
   * reductions: a multipass walk and a cluster's exchange have their own */
  if (p->weights_early &&
      (p->kind != FZ_PLAN_INNER_PERSISTENT || p->multipass || p->cluster ||
       p->phases < 1 || !fz_plan_has_weight_row(p)))
    return bad(err, "weights loaded early by a plan that %s",
               p->kind != FZ_PLAN_INNER_PERSISTENT ? "is not an inner persistent one"
               : p->multipass                      ? "walks its rows in passes"
               : p->cluster                        ? "shares rows across a cluster"
               : p->phases < 1                     ? "has no row reduction"
                                                   : "loads no weight row");
  if (p->refetch_bf16 &&
      (p->kind == FZ_PLAN_OUTER_PERSISTENT || p->multipass ||
       !fz_plan_has_refetchable_bf16(p)))
    return bad(err, "bf16 inputs loaded again after row combines by a plan "
                    "that %s",
               p->kind == FZ_PLAN_OUTER_PERSISTENT ? "holds its rows"
               : p->multipass ? "walks its rows in passes"
                              : "reads no bf16 input straight from memory");
  /* the marks are placed in the inner-outer kernel's phases */
  if (p->trace_phases && p->kind != FZ_PLAN_INNER_OUTER_PERSISTENT)
    return bad(err, "phases traced by a plan that is not an inner-outer one");
  if (p->column_cluster && (st = verify_column_cluster(p, err)))
    return st;
  if (persistent && (st = verify_persistent(p, err)))
    return st;
  if (p->kind == FZ_PLAN_TRANSPOSE && (st = verify_transpose(p, err)))
    return st;
  if (fz_plan_has_grid_columns(p) && p->column_parts != 1 &&
      p->column_parts != 2 && p->column_parts != 4)
    return bad(err, "%d warps a column group in the final pass (1, 2 or 4)",
               p->column_parts);
  for (int i = 0; i < p->num_accesses; i++)
    if ((st = verify_access(p, i, err)))
      return st;
  if ((st = verify_symbols(p, err)))
    return st;
  /* persistent plans: whether each node varies along a row */
  st = FZ_OK;
  bool *along = NULL;
  if (persistent && p->num_nodes > 0 &&
      !(along = calloc((size_t)p->num_nodes, sizeof *along)))
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "plan: out of memory");
  for (int i = 0; i < p->num_nodes && !st; i++) {
    st = verify_node(p, i, err);
    if (!st && is_reduction(p))
      st = verify_reduction_node(p, i, err);
    else if (!st && persistent)
      st = verify_persistent_node(p, i, along, err);
    if (st)
      fz_error_locate(err, fz_value_loc(p->nodes[i].value));
  }
  free(along);
  return st;
}
