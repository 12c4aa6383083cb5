/* uses.c - who reads each value, for passes that rewrite a fusion.
 *
 * fz_count_uses and fz_replace_uses scan every op, which is fine once but
 * quadratic when a pass asks for every op of a large fusion. A pass that
 * asks per op builds this index instead: one record per operand slot and
 * per output slot, on a doubly linked list per value, so that counting is
 * O(1) and replacing or moving one operand costs only the uses it moves.
 *
 * The index lives in its own arena (allocation failure is fatal, as for a
 * fusion's arena) and is valid while every edit of operands and outputs
 * goes through it and no op is added, removed or reordered; passes build
 * it again after fz_remove_dead_ops. Values made after it was built (the
 * literals a fold creates) are covered as they first gain a use.
 */
#include "fz/ir.h"

#include <string.h>

struct fz_uses {
  fz_fusion *fusion;
  fz_arena *arena;
  int size;         /* value ids covered */
  fz_use **head;    /* by value id */
  int *count;       /* by value id */
  int *num_outputs; /* by value id: uses that are fusion outputs */
  fz_use *op_uses;  /* 3 per op, by op index */
  fz_use *out_uses; /* 1 per output */
};

static void cover(fz_uses *u, int id) {
  if (id < u->size)
    return;
  int size = u->size ? u->size : 16;
  while (size <= id)
    size *= 2;
  fz_use **head = fz_arena_alloc(u->arena, sizeof *head * (size_t)size);
  int *count = fz_arena_alloc(u->arena, sizeof *count * (size_t)size);
  int *outs = fz_arena_alloc(u->arena, sizeof *outs * (size_t)size);
  if (u->size) {
    memcpy(head, u->head, sizeof *head * (size_t)u->size);
    memcpy(count, u->count, sizeof *count * (size_t)u->size);
    memcpy(outs, u->num_outputs, sizeof *outs * (size_t)u->size);
  }
  u->head = head;
  u->count = count;
  u->num_outputs = outs;
  u->size = size;
}

static void link(fz_uses *u, fz_use *r, fz_value *v) {
  r->value = v;
  cover(u, v->id);
  r->prev = NULL;
  r->next = u->head[v->id];
  if (r->next)
    r->next->prev = r;
  u->head[v->id] = r;
  u->count[v->id]++;
  u->num_outputs[v->id] += r->op == NULL;
}

static void unlink_use(fz_uses *u, fz_use *r) {
  int id = r->value->id;
  if (r->prev)
    r->prev->next = r->next;
  else
    u->head[id] = r->next;
  if (r->next)
    r->next->prev = r->prev;
  u->count[id]--;
  u->num_outputs[id] -= r->op == NULL;
  r->value = NULL;
}

fz_uses *fz_uses_build(fz_fusion *f) {
  fz_arena *arena = fz_arena_create();
  fz_uses *u = fz_arena_alloc(arena, sizeof *u);
  u->fusion = f;
  u->arena = arena;
  cover(u, f->next_value_id);
  u->op_uses =
      fz_arena_alloc(arena, sizeof *u->op_uses * 3 * (size_t)(f->num_ops + 1));
  u->out_uses =
      fz_arena_alloc(arena, sizeof *u->out_uses * (size_t)(f->num_outputs + 1));
  for (int i = 0; i < f->num_ops; i++) {
    fz_op *op = f->ops[i];
    for (int k = 0; k < op->num_operands; k++) {
      fz_use *r = &u->op_uses[3 * i + k];
      r->op = op;
      r->slot = k;
      link(u, r, op->operands[k]);
    }
  }
  for (int i = 0; i < f->num_outputs; i++) {
    fz_use *r = &u->out_uses[i];
    r->slot = i;
    link(u, r, f->outputs[i]);
  }
  return u;
}

void fz_uses_destroy(fz_uses *u) {
  if (u)
    fz_arena_destroy(u->arena); /* u lives in it */
}

int fz_uses_count(const fz_uses *u, const fz_value *v) {
  return v->id < u->size ? u->count[v->id] : 0;
}

bool fz_uses_is_output(const fz_uses *u, const fz_value *v) {
  return v->id < u->size && u->num_outputs[v->id] > 0;
}

const fz_use *fz_uses_first(const fz_uses *u, const fz_value *v) {
  return v->id < u->size ? u->head[v->id] : NULL;
}

void fz_uses_replace(fz_uses *u, fz_value *from, fz_value *to) {
  if (from == to || from->id >= u->size)
    return;
  fz_use *r = u->head[from->id];
  while (r) {
    fz_use *next = r->next;
    unlink_use(u, r);
    if (r->op)
      r->op->operands[r->slot] = to;
    else
      u->fusion->outputs[r->slot] = to;
    link(u, r, to);
    r = next;
  }
}

void fz_uses_set_operand(fz_uses *u, int op_index, int k, fz_value *v) {
  fz_use *r = &u->op_uses[3 * op_index + k];
  FZ_CHECK(r->op == u->fusion->ops[op_index] && r->value);
  unlink_use(u, r);
  r->op->operands[k] = v;
  link(u, r, v);
}
