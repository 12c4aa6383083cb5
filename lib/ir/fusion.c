/* fusion.c - creating fusions, symbols, inputs and outputs, and the few
 * graph edits every pass needs (replace uses, count uses, drop dead ops).
 *
 * Use lists are not stored: one scan is cheaper than keeping lists
 * consistent across every edit. Passes that count or replace uses per op
 * build the index of uses.c for the duration of a sweep instead.
 */
#include "fz/ir.h"

#include <stdlib.h>
#include <string.h>

fz_fusion *fz_fusion_create(const char *name) {
  fz_arena *arena = fz_arena_create();
  fz_fusion *f = fz_arena_alloc(arena, sizeof *f);
  f->arena = arena;
  f->name = fz_arena_strdup(arena, name ? name : "fusion");
  return f;
}

void fz_fusion_destroy(fz_fusion *fusion) {
  if (fusion)
    fz_arena_destroy(fusion->arena); /* the fusion itself lives in it */
}

int fz_fusion_find_symbol(const fz_fusion *f, const char *name) {
  for (int i = 0; i < f->num_symbols; i++)
    if (f->symbols[i].name && strcmp(f->symbols[i].name, name) == 0)
      return i;
  return -1;
}

int fz_fusion_symbol(fz_fusion *f, const char *name) {
  if (name) {
    int found = fz_fusion_find_symbol(f, name);
    if (found >= 0)
      return found;
  }
  if (f->num_symbols == f->cap_symbols) {
    int cap = f->cap_symbols ? f->cap_symbols * 2 : 8;
    fz_symbol *grown = fz_arena_alloc(f->arena, sizeof *grown * (size_t)cap);
    if (f->num_symbols)
      memcpy(grown, f->symbols, sizeof *grown * (size_t)f->num_symbols);
    f->symbols = grown;
    f->cap_symbols = cap;
  }
  f->symbols[f->num_symbols].name =
      name ? fz_arena_strdup(f->arena, name) : NULL;
  return f->num_symbols++;
}

fz_extent fz_const_extent(int64_t value) {
  return (fz_extent){.value = value, .symbol = -1};
}

fz_extent fz_symbol_extent(int32_t symbol) {
  return (fz_extent){.value = 0, .symbol = symbol};
}

bool fz_extent_equal(fz_extent a, fz_extent b) {
  if (a.symbol >= 0 || b.symbol >= 0)
    return a.symbol == b.symbol;
  return a.value == b.value;
}

fz_extent fz_axis_extent(const fz_axis *axis) {
  if (axis->kind == FZ_AXIS_BROADCAST)
    return axis->expanded ? axis->expanded_to : fz_const_extent(1);
  return axis->extent;
}

int64_t fz_axis_size(const fz_axis *axis, const int64_t *symbol_values) {
  fz_extent e = fz_axis_extent(axis);
  return e.symbol >= 0 ? symbol_values[e.symbol] : e.value;
}

void fz_type_set_row_major(fz_type *t) {
  t->has_layout = true;
  for (int i = 0; i < t->rank; i++) {
    t->alloc_order[i] = i;
    t->contiguous[i] = true;
  }
}

fz_value *fz_add_input(fz_fusion *f, const char *name, const fz_type *type) {
  fz_value *v = fz_arena_alloc(f->arena, sizeof *v);
  v->kind = FZ_VALUE_INPUT;
  v->owner = f;
  v->id = f->next_value_id++;
  v->name = name ? fz_arena_strdup(f->arena, name) : NULL;
  v->type = *type;
  if (!v->type.has_layout)
    fz_type_set_row_major(&v->type);
  v->input_index = f->num_inputs;
  fz_arena_push(f->arena, (void ***)&f->inputs, &f->num_inputs,
                &f->cap_inputs, v);
  return v;
}

fz_status fz_add_output(fz_fusion *f, fz_value *value, fz_error *err) {
  if (!f || !value)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "output: %s is NULL",
                        f ? "value" : "fusion");
  if (value->owner != f)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "output: the value belongs to another fusion, not @%s",
                        f->name);
  if (value->kind == FZ_VALUE_LITERAL)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "a literal cannot be a fusion output");
  fz_arena_push(f->arena, (void ***)&f->outputs, &f->num_outputs,
                &f->cap_outputs, value);
  return FZ_OK;
}

void fz_replace_uses(fz_fusion *f, fz_value *from, fz_value *to) {
  for (int i = 0; i < f->num_ops; i++) {
    fz_op *op = f->ops[i];
    for (int k = 0; k < op->num_operands; k++)
      if (op->operands[k] == from)
        op->operands[k] = to;
  }
  for (int i = 0; i < f->num_outputs; i++)
    if (f->outputs[i] == from)
      f->outputs[i] = to;
}

int fz_count_uses(const fz_fusion *f, const fz_value *value) {
  int uses = 0;
  for (int i = 0; i < f->num_ops; i++) {
    const fz_op *op = f->ops[i];
    for (int k = 0; k < op->num_operands; k++)
      uses += op->operands[k] == value;
  }
  for (int i = 0; i < f->num_outputs; i++)
    uses += f->outputs[i] == value;
  return uses;
}

/* An id outside the fusion (a value of another fusion in unverified IR)
 * names no op of this one. */
static bool in_fusion(const fz_fusion *f, const fz_value *v) {
  return v->id >= 0 && v->id < f->next_value_id;
}

int fz_remove_dead_ops(fz_fusion *f) {
  /* One backward sweep suffices: ops are in SSA order, so an op's users all
   * come after it and have already been decided when we reach it. */
  bool *needed = calloc((size_t)f->next_value_id + 1, sizeof *needed);
  if (!needed)
    FZ_DIE("out of memory removing dead ops");
  for (int o = 0; o < f->num_outputs; o++)
    if (in_fusion(f, f->outputs[o]))
      needed[f->outputs[o]->id] = true;
  int kept = f->num_ops;
  for (int i = f->num_ops - 1; i >= 0; i--) {
    fz_op *op = f->ops[i];
    if (!in_fusion(f, op->result) || !needed[op->result->id])
      continue;
    for (int k = 0; k < op->num_operands; k++)
      if (in_fusion(f, op->operands[k]))
        needed[op->operands[k]->id] = true;
    f->ops[--kept] = op; /* live ops gather at the end, in order */
  }
  free(needed);
  int removed = kept;
  if (removed > 0) /* (f->ops is NULL in a fusion without ops) */
    memmove(f->ops, f->ops + kept,
            sizeof *f->ops * (size_t)(f->num_ops - kept));
  f->num_ops -= removed;
  return removed;
}
