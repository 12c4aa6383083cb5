/* alloc_order.c - allocation-order propagation: every op result whose
 * layout was not declared gets the allocation order of the tensor it is
 * computed from, so a channels-last or transposed input gives results (and
 * outputs, which the executor allocates in the order chosen here) that are
 * written in the same memory order as the input is read.
 *
 * One forward walk in SSA order: operands are decided before their users.
 * A declared layout (inputs, results written with `layout(...)`) is never
 * changed; rank-0 results have nothing to order and are left alone. A
 * decided result is fully contiguous. The rules, per op:
 *
 *   pointwise, cast, set: the order of the *dominant* operand: the one with
 *     the most allocated elements (iteration axes; b1 and expanded axes
 *     are not allocated), rank-0 operands ignored, ties to the first
 *     operand without broadcast axes, then to the first. It is the tensor
 *     whose reads cost most, so its order is the one to write in.
 *   expand: the operand's order (an expanded axis has stride 0 and keeps
 *     its place).
 *   permute: the operand's order carried through the perm, so the result's
 *     bytes lie in the operand's memory order (a transpose of a
 *     column-major tensor is row-major).
 *   broadcast: the operand's order, each inserted axis placed directly
 *     outside the axis that follows it logically (innermost when it is
 *     last). That is PyTorch's unsqueeze rule: a row-major operand gives a
 *     row-major result. (Putting new axes outermost would work as well for
 *     memory, since they have extent 1, but would turn row-major tensors
 *     into permuted-looking ones for every later stage.)
 *   squeeze: the operand's order without the removed axes.
 *   reduction: the operand's order without the reduced axes, so the kept
 *     axes keep their relative order; with keepdim the reduced axes stay
 *     in place as b1 axes.
 *   reshape: when every merged group of operand axes lies consecutively,
 *     outer to inner, in the operand's order, the result's groups take the
 *     places of the operand's groups (split axes row-major within their
 *     group), size-1 axes placed as broadcast places inserted axes. This is
 *     exactly when the reshape could be a view of the operand, as
 *     torch.reshape decides it. Otherwise no order writes the result in
 *     the operand's memory order (the merged axis would interleave two
 *     strides), and the result is row-major, the order reshape is defined
 *     in.
 *   full, iota, symbol: row-major (nothing to follow).
 */
#include "sched/pass.h"
#include "sched/axis_map.h"

#include <string.h>

/* ---- orders ------------------------------------------------------------- */

static void row_major(int rank, int *order) {
  for (int i = 0; i < rank; i++)
    order[i] = i;
}

/* The operand's order, or row-major when it has none (only malformed IR:
 * operands are decided before their users). */
static void operand_order(const fz_value *x, int *order) {
  if (x->type.has_layout)
    memcpy(order, x->type.alloc_order, sizeof(int) * (size_t)x->type.rank);
  else
    row_major(x->type.rank, order);
}

/* Removes the axes flagged in `drop` from order (rank entries) and
 * renumbers the survivors to 0..; returns the new rank. */
static int drop_axes(int rank, int *order, const bool *drop) {
  int renum[FZ_MAX_RANK], n = 0, out = 0;
  for (int a = 0; a < rank; a++)
    renum[a] = drop[a] ? -1 : n++;
  for (int p = 0; p < rank; p++)
    if (!drop[order[p]])
      order[out++] = renum[order[p]];
  return out;
}

/* order holds the placed axes of a rank-`rank` result (count entries);
 * places the others, last axis first, each directly outside the axis that
 * follows it (innermost for the last axis). */
static void place_rest(int rank, int *order, int count) {
  bool placed[FZ_MAX_RANK] = {0};
  for (int p = 0; p < count; p++)
    placed[order[p]] = true;
  for (int a = rank - 1; a >= 0; a--) {
    if (placed[a])
      continue;
    int at = count; /* innermost */
    if (a + 1 < rank)
      for (at = 0; order[at] != a + 1; at++)
        ;
    memmove(order + at + 1, order + at, sizeof(int) * (size_t)(count - at));
    order[at] = a;
    count++;
    placed[a] = true;
  }
}

/* ---- rules --------------------------------------------------------------- */

static int allocated_axes(const fz_value *v) {
  int n = 0;
  for (int i = 0; i < v->type.rank; i++)
    n += v->type.axes[i].kind == FZ_AXIS_ITER;
  return n;
}

/* Element count over iteration axes, or -1 when an extent is symbolic or
 * the product overflows. */
static int64_t allocated_elements(const fz_value *v) {
  int64_t n = 1;
  for (int i = 0; i < v->type.rank; i++) {
    const fz_axis *a = &v->type.axes[i];
    if (a->kind != FZ_AXIS_ITER)
      continue;
    if (a->extent.symbol >= 0 ||
        (a->extent.value != 0 && n > INT64_MAX / a->extent.value))
      return -1;
    n *= a->extent.value;
  }
  return n;
}

static bool has_broadcast_axis(const fz_value *v) {
  for (int i = 0; i < v->type.rank; i++)
    if (v->type.axes[i].kind == FZ_AXIS_BROADCAST)
      return true;
  return false;
}

/* Does x have more allocated elements than y? Exact when both counts are
 * constant; otherwise by the number of iteration axes (operands of one
 * pointwise op agree on every iteration extent they share, so more axes
 * is more elements unless the axes differ). */
static int compare_size(const fz_value *x, const fz_value *y) {
  int64_t nx = allocated_elements(x), ny = allocated_elements(y);
  if (nx >= 0 && ny >= 0)
    return (nx > ny) - (nx < ny);
  int ax = allocated_axes(x), ay = allocated_axes(y);
  return (ax > ay) - (ax < ay);
}

static const fz_value *dominant_operand(const fz_op *op) {
  const fz_value *best = NULL;
  for (int k = 0; k < op->num_operands; k++) {
    const fz_value *x = op->operands[k];
    if (!x || x->kind == FZ_VALUE_LITERAL ||
        x->type.rank != op->result->type.rank)
      continue;
    if (!best) {
      best = x;
      continue;
    }
    int c = compare_size(x, best);
    if (c > 0 || (c == 0 && has_broadcast_axis(best) && !has_broadcast_axis(x)))
      best = x;
  }
  return best;
}

static void broadcast_order(const fz_op *op, int *order) {
  const fz_value *x = op->operands[0];
  int rank = op->result->type.rank;
  int to_result[FZ_MAX_RANK]; /* operand axis -> result axis */
  int d = 0, k = 0;
  for (int i = 0; i < rank; i++) {
    if (d < op->num_dims && op->dims[d] == i)
      d++;
    else
      to_result[k++] = i;
  }
  int src[FZ_MAX_RANK];
  operand_order(x, src);
  for (int p = 0; p < x->type.rank; p++)
    order[p] = to_result[src[p]];
  place_rest(rank, order, x->type.rank);
}

static void reduction_order(const fz_op *op, int *order) {
  const fz_value *x = op->operands[0];
  operand_order(x, order);
  if (op->keepdim)
    return; /* reduced axes become b1 in place */
  bool drop[FZ_MAX_RANK] = {0};
  for (int i = 0; i < op->num_dims; i++)
    drop[op->dims[i]] = true;
  drop_axes(x->type.rank, order, drop);
}

static void squeeze_order(const fz_op *op, int *order) {
  const fz_value *x = op->operands[0];
  operand_order(x, order);
  bool drop[FZ_MAX_RANK] = {0};
  for (int i = 0; i < op->num_dims; i++)
    drop[op->dims[i]] = true;
  drop_axes(x->type.rank, order, drop);
}

static void permute_order(const fz_op *op, int *order) {
  const fz_value *x = op->operands[0];
  int rank = x->type.rank, inv[FZ_MAX_RANK], src[FZ_MAX_RANK];
  for (int i = 0; i < rank; i++)
    inv[op->perm[i]] = i;
  operand_order(x, src);
  for (int p = 0; p < rank; p++)
    order[p] = inv[src[p]];
}

static bool size_one(const fz_axis *a) {
  fz_extent e = fz_axis_extent(a);
  return e.symbol < 0 && e.value == 1;
}

static void reshape_order(const fz_fusion *f, const fz_op *op, int *order) {
  const fz_value *x = op->operands[0], *r = op->result;
  fz_reshape_group groups[2 * FZ_MAX_RANK];
  int n = fz_reshape_groups(f, &x->type, &r->type, groups);
  int group_of[FZ_MAX_RANK];
  for (int g = 0; g < n; g++)
    for (int i = 0; i < groups[g].num_from; i++)
      group_of[groups[g].from[i]] = g;

  /* The operand's order without its size-1 axes (they hold no extent, so
   * their place in memory says nothing). */
  int src[FZ_MAX_RANK], len = 0, pos[FZ_MAX_RANK];
  operand_order(x, src);
  for (int p = 0; p < x->type.rank; p++)
    if (!size_one(&x->type.axes[src[p]]))
      src[len++] = src[p];
  for (int p = 0; p < len; p++)
    pos[src[p]] = p;

  /* Each group's axes must be consecutive, outer to inner, in memory. */
  for (int g = 0; g < n; g++) {
    int prev = -1;
    for (int i = 0; i < groups[g].num_from; i++) {
      int a = groups[g].from[i];
      if (size_one(&x->type.axes[a]))
        continue;
      if (prev >= 0 && pos[a] != prev + 1) {
        row_major(r->type.rank, order);
        return;
      }
      prev = pos[a];
    }
  }

  int count = 0;
  for (int p = 0; p < len; p++) {
    const fz_reshape_group *g = &groups[group_of[src[p]]];
    int first = -1;
    for (int i = 0; i < g->num_from && first < 0; i++)
      if (!size_one(&x->type.axes[g->from[i]]))
        first = g->from[i];
    if (first != src[p])
      continue; /* the group was placed at its first axis */
    for (int i = 0; i < g->num_to; i++)
      if (!size_one(&r->type.axes[g->to[i]]))
        order[count++] = g->to[i];
  }
  place_rest(r->type.rank, order, count);
}

/* The order op's result follows, from its operands' orders. */
static void decide(const fz_fusion *f, const fz_op *op, int *order) {
  const fz_value *r = op->result;
  int rank = r->type.rank;
  switch (fz_op_table[op->code].kind) {
  case FZ_KIND_UNARY:
  case FZ_KIND_CAST:
  case FZ_KIND_BINARY:
  case FZ_KIND_TERNARY:
  case FZ_KIND_SET:
  case FZ_KIND_SLICE: /* resize ops keep their operands' axes in place */
  case FZ_KIND_PAD:
  case FZ_KIND_CAT: {
    const fz_value *x = dominant_operand(op);
    if (x)
      operand_order(x, order);
    else
      row_major(rank, order);
    break;
  }
  case FZ_KIND_EXPAND:
    operand_order(op->operands[0], order);
    break;
  case FZ_KIND_PERMUTE:
    permute_order(op, order);
    break;
  case FZ_KIND_BROADCAST:
    broadcast_order(op, order);
    break;
  case FZ_KIND_SQUEEZE:
    squeeze_order(op, order);
    break;
  case FZ_KIND_REDUCTION:
    reduction_order(op, order);
    break;
  case FZ_KIND_RESHAPE:
    reshape_order(f, op, order);
    break;
  case FZ_KIND_FULL:
  case FZ_KIND_IOTA:
  case FZ_KIND_SYMBOL:
  case FZ_KIND_RANDOM:
    row_major(rank, order);
    break;
  case FZ_KIND_GATHER: /* gather's index has the result's shape */
    operand_order(op->operands[op->code == FZ_OP_GATHER ? 1 : 0], order);
    break;
  }
}

/* A rank-mismatched operand (unverified IR) would make the rules index out
 * of bounds; such a fusion is refused before anything changes. */
static fz_status check_op(const fz_op *op, fz_error *err) {
  const fz_value *r = op->result;
  if (!r || (int)op->code < 0 || op->code >= FZ_NUM_OPCODES ||
      r->type.rank < 0 || r->type.rank > FZ_MAX_RANK)
    return fz_error_at(err, op->loc, FZ_ERR_INVALID,
                       "alloc-order: malformed op");
  const fz_op_info *info = &fz_op_table[op->code];
  if (info->kind == FZ_KIND_FULL || info->kind == FZ_KIND_IOTA ||
      info->kind == FZ_KIND_SYMBOL || info->kind == FZ_KIND_UNARY || info->kind == FZ_KIND_CAST ||
      info->kind == FZ_KIND_BINARY || info->kind == FZ_KIND_TERNARY ||
      info->kind == FZ_KIND_SET || info->kind == FZ_KIND_SLICE ||
      info->kind == FZ_KIND_PAD || info->kind == FZ_KIND_CAT ||
      info->kind == FZ_KIND_RANDOM || info->kind == FZ_KIND_GATHER)
    return FZ_OK; /* operands of another rank are skipped */
  const fz_value *x = op->num_operands > 0 ? op->operands[0] : NULL;
  if (!x || x->type.rank < 0 || x->type.rank > FZ_MAX_RANK)
    return fz_error_at(err, op->loc, FZ_ERR_INVALID,
                       "alloc-order: %s has no operand", info->name);
  int want = x->type.rank;
  if (info->kind == FZ_KIND_BROADCAST)
    want += op->num_dims;
  else if (info->kind == FZ_KIND_SQUEEZE ||
           (info->kind == FZ_KIND_REDUCTION && !op->keepdim))
    want -= op->num_dims;
  bool dims_ok = op->num_dims >= 0 && op->num_dims <= FZ_MAX_RANK;
  int limit = info->kind == FZ_KIND_BROADCAST ? r->type.rank : x->type.rank;
  for (int i = 0; dims_ok && i < op->num_dims; i++)
    dims_ok = op->dims[i] >= 0 && op->dims[i] < limit &&
              (i == 0 || op->dims[i] > op->dims[i - 1]);
  bool perm_ok = true;
  if (info->kind == FZ_KIND_PERMUTE) {
    bool seen[FZ_MAX_RANK] = {0};
    for (int i = 0; i < x->type.rank && perm_ok; i++) {
      int p = op->perm[i];
      perm_ok = p >= 0 && p < x->type.rank && !seen[p];
      if (perm_ok)
        seen[p] = true;
    }
  }
  if ((info->kind != FZ_KIND_RESHAPE && want != r->type.rank) || !dims_ok ||
      !perm_ok)
    return fz_error_at(err, op->loc, FZ_ERR_INVALID,
                       "alloc-order: %s does not fit its operand (verify "
                       "the fusion first)",
                       info->name);
  return FZ_OK;
}

fz_status fz_pass_alloc_order(fz_fusion *f, fz_error *err) {
  for (int i = 0; i < f->num_ops; i++) {
    fz_status st = check_op(f->ops[i], err);
    if (st != FZ_OK)
      return st;
  }
  for (int i = 0; i < f->num_ops; i++) {
    const fz_op *op = f->ops[i];
    fz_type *t = &op->result->type;
    if (t->has_layout || t->rank == 0)
      continue;
    int order[FZ_MAX_RANK];
    decide(f, op, order);
    t->has_layout = true;
    for (int p = 0; p < t->rank; p++) {
      t->alloc_order[p] = order[p];
      t->contiguous[p] = true;
    }
  }
  return FZ_OK;
}
