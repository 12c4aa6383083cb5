/* resize_pushdown.c - the "resize-pushdown" pass: moves slice, pad and cat
 * toward the fusion's inputs, so that a kernel reads each input through a
 * window (dag_resize.c) instead of resizing a computed tensor in memory.
 *
 * Every resize op is a window of its operand: per axis, a slice
 * (start:stop:step) followed by widths added before and after. A window
 * of an elementwise op is the op of its operands' windows, a window of a
 * broadcast along the resized axis is the same broadcast at the new
 * extent (a row statistic broadcast along a row stays one value per row),
 * and a window of a permute is a permuted window of its operand. Where
 * padded points matter, the pushed value is taken only inside the window:
 *
 *   pad(f(x), c)          = where(in window, f(window of x), c)
 *   cat(x0, x1, ...)      = where(y < e0, x0 shifted, where(y < e0 + e1,
 *                                 x1 shifted, ...))   along its axis y
 *
 * and below that `where` the windows pad with don't-care points: f of a
 * padded x is never looked at outside the window, so the fill of f(c)
 * never matters and is not f(c). (The pad value is not f(c): f(x) padded
 * with c is c there.) Don't-care pads are written as pads of 0 where they
 * reach an input, and the predicate as iota comparisons, which the
 * schedulers turn into IOTA nodes. What a window cannot pass (a
 * reduction, a reshape, a squeeze, another resize op, a broadcast whose
 * new axis is padded) gets the window as slice and pad ops right there;
 * if that is not an input, the scheduler declines it and the segmenter
 * splits there.
 *
 * A rewrite whose result would not have the resize op's exact type (a
 * broadcast axis that would come out an ordinary one) is abandoned and
 * the op kept. Values are preserved exactly: the interpreter gives the
 * same outputs before and after.
 */
#include "sched/pass.h"

#include <stdlib.h>
#include <string.h>

/* One window per axis: the slice start:stop:step, then low and high
 * elements added (don't care). `whole` axes are untouched (and may be
 * symbolic). */
typedef struct window {
  int rank;
  bool whole[FZ_MAX_RANK];
  int64_t start[FZ_MAX_RANK], stop[FZ_MAX_RANK], step[FZ_MAX_RANK];
  int64_t low[FZ_MAX_RANK], high[FZ_MAX_RANK];
} window;

typedef struct memo_entry {
  const fz_value *v;
  window w;
  fz_value *result;
} memo_entry;

typedef struct pushdown {
  fz_fusion *f;
  memo_entry *memo;
  int num_memo, cap_memo;
  bool failed; /* a build failed: abandon this rewrite */
} pushdown;

static void identity(window *w, int rank) {
  memset(w, 0, sizeof *w);
  w->rank = rank;
  for (int k = 0; k < rank; k++) {
    w->whole[k] = true;
    w->step[k] = 1;
  }
}

static bool is_identity(const window *w) {
  for (int k = 0; k < w->rank; k++)
    if (!w->whole[k])
      return false;
  return true;
}

static bool same_window(const window *a, const window *b) {
  if (a->rank != b->rank)
    return false;
  for (int k = 0; k < a->rank; k++)
    if (a->whole[k] != b->whole[k] ||
        (!a->whole[k] &&
         (a->start[k] != b->start[k] || a->stop[k] != b->stop[k] ||
          a->step[k] != b->step[k] || a->low[k] != b->low[k] ||
          a->high[k] != b->high[k])))
      return false;
  return true;
}

/* The constant extent of axis k of v (fz_axis_extent), or -1. */
static int64_t const_extent(const fz_value *v, int k) {
  fz_extent e = fz_axis_extent(&v->type.axes[k]);
  return e.symbol >= 0 ? -1 : e.value;
}

/* The extent the window gives axis k of v. */
static int64_t windowed_extent(const window *w, int k) {
  int64_t n = (w->stop[k] - w->start[k] + w->step[k] - 1) / w->step[k];
  return n + w->low[k] + w->high[k];
}

static bool is_b1(const fz_axis *a) {
  return a->kind == FZ_AXIS_BROADCAST && !a->expanded;
}

static fz_value *checked(pushdown *pd, fz_value *v) {
  if (!v)
    pd->failed = true;
  return v;
}

/* The window written as slice and pad ops on v (pads of don't-care 0). */
static fz_value *materialize(pushdown *pd, fz_value *v, const window *w) {
  int rank = v->type.rank;
  int64_t start[FZ_MAX_RANK], step[FZ_MAX_RANK], low[FZ_MAX_RANK],
      high[FZ_MAX_RANK];
  fz_extent stop[FZ_MAX_RANK];
  bool sliced = false, padded = false;
  for (int k = 0; k < rank; k++) {
    start[k] = w->whole[k] ? 0 : w->start[k];
    step[k] = w->whole[k] ? 1 : w->step[k];
    stop[k] = w->whole[k] ? fz_axis_extent(&v->type.axes[k])
                          : fz_const_extent(w->stop[k]);
    low[k] = w->whole[k] ? 0 : w->low[k];
    high[k] = w->whole[k] ? 0 : w->high[k];
    sliced |= !w->whole[k] &&
              (start[k] != 0 || step[k] != 1 ||
               stop[k].value != const_extent(v, k));
    padded |= low[k] != 0 || high[k] != 0;
  }
  if (sliced)
    v = checked(pd, fz_slice(pd->f, v, start, stop, step, NULL));
  if (v && padded)
    v = checked(pd, fz_pad(pd->f, v, low, high, 0.0, NULL));
  return v;
}

static fz_value *shift(pushdown *pd, fz_value *v, const window *w);

/* An elementwise op: each operand under the window, except along its b1
 * axes, which broadcast to whatever extent the others have. */
static fz_value *shift_pointwise(pushdown *pd, const fz_op *op,
                                 const window *w) {
  fz_value *operands[3];
  for (int k = 0; k < op->num_operands; k++) {
    fz_value *u = op->operands[k];
    if (u->type.rank == 0) {
      operands[k] = u;
      continue;
    }
    window wu = *w;
    for (int a = 0; a < u->type.rank; a++)
      if (is_b1(&u->type.axes[a]))
        wu.whole[a] = true;
    if (!(operands[k] = shift(pd, u, &wu)))
      return NULL;
  }
  fz_type target = {.dtype = op->result->type.dtype};
  fz_attrs attrs = {.shape = &target}; /* cast's dtype */
  return checked(pd, fz_build(pd->f, op->code, op->num_operands, operands,
                              &attrs, NULL));
}

/* expand: an expanded b1 axis takes the window's extent (every point of it
 * is the same value; don't-care points too); the others pass it on. */
static fz_value *shift_expand(pushdown *pd, const fz_op *op, const window *w) {
  fz_value *u = op->operands[0];
  window wu = *w;
  for (int a = 0; a < u->type.rank; a++)
    if (is_b1(&u->type.axes[a]))
      wu.whole[a] = true;
  fz_value *x = shift(pd, u, &wu);
  if (!x)
    return NULL;
  fz_type shape = x->type;
  for (int a = 0; a < w->rank; a++) {
    const fz_axis *r = &op->result->type.axes[a];
    if (!is_b1(&u->type.axes[a]) || !r->expanded)
      continue;
    int64_t n = w->whole[a] ? -1 : windowed_extent(w, a);
    if (n < 0) {
      shape.axes[a] = *r;
    } else if (n != 1) {
      shape.axes[a].expanded = true;
      shape.axes[a].expanded_to = fz_const_extent(n);
    }
  }
  return checked(pd, fz_expand(pd->f, x, &shape, NULL));
}

static fz_value *shift_broadcast(pushdown *pd, const fz_op *op,
                                 const window *w) {
  window wu;
  identity(&wu, op->operands[0]->type.rank);
  for (int a = 0, j = 0; a < w->rank; a++) {
    bool inserted = false;
    for (int d = 0; d < op->num_dims; d++)
      inserted |= op->dims[d] == a;
    if (inserted)
      continue; /* a new b1 axis: expanded below */
    wu.whole[j] = w->whole[a];
    wu.start[j] = w->start[a];
    wu.stop[j] = w->stop[a];
    wu.step[j] = w->step[a];
    wu.low[j] = w->low[a];
    wu.high[j] = w->high[a];
    j++;
  }
  fz_value *x = shift(pd, op->operands[0], &wu);
  if (!x)
    return NULL;
  x = checked(pd, fz_broadcast(pd->f, x, op->num_dims, op->dims, NULL));
  /* a window along a new axis: the one value at every point of it (a
   * padded point is a don't-care one) */
  fz_type shape = x ? x->type : (fz_type){0};
  bool grown = false;
  for (int d = 0; x && d < op->num_dims; d++) {
    int a = op->dims[d];
    int64_t n = w->whole[a] ? 1 : windowed_extent(w, a);
    if (n != 1) {
      shape.axes[a].expanded = true;
      shape.axes[a].expanded_to = fz_const_extent(n);
      grown = true;
    }
  }
  return grown ? checked(pd, fz_expand(pd->f, x, &shape, NULL)) : x;
}

static fz_value *shift_permute(pushdown *pd, const fz_op *op,
                               const window *w) {
  window wu;
  identity(&wu, w->rank);
  for (int a = 0; a < w->rank; a++) {
    int from = op->perm[a];
    wu.whole[from] = w->whole[a];
    wu.start[from] = w->start[a];
    wu.stop[from] = w->stop[a];
    wu.step[from] = w->step[a];
    wu.low[from] = w->low[a];
    wu.high[from] = w->high[a];
  }
  fz_value *x = shift(pd, op->operands[0], &wu);
  if (!x)
    return NULL;
  return checked(pd, fz_permute(pd->f, x, op->perm, NULL));
}

/* full of the window's shape: the same value everywhere. */
static fz_value *shift_full(pushdown *pd, const fz_op *op, const window *w) {
  fz_type shape = op->result->type;
  for (int a = 0; a < w->rank; a++)
    if (!w->whole[a])
      shape.axes[a] = (fz_axis){.kind = FZ_AXIS_ITER,
                                .extent = fz_const_extent(windowed_extent(w, a))};
  return checked(pd, fz_full(pd->f, &shape, op->fill, NULL));
}

static fz_value *shift_uncached(pushdown *pd, fz_value *v, const window *w) {
  const fz_op *op = v->kind == FZ_VALUE_RESULT ? v->def : NULL;
  fz_value *r = NULL;
  if (op) {
    switch (fz_op_table[op->code].kind) {
    case FZ_KIND_UNARY:
    case FZ_KIND_CAST:
    case FZ_KIND_BINARY:
    case FZ_KIND_TERNARY:
    case FZ_KIND_SET:
      r = shift_pointwise(pd, op, w);
      break;
    case FZ_KIND_EXPAND:
      r = shift_expand(pd, op, w);
      break;
    case FZ_KIND_BROADCAST:
      r = shift_broadcast(pd, op, w);
      break;
    case FZ_KIND_PERMUTE:
      r = shift_permute(pd, op, w);
      break;
    case FZ_KIND_FULL:
      r = shift_full(pd, op, w);
      break;
    default:
      break;
    }
  }
  if (pd->failed)
    return NULL;
  return r ? r : materialize(pd, v, w);
}

static fz_value *shift(pushdown *pd, fz_value *v, const window *w) {
  if (pd->failed)
    return NULL;
  if (is_identity(w))
    return v;
  for (int i = 0; i < pd->num_memo; i++)
    if (pd->memo[i].v == v && same_window(&pd->memo[i].w, w))
      return pd->memo[i].result;
  fz_value *r = shift_uncached(pd, v, w);
  if (!r)
    return NULL;
  if (pd->num_memo == pd->cap_memo) {
    int cap = pd->cap_memo ? 2 * pd->cap_memo : 16;
    memo_entry *m = fz_arena_alloc(pd->f->arena, sizeof *m * (size_t)cap);
    if (pd->num_memo)
      memcpy(m, pd->memo, sizeof *m * (size_t)pd->num_memo);
    pd->memo = m;
    pd->cap_memo = cap;
  }
  pd->memo[pd->num_memo++] = (memo_entry){v, *w, r};
  return r;
}

/* (lo <= y < hi) of axis `axis` of a rank-`rank` result of extent n, as
 * a bool tensor with b1 everywhere else; either bound may be absent. */
static fz_value *axis_test(pushdown *pd, int rank, int axis, int64_t n,
                           fz_opcode code, int64_t bound) {
  fz_type t = {.dtype = FZ_I64, .rank = 1};
  t.axes[0] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = fz_const_extent(n)};
  fz_attrs attrs = {.shape = &t};
  fz_value *y = checked(pd, fz_build(pd->f, FZ_OP_IOTA, 0, NULL, &attrs, NULL));
  int dims[FZ_MAX_RANK], nd = 0;
  for (int a = 0; a < rank; a++)
    if (a != axis)
      dims[nd++] = a;
  if (y && nd)
    y = checked(pd, fz_broadcast(pd->f, y, nd, dims, NULL));
  if (!y)
    return NULL;
  return checked(pd, fz_binary(pd->f, code, y, fz_literal_int(pd->f, bound),
                               NULL));
}

static fz_value *and_of(pushdown *pd, fz_value *a, fz_value *b) {
  if (!a || !b)
    return a ? a : b;
  return checked(pd, fz_binary(pd->f, FZ_OP_AND, a, b, NULL));
}

/* pad(x, c) = where(in window, window of x, c), x not an input. */
static fz_value *rewrite_pad(pushdown *pd, const fz_op *op) {
  fz_value *x = op->operands[0];
  int rank = x->type.rank;
  window w;
  identity(&w, rank);
  fz_value *inside = NULL;
  for (int k = 0; k < rank; k++) {
    int64_t lo = op->resize.low[k], hi = op->resize.high[k];
    if (lo == 0 && hi == 0)
      continue;
    int64_t e = const_extent(x, k), n = e + lo + hi;
    w.whole[k] = false;
    w.start[k] = lo < 0 ? -lo : 0;
    w.stop[k] = hi < 0 ? e + hi : e;
    w.step[k] = 1;
    w.low[k] = lo > 0 ? lo : 0;
    w.high[k] = hi > 0 ? hi : 0;
    if (lo > 0)
      inside = and_of(pd, inside, axis_test(pd, rank, k, n, FZ_OP_GE, lo));
    if (hi > 0)
      inside = and_of(pd, inside, axis_test(pd, rank, k, n, FZ_OP_LT, lo + e));
  }
  fz_value *shifted = shift(pd, x, &w);
  if (!shifted || !inside)
    return shifted;
  fz_value *fill;
  fz_dtype d = x->type.dtype;
  if (fz_dtype_is_float(d))
    fill = fz_literal_float(pd->f, op->fill.f);
  else if (d == FZ_BOOL)
    fill = fz_literal_bool(pd->f, op->fill.i != 0);
  else
    fill = fz_literal_int(pd->f, op->fill.i);
  /* the literal is weak: where keeps the shifted value's dtype */
  return checked(
      pd, fz_ternary(pd->f, FZ_OP_WHERE, inside, shifted, fill, NULL));
}

/* cat = nested where over the operands shifted into place. */
static fz_value *rewrite_cat(pushdown *pd, const fz_op *op) {
  int axis = op->dims[0];
  int rank = op->result->type.rank;
  int64_t total = const_extent(op->result, axis);
  int64_t *starts = fz_arena_alloc(pd->f->arena,
                                   sizeof *starts * (size_t)op->num_operands);
  int64_t at = 0;
  for (int i = 0; i < op->num_operands; i++) {
    starts[i] = at;
    at += const_extent(op->operands[i], axis);
  }
  fz_value *r = NULL;
  for (int i = op->num_operands - 1; i >= 0; i--) {
    fz_value *x = op->operands[i];
    int64_t e = const_extent(x, axis);
    window w;
    identity(&w, rank);
    if (op->num_operands > 1) {
      w.whole[axis] = false;
      w.stop[axis] = e;
      w.step[axis] = 1;
      w.low[axis] = starts[i];
      w.high[axis] = total - starts[i] - e;
    }
    fz_value *shifted = shift(pd, x, &w);
    if (!shifted)
      return NULL;
    if (!r) {
      r = shifted;
      continue;
    }
    fz_value *first =
        axis_test(pd, rank, axis, total, FZ_OP_LT, starts[i] + e);
    if (!first)
      return NULL;
    r = checked(pd, fz_ternary(pd->f, FZ_OP_WHERE, first, shifted, r, NULL));
    if (!r)
      return NULL;
  }
  return r;
}

/* v is an input, or slices and pads of one. */
static bool chain_on_input(const fz_value *v) {
  while (v->kind == FZ_VALUE_RESULT &&
         (v->def->code == FZ_OP_SLICE || v->def->code == FZ_OP_PAD))
    v = v->def->operands[0];
  return v->kind == FZ_VALUE_INPUT;
}

/* A slice, pad or cat of inputs is read through windows as it is
 * (dag_resize.c). */
static bool on_inputs(const fz_op *op) {
  for (int k = 0; k < op->num_operands; k++)
    if (!chain_on_input(op->operands[k]))
      return false;
  return true;
}

/* Moves the ops made since `first` to just before op index `at`: they
 * read only values defined before `at` (or each other, in order), and
 * only ops from `at` on will read them. */
static void move_before(fz_fusion *f, int first, int at) {
  int n = f->num_ops - first;
  if (n <= 0)
    return;
  fz_op **moved = malloc(sizeof *moved * (size_t)n);
  if (!moved)
    FZ_DIE("out of memory in resize-pushdown");
  memcpy(moved, f->ops + first, sizeof *moved * (size_t)n);
  memmove(f->ops + at + n, f->ops + at, sizeof *moved * (size_t)(first - at));
  memcpy(f->ops + at, moved, sizeof *moved * (size_t)n);
  free(moved);
}

static fz_value *rewrite(pushdown *pd, const fz_op *op) {
  if (op->code == FZ_OP_CAT)
    return rewrite_cat(pd, op);
  if (op->code == FZ_OP_PAD)
    return rewrite_pad(pd, op);
  window w;
  identity(&w, op->result->type.rank);
  for (int k = 0; k < w.rank; k++) {
    if (op->resize.stop[k].symbol >= 0)
      continue; /* a symbolic axis is only ever taken whole */
    w.whole[k] = false;
    w.start[k] = op->resize.start[k];
    w.stop[k] = op->resize.stop[k].value;
    w.step[k] = op->resize.step[k];
  }
  return shift(pd, op->operands[0], &w);
}

fz_status fz_pass_resize_pushdown(fz_fusion *f, fz_error *err) {
  (void)err;
  for (int i = 0; i < f->num_ops; i++) {
    fz_op *op = f->ops[i];
    fz_op_kind kind = fz_op_table[op->code].kind;
    if ((kind != FZ_KIND_SLICE && kind != FZ_KIND_PAD &&
         kind != FZ_KIND_CAT) ||
        on_inputs(op))
      continue;
    pushdown pd = {.f = f};
    int first = f->num_ops;
    fz_value *r = rewrite(&pd, op);
    fz_value *old = op->result;
    if (pd.failed || !r || r->kind != FZ_VALUE_RESULT ||
        !fz_type_same_shape(&r->type, &old->type)) {
      /* abandoned: what was built is dead; the op stays */
      move_before(f, first, i);
      i += f->num_ops - first;
      continue;
    }
    move_before(f, first, i);
    i += f->num_ops - first;
    if (old->type.has_layout && r->type.rank > 0 &&
        fz_value_set_layout(r, old->type.alloc_order, old->type.contiguous,
                            NULL) != FZ_OK)
      FZ_DIE("resize-pushdown: a layout that verified does not apply");
    fz_replace_uses(f, old, r);
    if (old->name && !r->name) {
      r->name = old->name;
      old->name = NULL;
    }
  }
  fz_remove_dead_ops(f);
  return FZ_OK;
}
