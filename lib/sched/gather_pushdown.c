/* gather_pushdown.c - the "gather-pushdown" pass: a gather (or
 * index_select) of a computed value becomes the computation of that value
 * at the gathered coordinates, so that the gathers left read fusion inputs
 * and a kernel reads them as gathered loads (plan.h).
 *
 * gather(op(a, b), i) = op(gather(a, i), gather(b, i)) for a pointwise op,
 * a cast or a copy, exactly: the op is recomputed at the points gathered
 * instead of everywhere. An operand that does not vary along the gathered
 * axis (a literal, a rank-0 value, a b1 axis, an expand of one) is the
 * same at every index and stays as it is (an expand is undone, its b1
 * stretching in the pointwise op instead). A value the rule cannot go
 * through (a reduction, a reshape, ...) is gathered where it is; the
 * segmenter then makes it an intermediate, and its notes say why the
 * gather and its producer did not meet.
 *
 * New ops are inserted just before the gather they replace, so operands
 * stay defined before their uses; the replaced gather is left dead and
 * removed with the others at the end. cse then merges what two gathers
 * recomputed alike.
 */
#include "sched/pass.h"

#include <string.h>

/* Deeper chains are gathered where the walk stops (no unbounded stack). */
enum { MAX_DEPTH = 64 };

typedef struct pusher {
  fz_fusion *f;
  const fz_op *gather; /* the op being replaced: code, dims, index */
  int at;              /* where the next new op goes */
  bool failed;         /* a build failed: leave the gather as it was */
} pusher;

/* fz_build, with the new op moved from the end to position `at`. */
static fz_value *build_at(pusher *p, fz_opcode code, int n,
                          fz_value *const *operands, const fz_attrs *attrs) {
  fz_value *v = fz_build(p->f, code, n, operands, attrs, NULL);
  if (!v) {
    p->failed = true;
    return NULL;
  }
  fz_fusion *f = p->f;
  fz_op *op = f->ops[f->num_ops - 1];
  memmove(f->ops + p->at + 1, f->ops + p->at,
          sizeof *f->ops * (size_t)(f->num_ops - 1 - p->at));
  f->ops[p->at++] = op;
  return v;
}

static bool varies_along(const fz_value *v, int axis) {
  return v->kind != FZ_VALUE_LITERAL && v->type.rank > axis &&
         v->type.axes[axis].kind != FZ_AXIS_BROADCAST;
}

static bool pointwise(const fz_op *op) {
  fz_op_kind k = fz_op_table[op->code].kind;
  return k == FZ_KIND_UNARY || k == FZ_KIND_CAST || k == FZ_KIND_BINARY ||
         k == FZ_KIND_TERNARY || k == FZ_KIND_SET;
}

static fz_value *push(pusher *p, fz_value *v, int depth);

/* Operand o of a pointwise op at the gathered points. */
static fz_value *operand(pusher *p, fz_value *o, int depth) {
  int d = p->gather->dims[0];
  if (o->kind == FZ_VALUE_LITERAL || o->type.rank == 0)
    return o;
  if (!varies_along(o, d)) {
    /* the same at every index: undo an expand, b1 stretches instead */
    while (o->kind == FZ_VALUE_RESULT && o->def->code == FZ_OP_EXPAND)
      o = o->def->operands[0];
    return o;
  }
  return push(p, o, depth + 1);
}

/* v gathered as p->gather gathers: pushed through v's op where the rule
 * allows, else a gather of v. */
static fz_value *push(pusher *p, fz_value *v, int depth) {
  fz_value *index = p->gather->operands[1];
  const fz_op *op = v->kind == FZ_VALUE_RESULT ? v->def : NULL;
  if (!op || !pointwise(op) || depth >= MAX_DEPTH) {
    fz_attrs a = {.num_dims = 1, .dims = {p->gather->dims[0]}};
    return build_at(p, p->gather->code, 2, (fz_value *const[]){v, index}, &a);
  }
  fz_value *operands[3];
  for (int k = 0; k < op->num_operands; k++)
    if (!(operands[k] = operand(p, op->operands[k], depth)))
      return NULL;
  if (op->code == FZ_OP_SET)
    return operands[0];
  fz_type dtype = {.dtype = v->type.dtype};
  fz_attrs a = {.shape = &dtype};
  return build_at(p, op->code, op->num_operands, operands, &a);
}

/* Replaces gather op *i by its pushed-down form, inserted before it, and
 * moves *i to the gather (now dead, or left as it was); false when nothing
 * changed. */
static bool push_gather(fz_fusion *f, int *i) {
  fz_op *g = f->ops[*i];
  fz_value *data = g->operands[0];
  if (data->kind != FZ_VALUE_RESULT || !pointwise(data->def))
    return false;
  pusher p = {.f = f, .gather = g, .at = *i};
  fz_value *v = push(&p, data, 0);
  *i = p.at; /* the new ops come before it */
  if (p.failed || !v || !fz_type_same_shape(&v->type, &g->result->type))
    return false; /* what was built is dead, removed by the caller */
  fz_value *r = g->result;
  if (r->type.has_layout) {
    memcpy(v->type.alloc_order, r->type.alloc_order, sizeof r->type.alloc_order);
    memcpy(v->type.contiguous, r->type.contiguous, sizeof r->type.contiguous);
    v->type.has_layout = true;
  }
  v->name = r->name;
  r->name = NULL;
  fz_replace_uses(f, r, v);
  return true;
}

fz_status fz_pass_gather_pushdown(fz_fusion *f, fz_error *err) {
  (void)err;
  bool changed = false;
  for (int i = 0; i < f->num_ops; i++)
    if (fz_op_table[f->ops[i]->code].kind == FZ_KIND_GATHER &&
        push_gather(f, &i))
      changed = true;
  fz_remove_dead_ops(f);
  if (changed)
    while (fz_cse(f))
      fz_remove_dead_ops(f);
  return FZ_OK;
}
