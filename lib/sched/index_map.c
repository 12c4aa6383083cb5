/* index_map.c - the rules that carry an affine coordinate map through each
 * kind of op, backward (result -> operand) and forward (operand -> result).
 *
 * Reshape is the only op whose rule needs sizes: a reshape is affine in the
 * direction where every axis on the far side is a merge of consecutive axes
 * on the near side (p = q0 * Q1 + q1), and not where it would split one
 * (q0 = p / Q1). Size-1 axes take no part: their coordinate is always 0.
 */
#include "sched/index_map.h"

#include <stdio.h>
#include <string.h>

fz_index_map fz_index_map_identity(int rank) {
  fz_index_map m = {.rows = rank, .cols = rank};
  for (int i = 0; i < rank; i++)
    m.a[i][i] = 1;
  return m;
}

bool fz_index_map_equal(const fz_index_map *x, const fz_index_map *y) {
  if (x->rows != y->rows || x->cols != y->cols)
    return false;
  for (int i = 0; i < x->rows; i++)
    for (int j = 0; j < x->cols; j++)
      if (x->a[i][j] != y->a[i][j])
        return false;
  return true;
}

void fz_index_map_strides(const fz_index_map *m, const int64_t *strides,
                          int64_t *out) {
  for (int r = 0; r < m->cols; r++) {
    int64_t s = 0;
    for (int k = 0; k < m->rows; k++)
      s += strides[k] * m->a[k][r];
    out[r] = s;
  }
}

/* A map's coefficients are its rows x cols; nothing reads past them, so
 * the rules below write only those (a map is half a kilobyte, and
 * clearing all of it for every operand of every op was most of the time
 * of finding maps). dst->cols == src->cols. */
static void copy_row(fz_index_map *dst, int di, const fz_index_map *src,
                     int si) {
  memcpy(dst->a[di], src->a[si], sizeof(int64_t) * (size_t)dst->cols);
}

static void zero_row(fz_index_map *m, int i) {
  memset(m->a[i], 0, sizeof(int64_t) * (size_t)m->cols);
}

static bool is_broadcast(const fz_value *v, int axis) {
  return v->type.axes[axis].kind == FZ_AXIS_BROADCAST;
}

/* Sizes of a value's logical axes. */
static void value_sizes(const fz_value *v, const int64_t *symbols,
                        int64_t *sizes) {
  for (int i = 0; i < v->type.rank; i++)
    sizes[i] = fz_axis_size(&v->type.axes[i], symbols);
}

/* Express each axis of `far` (sizes F, nf axes) as a merge of consecutive
 * axes of `near` (sizes N, nn axes, rows given by `near_map`), writing rows
 * of `far_map`. Fails if some far axis would need a split of a near axis. */
static bool merge_rows(const int64_t *N, int nn, const fz_index_map *near_map,
                       const int64_t *F, int nf, fz_index_map *far_map) {
  int i = 0, j = 0;
  while (i < nn || j < nf) {
    /* size-1 axes on either side: near ones contribute nothing, far ones
     * are always coordinate 0. */
    if (i < nn && N[i] == 1) {
      i++;
      continue;
    }
    if (j < nf && F[j] == 1) {
      zero_row(far_map, j++);
      continue;
    }
    if (i >= nn || j >= nf)
      return false;
    /* One far axis j must be exactly the product of near axes i..e. */
    int64_t product = 1;
    int e = i;
    while (e < nn && product < F[j]) {
      product *= N[e];
      e++;
    }
    if (product != F[j])
      return false;
    zero_row(far_map, j);
    int64_t scale = 1;
    for (int k = e - 1; k >= i; k--) {
      for (int r = 0; r < near_map->cols; r++)
        far_map->a[j][r] += near_map->a[k][r] * scale;
      scale *= N[k];
    }
    i = e;
    j++;
  }
  return true;
}

bool fz_index_map_to_operand(const fz_op *op, int k, const fz_index_map *res,
                             const int64_t *symbols, fz_index_map *out,
                             char *why, size_t why_size) {
  const fz_value *operand = op->operands[k];
  const fz_value *result = op->result;
  int orank = operand->type.rank;
  out->rows = orank; /* every row is written where a map exists */
  out->cols = res->cols;
  switch (fz_op_table[op->code].kind) {
  case FZ_KIND_UNARY:
  case FZ_KIND_CAST:
  case FZ_KIND_BINARY:
  case FZ_KIND_TERNARY:
  case FZ_KIND_SET:
    if (orank == 0)
      return true;
    for (int i = 0; i < orank; i++) {
      if (is_broadcast(operand, i))
        zero_row(out, i);
      else
        copy_row(out, i, res, i);
    }
    return true;
  case FZ_KIND_BROADCAST: {
    int next = 0;
    for (int i = 0; i < result->type.rank; i++) {
      bool inserted = false;
      for (int d = 0; d < op->num_dims; d++)
        inserted |= op->dims[d] == i;
      if (!inserted)
        copy_row(out, next++, res, i);
    }
    return true;
  }
  case FZ_KIND_EXPAND:
    for (int i = 0; i < orank; i++) {
      if (is_broadcast(operand, i))
        zero_row(out, i);
      else
        copy_row(out, i, res, i);
    }
    return true;
  case FZ_KIND_SQUEEZE: {
    int next = 0;
    for (int i = 0; i < orank; i++) {
      bool squeezed = false;
      for (int d = 0; d < op->num_dims; d++)
        squeezed |= op->dims[d] == i;
      if (squeezed)
        zero_row(out, i);
      else
        copy_row(out, i, res, next++);
    }
    return true;
  }
  case FZ_KIND_PERMUTE:
    for (int i = 0; i < result->type.rank; i++)
      copy_row(out, op->perm[i], res, i);
    return true;
  case FZ_KIND_RESHAPE: {
    int64_t P[FZ_MAX_RANK], Q[FZ_MAX_RANK];
    value_sizes(operand, symbols, P);
    value_sizes(result, symbols, Q);
    if (merge_rows(Q, result->type.rank, res, P, orank, out))
      return true;
    if (why)
      snprintf(why, why_size,
               "reshape %%%s splits an axis of its result's iteration space",
               result->name ? result->name : "?");
    return false;
  }
  case FZ_KIND_REDUCTION:
    if (why)
      snprintf(why, why_size, "%s is a reduction", fz_op_table[op->code].name);
    return false;
  case FZ_KIND_SLICE:
  case FZ_KIND_PAD:
  case FZ_KIND_CAT:
    /* an operand is read at shifted, strided points: no linear map; its
     * reads are windowed accesses (dag_resize.c) */
    if (why)
      snprintf(why, why_size, "%s reads its operand through a window",
               fz_op_table[op->code].name);
    return false;
  case FZ_KIND_FULL:
  case FZ_KIND_IOTA:
  case FZ_KIND_SYMBOL:
    break;
  case FZ_KIND_RANDOM: /* the seed and offset: scalars */
    return orank == 0;
  case FZ_KIND_GATHER:
    if (k == 0) {
      if (why)
        snprintf(why, why_size,
                 "%s %%%s reads its data operand where an index says",
                 fz_op_table[op->code].name,
                 result->name ? result->name : "?");
      return false;
    }
    if (op->code == FZ_OP_INDEX_SELECT) {
      if (is_broadcast(operand, 0))
        zero_row(out, 0);
      else
        copy_row(out, 0, res, op->dims[0]);
      return true;
    }
    for (int i = 0; i < orank; i++) {
      if (is_broadcast(operand, i))
        zero_row(out, i);
      else
        copy_row(out, i, res, i);
    }
    return true;
  }
  if (why)
    snprintf(why, why_size, "%s has no operand %d",
             fz_op_table[op->code].name, k);
  return false;
}

fz_index_map fz_index_map_gathered(const fz_op *op, const fz_index_map *res) {
  fz_index_map m = *res;
  zero_row(&m, op->dims[0]);
  for (int i = 0; i < m.rows; i++)
    if (is_broadcast(op->operands[0], i))
      zero_row(&m, i);
  return m;
}

bool fz_index_map_from_operand(const fz_op *op, int k,
                               const fz_index_map *in, const int64_t *symbols,
                               fz_index_map *out) {
  const fz_value *operand = op->operands[k];
  const fz_value *result = op->result;
  int rrank = result->type.rank;
  out->rows = rrank; /* every row is written where a map exists */
  out->cols = in->cols;
  switch (fz_op_table[op->code].kind) {
  case FZ_KIND_UNARY:
  case FZ_KIND_CAST:
  case FZ_KIND_BINARY:
  case FZ_KIND_TERNARY:
  case FZ_KIND_SET:
    if (operand->type.rank != rrank)
      return false;
    for (int i = 0; i < rrank; i++) {
      if (is_broadcast(result, i))
        zero_row(out, i);
      else if (is_broadcast(operand, i))
        return false; /* coordinate decided by another operand */
      else
        copy_row(out, i, in, i);
    }
    return true;
  case FZ_KIND_PERMUTE:
    for (int i = 0; i < rrank; i++)
      copy_row(out, i, in, op->perm[i]);
    return true;
  case FZ_KIND_BROADCAST: {
    int next = 0;
    for (int i = 0; i < rrank; i++) {
      bool inserted = false;
      for (int d = 0; d < op->num_dims; d++)
        inserted |= op->dims[d] == i;
      if (inserted)
        zero_row(out, i);
      else
        copy_row(out, i, in, next++);
    }
    return true;
  }
  case FZ_KIND_SQUEEZE: {
    int next = 0;
    for (int i = 0; i < operand->type.rank; i++) {
      bool squeezed = false;
      for (int d = 0; d < op->num_dims; d++)
        squeezed |= op->dims[d] == i;
      if (!squeezed)
        copy_row(out, next++, in, i);
    }
    return true;
  }
  case FZ_KIND_EXPAND:
    for (int i = 0; i < rrank; i++) {
      if (result->type.axes[i].expanded)
        return false; /* the new extent is not in the operand's space */
      copy_row(out, i, in, i);
    }
    return true;
  case FZ_KIND_RESHAPE: {
    int64_t P[FZ_MAX_RANK], Q[FZ_MAX_RANK];
    value_sizes(operand, symbols, P);
    value_sizes(result, symbols, Q);
    return merge_rows(P, operand->type.rank, in, Q, rrank, out);
  }
  case FZ_KIND_REDUCTION: {
    /* kept axes carry their rows; with keepdim the reduced ones become
     * b1 axes whose coordinate is always 0 */
    int next = 0;
    for (int i = 0; i < operand->type.rank; i++) {
      bool reduced = false;
      for (int d = 0; d < op->num_dims; d++)
        reduced |= op->dims[d] == i;
      if (!reduced)
        copy_row(out, next++, in, i);
      else if (op->keepdim)
        zero_row(out, next++);
    }
    return true;
  }
  case FZ_KIND_FULL:
  case FZ_KIND_IOTA:
  case FZ_KIND_SYMBOL:
  case FZ_KIND_SLICE: /* windows: see fz_index_map_to_operand */
  case FZ_KIND_PAD:
  case FZ_KIND_CAT:
  case FZ_KIND_RANDOM:
    return false;
  case FZ_KIND_GATHER: /* gather's index is in the result's space */
    if (k != 1 || op->code != FZ_OP_GATHER)
      return false;
    for (int i = 0; i < rrank; i++) {
      if (is_broadcast(result, i))
        zero_row(out, i);
      else if (is_broadcast(operand, i))
        return false;
      else
        copy_row(out, i, in, i);
    }
    return true;
  }
  return false;
}
