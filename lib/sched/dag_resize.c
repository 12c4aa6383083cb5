/* dag_resize.c - the nodes of resize ops (slice, pad, cat) whose operands
 * are fusion inputs: each becomes a windowed read of the input, with no
 * round trip through memory.
 *
 * Below a resize op's result at reference coordinates c, axis k's
 * coordinate is y_k = (m c)_k. Walking down a chain of slices and pads to
 * the input, each axis keeps an affine form x_k = off_k + mul_k * y_k of
 * the coordinate it reads: a slice maps s to start + step * s, a pad maps
 * its result coordinate p to p - low. So the input is one access with
 * strides stride_k * mul_k carried through m and the offset
 * sum_k stride_k * off_k: slice is an offset plus a stride times its
 * step. A pad that widens an axis also records a guard, its window
 * low <= p < low + extent in the same affine form; the load becomes
 * where(in window, load, fill) with IOTA nodes for the coordinates, and
 * its access is clamped (plan.h) so that points outside the window read
 * inside the tensor. A cat selects between its operands' windows by the
 * coordinate along its axis: operand i is read at y - offset_i where
 * y < offset_i + extent_i, the last one elsewhere.
 *
 * The IOTA nodes also keep the canonical space exact: dag.c merges two
 * axes only where every IOTA node steps them as one, and a coordinate of
 * one axis alone never does, so a windowed axis is never merged with its
 * outer neighbour.
 *
 * What is not a chain ending at an input (a slice of a reduction's result,
 * of a reshape) is declined here; the pushdown pass (resize_pushdown.c)
 * has moved every resize op it could to the inputs first, and the
 * segmenter splits where it could not.
 */
#include "sched/dag.h"

#include <string.h>

typedef struct guard {
  int axis;
  int64_t off, mul; /* the pad's result coordinate: off + mul * y */
  int64_t lo, hi;   /* its window */
  bool test_lo, test_hi; /* a side widened (a cropped side needs no test) */
  fz_scalar fill;
} guard;

typedef struct window {
  int64_t off[FZ_MAX_RANK], mul[FZ_MAX_RANK];
  guard guards[2 * FZ_MAX_RANK * 4];
  int num_guards;
  bool clamp; /* some lane may fall outside the tensor */
} window;

static int literal(fz_dag *d, fz_dtype dtype, fz_scalar s, fz_space space) {
  return fz_dag_push_node(d,
                          (fz_plan_node){.kind = FZ_NODE_LITERAL,
                                         .dtype = dtype,
                                         .literal = s,
                                         .space = space},
                          NULL);
}

static int op_node(fz_dag *d, fz_opcode code, fz_dtype dtype, int a, int b,
                   int c, fz_space space) {
  fz_plan_node n = {.kind = FZ_NODE_OP,
                    .code = code,
                    .dtype = dtype,
                    .num_operands = c >= 0 ? 3 : 2,
                    .operands = {a, b, c},
                    .space = space};
  return fz_dag_push_node(d, n, NULL);
}

/* off + mul * y_axis, as an i64 IOTA node. */
static int coordinate(fz_dag *d, const fz_index_map *m, int axis,
                      int64_t off, int64_t mul, fz_space space) {
  fz_plan_node n = {.kind = FZ_NODE_IOTA,
                    .dtype = FZ_I64,
                    .literal = {.i = off},
                    .step = {.i = mul},
                    .space = space};
  for (int r = 0; r < m->cols; r++)
    n.coeff[r] = m->a[axis][r];
  return fz_dag_push_node(d, n, m);
}

/* lo <= off + mul * y_axis < hi, as a bool node (the sides tested). */
static int in_window(fz_dag *d, const fz_index_map *m, const guard *g,
                     fz_space space) {
  int y = coordinate(d, m, g->axis, g->off, g->mul, space);
  int above = -1, below = -1;
  if (g->test_lo)
    above = op_node(d, FZ_OP_GE, FZ_BOOL, y,
                    literal(d, FZ_I64, (fz_scalar){.i = g->lo}, space), -1,
                    space);
  if (g->test_hi)
    below = op_node(d, FZ_OP_LT, FZ_BOOL, y,
                    literal(d, FZ_I64, (fz_scalar){.i = g->hi}, space), -1,
                    space);
  if (above < 0 || below < 0)
    return above < 0 ? below : above;
  return op_node(d, FZ_OP_AND, FZ_BOOL, above, below, -1, space);
}

/* Walks v's chain of slices and pads down to a fusion input, composing
 * the window; the input, or NULL with a reason. */
static const fz_value *walk_chain(fz_dag *d, const fz_value *v, window *w) {
  char label[64];
  for (;;) {
    if (v->kind == FZ_VALUE_INPUT)
      return v;
    const fz_op *op = v->kind == FZ_VALUE_RESULT ? v->def : NULL;
    if (!op || (op->code != FZ_OP_SLICE && op->code != FZ_OP_PAD)) {
      fz_dag_decline_at(d, v,
                        "%s is resized but is not a fusion input (a resize "
                        "op fuses only once it is moved to the inputs)",
                        fz_dag_label(d, v, label, sizeof label));
      return NULL;
    }
    const fz_value *u = op->operands[0];
    for (int k = 0; k < u->type.rank; k++) {
      if (op->code == FZ_OP_SLICE) {
        w->off[k] = op->resize.start[k] + op->resize.step[k] * w->off[k];
        w->mul[k] *= op->resize.step[k];
        continue;
      }
      if (op->resize.low[k] > 0 || op->resize.high[k] > 0) {
        if (w->num_guards == (int)(sizeof w->guards / sizeof w->guards[0])) {
          fz_dag_decline_at(d, v, "%s: too many pads in one chain",
                            fz_dag_label(d, v, label, sizeof label));
          return NULL;
        }
        int64_t extent = fz_axis_size(&u->type.axes[k], d->problem->symbols);
        w->guards[w->num_guards++] =
            (guard){.axis = k,
                    .off = w->off[k],
                    .mul = w->mul[k],
                    .lo = op->resize.low[k],
                    .hi = op->resize.low[k] + extent,
                    .test_lo = op->resize.low[k] > 0,
                    .test_hi = op->resize.high[k] > 0,
                    .fill = op->fill};
        w->clamp = true;
      }
      w->off[k] -= op->resize.low[k];
    }
    v = u;
  }
}

static int64_t span_of(const fz_tensor_desc *t) {
  int64_t span = 1;
  for (int k = 0; k < t->rank; k++) {
    if (t->sizes[k] == 0)
      return 0;
    int64_t s = t->strides[k] < 0 ? -t->strides[k] : t->strides[k];
    span += (t->sizes[k] - 1) * s;
  }
  return span;
}

/* The node of the chain at v read through window w (its guards applied,
 * innermost first); `top` is the value the last node computes. */
static int chain_node(fz_dag *d, const fz_value *v, const fz_index_map *m,
                      fz_space space, window *w, const fz_value *top) {
  const fz_value *x = walk_chain(d, v, w);
  if (!x)
    return -1;
  const fz_tensor_desc *t = &d->problem->inputs[x->input_index];
  int64_t strides[FZ_MAX_RANK] = {0}, offset = 0;
  for (int k = 0; k < x->type.rank; k++) {
    offset += t->strides[k] * w->off[k];
    for (int r = 0; r < m->cols; r++)
      strides[r] += t->strides[k] * w->mul[k] * m->a[k][r];
  }
  int64_t span = span_of(t);
  fz_dtype dtype = x->type.dtype;
  int node;
  if (span == 0) {
    /* nothing to read: every point is outside every window */
    node = literal(d, dtype, (fz_scalar){0}, space);
  } else {
    int a = fz_dag_push_access(d, x->input_index, strides, offset,
                               w->clamp ? span : 0);
    node = fz_dag_push_node(d,
                            (fz_plan_node){.kind = FZ_NODE_LOAD,
                                           .dtype = dtype,
                                           .access = a,
                                           .value = w->num_guards ? NULL : top,
                                           .space = space},
                            m);
  }
  for (int g = w->num_guards - 1; g >= 0; g--) {
    int pred = in_window(d, m, &w->guards[g], space);
    int fill = literal(d, dtype, w->guards[g].fill, space);
    fz_plan_node n = {.kind = FZ_NODE_OP,
                      .code = FZ_OP_WHERE,
                      .dtype = dtype,
                      .num_operands = 3,
                      .operands = {pred, node, fill},
                      .value = g == 0 ? top : NULL,
                      .space = space};
    node = fz_dag_push_node(d, n, m);
  }
  return node;
}

static void identity_window(window *w, int rank) {
  memset(w, 0, sizeof *w);
  for (int k = 0; k < rank; k++)
    w->mul[k] = 1;
}

static int cat_node(fz_dag *d, const fz_value *v, const fz_index_map *m,
                    fz_space space) {
  const fz_op *op = v->def;
  int axis = op->dims[0];
  int n = op->num_operands;
  /* the operands' starts along the axis */
  int64_t at = 0;
  int64_t *starts = fz_arena_alloc(d->arena, sizeof *starts * (size_t)n);
  for (int i = 0; i < n; i++) {
    starts[i] = at;
    at += fz_axis_size(&op->operands[i]->type.axes[axis], d->problem->symbols);
  }
  int node = -1;
  for (int i = n - 1; i >= 0; i--) {
    window w;
    identity_window(&w, v->type.rank);
    w.off[axis] = -starts[i];
    w.clamp = n > 1;
    int x = chain_node(d, op->operands[i], m, space, &w, n == 1 ? v : NULL);
    if (x < 0 || n == 1)
      return x;
    if (node < 0) {
      node = x;
      continue;
    }
    int y = coordinate(d, m, axis, 0, 1, space);
    int end = literal(d, FZ_I64, (fz_scalar){.i = starts[i + 1]}, space);
    fz_plan_node sel = {.kind = FZ_NODE_OP,
                        .code = FZ_OP_WHERE,
                        .dtype = v->type.dtype,
                        .num_operands = 3,
                        .operands = {op_node(d, FZ_OP_LT, FZ_BOOL, y, end, -1,
                                             space),
                                     x, node},
                        .value = i == 0 ? v : NULL, /* the result, memoised */
                        .space = space};
    node = fz_dag_push_node(d, sel, m);
  }
  return node;
}

int fz_dag_resize_node(fz_dag *d, const fz_value *v, const fz_index_map *m,
                       fz_space space) {
  if (v->def->code == FZ_OP_CAT)
    return cat_node(d, v, m, space);
  window w;
  identity_window(&w, v->type.rank);
  return chain_node(d, v, m, space, &w, v);
}

bool fz_dag_resize_unmapped(fz_dag *d) {
  const fz_fusion *f = d->problem->fusion;
  for (int i = 0; i < f->num_ops; i++) {
    const fz_op *op = f->ops[i];
    fz_op_kind kind = fz_op_table[op->code].kind;
    if ((kind != FZ_KIND_SLICE && kind != FZ_KIND_PAD && kind != FZ_KIND_CAT) ||
        d->maps[op->result->id])
      continue;
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *x = op->operands[k];
      if (x->kind != FZ_VALUE_RESULT || !d->maps[x->id])
        continue;
      char r[64], a[64];
      const char *rl = fz_dag_label(d, op->result, r, sizeof r);
      const char *al = fz_dag_label(d, x, a, sizeof a);
      fz_dag_decline_at(d, op->result,
                        "%s = %s of %s, a value computed here: a resize fuses "
                        "only as a window of a fusion input, so %s is "
                        "computed first",
                        rl, fz_op_table[op->code].name, al, al);
      return true;
    }
  }
  return false;
}
