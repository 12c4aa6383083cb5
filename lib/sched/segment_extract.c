/* segment_extract.c - a fusion of its own from a subset of a fusion's ops.
 *
 * The segmenter asks schedulers about candidate groups of ops, and a
 * scheduler only knows whole fusions, so each candidate is copied out. The
 * copy goes through the builder, not a memcpy of the IR: fz_build infers
 * every type again from the copied operands, so a copy that does not make
 * sense (an operand the caller forgot to make an input) fails at once
 * instead of producing IR that lies, and the result is verified.
 *
 * Symbols are copied first, all of them and in order, so that an extent's
 * symbol index means the same in both fusions and the parent's bound
 * symbol values bind the copy unchanged. Names are kept, so printed
 * segments read like the parent, and so are ops' locations, so that an
 * error about a segment's op points at the op in the parent's text.
 */
#include "sched/segment_extract.h"

#include <stdlib.h>
#include <string.h>

static void attrs_of(const fz_op *op, fz_attrs *a) {
  memset(a, 0, sizeof *a);
  a->num_dims = op->num_dims;
  memcpy(a->dims, op->dims, sizeof a->dims);
  a->keepdim = op->keepdim;
  memcpy(a->perm, op->perm, sizeof a->perm);
  a->shape = &op->result->type; /* reshape, expand, full, iota, cast */
  a->fill = op->fill;
  a->iota_start = op->iota_start;
  a->iota_step = op->iota_step;
  a->has_iota_start = a->has_iota_step = true;
  a->symbol = op->symbol; /* the same index: symbols are copied in order */
  a->resize = op->resize;
  a->correction = op->correction;
}

static fz_value *copy_literal(fz_fusion *f, const fz_value *v) {
  switch (v->type.dtype) {
  case FZ_BOOL: return fz_literal_bool(f, v->literal.i != 0);
  case FZ_I64: return fz_literal_int(f, v->literal.i);
  default: return fz_literal_float(f, v->literal.f);
  }
}

static fz_status build(const fz_extract *x, fz_fusion *f, fz_value **map,
                       fz_error *err) {
  const fz_fusion *p = x->parent;
  for (int i = 0; i < p->num_symbols; i++)
    FZ_CHECK(fz_fusion_copy_symbol(f, &p->symbols[i]) == i);
  for (int i = 0; i < x->num_inputs; i++) {
    const fz_value *v = x->inputs[i];
    FZ_CHECK(x->input_types[i].has_layout || x->input_types[i].rank == 0);
    map[v->id] = fz_add_input(f, v->name, &x->input_types[i]);
  }
  for (int j = 0; j < x->num_ops; j++) {
    int i = x->ops[j];
    const fz_op *op = p->ops[i];
    fz_value **operands = fz_arena_alloc(
        f->arena, sizeof *operands * (size_t)(op->num_operands + 1));
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *a = op->operands[k];
      operands[k] = a->kind == FZ_VALUE_LITERAL ? copy_literal(f, a)
                                                : map[a->id];
      if (!operands[k])
        return fz_error_at(err, op->loc, FZ_ERR_INTERNAL,
                           "segment @%s: op %d (%s) reads a value that is "
                           "neither copied nor an input",
                           x->name, i, fz_op_table[op->code].name);
    }
    fz_attrs attrs;
    attrs_of(op, &attrs);
    fz_error why = {0};
    fz_value *r = fz_build(f, op->code, op->num_operands, operands, &attrs,
                           &why);
    if (!r)
      return fz_error_at(err, op->loc, FZ_ERR_INTERNAL,
                         "segment @%s: op %d: %s", x->name, i, why.message);
    const fz_type *t = &op->result->type;
    if (t->has_layout && t->rank > 0 &&
        fz_value_set_layout(r, t->alloc_order, t->contiguous, &why) != FZ_OK)
      return fz_error_at(err, op->loc, FZ_ERR_INTERNAL,
                         "segment @%s: op %d: %s", x->name, i, why.message);
    r->name = op->result->name ? fz_arena_strdup(f->arena, op->result->name)
                               : NULL;
    r->def->loc = op->loc;
    map[op->result->id] = r;
  }
  for (int i = 0; i < x->num_outputs; i++) {
    fz_value *v = map[x->outputs[i]->id];
    if (!v)
      return fz_error_set(err, FZ_ERR_INTERNAL,
                          "segment @%s: output %d is not computed", x->name,
                          i);
    const fz_type *lay = x->output_layouts ? x->output_layouts[i] : NULL;
    if (lay && lay->has_layout && v->kind == FZ_VALUE_RESULT &&
        v->type.rank > 0 &&
        fz_value_set_layout(v, lay->alloc_order, NULL, err) != FZ_OK)
      return FZ_ERR_INTERNAL;
    fz_status st = fz_add_output(f, v, err);
    if (st != FZ_OK)
      return st;
  }
  fz_error why = {0};
  if (fz_verify(f, &why) != FZ_OK)
    return fz_error_at(err, fz_error_loc(&why), FZ_ERR_INTERNAL,
                       "segment @%s does not verify: %s", x->name, why.message);
  return FZ_OK;
}

fz_status fz_extract_fusion(const fz_extract *x, fz_fusion **out,
                            fz_value **map, fz_error *err) {
  *out = NULL;
  size_t n = (size_t)x->parent->next_value_id;
  fz_value **own = map ? NULL : calloc(n + 1, sizeof *own);
  if (!map && !own)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  fz_fusion *f = fz_fusion_create(x->name);
  fz_status st = build(x, f, map ? map : own, err);
  free(own);
  if (st != FZ_OK) {
    fz_fusion_destroy(f);
    return st;
  }
  *out = f;
  return FZ_OK;
}
