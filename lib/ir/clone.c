/* clone.c - an exact, independent copy of a fusion.
 *
 * The executor runs passes (allocation-order propagation) on a private
 * copy, so that the caller's fusion is never touched and may change or be
 * destroyed while the executor lives. "Exact" means everything the
 * printer, the verifier, the interpreter and the passes can observe:
 * name, symbols (names and indices), value ids, names and types, literal
 * values, op attributes and source locations, the order of inputs, ops
 * and outputs, and next_value_id (so that later builder calls number new
 * values as they would have in the original).
 *
 * Values are matched through their ids, which are unique within a fusion
 * (fz_add_input, fz_build and the literal constructors all take the next
 * one): one table from id to copy, filled as inputs, literals and op
 * results are met in SSA order. An operand that is neither an input, a
 * literal nor the result of an earlier op (a fusion that does not verify)
 * is an error, not a silently shared pointer into the original.
 */
#include "fz/ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct clone_map {
  const fz_value **from; /* by id: the original value, NULL when unmet */
  fz_value **to;         /* by id: its copy */
  int size;
} clone_map;

static fz_value *copy_value(fz_fusion *c, clone_map *m, const fz_value *v,
                            fz_error *err) {
  if (v->id < 0 || v->id >= m->size) {
    fz_error_set(err, FZ_ERR_INVALID,
                 "fz_fusion_clone: value id %d is outside the fusion's "
                 "0..%d",
                 v->id, m->size - 1);
    return NULL;
  }
  if (m->from[v->id]) {
    fz_error_set(err, FZ_ERR_INVALID,
                 "fz_fusion_clone: two values share the id %d", v->id);
    return NULL;
  }
  fz_value *n = fz_arena_alloc(c->arena, sizeof *n);
  *n = *v;
  n->owner = c;
  n->name = v->name ? fz_arena_strdup(c->arena, v->name) : NULL;
  n->def = NULL;
  m->from[v->id] = v;
  m->to[v->id] = n;
  return n;
}

/* The copy of a value already met, or NULL. */
static fz_value *lookup(const clone_map *m, const fz_value *v) {
  if (!v || v->id < 0 || v->id >= m->size || m->from[v->id] != v)
    return NULL;
  return m->to[v->id];
}

/* Arena array of exactly `count` pointers (at least one slot, so that a
 * later fz_arena_push has somewhere to start). */
static void **pointer_array(fz_arena *arena, int count) {
  return fz_arena_alloc(arena, sizeof(void *) * (size_t)(count ? count : 1));
}

static fz_status copy_ops(fz_fusion *c, clone_map *m, const fz_fusion *f,
                          fz_error *err) {
  c->ops = (fz_op **)pointer_array(c->arena, f->num_ops);
  c->cap_ops = f->num_ops ? f->num_ops : 1;
  for (int i = 0; i < f->num_ops; i++) {
    const fz_op *op = f->ops[i];
    fz_op *n = fz_arena_alloc(c->arena, sizeof *n);
    *n = *op;
    if (op->num_operands < 0 || (op->num_operands && !op->operands) ||
        !op->result)
      return fz_error_set(err, FZ_ERR_INVALID,
                          "fz_fusion_clone: op %d is malformed", i);
    n->operands = (fz_value **)pointer_array(c->arena, op->num_operands);
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *x = op->operands[k];
      fz_value *y = lookup(m, x);
      if (!y && x && x->kind == FZ_VALUE_LITERAL) {
        y = copy_value(c, m, x, err);
        if (!y)
          return FZ_ERR_INVALID;
      }
      if (!y)
        return fz_error_set(err, FZ_ERR_INVALID,
                            "fz_fusion_clone: operand %d of op %d is not "
                            "defined before it",
                            k, i);
      n->operands[k] = y;
    }
    fz_value *r = copy_value(c, m, op->result, err);
    if (!r)
      return FZ_ERR_INVALID;
    r->def = n;
    n->result = r;
    c->ops[c->num_ops++] = n;
  }
  return FZ_OK;
}

fz_fusion *fz_fusion_clone(const fz_fusion *f, fz_error *err) {
  if (!f) {
    fz_error_set(err, FZ_ERR_ARGUMENT, "fz_fusion_clone: fusion is NULL");
    return NULL;
  }
  clone_map m = {.size = f->next_value_id};
  m.from = calloc((size_t)(m.size ? m.size : 1), sizeof *m.from);
  m.to = calloc((size_t)(m.size ? m.size : 1), sizeof *m.to);
  fz_fusion *c = fz_fusion_create(f->name);
  fz_status st = FZ_OK;
  if (!m.from || !m.to) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  c->next_value_id = f->next_value_id;

  for (int i = 0; i < f->num_symbols; i++)
    FZ_CHECK(fz_fusion_copy_symbol(c, &f->symbols[i]) == i);

  c->inputs = (fz_value **)pointer_array(c->arena, f->num_inputs);
  c->cap_inputs = f->num_inputs ? f->num_inputs : 1;
  for (int i = 0; i < f->num_inputs && st == FZ_OK; i++) {
    fz_value *v = copy_value(c, &m, f->inputs[i], err);
    if (!v)
      st = FZ_ERR_INVALID;
    else
      c->inputs[c->num_inputs++] = v;
  }
  if (st == FZ_OK)
    st = copy_ops(c, &m, f, err);

  c->outputs = (fz_value **)pointer_array(c->arena, f->num_outputs);
  c->cap_outputs = f->num_outputs ? f->num_outputs : 1;
  for (int i = 0; i < f->num_outputs && st == FZ_OK; i++) {
    fz_value *v = lookup(&m, f->outputs[i]);
    if (!v)
      st = fz_error_set(err, FZ_ERR_INVALID,
                        "fz_fusion_clone: output %d is not an input or the "
                        "result of an op",
                        i);
    else
      c->outputs[c->num_outputs++] = v;
  }
done:
  free(m.from);
  free(m.to);
  if (st != FZ_OK) {
    fz_fusion_destroy(c);
    return NULL;
  }
  return c;
}
