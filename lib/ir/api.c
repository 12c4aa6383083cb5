/* api.c - building and reading fusions through handles, for embedders.
 *
 * The C builder (builder.c) takes fz_type structs for targets, which a
 * framework binding through ctypes (or any FFI) cannot build without
 * mirroring the IR's layout. The calls here take sizes as plain arrays with
 * two codes (symbol, broadcast), ops by their text keyword, and read values
 * through accessors, so the only layouts an embedder mirrors are the small
 * public structs of fz.h.
 *
 * Each call validates everything before it changes anything: extents and
 * names are checked first, symbols are created only once the call cannot
 * fail any more (only inputs create symbols; op targets must name existing
 * ones, since nothing could bind a symbol first seen in an op), and the op
 * itself goes through fz_build, which adds nothing when inference fails.
 */
#include "fz/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names -------------------------------------------------------------- */

static bool is_value_name(const char *s) {
  if (!s || !*s)
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
      return false;
  return true;
}

static bool is_symbol_name(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9') || strcmp(s, "b1") == 0)
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return false;
  return true;
}

static bool name_taken(const fz_fusion *f, const char *name,
                       const fz_value *except) {
  for (int i = 0; i < f->num_inputs; i++)
    if (f->inputs[i] != except && f->inputs[i]->name &&
        strcmp(f->inputs[i]->name, name) == 0)
      return true;
  for (int i = 0; i < f->num_ops; i++) {
    const fz_value *v = f->ops[i]->result;
    if (v != except && v->name && strcmp(v->name, name) == 0)
      return true;
  }
  return false;
}

static fz_status check_value_name(const fz_fusion *f, const char *name,
                                  const fz_value *except, fz_error *err) {
  if (!is_value_name(name))
    return fz_error_set(err, FZ_ERR_INVALID,
                        "value name \"%s\" is not of the form [A-Za-z0-9_.]+",
                        name);
  if (name_taken(f, name, except))
    return fz_error_set(err, FZ_ERR_INVALID, "value name %%%s is taken",
                        name);
  return FZ_OK;
}

/* ---- extents ------------------------------------------------------------ */

/* What an entry of an extents array may be, per call. */
typedef enum extent_rule {
  NEW_SYMBOLS, /* inputs: names create symbols, NULL a fresh one */
  OLD_SYMBOLS, /* op targets: names must exist */
} extent_rule;

static const char *symbol_at(const char *const *symbols, int i) {
  return symbols ? symbols[i] : NULL;
}

/* Checks entry i without changing the fusion. */
static fz_status check_extent(const fz_fusion *f, const char *what, int i,
                              int64_t e, const char *sym, extent_rule rule,
                              fz_error *err) {
  if (e >= 0 || e == FZ_EXTENT_BROADCAST)
    return FZ_OK;
  if (e != FZ_EXTENT_SYMBOL)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s: extent %d is %lld, neither a size nor "
                        "FZ_EXTENT_SYMBOL/FZ_EXTENT_BROADCAST",
                        what, i, (long long)e);
  if (!sym) {
    if (rule == NEW_SYMBOLS)
      return FZ_OK;
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s: extent %d is a symbol without a name; only "
                        "inputs introduce new symbols",
                        what, i);
  }
  if (fz_is_extent_expr(sym)) {
    if (rule == NEW_SYMBOLS)
      return fz_error_set(err, FZ_ERR_INVALID,
                          "%s: extent %d is %s; an input's extents are "
                          "constants or symbols",
                          what, i, sym);
    /* Resolving a product of known symbols (`N*K`) may create its derived
     * symbol, the one make_extent then finds: nothing else changes. */
    fz_extent ignored;
    fz_error why;
    if (fz_parse_extent_expr((fz_fusion *)f, sym, strlen(sym), false,
                             &ignored, &why) != FZ_OK)
      return fz_error_set(err, FZ_ERR_INVALID, "%s: %s (extent %d)", what,
                          why.message, i);
    return FZ_OK;
  }
  if (!is_symbol_name(sym))
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s: symbol name \"%s\" (extent %d) is not of the "
                        "form [A-Za-z_][A-Za-z0-9_]* (and not b1)",
                        what, sym, i);
  if (rule == OLD_SYMBOLS && fz_fusion_find_symbol(f, sym) < 0)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s: symbol %s (extent %d) is not an extent of any "
                        "input, so nothing would bind it",
                        what, sym, i);
  return FZ_OK;
}

static fz_status check_extents(const fz_fusion *f, const char *what,
                               int rank, const int64_t *extents,
                               const char *const *symbols, extent_rule rule,
                               fz_error *err) {
  if (rank < 0 || rank > FZ_MAX_RANK)
    return fz_error_set(err, FZ_ERR_INVALID, "%s: rank %d is outside [0, %d]",
                        what, rank, FZ_MAX_RANK);
  if (rank > 0 && !extents)
    return fz_error_set(err, FZ_ERR_INVALID, "%s: extents is NULL", what);
  for (int i = 0; i < rank; i++) {
    fz_status st = check_extent(f, what, i, extents[i],
                                symbol_at(symbols, i), rule, err);
    if (st)
      return st;
  }
  return FZ_OK;
}

/* The constant entries' product, in bytes, fits int64 (size.c), checked
 * before any symbol is created. */
static fz_status check_constant_size(fz_dtype dtype, int rank,
                                     const int64_t *extents, const char *what,
                                     fz_error *err) {
  int64_t constants[FZ_MAX_RANK];
  int n = 0;
  for (int i = 0; i < rank; i++)
    if (extents[i] >= 0)
      constants[n++] = extents[i];
  return fz_size_of(n, constants, dtype, what, FZ_ERR_INVALID, NULL, NULL,
                    err);
}

/* The extent of an entry already checked; may create a symbol. */
static fz_extent make_extent(fz_fusion *f, int64_t e, const char *sym) {
  if (e >= 0)
    return fz_const_extent(e);
  fz_extent expr;
  fz_error why;
  if (fz_is_extent_expr(sym)) {
    /* checked by check_extent, so it resolves */
    FZ_CHECK(fz_parse_extent_expr(f, sym, strlen(sym), false, &expr, &why) ==
             FZ_OK);
    return expr;
  }
  return fz_symbol_extent(fz_fusion_symbol(f, sym));
}

static fz_axis make_axis(fz_fusion *f, int64_t e, const char *sym) {
  if (e == FZ_EXTENT_BROADCAST)
    return (fz_axis){.kind = FZ_AXIS_BROADCAST, .extent = fz_const_extent(1)};
  return (fz_axis){.kind = FZ_AXIS_ITER, .extent = make_extent(f, e, sym)};
}

static bool check_dtype(fz_dtype dtype, const char *what, fz_error *err) {
  if ((unsigned)dtype < FZ_NUM_DTYPES)
    return true;
  fz_error_set(err, FZ_ERR_INVALID, "%s: dtype %d is not an fz_dtype", what,
               (int)dtype);
  return false;
}

/* ---- inputs ------------------------------------------------------------- */

static fz_value *add_input(fz_fusion *f, const char *name, fz_dtype dtype,
                           int rank, const int64_t *extents,
                           const char *const *symbols, const int *alloc_order,
                           const bool *contiguous, fz_error *err) {
  if (!f) {
    fz_error_set(err, FZ_ERR_ARGUMENT, "input: fusion is NULL");
    return NULL;
  }
  char what[96];
  if (name)
    snprintf(what, sizeof what, "input %%%.64s", name);
  else
    snprintf(what, sizeof what, "input %d", f->num_inputs);
  if (!check_dtype(dtype, what, err))
    return NULL;
  if (name && check_value_name(f, name, NULL, err))
    return NULL;
  if (check_extents(f, what, rank, extents, symbols, NEW_SYMBOLS, err) ||
      check_constant_size(dtype, rank, extents, what, err))
    return NULL;
  fz_type t = {.dtype = dtype, .rank = rank, .has_layout = true};
  for (int i = 0; i < rank; i++) {
    t.alloc_order[i] = alloc_order ? alloc_order[i] : i;
    t.contiguous[i] = contiguous ? contiguous[i] : true;
  }
  if (fz_check_layout(&t, what, err))
    return NULL;
  for (int i = 0; i < rank; i++)
    t.axes[i] = make_axis(f, extents[i], symbol_at(symbols, i));
  return fz_add_input(f, name, &t);
}

fz_value *fz_fusion_add_tensor(fz_fusion *f, const char *name, fz_dtype dtype,
                               int rank, const int64_t *extents,
                               const char *const *symbols,
                               const int *alloc_order, const bool *contiguous,
                               fz_error *err) {
  if (rank == 0) {
    fz_error_set(err, FZ_ERR_INVALID,
                 "input: rank 0; use fz_fusion_add_scalar for scalars");
    return NULL;
  }
  return add_input(f, name, dtype, rank, extents, symbols, alloc_order,
                   contiguous, err);
}

fz_value *fz_fusion_add_scalar(fz_fusion *f, const char *name, fz_dtype dtype,
                               fz_error *err) {
  return add_input(f, name, dtype, 0, NULL, NULL, NULL, NULL, err);
}

/* ---- ops ---------------------------------------------------------------- */

/* The opcode for a keyword of one of the wanted kinds, or -1 with err. */
static int opcode_of(const char *op, const fz_op_kind *kinds, int num_kinds,
                     const char *use, fz_error *err) {
  int code = op ? fz_opcode_from_name(op, strlen(op)) : -1;
  if (code < 0) {
    fz_error_set(err, FZ_ERR_INVALID, "unknown op \"%s\"", op ? op : "(null)");
    return -1;
  }
  for (int i = 0; i < num_kinds; i++)
    if (fz_op_table[code].kind == kinds[i])
      return code;
  fz_error_set(err, FZ_ERR_INVALID, "%s is not %s", op, use);
  return -1;
}

fz_value *fz_build_pointwise(fz_fusion *f, const char *op, int num_operands,
                             fz_value *const *operands, fz_error *err) {
  static const fz_op_kind kinds[] = {FZ_KIND_UNARY, FZ_KIND_BINARY,
                                     FZ_KIND_TERNARY};
  int code = opcode_of(op, kinds, 3, "a pointwise op", err);
  if (code < 0)
    return NULL;
  if (num_operands < 0 || num_operands > 3 || (num_operands && !operands)) {
    fz_error_set(err, FZ_ERR_INVALID, "%s: %d operands (operands %s)", op,
                 num_operands, operands ? "given" : "NULL");
    return NULL;
  }
  return fz_build(f, (fz_opcode)code, num_operands, operands, NULL, err);
}

fz_value *fz_build_reduction(fz_fusion *f, const char *op, fz_value *a,
                             int num_dims, const int *dims, bool keepdim,
                             fz_error *err) {
  static const fz_op_kind kinds[] = {FZ_KIND_REDUCTION};
  int code = opcode_of(op, kinds, 1, "a reduction", err);
  if (code < 0)
    return NULL;
  /* Negative and unsorted dims are the builder's (fz/ir.h, Axes). */
  return fz_reduce(f, (fz_opcode)code, a, num_dims, dims, keepdim, err);
}

fz_value *fz_build_arg_reduction(fz_fusion *f, const char *op, fz_value *a,
                                 int dim, bool all_dims, bool keepdim,
                                 fz_error *err) {
  static const fz_op_kind kinds[] = {FZ_KIND_REDUCTION};
  int code = opcode_of(op, kinds, 1, "an arg-reduction", err);
  if (code < 0)
    return NULL;
  if (!(fz_op_table[code].flags & FZ_F_ARG)) {
    fz_error_set(err, FZ_ERR_INVALID,
                 "%s is not an arg-reduction (argmax or argmin)", op);
    return NULL;
  }
  /* no dims: every axis (the builder's rule, and a rank-0 operand's) */
  return fz_reduce(f, (fz_opcode)code, a, all_dims ? 0 : 1, &dim, keepdim,
                   err);
}

fz_value *fz_build_var(fz_fusion *f, fz_value *a, int num_dims,
                       const int *dims, double correction, bool keepdim,
                       fz_error *err) {
  return fz_var(f, a, num_dims, dims, correction, keepdim, err);
}

bool fz_check_handle_operand(const fz_fusion *f, const fz_value *a,
                             const char *op, fz_error *err) {
  if (!f)
    fz_error_set(err, FZ_ERR_ARGUMENT, "%s: fusion is NULL", op);
  else if (!a)
    fz_error_set(err, FZ_ERR_INVALID, "%s: operand is NULL", op);
  else if (a->owner != f)
    fz_error_set(err, FZ_ERR_ARGUMENT,
                 "%s: the operand belongs to another fusion, not @%s", op,
                 f->name);
  return f && a && a->owner == f;
}

fz_value *fz_build_expand(fz_fusion *f, fz_value *a, const int64_t *extents,
                          const char *const *symbols, fz_error *err) {
  if (!fz_check_handle_operand(f, a, "expand", err))
    return NULL;
  int rank = a->type.rank;
  if (rank > 0 && !extents) {
    fz_error_set(err, FZ_ERR_INVALID, "expand: extents is NULL");
    return NULL;
  }
  /* An unnamed symbol keeps the axis; every other entry is checked as an
   * op target. */
  for (int i = 0; i < rank; i++) {
    if (extents[i] == FZ_EXTENT_SYMBOL && !symbol_at(symbols, i))
      continue;
    if (check_extent(f, "expand: target", i, extents[i],
                     symbol_at(symbols, i), OLD_SYMBOLS, err))
      return NULL;
  }
  fz_type target = {.dtype = a->type.dtype, .rank = rank};
  for (int i = 0; i < rank; i++) {
    const fz_axis *from = &a->type.axes[i];
    int64_t e = extents[i];
    const char *sym = symbol_at(symbols, i);
    bool keep = e == FZ_EXTENT_SYMBOL && !sym;
    bool is_b1 = from->kind == FZ_AXIS_BROADCAST && !from->expanded;
    if (keep || (is_b1 && (e == 1 || e == FZ_EXTENT_BROADCAST))) {
      target.axes[i] = *from;
    } else if (from->kind == FZ_AXIS_BROADCAST && e != FZ_EXTENT_BROADCAST) {
      target.axes[i] = (fz_axis){.kind = FZ_AXIS_BROADCAST,
                                 .extent = fz_const_extent(1),
                                 .expanded = true,
                                 .expanded_to = make_extent(f, e, sym)};
    } else {
      target.axes[i] = make_axis(f, e, sym);
    }
  }
  return fz_expand(f, a, &target, err);
}

/* A target type for reshape and full: every entry explicit. */
static bool target_type(fz_fusion *f, const char *what, fz_dtype dtype,
                        int rank, const int64_t *extents,
                        const char *const *symbols, fz_type *out,
                        fz_error *err) {
  if (!f) {
    fz_error_set(err, FZ_ERR_ARGUMENT, "%s: fusion is NULL", what);
    return false;
  }
  if (!check_dtype(dtype, what, err) ||
      check_extents(f, what, rank, extents, symbols, OLD_SYMBOLS, err))
    return false;
  *out = (fz_type){.dtype = dtype, .rank = rank};
  for (int i = 0; i < rank; i++)
    out->axes[i] = make_axis(f, extents[i], symbol_at(symbols, i));
  return true;
}

fz_value *fz_build_reshape(fz_fusion *f, fz_value *a, int rank,
                           const int64_t *extents, const char *const *symbols,
                           fz_error *err) {
  if (!fz_check_handle_operand(f, a, "reshape", err))
    return NULL;
  fz_type target;
  if (!target_type(f, "reshape: target", a->type.dtype, rank, extents,
                   symbols, &target, err))
    return NULL;
  return fz_reshape(f, a, &target, err);
}

fz_value *fz_build_full(fz_fusion *f, fz_dtype dtype, int rank,
                        const int64_t *extents, const char *const *symbols,
                        double value, fz_error *err) {
  fz_scalar fill;
  fz_type shape;
  if (!target_type(f, "full: shape", dtype, rank, extents, symbols, &shape,
                   err) ||
      fz_scalar_of_double(value, dtype, "full: fill value", &fill, err))
    return NULL;
  return fz_full(f, &shape, fill, err);
}

fz_value *fz_build_iota(fz_fusion *f, fz_dtype dtype, int64_t extent,
                        const char *symbol, double start, double step,
                        fz_error *err) {
  fz_attrs attrs = {.has_iota_start = true, .has_iota_step = true};
  const char *symbols[1] = {symbol};
  fz_type shape;
  if (!target_type(f, "iota: shape", dtype, 1, &extent, symbols, &shape,
                   err) ||
      fz_scalar_of_double(start, dtype, "iota: start", &attrs.iota_start,
                          err) ||
      fz_scalar_of_double(step, dtype, "iota: step", &attrs.iota_step, err))
    return NULL;
  attrs.shape = &shape;
  return fz_build(f, FZ_OP_IOTA, 0, NULL, &attrs, err);
}

fz_value *fz_build_random(fz_fusion *f, const char *op, fz_dtype dtype,
                          int rank, const int64_t *extents,
                          const char *const *symbols, fz_value *seed,
                          fz_value *offset, fz_error *err) {
  int code = op ? fz_opcode_from_name(op, strlen(op)) : -1;
  if (code < 0 || fz_op_table[code].kind != FZ_KIND_RANDOM) {
    fz_error_set(err, FZ_ERR_INVALID,
                 "random: \"%s\" is not rand or randn", op ? op : "(null)");
    return NULL;
  }
  const char *name = fz_op_table[code].name;
  fz_type shape;
  if (!fz_check_handle_operand(f, seed, name, err) ||
      !fz_check_handle_operand(f, offset, name, err) ||
      !target_type(f, name, dtype, rank, extents, symbols, &shape, err))
    return NULL;
  fz_attrs attrs = {.shape = &shape};
  fz_value *operands[2] = {seed, offset};
  return fz_build(f, (fz_opcode)code, 2, operands, &attrs, err);
}

fz_value *fz_build_symbol(fz_fusion *f, const char *symbol, fz_error *err) {
  if (!f) {
    fz_error_set(err, FZ_ERR_ARGUMENT, "symbol: fusion is NULL");
    return NULL;
  }
  int index = symbol ? fz_fusion_find_symbol(f, symbol) : -1;
  if (index < 0) {
    fz_error_set(err, FZ_ERR_INVALID,
                 "symbol: \"%s\" is not a symbol of @%s (an input must "
                 "name it first)",
                 symbol ? symbol : "(null)", f->name);
    return NULL;
  }
  return fz_read_symbol(f, index, err);
}

/* The largest finite value of a float dtype: nan_to_num's default for
 * +inf (and its negation for -inf), std::numeric_limits<T>::max() in
 * PyTorch. */
static double float_max(fz_dtype dtype) {
  switch (dtype) {
  case FZ_F64:
    return 0x1.fffffffffffffp1023;
  case FZ_F16:
    return 65504.0;
  case FZ_BF16:
    return 0x1.fep127;
  default:
    return 0x1.fffffep127;
  }
}

fz_value *fz_build_nan_to_num(fz_fusion *f, fz_value *a, double nan,
                              const double *posinf, const double *neginf,
                              fz_error *err) {
  if (!fz_check_handle_operand(f, a, "nan_to_num", err))
    return NULL;
  if (!fz_dtype_is_float(a->type.dtype)) /* nothing to replace */
    return fz_set(f, a, err);
  double pos = posinf ? *posinf : float_max(a->type.dtype);
  double neg = neginf ? *neginf : -float_max(a->type.dtype);
  /* where(isnan(a), nan, where(a == inf, pos, where(a == -inf, neg, a))):
   * every op is valid for a float operand, so none fails once a is. */
  fz_value *is_nan = fz_unary(f, FZ_OP_ISNAN, a, err);
  fz_value *is_pos = fz_binary(f, FZ_OP_EQ, a, fz_literal_float(f, INFINITY),
                               err);
  fz_value *is_neg = fz_binary(f, FZ_OP_EQ, a, fz_literal_float(f, -INFINITY),
                               err);
  fz_value *r = fz_ternary(f, FZ_OP_WHERE, is_neg, fz_literal_float(f, neg),
                           a, err);
  r = fz_ternary(f, FZ_OP_WHERE, is_pos, fz_literal_float(f, pos), r, err);
  return fz_ternary(f, FZ_OP_WHERE, is_nan, fz_literal_float(f, nan), r, err);
}

/* ---- reading ------------------------------------------------------------ */

const char *fz_fusion_name(const fz_fusion *f) { return f ? f->name : NULL; }

int fz_fusion_num_inputs(const fz_fusion *f) { return f ? f->num_inputs : 0; }

int fz_fusion_num_outputs(const fz_fusion *f) {
  return f ? f->num_outputs : 0;
}

fz_value *fz_fusion_input(const fz_fusion *f, int index) {
  return f && index >= 0 && index < f->num_inputs ? f->inputs[index] : NULL;
}

fz_value *fz_fusion_output(const fz_fusion *f, int index) {
  return f && index >= 0 && index < f->num_outputs ? f->outputs[index] : NULL;
}

const char *fz_value_name(const fz_value *v) { return v ? v->name : NULL; }

fz_status fz_value_set_name(fz_fusion *f, fz_value *v, const char *name,
                            fz_error *err) {
  if (!f || !v)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_value_set_name: fusion or value is NULL");
  if (v->owner != f)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_value_set_name: the value belongs to another "
                        "fusion, not @%s",
                        f->name);
  if (v->kind == FZ_VALUE_LITERAL)
    return fz_error_set(err, FZ_ERR_INVALID, "a literal cannot be named");
  if (!name) {
    v->name = NULL;
    return FZ_OK;
  }
  fz_status st = check_value_name(f, name, v, err);
  if (st)
    return st;
  v->name = fz_arena_strdup(f->arena, name);
  return FZ_OK;
}

fz_dtype fz_value_dtype(const fz_value *v) {
  return v ? v->type.dtype : FZ_NUM_DTYPES;
}

int fz_value_rank(const fz_value *v) { return v ? v->type.rank : -1; }

fz_status fz_value_axis(const fz_fusion *f, const fz_value *v, int axis,
                        int64_t *extent, const char **symbol, bool *broadcast,
                        fz_error *err) {
  if (!f || !v)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_value_axis: fusion or value is NULL");
  if (v->owner != f)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_value_axis: the value belongs to another fusion, "
                        "not @%s",
                        f->name);
  if (axis < 0 || axis >= v->type.rank)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_value_axis: axis %d is out of range for rank %d",
                        axis, v->type.rank);
  const fz_axis *a = &v->type.axes[axis];
  fz_extent e = fz_axis_extent(a);
  if (extent)
    *extent = e.symbol >= 0 ? FZ_EXTENT_SYMBOL : e.value;
  if (symbol)
    *symbol = e.symbol >= 0 && e.symbol < f->num_symbols
                  ? f->symbols[e.symbol].name
                  : NULL;
  if (broadcast)
    *broadcast = a->kind == FZ_AXIS_BROADCAST;
  return FZ_OK;
}

fz_value *fz_build_gather(fz_fusion *f, const char *op, fz_value *data,
                          fz_value *index, int dim, fz_error *err) {
  static const fz_op_kind kinds[] = {FZ_KIND_GATHER};
  int code = opcode_of(op, kinds, 1, "gather or index_select", err);
  if (code < 0)
    return NULL;
  fz_attrs a = {.num_dims = 1, .dims = {dim}};
  return fz_build(f, (fz_opcode)code, 2, (fz_value *const[]){data, index}, &a,
                  err);
}
