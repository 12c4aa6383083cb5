/* canonicalize.c - local folds that remove the noise tracing front ends
 * leave in a fusion, run to a fixpoint.
 *
 * Thunder and similar tracers emit chains such as sum -> broadcast -> set ->
 * squeeze -> broadcast -> set -> set -> expand (seed 000): each step is
 * harmless, but an analysis that follows one producer chain can lose track
 * of an axis inside it. Folding the chain away up front makes every later
 * stage see the short form. The folds:
 *
 *   squeeze(broadcast(x))  -> x  when the squeeze removes exactly the new axes
 *   broadcast(squeeze(x))  -> x  when the removed axes of x were plain b1
 *   set(x)                 -> x  unless the set declares a different layout
 *   permute(permute(x))    -> permute(x) with the composed perm, or x
 *   reshape(reshape(x))    -> reshape(x); reshape(x) to x's own shape -> x
 *   op(literals...)        -> a literal, evaluated by the interpreter
 *                             (a symbol read is not a literal: its value
 *                             is known only at run time, so nothing folds)
 *   common subexpressions (cse.c), then dead ops.
 *
 * Semantics are preserved exactly; the interpreter is the judge, and the
 * unit tests compare its outputs bitwise before and after. Two rules carry
 * that guarantee:
 *  - Layout. A result whose layout was declared (a requested output format,
 *    a relayout copy) is only replaced by a value with the same declared
 *    layout. Otherwise the folded op becomes `set x` into the declared
 *    layout: the copy is real and stays. Nothing is ever written onto the
 *    replacement's type, so an input's declared layout never changes.
 *  - Promotion. A rank-0 result outranks a literal in PyTorch promotion
 *    (f16 scalar * f32 scalar is f32, f16 scalar * literal is f16), so a
 *    folded constant replaces its result only where every user infers the
 *    same type with the literal in its place.
 * Literal arithmetic is evaluated by running the one op through fz_interpret
 * rather than by a second copy of every op's semantics here.
 */
#include "sched/pass.h"

#include <string.h>

/* ---- replacing a value ----------------------------------------------- */

/* A sweep edits operands through an index of uses (fz_uses), so that
 * counting and replacing uses costs what is moved, not a scan of every
 * op: a sweep is linear in the fusion's size. `at` is the index of the op
 * being folded. */
typedef struct sweep {
  fz_fusion *f;
  fz_uses *uses;
  int at;
} sweep;

static bool declares_layout(const fz_value *v) {
  return v->type.has_layout && v->type.rank > 0;
}

static bool same_declared_layout(const fz_type *a, const fz_type *b) {
  if (!a->has_layout || !b->has_layout || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->alloc_order[i] != b->alloc_order[i] ||
        a->contiguous[i] != b->contiguous[i])
      return false;
  return true;
}

/* Rewrites op (a one-operand op) into `set x`, keeping its result (and
 * the result's layout). */
static bool become_set(sweep *s, fz_op *op, fz_value *x) {
  if (op->code == FZ_OP_SET && op->operands[0] == x)
    return false;
  FZ_CHECK(op->num_operands == 1);
  fz_uses_set_operand(s->uses, s->at, 0, x);
  fz_op copy = {.code = FZ_OP_SET, .num_operands = 1, .result = op->result,
                .loc = op->loc, .operands = op->operands};
  copy.operands[0] = x;
  *op = copy;
  return true;
}

/* op's result is the value x (same dtype and logical shape): route its
 * uses to x, or keep a copy where the result's declared layout requires. */
static bool replace_result(sweep *s, fz_op *op, fz_value *x) {
  fz_value *r = op->result;
  if (!fz_type_same_shape(&r->type, &x->type))
    return false;
  if (declares_layout(r) && !same_declared_layout(&r->type, &x->type))
    return become_set(s, op, x);
  if (fz_uses_count(s->uses, r) == 0)
    return false;
  fz_uses_replace(s->uses, r, x);
  return true;
}

static const fz_op *producer(const fz_value *v, fz_opcode code) {
  return v->kind == FZ_VALUE_RESULT && v->def->code == code ? v->def : NULL;
}

static bool same_dims(const fz_op *a, const fz_op *b) {
  return a->num_dims == b->num_dims &&
         memcmp(a->dims, b->dims, sizeof a->dims[0] * (size_t)a->num_dims) == 0;
}

/* ---- the folds ---------------------------------------------------------- */

static bool fold_set(sweep *s, fz_op *op) {
  return replace_result(s, op, op->operands[0]);
}

static bool fold_squeeze(sweep *s, fz_op *op) {
  const fz_op *b = producer(op->operands[0], FZ_OP_BROADCAST);
  if (!b || !same_dims(op, b))
    return false;
  return replace_result(s, op, b->operands[0]);
}

static bool fold_broadcast(sweep *s, fz_op *op) {
  const fz_op *sq = producer(op->operands[0], FZ_OP_SQUEEZE);
  if (!sq || !same_dims(op, sq))
    return false;
  /* An iteration axis of extent 1 can be squeezed too, but broadcasting
   * it back makes a b1 axis: a different type. */
  const fz_value *x = sq->operands[0];
  for (int i = 0; i < sq->num_dims; i++) {
    const fz_axis *a = &x->type.axes[sq->dims[i]];
    if (a->kind != FZ_AXIS_BROADCAST || a->expanded)
      return false;
  }
  return replace_result(s, op, sq->operands[0]);
}

static bool fold_permute(sweep *s, fz_op *op) {
  int rank = op->result->type.rank;
  bool changed = false;
  const fz_op *inner = producer(op->operands[0], FZ_OP_PERMUTE);
  if (inner) {
    /* result axis i = operand axis perm[i] = inner operand axis
     * inner->perm[perm[i]]. */
    int composed[FZ_MAX_RANK];
    for (int i = 0; i < rank; i++)
      composed[i] = inner->perm[op->perm[i]];
    memcpy(op->perm, composed, sizeof composed[0] * (size_t)rank);
    fz_uses_set_operand(s->uses, s->at, 0, inner->operands[0]);
    changed = true;
  }
  for (int i = 0; i < rank; i++)
    if (op->perm[i] != i)
      return changed;
  return replace_result(s, op, op->operands[0]) || changed;
}

static bool fold_reshape(sweep *s, fz_op *op) {
  bool changed = false;
  const fz_op *inner = producer(op->operands[0], FZ_OP_RESHAPE);
  if (inner) {
    /* Both reinterpret the logical row-major order: the outer one of the
     * inner one's result is the outer one of its operand. */
    fz_uses_set_operand(s->uses, s->at, 0, inner->operands[0]);
    changed = true;
  }
  if (fz_type_same_shape(&op->result->type, &op->operands[0]->type))
    changed |= replace_result(s, op, op->operands[0]);
  return changed;
}

/* ---- literal arithmetic ----------------------------------------------- */

static bool is_pointwise(const fz_op *op) {
  switch (fz_op_table[op->code].kind) {
  case FZ_KIND_UNARY:
  case FZ_KIND_CAST:
  case FZ_KIND_BINARY:
  case FZ_KIND_TERNARY:
    return true;
  default:
    return false;
  }
}

static fz_value *copy_literal(fz_fusion *f, fz_dtype dtype, double fv,
                              int64_t iv) {
  if (fz_dtype_is_float(dtype))
    return fz_literal_float(f, fv);
  if (dtype == FZ_BOOL)
    return fz_literal_bool(f, iv != 0);
  return fz_literal_int(f, iv);
}

/* Runs op on its literal operands through the interpreter in a scratch
 * fusion. False when the op or its dtype is not foldable. */
static bool evaluate(const fz_op *op, double *fv, int64_t *iv) {
  fz_dtype dtype = op->result->type.dtype;
  if (dtype == FZ_F16 || dtype == FZ_BF16)
    return false; /* a literal holds f64/i64/bool; keep the narrow type */
  fz_fusion *scratch = fz_fusion_create("fold");
  fz_value *operands[3];
  for (int k = 0; k < op->num_operands; k++) {
    const fz_value *l = op->operands[k];
    operands[k] = copy_literal(scratch, l->type.dtype, l->literal.f,
                               l->literal.i);
  }
  fz_type target = {.dtype = dtype};
  fz_attrs attrs = {.shape = &target};
  fz_value *r = fz_build(scratch, op->code, op->num_operands, operands,
                         &attrs, NULL);
  bool ok = r && r->type.dtype == dtype && r->type.rank == 0 &&
            fz_add_output(scratch, r, NULL) == FZ_OK;
  union {
    double f64;
    float f32;
    int64_t i64;
    int32_t i32;
    int8_t i8;
    uint8_t b;
  } out = {0};
  if (ok) {
    fz_host_tensor t = {.dtype = dtype, .rank = 0, .data = &out};
    ok = fz_interpret(scratch, NULL, 0, &t, 1, NULL) == FZ_OK;
  }
  fz_fusion_destroy(scratch);
  if (!ok)
    return false;
  switch (dtype) {
  case FZ_F64: *fv = out.f64; break;
  case FZ_F32: *fv = out.f32; break;
  case FZ_I64: *iv = out.i64; break;
  case FZ_I32: *iv = out.i32; break;
  case FZ_I8: *iv = out.i8; break;
  case FZ_BOOL: *iv = out.b != 0; break;
  default: return false;
  }
  return true;
}

/* Every user of r infers the same result type with lit in r's place (a
 * user reading r twice is checked once per use: the same question). */
static bool users_accept(const sweep *s, const fz_value *r, fz_value *lit) {
  for (const fz_use *u = fz_uses_first(s->uses, r); u; u = u->next) {
    const fz_op *user = u->op;
    if (!user)
      continue; /* outputs: fold_literals never folds one */
    if (!is_pointwise(user))
      return false; /* (and at most three operands below) */
    fz_value *operands[3];
    for (int k = 0; k < user->num_operands; k++)
      operands[k] = user->operands[k] == r ? lit : user->operands[k];
    fz_attrs attrs = {.shape = &user->result->type}; /* cast's dtype */
    fz_type t;
    if (fz_infer_type(s->f, user->code, user->num_operands, operands, &attrs,
                      &t, NULL) != FZ_OK ||
        !fz_type_same_shape(&t, &user->result->type))
      return false;
  }
  return true;
}

static bool fold_literals(sweep *s, fz_op *op) {
  if (!is_pointwise(op) || op->result->type.rank != 0)
    return false;
  for (int k = 0; k < op->num_operands; k++)
    if (op->operands[k]->kind != FZ_VALUE_LITERAL)
      return false;
  fz_value *r = op->result;
  if (fz_uses_is_output(s->uses, r))
    return false; /* a literal cannot be an output */
  if (fz_uses_count(s->uses, r) == 0)
    return false;
  double fv = 0;
  int64_t iv = 0;
  if (!evaluate(op, &fv, &iv))
    return false;
  fz_value *lit = copy_literal(s->f, r->type.dtype, fv, iv);
  if (!users_accept(s, r, lit))
    return false; /* the literal is left unreferenced in the arena */
  fz_uses_replace(s->uses, r, lit);
  return true;
}

/* ---- the pass ----------------------------------------------------------- */

static bool fold_op(sweep *s, fz_op *op) {
  switch (op->code) {
  case FZ_OP_SET:
    return fold_set(s, op);
  case FZ_OP_SQUEEZE:
    return fold_squeeze(s, op);
  case FZ_OP_BROADCAST:
    return fold_broadcast(s, op);
  case FZ_OP_PERMUTE:
    return fold_permute(s, op);
  case FZ_OP_RESHAPE:
    return fold_reshape(s, op);
  default:
    return fold_literals(s, op);
  }
}

fz_status fz_pass_canonicalize(fz_fusion *f, fz_error *err) {
  (void)err;
  /* Every fold removes an op, shortens a producer chain or turns an op
   * into a set that no fold touches again, so this terminates; the bound
   * only turns a bug into a diagnosis instead of a hang. */
  int limit = 4 * f->num_ops + 16;
  for (int round = 0;; round++) {
    FZ_CHECK(round <= limit);
    bool changed = false;
    sweep s = {.f = f, .uses = fz_uses_build(f)};
    for (s.at = 0; s.at < f->num_ops; s.at++)
      changed |= fold_op(&s, f->ops[s.at]);
    changed |= fz_cse_uses(f, s.uses);
    fz_uses_destroy(s.uses);
    changed |= fz_remove_dead_ops(f) > 0;
    if (!changed)
      return FZ_OK;
  }
}
