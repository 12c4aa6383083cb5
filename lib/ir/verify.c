/* verify.c - check every invariant of a fusion.
 *
 * Passes run the verifier between them, so it must catch what a buggy
 * rewrite leaves behind, not only what bad text can express: a use before
 * its definition, a value (or literal) from another fusion, a stale result
 * type, constant extents whose product overflows int64, a duplicate name,
 * an output that was deleted. It walks the fusion once in
 * SSA order with a table indexed by value id of the values defined so far
 * (ids are unique and below next_value_id). Type rules are not restated
 * here: each op's type is recomputed by fz_infer_type (infer.c, shared
 * with the builder) and compared with the stored one.
 *
 * Messages start with the offending value (%name, or %<id> when unnamed)
 * and the op keyword: "%m: add: operand 1 axis 0 has extent 128 but ...";
 * an error about an op carries the op's location (err->line, col).
 */
#include "fz/ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct verifier {
  const fz_fusion *f;
  fz_error *err;
  const fz_value **defined; /* by id: the value, once defined */
  int num_ids;
} verifier;

static bool valid_name(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok)
      return false;
  }
  return true;
}

/* Type, layout and id of a value about to be defined. Names are only
 * formatted for an error: verifying a large fusion formats nothing. */
static fz_status define(verifier *vf, const fz_value *v, const char *op) {
  char name[80], what[128];
  bool valid = v->id >= 0 && v->id < vf->num_ids && !vf->defined[v->id] &&
               v->owner == vf->f &&
               (!v->name || valid_name(v->name)) &&
               fz_check_type(vf->f, &v->type, "", NULL) == FZ_OK &&
               fz_check_layout(&v->type, "", NULL) == FZ_OK;
  if (valid) {
    vf->defined[v->id] = v;
    return FZ_OK;
  }
  fz_value_label(v, name, sizeof name);
  snprintf(what, sizeof what, "%s%s%s", name, op ? ": " : "", op ? op : "");
  if (v->id < 0 || v->id >= vf->num_ids)
    return fz_error_set(vf->err, FZ_ERR_INVALID,
                        "%s: id %d is outside [0, %d) (not created by this "
                        "fusion?)",
                        what, v->id, vf->num_ids);
  if (vf->defined[v->id])
    return fz_error_set(vf->err, FZ_ERR_INVALID,
                        "%s: defined twice (id %d already belongs to a "
                        "defined value)",
                        what, v->id);
  if (v->owner != vf->f)
    return fz_error_set(vf->err, FZ_ERR_INVALID,
                        "%s: the value belongs to another fusion", what);
  if (v->name && !valid_name(v->name))
    return fz_error_set(vf->err, FZ_ERR_INVALID,
                        "%s: invalid name (names use [A-Za-z0-9_.] and are "
                        "not empty)",
                        what);
  fz_status st = fz_check_type(vf->f, &v->type, what, vf->err);
  if (st)
    return st;
  if ((st = fz_check_layout(&v->type, what, vf->err)))
    return st;
  vf->defined[v->id] = v;
  return FZ_OK;
}

static bool is_defined(const verifier *vf, const fz_value *v) {
  return v->id >= 0 && v->id < vf->num_ids && vf->defined[v->id] == v;
}

static fz_status check_literal(verifier *vf, const fz_value *lit,
                               const fz_value *r, const char *op, int k) {
  fz_dtype d = lit->type.dtype;
  char res[80];
  /* Ids do not tell literals apart (they are in no table): the owner
   * does. Another fusion's literal would dangle once it is destroyed. */
  if (lit->owner != vf->f)
    return fz_error_set(vf->err, FZ_ERR_INVALID,
                        "%s: %s: operand %d is a literal of another fusion",
                        fz_value_label(r, res, sizeof res), op, k);
  if (lit->type.rank != 0 || (d != FZ_F64 && d != FZ_I64 && d != FZ_BOOL))
    return fz_error_set(vf->err, FZ_ERR_INVALID,
                        "%s: %s: operand %d is a literal that is not a rank-0 "
                        "f64, i64 or bool",
                        fz_value_label(r, res, sizeof res), op, k);
  return FZ_OK;
}

static void op_attrs(const fz_op *op, fz_attrs *attrs) {
  memset(attrs, 0, sizeof *attrs);
  attrs->num_dims = op->num_dims;
  memcpy(attrs->dims, op->dims, sizeof attrs->dims);
  attrs->keepdim = op->keepdim;
  attrs->correction = op->correction;
  memcpy(attrs->perm, op->perm, sizeof attrs->perm);
  /* The ops that take their shape from the result type are checked for
   * what that shape must satisfy against the operand. */
  attrs->shape = &op->result->type;
  attrs->fill = op->fill;
  attrs->iota_start = op->iota_start;
  attrs->iota_step = op->iota_step;
  attrs->has_iota_start = attrs->has_iota_step = true;
  attrs->symbol = op->symbol;
  attrs->resize = op->resize;
}

static fz_status verify_op(verifier *vf, int index, const fz_op *op) {
  fz_error *err = vf->err;
  if (!op)
    return fz_error_set(err, FZ_ERR_INVALID, "op %d is NULL", index);
  if ((unsigned)op->code >= FZ_NUM_OPCODES)
    return fz_error_set(err, FZ_ERR_INVALID, "op %d has invalid opcode %d",
                        index, (int)op->code);
  const fz_op_info *info = &fz_op_table[op->code];
  const fz_value *r = op->result;
  if (!r)
    return fz_error_set(err, FZ_ERR_INVALID, "op %d (%s) has no result",
                        index, info->name);
  char res[80]; /* r's name, formatted only for an error */
  if (r->kind != FZ_VALUE_RESULT || r->def != op)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s: %s: the result is not marked as this op's "
                        "result (kind or def is wrong)",
                        fz_value_label(r, res, sizeof res), info->name);
  if (info->arity >= 0 ? op->num_operands != info->arity
                       : op->num_operands < 1 || !op->operands)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s: %s: has %d operands but takes %s%d",
                        fz_value_label(r, res, sizeof res), info->name,
                        op->num_operands, info->arity < 0 ? "at least " : "",
                        info->arity < 0 ? 1 : info->arity);
  if (op->num_dims < 0 || op->num_dims > FZ_MAX_RANK)
    return fz_error_set(err, FZ_ERR_INVALID, "%s: %s: has %d dims",
                        fz_value_label(r, res, sizeof res),
                        info->name, op->num_dims);
  for (int k = 0; k < op->num_operands; k++) {
    const fz_value *a = op->operands[k];
    if (!a)
      return fz_error_set(err, FZ_ERR_INVALID, "%s: %s: operand %d is NULL",
                          fz_value_label(r, res, sizeof res), info->name, k);
    fz_status st;
    if (a->kind == FZ_VALUE_LITERAL) {
      if ((st = check_literal(vf, a, r, info->name, k)))
        return st;
    } else if (!is_defined(vf, a)) {
      char an[80];
      return fz_error_set(err, FZ_ERR_INVALID,
                          "%s: %s: operand %d (%s) is not defined before this "
                          "op",
                          fz_value_label(r, res, sizeof res), info->name, k, fz_value_label(a, an, sizeof an));
    }
  }
  fz_status st = define(vf, r, info->name);
  if (st)
    return st;

  fz_attrs attrs;
  op_attrs(op, &attrs);
  fz_type inferred;
  fz_error why = {0};
  if (fz_infer_type(vf->f, op->code, op->num_operands, op->operands, &attrs,
                    &inferred, &why))
    return fz_error_set(err, FZ_ERR_INVALID, "%s: %s", fz_value_label(r, res, sizeof res), why.message);
  if (!fz_type_same_shape(&inferred, &r->type)) {
    char have[256], want[256];
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s: %s: result type %s does not match the inferred "
                        "type %s",
                        fz_value_label(r, res, sizeof res), info->name,
                        fz_format_type(vf->f, &r->type, have, sizeof have),
                        fz_format_type(vf->f, &inferred, want, sizeof want));
  }
  return FZ_OK;
}

static fz_status verify_inputs(verifier *vf) {
  for (int i = 0; i < vf->f->num_inputs; i++) {
    const fz_value *v = vf->f->inputs[i];
    char name[80];
    if (!v)
      return fz_error_set(vf->err, FZ_ERR_INVALID, "input %d is NULL", i);
    if (v->kind != FZ_VALUE_INPUT || v->input_index != i)
      return fz_error_set(vf->err, FZ_ERR_INVALID,
                          "%s: input %d is not marked as input %d (kind or "
                          "input_index is wrong)",
                          fz_value_label(v, name, sizeof name), i, i);
    if (!v->type.has_layout)
      return fz_error_set(vf->err, FZ_ERR_INVALID,
                          "%s: input %d has no layout (inputs always have "
                          "one; row-major when not declared)",
                          fz_value_label(v, name, sizeof name), i);
    fz_status st = define(vf, v, NULL);
    if (st)
      return st;
  }
  return FZ_OK;
}

static fz_status verify_outputs(verifier *vf) {
  if (vf->f->num_outputs == 0)
    return fz_error_set(vf->err, FZ_ERR_INVALID,
                        "fusion @%s has no outputs", vf->f->name);
  for (int i = 0; i < vf->f->num_outputs; i++) {
    const fz_value *v = vf->f->outputs[i];
    char name[80];
    if (!v)
      return fz_error_set(vf->err, FZ_ERR_INVALID, "output %d is NULL", i);
    if (v->kind == FZ_VALUE_LITERAL)
      return fz_error_set(vf->err, FZ_ERR_INVALID,
                          "%s: output %d is a literal; outputs must be "
                          "inputs or op results",
                          fz_value_label(v, name, sizeof name), i);
    if (!is_defined(vf, v))
      return fz_error_set(vf->err, FZ_ERR_INVALID,
                          "%s: output %d is not defined in this fusion",
                          fz_value_label(v, name, sizeof name), i);
  }
  return FZ_OK;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Value names and symbol names are each unique. Literals are never named
 * in the text, so only defined values are checked. */
static fz_status verify_names(verifier *vf) {
  const fz_fusion *f = vf->f;
  int n = f->num_inputs + f->num_ops;
  int num_syms = f->num_symbols;
  const char **names =
      malloc(sizeof *names * (size_t)((n > num_syms ? n : num_syms) + 1));
  if (!names)
    return fz_error_set(vf->err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory verifying names");
  fz_status st = FZ_OK;
  int count = 0;
  for (int i = 0; i < vf->num_ids; i++)
    if (vf->defined[i] && vf->defined[i]->name)
      names[count++] = vf->defined[i]->name;
  qsort(names, (size_t)count, sizeof *names, cmp_str);
  for (int i = 1; i < count && !st; i++)
    if (strcmp(names[i - 1], names[i]) == 0)
      st = fz_error_set(vf->err, FZ_ERR_INVALID,
                        "%%%s: the name is used by more than one value",
                        names[i]);
  count = 0;
  for (int i = 0; i < num_syms && !st; i++)
    if (f->symbols[i].name)
      names[count++] = f->symbols[i].name;
  qsort(names, (size_t)count, sizeof *names, cmp_str);
  for (int i = 1; i < count && !st; i++)
    if (strcmp(names[i - 1], names[i]) == 0)
      st = fz_error_set(vf->err, FZ_ERR_INVALID,
                        "symbol %s is defined more than once", names[i]);
  free(names);
  return st;
}

/* A derived symbol (`N*K`) is computed from named base symbols only, so
 * that binding them binds it. */
static fz_status verify_derived(verifier *vf) {
  const fz_fusion *f = vf->f;
  for (int i = 0; i < f->num_symbols; i++) {
    const fz_symbol *s = &f->symbols[i];
    if (s->num_terms && (!s->name || s->den <= 0 || s->num <= 0))
      return fz_error_set(vf->err, FZ_ERR_INVALID,
                          "derived symbol %d has no name or a constant "
                          "%" PRId64 "/%" PRId64 " that is not positive",
                          i, s->num, s->den);
    for (int k = 0; k < s->num_terms; k++) {
      int32_t b = s->terms[k].symbol;
      if (b < 0 || b >= f->num_symbols || f->symbols[b].num_terms ||
          !f->symbols[b].name || s->terms[k].power == 0)
        return fz_error_set(vf->err, FZ_ERR_INVALID,
                            "derived symbol %s: term %d is not a named base "
                            "symbol with a nonzero power",
                            s->name, k);
    }
  }
  return FZ_OK;
}

fz_status fz_verify(const fz_fusion *f, fz_error *err) {
  if (!f)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_verify: fusion is NULL");
  verifier vf = {.f = f, .err = err, .num_ids = f->next_value_id};
  if (vf.num_ids < 0)
    return fz_error_set(err, FZ_ERR_INVALID, "next_value_id is negative");
  vf.defined = calloc((size_t)vf.num_ids + 1, sizeof *vf.defined);
  if (!vf.defined)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory verifying @%s", f->name);
  fz_status st = verify_derived(&vf);
  if (!st)
    st = verify_inputs(&vf);
  for (int i = 0; i < f->num_ops && !st; i++)
    if ((st = verify_op(&vf, i, f->ops[i])) && f->ops[i])
      fz_error_locate(err, f->ops[i]->loc);
  if (!st)
    st = verify_outputs(&vf);
  if (!st)
    st = verify_names(&vf);
  free(vf.defined);
  return st;
}
