/* cse.c - common-subexpression elimination.
 *
 * Two ops compute the same value when they have the same opcode, the same
 * operands (the same value, or literals of equal dtype and bits), the same
 * attributes and the same result type, layout included: a result whose
 * layout was declared differently is a different tensor in memory, and
 * merging it would silently move an output. Commutative ops also match
 * with their two operands swapped (every op computes in f64 and rounds
 * once, so a+b and b+a are bitwise equal).
 *
 * The sweep keeps, per class of equal ops, the earliest op seen so far in
 * a hash table. The hash covers only what equality compares exactly
 * (opcode, result dtype and rank, operands: identity, or a literal's dtype
 * and bits; the two operands of a commutative op unordered), and a bucket
 * hit is confirmed by the full comparison below, so the table only makes
 * the earlier plain scan linear: the op found is the first earlier op
 * equal to the later one, as the scan found it.
 */
#include "sched/pass.h"
#include "sched/itable.h"

#include <stdint.h>
#include <string.h>

static bool scalar_equal(fz_scalar a, fz_scalar b, fz_dtype dtype) {
  if (fz_dtype_is_float(dtype)) {
    uint64_t x, y; /* bits: -0.0 differs from 0.0, a NaN equals itself */
    memcpy(&x, &a.f, sizeof x);
    memcpy(&y, &b.f, sizeof y);
    return x == y;
  }
  return a.i == b.i;
}

static bool operand_equal(const fz_value *a, const fz_value *b) {
  if (a == b)
    return true;
  return a->kind == FZ_VALUE_LITERAL && b->kind == FZ_VALUE_LITERAL &&
         a->type.dtype == b->type.dtype &&
         scalar_equal(a->literal, b->literal, a->type.dtype);
}

static bool type_equal(const fz_type *a, const fz_type *b) {
  if (!fz_type_same_shape(a, b) || a->has_layout != b->has_layout)
    return false;
  if (!a->has_layout)
    return true;
  for (int i = 0; i < a->rank; i++)
    if (a->alloc_order[i] != b->alloc_order[i] ||
        a->contiguous[i] != b->contiguous[i])
      return false;
  return true;
}

static bool operands_equal(const fz_op *a, const fz_op *b) {
  if (a->num_operands != b->num_operands)
    return false;
  bool same = true;
  for (int k = 0; k < a->num_operands; k++)
    same = same && operand_equal(a->operands[k], b->operands[k]);
  if (same)
    return true;
  if (a->num_operands == 2 && (fz_op_table[a->code].flags & FZ_F_COMMUTATIVE))
    return operand_equal(a->operands[0], b->operands[1]) &&
           operand_equal(a->operands[1], b->operands[0]);
  return false;
}

/* Attributes not already captured by the result type (reshape and expand
 * targets and cast dtypes are in the type). */
static bool attrs_equal(const fz_op *a, const fz_op *b) {
  fz_dtype dtype = a->result->type.dtype;
  switch (fz_op_table[a->code].kind) {
  case FZ_KIND_REDUCTION:
    if (a->keepdim != b->keepdim || a->correction != b->correction)
      return false;
    /* fall through */
  case FZ_KIND_BROADCAST:
  case FZ_KIND_SQUEEZE:
  case FZ_KIND_GATHER:
    return a->num_dims == b->num_dims &&
           memcmp(a->dims, b->dims, sizeof a->dims[0] * (size_t)a->num_dims) ==
               0;
  case FZ_KIND_PERMUTE:
    return memcmp(a->perm, b->perm,
                  sizeof a->perm[0] * (size_t)a->result->type.rank) == 0;
  case FZ_KIND_FULL:
    return scalar_equal(a->fill, b->fill, dtype);
  case FZ_KIND_IOTA:
    return scalar_equal(a->iota_start, b->iota_start, dtype) &&
           scalar_equal(a->iota_step, b->iota_step, dtype);
  case FZ_KIND_SYMBOL: /* two reads of one symbol are one value */
    return a->symbol == b->symbol;
  case FZ_KIND_CAT:
    return a->dims[0] == b->dims[0];
  case FZ_KIND_PAD:
    if (!scalar_equal(a->fill, b->fill, dtype))
      return false;
    /* fall through */
  case FZ_KIND_SLICE:
    for (int k = 0; k < a->result->type.rank; k++)
      if (a->resize.start[k] != b->resize.start[k] ||
          !fz_extent_equal(a->resize.stop[k], b->resize.stop[k]) ||
          a->resize.step[k] != b->resize.step[k] ||
          a->resize.low[k] != b->resize.low[k] ||
          a->resize.high[k] != b->resize.high[k])
        return false;
    return true;
  default:
    return true;
  }
}

static bool ops_equal(const fz_op *a, const fz_op *b) {
  return a->code == b->code && type_equal(&a->result->type, &b->result->type) &&
         attrs_equal(a, b) && operands_equal(a, b);
}

/* ---- the first op of each class ----------------------------------------- */

static uint64_t operand_hash(const fz_value *v) {
  if (v->kind == FZ_VALUE_LITERAL) /* equal literals: same dtype and bits */
    return fz_hash_mix((uint64_t)v->type.dtype, (uint64_t)v->literal.i);
  return (uint64_t)(uintptr_t)v;
}

static uint64_t op_hash(const fz_op *op) {
  uint64_t h = fz_hash_mix((uint64_t)op->code, (uint64_t)op->result->type.dtype);
  h = fz_hash_mix(h, (uint64_t)op->result->type.rank);
  h = fz_hash_mix(h, (uint64_t)op->num_operands);
  if (op->num_operands == 2 &&
      (fz_op_table[op->code].flags & FZ_F_COMMUTATIVE)) {
    uint64_t a = operand_hash(op->operands[0]),
             b = operand_hash(op->operands[1]);
    return fz_hash_mix(h, a < b ? fz_hash_mix(a, b) : fz_hash_mix(b, a));
  }
  for (int k = 0; k < op->num_operands; k++)
    h = fz_hash_mix(h, operand_hash(op->operands[k]));
  return h;
}

typedef struct probe {
  const fz_fusion *f;
  const fz_op *later;
} probe;

static bool same_op(const void *ctx, int index) {
  const probe *p = ctx;
  return ops_equal(p->f->ops[index], p->later);
}

bool fz_cse_uses(fz_fusion *f, fz_uses *uses) {
  fz_arena *arena = fz_arena_create();
  fz_itable first; /* per class of equal ops, the earliest */
  fz_itable_init(&first, arena);
  bool changed = false;
  for (int j = 0; j < f->num_ops; j++) {
    fz_op *later = f->ops[j];
    uint64_t h = op_hash(later);
    probe p = {f, later};
    int i = fz_itable_find(&first, h, same_op, &p);
    /* An unused op is still the first of its class for later ones. */
    if (i < 0)
      fz_itable_add(&first, h, j);
    else if (fz_uses_count(uses, later->result) > 0) {
      fz_uses_replace(uses, later->result, f->ops[i]->result);
      changed = true;
    }
  }
  fz_arena_destroy(arena);
  return changed;
}

bool fz_cse(fz_fusion *f) {
  fz_uses *uses = fz_uses_build(f);
  bool changed = fz_cse_uses(f, uses);
  fz_uses_destroy(uses);
  return changed;
}

fz_status fz_pass_cse(fz_fusion *f, fz_error *err) {
  (void)err;
  while (fz_cse(f))
    ;
  fz_remove_dead_ops(f);
  return FZ_OK;
}
