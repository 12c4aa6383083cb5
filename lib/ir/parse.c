/* parse.c - the .fz text format to a fusion.
 *
 * A recursive-descent parser over the token array made by lex.c, one
 * function per grammar rule, each preceded by the rule it implements. The
 * grammar has no nesting beyond a fixed depth (a fusion holds ops, an op
 * holds a type), so the parser never recurses on its input and cannot be
 * driven into deep recursion.
 *
 * Ops are not built here: the parser reads the operands and attributes,
 * hands them to fz_build (builder.c), which infers the result's dtype and
 * shape exactly as for a fusion made through the C API, and then checks
 * that the type written in the text agrees with the inferred one. So the
 * text can never describe a fusion the builder would refuse, and the two
 * front ends cannot drift apart. A declared type is first kept as a
 * `ptype`, which remembers where the text said `?` (match anything) and
 * which symbols it named, before it is turned into an fz_type.
 *
 * Every failure returns a diagnostic pointing at a token; the partial
 * fusion is destroyed and nothing leaks (the fusion owns all IR memory,
 * and the token array and name table are freed on every path).
 */
#include "lex.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- declared types --------------------------------------------------- */

typedef enum pextent_kind { PX_CONST, PX_SYMBOL, PX_ANY, PX_EXPR } pextent_kind;

typedef struct pextent {
  pextent_kind kind;
  int64_t value;        /* PX_CONST */
  const fz_token *name; /* PX_SYMBOL */
  fz_extent expr;       /* PX_EXPR: `N*K`, resolved when parsed */
} pextent;

typedef struct paxis {
  fz_axis_kind kind; /* ITER (with extent PX_ANY for `?`) or BROADCAST */
  pextent extent;
  bool expanded;
  pextent expanded_to;
} paxis;

typedef struct ptype {
  const fz_token *tok; /* the dtype, where mismatches are reported */
  fz_dtype dtype;
  int rank;
  paxis axes[FZ_MAX_RANK];
  bool has_layout; /* layout(...) or noncontig(...) was written */
  const fz_token *layout_tok;
  int alloc_order[FZ_MAX_RANK];
  bool contiguous[FZ_MAX_RANK]; /* by allocated position, as in fz_type */
} ptype;

typedef enum plit_kind { PL_INT, PL_FLOAT, PL_BOOL } plit_kind;

typedef struct plit {
  plit_kind kind;
  int64_t i;
  double f;
  const fz_token *tok;
} plit;

/* ---- the parser --------------------------------------------------------- */

typedef struct name_entry {
  const char *name; /* into the source text, without '%' */
  size_t length;
  fz_value *value;
  const fz_token *tok;
} name_entry;

typedef struct parser {
  const fz_source *src;
  const fz_token *toks;
  int num_toks, pos;
  fz_fusion *f;
  fz_error *err;
  name_entry *names; /* open addressing; capacity a power of two */
  size_t names_cap, names_used;
} parser;

#define ERROR(p, t, ...)                                                       \
  fz_diag((p)->err, FZ_ERR_PARSE, (p)->src, (t), __VA_ARGS__)

static const fz_token *cur(const parser *p) { return &p->toks[p->pos]; }

static const fz_token *next(parser *p) {
  const fz_token *t = cur(p);
  if (t->kind != FZ_TK_EOF)
    p->pos++;
  return t;
}

static bool is_kind(const parser *p, fz_token_kind kind) {
  return cur(p)->kind == kind;
}

static bool spelled(const parser *p, const fz_token *t, const char *word) {
  size_t n = strlen(word);
  return t->length == n && memcmp(p->src->text + t->offset, word, n) == 0;
}

static bool is_word(const parser *p, const char *word) {
  return is_kind(p, FZ_TK_IDENT) && spelled(p, cur(p), word);
}

static const char *text_of(const parser *p, const fz_token *t) {
  return p->src->text + t->offset;
}

/* "expected X, got Y" at the current token. */
static fz_status expected(parser *p, const char *what) {
  char got[64];
  return ERROR(p, cur(p), "expected %s, got %s", what,
               fz_token_describe(p->src, cur(p), got, sizeof got));
}

static fz_status expect(parser *p, fz_token_kind kind, const char *what) {
  if (!is_kind(p, kind))
    return expected(p, what);
  next(p);
  return FZ_OK;
}

/* ---- value names -------------------------------------------------------- */

static size_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return (size_t)h;
}

static name_entry *find_slot(name_entry *table, size_t cap, const char *s,
                             size_t n) {
  size_t i = hash_name(s, n) & (cap - 1);
  while (table[i].name &&
         !(table[i].length == n && memcmp(table[i].name, s, n) == 0))
    i = (i + 1) & (cap - 1);
  return &table[i];
}

/* The value named by a %name token, or NULL (then *where is unset). */
static fz_value *lookup(parser *p, const fz_token *t, const fz_token **where) {
  if (!p->names)
    return NULL;
  name_entry *e =
      find_slot(p->names, p->names_cap, text_of(p, t) + 1, t->length - 1);
  if (!e->name)
    return NULL;
  if (where)
    *where = e->tok;
  return e->value;
}

/* Fails when the name is taken; call before creating the value. */
static fz_status check_new_name(parser *p, const fz_token *t) {
  const fz_token *first = NULL;
  if (lookup(p, t, &first))
    return ERROR(p, t, "redefinition of value '%.*s' (first defined at %d:%d)",
                 (int)(t->length > 40 ? 40 : t->length), text_of(p, t),
                 first->line, first->col);
  return FZ_OK;
}

static fz_status define(parser *p, const fz_token *t, fz_value *v) {
  if ((p->names_used + 1) * 2 > p->names_cap) {
    size_t cap = p->names_cap ? p->names_cap * 2 : 64;
    name_entry *grown = calloc(cap, sizeof *grown);
    if (!grown)
      return fz_error_set(p->err, FZ_ERR_OUT_OF_MEMORY,
                          "out of memory parsing %s", p->src->filename);
    for (size_t i = 0; i < p->names_cap; i++)
      if (p->names[i].name)
        *find_slot(grown, cap, p->names[i].name, p->names[i].length) =
            p->names[i];
    free(p->names);
    p->names = grown;
    p->names_cap = cap;
  }
  name_entry *e =
      find_slot(p->names, p->names_cap, text_of(p, t) + 1, t->length - 1);
  *e = (name_entry){text_of(p, t) + 1, t->length - 1, v, t};
  p->names_used++;
  v->name = fz_arena_strndup(p->f->arena, text_of(p, t) + 1, t->length - 1);
  return FZ_OK;
}

/* ---- symbols and declared types ----------------------------------------- */

static int find_symbol(const parser *p, const fz_token *name) {
  for (int i = 0; i < p->f->num_symbols; i++) {
    const char *s = p->f->symbols[i].name;
    if (s && strlen(s) == name->length &&
        memcmp(s, text_of(p, name), name->length) == 0)
      return i;
  }
  return -1;
}

/* The fz_extent of a declared extent, creating its symbol if needed (`?`
 * makes a fresh anonymous one). */
static fz_extent make_extent(parser *p, const pextent *e) {
  switch (e->kind) {
  case PX_CONST:
    return fz_const_extent(e->value);
  case PX_ANY:
    return fz_symbol_extent(fz_fusion_symbol(p->f, NULL));
  case PX_EXPR:
    return e->expr;
  case PX_SYMBOL:
    break;
  }
  int sym = find_symbol(p, e->name);
  if (sym < 0)
    sym = fz_fusion_symbol(
        p->f,
        fz_arena_strndup(p->f->arena, text_of(p, e->name), e->name->length));
  return fz_symbol_extent(sym);
}

static fz_axis make_axis(parser *p, const paxis *a) {
  fz_axis axis = {.kind = a->kind};
  if (a->kind == FZ_AXIS_BROADCAST) {
    axis.extent = fz_const_extent(1);
    axis.expanded = a->expanded;
    if (a->expanded)
      axis.expanded_to = make_extent(p, &a->expanded_to);
  } else {
    axis.extent = make_extent(p, &a->extent);
  }
  return axis;
}

/* The fz_type a declaration describes, layout included. */
static fz_type make_type(parser *p, const ptype *pt) {
  fz_type t = {0};
  t.dtype = pt->dtype;
  t.rank = pt->rank;
  for (int i = 0; i < pt->rank; i++)
    t.axes[i] = make_axis(p, &pt->axes[i]);
  t.has_layout = pt->has_layout;
  memcpy(t.alloc_order, pt->alloc_order, sizeof t.alloc_order);
  memcpy(t.contiguous, pt->contiguous, sizeof t.contiguous);
  return t;
}

static bool is_any(const paxis *a) {
  return a->kind == FZ_AXIS_ITER && a->extent.kind == PX_ANY;
}

/* The extent a reshape target's single `?` must have for the element
 * counts to agree: the operand's count over the other target extents, a
 * constant, a symbol or a derived symbol (`N*K`, `M/4`). False when it is
 * none of these (a fraction, a product over an anonymous symbol). */
static bool missing_factor(fz_fusion *f, const fz_type *from,
                           const fz_type *to, int hole, fz_extent *out) {
  fz_monomial m;
  fz_monomial_init(&m);
  fz_monomial_mul_type(f, &m, from, 1);
  for (int i = 0; i < to->rank; i++)
    if (i != hole)
      fz_monomial_mul_extent(f, &m, fz_axis_extent(&to->axes[i]), -1);
  fz_error ignored;
  return fz_monomial_extent(f, &m, out, &ignored) == FZ_OK;
}

/* The target shapes of expand and reshape. A `?` in them means "what the
 * operand determines" where the operand determines it: the extent of an
 * axis that expand does not stretch, the one missing factor of a reshape.
 * Any other `?` is a fresh symbol. This is what lets a printed fusion
 * whose anonymous extents flow through these ops parse back. */
static fz_type make_expand_target(parser *p, const ptype *d,
                                  const fz_value *from) {
  fz_type t = {.dtype = d->dtype, .rank = d->rank};
  for (int i = 0; i < d->rank; i++) {
    const paxis *da = &d->axes[i];
    const fz_axis *fa = i < from->type.rank ? &from->type.axes[i] : NULL;
    bool fa_b1 = fa && fa->kind == FZ_AXIS_BROADCAST && !fa->expanded;
    bool fa_expanded = fa && fa->kind == FZ_AXIS_BROADCAST && fa->expanded;
    if (fa && !fa_b1 && is_any(da))
      t.axes[i] = *fa;
    else if (fa_expanded && da->kind == FZ_AXIS_BROADCAST && da->expanded &&
             da->expanded_to.kind == PX_ANY)
      t.axes[i] = *fa;
    else
      t.axes[i] = make_axis(p, da);
  }
  return t;
}

static fz_type make_reshape_target(parser *p, const ptype *d,
                                   const fz_value *from) {
  fz_type t = {.dtype = d->dtype, .rank = d->rank};
  int holes = 0, hole = -1;
  for (int i = 0; i < d->rank; i++) {
    if (is_any(&d->axes[i]))
      holes++, hole = i;
    else
      t.axes[i] = make_axis(p, &d->axes[i]);
  }
  fz_extent e;
  if (holes == 1 && missing_factor(p->f, &from->type, &t, hole, &e)) {
    t.axes[hole] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = e};
    return t;
  }
  for (int i = 0; i < d->rank; i++)
    if (is_any(&d->axes[i]))
      t.axes[i] = make_axis(p, &d->axes[i]);
  return t;
}

static bool extent_matches(const parser *p, const pextent *d, fz_extent e) {
  switch (d->kind) {
  case PX_ANY:
    return true;
  case PX_CONST:
    return e.symbol < 0 && e.value == d->value;
  case PX_SYMBOL:
    return e.symbol >= 0 && e.symbol == find_symbol(p, d->name);
  case PX_EXPR:
    return fz_extent_equal(e, d->expr);
  }
  return false;
}

static bool axis_matches(const parser *p, const paxis *d, const fz_axis *a) {
  if (d->kind == FZ_AXIS_ITER && d->extent.kind == PX_ANY)
    return true;
  if (d->kind != a->kind)
    return false;
  if (d->kind == FZ_AXIS_ITER)
    return extent_matches(p, &d->extent, a->extent);
  if (d->expanded != a->expanded)
    return false;
  return !d->expanded || extent_matches(p, &d->expanded_to, a->expanded_to);
}

static bool type_matches(const parser *p, const ptype *d, const fz_type *t) {
  if (d->dtype != t->dtype || d->rank != t->rank)
    return false;
  for (int i = 0; i < d->rank; i++)
    if (!axis_matches(p, &d->axes[i], &t->axes[i]))
      return false;
  return true;
}

static void print_pextent(fz_buf *b, const parser *p, const pextent *e) {
  switch (e->kind) {
  case PX_CONST:
    fz_buf_printf(b, "%lld", (long long)e->value);
    break;
  case PX_ANY:
    fz_buf_puts(b, "?");
    break;
  case PX_SYMBOL:
    fz_buf_printf(b, "%.*s", (int)(e->name->length > 40 ? 40 : e->name->length),
                  text_of(p, e->name));
    break;
  case PX_EXPR: {
    char text[128];
    fz_buf_puts(b, fz_format_extent(p->f, e->expr, text, sizeof text));
    break;
  }
  }
}

static void print_ptype(fz_buf *b, const parser *p, const ptype *t) {
  fz_buf_puts(b, fz_dtype_name(t->dtype));
  if (t->rank == 0)
    return;
  fz_buf_puts(b, "[");
  for (int i = 0; i < t->rank; i++) {
    const paxis *a = &t->axes[i];
    if (i)
      fz_buf_puts(b, ", ");
    if (a->kind == FZ_AXIS_BROADCAST) {
      fz_buf_puts(b, "b1");
      if (a->expanded) {
        fz_buf_puts(b, "->");
        print_pextent(b, p, &a->expanded_to);
      }
    } else {
      print_pextent(b, p, &a->extent);
    }
  }
  fz_buf_puts(b, "]");
}

static fz_status type_mismatch(parser *p, const ptype *declared,
                               const fz_type *inferred) {
  fz_buf d = {0}, i = {0};
  print_ptype(&d, p, declared);
  fz_print_type(&i, p->f, inferred, false);
  char *ds = fz_buf_take(&d), *is = fz_buf_take(&i);
  fz_status st = ERROR(p, declared->tok,
                       "declared type %s does not match inferred type %s",
                       ds ? ds : "?", is ? is : "?");
  free(ds);
  free(is);
  return st;
}

/* ---- grammar ------------------------------------------------------------- */

/* axis-list = "(" (integer ("," integer)*)? ")"
 * Reads at most FZ_MAX_RANK axes, each in [0, FZ_MAX_RANK), or in
 * [-FZ_MAX_RANK, FZ_MAX_RANK) for an op's dims and perm, whose negative
 * entries count from the end as in PyTorch (make_attrs wraps them, since
 * only the operand tells the rank); toks[i] is where axis i was written. */
static fz_status parse_axis_list(parser *p, const char *attr,
                                 bool allow_negative, int *axes, int *count,
                                 const fz_token **toks) {
  fz_status st;
  *count = 0;
  if ((st = expect(p, FZ_TK_LPAREN, "'('")) != FZ_OK)
    return st;
  if (is_kind(p, FZ_TK_RPAREN)) {
    next(p);
    return FZ_OK;
  }
  for (;;) {
    if (!is_kind(p, FZ_TK_INT))
      return expected(p, "an axis index");
    const fz_token *t = next(p);
    if (*count == FZ_MAX_RANK)
      return ERROR(p, t, "too many axes in %s (at most %d)", attr, FZ_MAX_RANK);
    if (t->i < (allow_negative ? -FZ_MAX_RANK : 0) || t->i >= FZ_MAX_RANK)
      return ERROR(p, t, "axis %lld is out of range", (long long)t->i);
    toks[*count] = t;
    axes[(*count)++] = (int)t->i;
    if (is_kind(p, FZ_TK_RPAREN)) {
      next(p);
      return FZ_OK;
    }
    if ((st = expect(p, FZ_TK_COMMA, "',' or ')'")) != FZ_OK)
      return st;
  }
}

/* Axes must be below `rank` and appear at most once. */
static fz_status check_axes(parser *p, const char *attr, const int *axes,
                            int count, const fz_token **toks, int rank,
                            const char *of_what) {
  bool seen[FZ_MAX_RANK] = {false};
  for (int i = 0; i < count; i++) {
    if (axes[i] < 0 || axes[i] >= rank)
      return ERROR(p, toks[i], "axis %d is out of range for %s of rank %d",
                   axes[i], of_what, rank);
    if (seen[axes[i]])
      return ERROR(p, toks[i], "axis %d appears twice in %s", axes[i], attr);
    seen[axes[i]] = true;
  }
  return FZ_OK;
}

/* Negative axes become axis + rank (fz_wrap_axes); one below -rank is
 * reported where it was written, whichever axis fz_wrap_axes found out of
 * range first (an axis >= rank is left for type inference to report). */
static fz_status wrap_axes(parser *p, int *axes, int count,
                           const fz_token **toks, int rank,
                           const char *of_what) {
  int original[FZ_MAX_RANK];
  memcpy(original, axes, sizeof *axes * (size_t)count);
  fz_wrap_axes(count, axes, rank);
  for (int i = 0; i < count; i++)
    if (axes[i] < 0)
      return ERROR(p, toks[i], "axis %d is out of range for %s of rank %d",
                   original[i], of_what, rank);
  return FZ_OK;
}

/* extent-expr = (integer | symbol) (("*" | "/") (integer | symbol))+,
 * its tokens' spellings joined and handed to symbol_expr.c. */
static fz_status parse_extent_expr(parser *p, bool create_bases, pextent *e) {
  const fz_token *first = cur(p);
  fz_buf text = {0};
  fz_buf_printf(&text, "%.*s", (int)first->length, text_of(p, first));
  next(p);
  while (is_kind(p, FZ_TK_STAR) || is_kind(p, FZ_TK_SLASH)) {
    fz_buf_puts(&text, is_kind(p, FZ_TK_STAR) ? "*" : "/");
    next(p);
    if (!is_kind(p, FZ_TK_IDENT) && !is_kind(p, FZ_TK_INT)) {
      free(fz_buf_take(&text));
      return expected(p, "a symbol or an integer after '*' or '/'");
    }
    const fz_token *t = next(p);
    fz_buf_printf(&text, "%.*s", (int)t->length, text_of(p, t));
  }
  char *s = fz_buf_take(&text);
  if (!s)
    return fz_error_set(p->err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  fz_error why;
  *e = (pextent){.kind = PX_EXPR};
  fz_status st =
      fz_parse_extent_expr(p->f, s, strlen(s), create_bases, &e->expr, &why);
  free(s);
  if (st != FZ_OK)
    return ERROR(p, first, "%s", why.message);
  return FZ_OK;
}

static bool starts_extent_expr(const parser *p) {
  const fz_token *t = cur(p);
  return (t->kind == FZ_TK_INT || t->kind == FZ_TK_IDENT) &&
         (t[1].kind == FZ_TK_STAR || t[1].kind == FZ_TK_SLASH);
}

/* extent-value = integer | symbol | "?" | extent-expr */
static fz_status parse_extent_value(parser *p, pextent *e) {
  const fz_token *t = cur(p);
  if (starts_extent_expr(p))
    return parse_extent_expr(p, true, e);
  if (t->kind == FZ_TK_INT) {
    if (t->i < 0)
      return ERROR(p, t, "extent must not be negative");
    *e = (pextent){.kind = PX_CONST, .value = t->i};
  } else if (t->kind == FZ_TK_QUESTION) {
    *e = (pextent){.kind = PX_ANY};
  } else if (t->kind == FZ_TK_IDENT) {
    if (spelled(p, t, "b1"))
      return ERROR(p, t, "'b1' (a broadcast axis) cannot be used here");
    *e = (pextent){.kind = PX_SYMBOL, .name = t};
  } else {
    return expected(p, "an extent (an integer, a symbol or '?')");
  }
  next(p);
  return FZ_OK;
}

/* extent = extent-value | "b1" ("->" extent-value)? */
static fz_status parse_extent(parser *p, paxis *a) {
  *a = (paxis){.kind = FZ_AXIS_ITER};
  if (!is_word(p, "b1"))
    return parse_extent_value(p, &a->extent);
  next(p);
  a->kind = FZ_AXIS_BROADCAST;
  a->extent = (pextent){.kind = PX_CONST, .value = 1};
  if (!is_kind(p, FZ_TK_ARROW))
    return FZ_OK;
  next(p);
  a->expanded = true;
  return parse_extent_value(p, &a->expanded_to);
}

/* layout-spec = ("layout" axis-list | "noncontig" axis-list)*
 * (each at most once). noncontig lists logical axes; fz_type keeps
 * contiguity by allocated position. */
static fz_status parse_layout(parser *p, ptype *t) {
  fz_status st;
  int order[FZ_MAX_RANK], nc[FZ_MAX_RANK], num_order = 0, num_nc = 0;
  const fz_token *order_toks[FZ_MAX_RANK], *nc_toks[FZ_MAX_RANK];
  const fz_token *layout_kw = NULL, *nc_kw = NULL;
  while (is_word(p, "layout") || is_word(p, "noncontig")) {
    bool is_layout = is_word(p, "layout");
    const fz_token *kw = next(p);
    if (is_layout ? layout_kw != NULL : nc_kw != NULL)
      return ERROR(p, kw, "duplicate %s", is_layout ? "layout" : "noncontig");
    if (is_layout) {
      layout_kw = kw;
      st = parse_axis_list(p, "layout", false, order, &num_order, order_toks);
    } else {
      nc_kw = kw;
      st = parse_axis_list(p, "noncontig", false, nc, &num_nc, nc_toks);
    }
    if (st != FZ_OK)
      return st;
  }
  for (int i = 0; i < t->rank; i++) {
    t->alloc_order[i] = i;
    t->contiguous[i] = true;
  }
  if (!layout_kw && !nc_kw)
    return FZ_OK;
  t->has_layout = true;
  t->layout_tok = layout_kw ? layout_kw : nc_kw;
  if (layout_kw) {
    if (num_order != t->rank)
      return ERROR(p, layout_kw,
                   "layout must list all %d axes of the type, not %d", t->rank,
                   num_order);
    if ((st = check_axes(p, "layout", order, num_order, order_toks, t->rank,
                         "a type")) != FZ_OK)
      return st;
    memcpy(t->alloc_order, order, sizeof order);
  }
  if ((st = check_axes(p, "noncontig", nc, num_nc, nc_toks, t->rank,
                       "a type")) != FZ_OK)
    return st;
  for (int i = 0; i < num_nc; i++)
    for (int pos = 0; pos < t->rank; pos++)
      if (t->alloc_order[pos] == nc[i])
        t->contiguous[pos] = false;
  return FZ_OK;
}

static int dtype_from_token(const parser *p, const fz_token *t) {
  for (int d = 0; d < FZ_NUM_DTYPES; d++)
    if (spelled(p, t, fz_dtype_name((fz_dtype)d)))
      return d;
  return -1;
}

/* type = dtype ("[" extent ("," extent)* "]")? layout-spec */
static fz_status parse_type(parser *p, ptype *t) {
  fz_status st;
  *t = (ptype){0};
  t->tok = cur(p);
  if (!is_kind(p, FZ_TK_IDENT))
    return expected(p, "a type");
  int dtype = dtype_from_token(p, cur(p));
  if (dtype < 0) {
    char got[64];
    return ERROR(p, cur(p), "unknown dtype %s",
                 fz_token_describe(p->src, cur(p), got, sizeof got));
  }
  next(p);
  t->dtype = (fz_dtype)dtype;
  if (is_kind(p, FZ_TK_LBRACKET)) {
    next(p);
    if (is_kind(p, FZ_TK_RBRACKET))
      return ERROR(p, cur(p),
                   "empty extent list (a scalar type is written "
                   "without brackets, as in 'f32')");
    for (;;) {
      if (t->rank == FZ_MAX_RANK)
        return ERROR(p, cur(p), "rank exceeds the maximum of %d", FZ_MAX_RANK);
      if ((st = parse_extent(p, &t->axes[t->rank])) != FZ_OK)
        return st;
      t->rank++;
      if (is_kind(p, FZ_TK_RBRACKET)) {
        next(p);
        break;
      }
      if ((st = expect(p, FZ_TK_COMMA, "',' or ']'")) != FZ_OK)
        return st;
    }
  }
  return parse_layout(p, t);
}

/* literal = integer | float | "inf" | "nan" | "true" | "false"
 * Returns false, consuming nothing, when the token is not a literal. */
static bool parse_literal(parser *p, plit *l) {
  const fz_token *t = cur(p);
  *l = (plit){.tok = t};
  if (t->kind == FZ_TK_INT) {
    l->kind = PL_INT;
    l->i = t->i;
  } else if (t->kind == FZ_TK_FLOAT) {
    l->kind = PL_FLOAT;
    l->f = t->f;
  } else if (is_word(p, "inf")) {
    l->kind = PL_FLOAT;
    l->f = (double)INFINITY;
  } else if (is_word(p, "nan")) {
    l->kind = PL_FLOAT;
    l->f = (double)NAN;
  } else if (is_word(p, "true") || is_word(p, "false")) {
    l->kind = PL_BOOL;
    l->i = is_word(p, "true");
  } else {
    return false;
  }
  next(p);
  return true;
}

/* A literal as a value of the result's dtype class (full's fill value,
 * iota's start and step): any number for a float result (rounded to its
 * dtype, overflowing to inf, as PyTorch converts), an integral number in
 * range for an integer result (out of range is refused, as PyTorch
 * refuses torch.full((4,), 300, dtype=torch.int8)), true or false for
 * bool. */
static fz_status literal_scalar(parser *p, const plit *l, fz_dtype dtype,
                                const char *what, fz_scalar *out) {
  fz_error why = {0};
  if (dtype == FZ_BOOL) {
    if (l->kind != PL_BOOL)
      return ERROR(p, l->tok, "%s of a bool result must be true or false",
                   what);
    out->i = l->i;
    return FZ_OK;
  }
  if (l->kind == PL_BOOL)
    return ERROR(p, l->tok, "%s of a %s result must be a number", what,
                 fz_dtype_name(dtype));
  if (l->kind == PL_FLOAT && fz_dtype_is_integer(dtype) &&
      (isnan(l->f) || (isfinite(l->f) && l->f != floor(l->f))))
    return ERROR(p, l->tok, "%s of a %s result must be an integer", what,
                 fz_dtype_name(dtype));
  fz_status st =
      l->kind == PL_FLOAT
          ? fz_scalar_of_double(l->f, dtype, what, out, &why)
          : fz_check_int_in_dtype(l->i, dtype, what, &why);
  if (st)
    return ERROR(p, l->tok, "%s", why.message);
  if (l->kind == PL_INT) {
    if (fz_dtype_is_float(dtype))
      out->f = (double)l->i;
    else
      out->i = l->i;
  }
  return FZ_OK;
}

/* operand = value-name | literal */
static fz_status parse_operand(parser *p, fz_value **out) {
  const fz_token *t = cur(p);
  if (t->kind == FZ_TK_VALUE) {
    *out = lookup(p, t, NULL);
    if (!*out)
      return ERROR(p, t, "use of undefined value '%.*s'",
                   (int)(t->length > 40 ? 40 : t->length), text_of(p, t));
    next(p);
    return FZ_OK;
  }
  plit l;
  if (!parse_literal(p, &l))
    return expected(p, "an operand (a %value or a literal)");
  if (l.kind == PL_INT)
    *out = fz_literal_int(p->f, l.i);
  else if (l.kind == PL_FLOAT)
    *out = fz_literal_float(p->f, l.f);
  else
    *out = fz_literal_bool(p->f, l.i != 0);
  return FZ_OK;
}

/* What an op line says before its result type. */
typedef struct pop {
  const fz_token *result, *keyword;
  fz_opcode code;
  int num_operands, cap_operands;
  fz_value **operands; /* in the fusion's arena (cat takes any number) */
  plit fill;
  bool has_fill;
  int num_dims, num_perm;
  int dims[FZ_MAX_RANK], perm[FZ_MAX_RANK];
  const fz_token *dims_toks[FZ_MAX_RANK], *perm_toks[FZ_MAX_RANK];
  const fz_token *dims_tok, *perm_tok, *keepdim_tok;
  plit start, step;
  const fz_token *start_tok, *step_tok;
  int symbol; /* symbol: the symbol read */
  /* slice: start, stop, step; pad: low, high (lists by operand axis) */
  int64_t lists[5][FZ_MAX_RANK];
  int32_t stop_symbols[FZ_MAX_RANK]; /* stop entries that name a symbol */
  int list_len[5];
  const fz_token *list_tok[5];
  plit value;
  const fz_token *value_tok;
  plit correction; /* var */
  const fz_token *correction_tok;
} pop;

/* The lists of the resize attributes, by their place in pop.lists. */
static const char *const resize_lists[5] = {"start", "stop", "step", "low",
                                            "high"};

/* "(" entry ("," entry)* ")" where an entry is an integer, or for stop a
 * symbol's name or `?` (the axis taken to its end; `?` for an anonymous
 * extent, which has no name). */
static fz_status parse_resize_list(parser *p, pop *op, int which) {
  fz_status st;
  int *n = &op->list_len[which];
  if ((st = expect(p, FZ_TK_LPAREN, "'('")) != FZ_OK)
    return st;
  for (;;) {
    const fz_token *t = cur(p);
    if (*n == FZ_MAX_RANK)
      return ERROR(p, t, "too many entries in %s (at most %d)",
                   resize_lists[which], FZ_MAX_RANK);
    if (which == 1 && t->kind == FZ_TK_IDENT) {
      int sym = find_symbol(p, t);
      if (sym < 0)
        return ERROR(p, t, "unknown symbol '%.*s' in stop",
                     (int)(t->length > 40 ? 40 : t->length), text_of(p, t));
      op->stop_symbols[*n] = sym;
    } else if (which == 1 && t->kind == FZ_TK_QUESTION) {
      op->stop_symbols[*n] = INT32_MAX; /* the axis's own extent */
    } else if (t->kind == FZ_TK_INT) {
      if (which == 1)
        op->stop_symbols[*n] = -1;
      op->lists[which][*n] = t->i;
    } else {
      return expected(p, which == 1 ? "an integer or a symbol name"
                                    : "an integer");
    }
    next(p);
    (*n)++;
    if (is_kind(p, FZ_TK_RPAREN)) {
      next(p);
      return FZ_OK;
    }
    if ((st = expect(p, FZ_TK_COMMA, "',' or ')'")) != FZ_OK)
      return st;
  }
}

/* slice's start/stop/step and pad's low/high/value attributes. */
static fz_status parse_resize_attribute(parser *p, pop *op) {
  const fz_token *t = cur(p);
  bool is_slice = op->code == FZ_OP_SLICE;
  for (int i = 0; i < 5; i++) {
    if (!spelled(p, t, resize_lists[i]) || (i < 3) != is_slice)
      continue;
    if (op->list_tok[i])
      return ERROR(p, t, "duplicate attribute '%s'", resize_lists[i]);
    op->list_tok[i] = next(p);
    return parse_resize_list(p, op, i);
  }
  if (!is_slice && spelled(p, t, "value")) {
    fz_status st;
    if (op->value_tok)
      return ERROR(p, t, "duplicate attribute 'value'");
    op->value_tok = next(p);
    if ((st = expect(p, FZ_TK_LPAREN, "'('")) != FZ_OK)
      return st;
    if (!parse_literal(p, &op->value))
      return expected(p, "a literal");
    return expect(p, FZ_TK_RPAREN, "')'");
  }
  if (p->toks[p->pos + 1].kind == FZ_TK_LPAREN)
    return ERROR(p, t, "'%.*s' is not an attribute of '%s'",
                 (int)(t->length > 40 ? 40 : t->length), text_of(p, t),
                 fz_op_table[op->code].name);
  return expected(p, "':' and the result type");
}

/* The resize attributes against the operand: one entry per axis. */
static fz_status make_resize_attrs(parser *p, pop *op, const ptype *declared,
                                   fz_attrs *a) {
  int rank = op->operands[0]->type.rank;
  bool is_slice = op->code == FZ_OP_SLICE;
  for (int i = is_slice ? 0 : 3; i < (is_slice ? 3 : 5); i++) {
    if (!op->list_tok[i]) {
      if (i == 2)
        continue; /* step defaults to 1 */
      return ERROR(p, op->keyword, "'%s' needs %s(...)",
                   fz_op_table[op->code].name, resize_lists[i]);
    }
    if (op->list_len[i] != rank)
      return ERROR(p, op->list_tok[i],
                   "%s must have one entry per operand axis (%d), not %d",
                   resize_lists[i], rank, op->list_len[i]);
  }
  for (int k = 0; k < rank; k++) {
    if (is_slice) {
      a->resize.start[k] = op->lists[0][k];
      int32_t sym = op->stop_symbols[k];
      a->resize.stop[k] =
          sym == INT32_MAX ? fz_axis_extent(&op->operands[0]->type.axes[k])
          : sym >= 0       ? fz_symbol_extent(sym)
                           : fz_const_extent(op->lists[1][k]);
      a->resize.step[k] = op->list_tok[2] ? op->lists[2][k] : 1;
    } else {
      a->resize.low[k] = op->lists[3][k];
      a->resize.high[k] = op->lists[4][k];
    }
  }
  if (is_slice)
    return FZ_OK;
  if (!op->value_tok)
    return ERROR(p, op->keyword, "'pad' needs value(...)");
  return literal_scalar(p, &op->value, declared->dtype, "the value", &a->fill);
}

static bool attr_allowed(fz_op_kind kind, const char *attr) {
  if (!strcmp(attr, "correction"))
    return false; /* var's own: parse_attribute asks for it by opcode */
  if (!strcmp(attr, "dims"))
    return kind == FZ_KIND_REDUCTION || kind == FZ_KIND_BROADCAST ||
           kind == FZ_KIND_SQUEEZE || kind == FZ_KIND_CAT ||
           kind == FZ_KIND_GATHER;
  if (!strcmp(attr, "keepdim"))
    return kind == FZ_KIND_REDUCTION;
  if (!strcmp(attr, "perm"))
    return kind == FZ_KIND_PERMUTE;
  return kind == FZ_KIND_IOTA; /* start, step */
}

/* attribute = "dims" axis-list | "keepdim" | "perm" axis-list
 *           | "start" "(" literal ")" | "step" "(" literal ")"
 *           | "correction" "(" literal ")" */
static fz_status parse_attribute(parser *p, pop *op) {
  static const char *const names[] = {"dims", "keepdim", "perm", "start",
                                      "step", "correction"};
  const fz_token *t = cur(p);
  const char *attr = NULL;
  if (op->code == FZ_OP_SLICE || op->code == FZ_OP_PAD)
    return parse_resize_attribute(p, op);
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (spelled(p, t, names[i]))
      attr = names[i];
  const char *op_name = fz_op_table[op->code].name;
  if (!attr && p->toks[p->pos + 1].kind == FZ_TK_LPAREN)
    return ERROR(p, t, "unknown attribute '%.*s'",
                 (int)(t->length > 40 ? 40 : t->length), text_of(p, t));
  if (!attr)
    return expected(p, "':' and the result type");
  bool var_attr = !strcmp(attr, "correction") && op->code == FZ_OP_VAR;
  if (!var_attr && !attr_allowed(fz_op_table[op->code].kind, attr))
    return ERROR(p, t, "'%s' is not an attribute of '%s'", attr, op_name);
  const fz_token **slot = !strcmp(attr, "dims")      ? &op->dims_tok
                          : !strcmp(attr, "keepdim") ? &op->keepdim_tok
                          : !strcmp(attr, "perm")    ? &op->perm_tok
                          : !strcmp(attr, "start")   ? &op->start_tok
                          : var_attr                 ? &op->correction_tok
                                                     : &op->step_tok;
  if (*slot)
    return ERROR(p, t, "duplicate attribute '%s'", attr);
  *slot = next(p);
  fz_status st;
  if (slot == &op->dims_tok)
    return parse_axis_list(p, "dims", true, op->dims, &op->num_dims,
                           op->dims_toks);
  if (slot == &op->perm_tok)
    return parse_axis_list(p, "perm", true, op->perm, &op->num_perm,
                           op->perm_toks);
  if (slot == &op->keepdim_tok)
    return FZ_OK;
  plit *l = slot == &op->start_tok        ? &op->start
            : slot == &op->correction_tok ? &op->correction
                                          : &op->step;
  if ((st = expect(p, FZ_TK_LPAREN, "'('")) != FZ_OK)
    return st;
  if (!parse_literal(p, l))
    return expected(p, "a literal");
  return expect(p, FZ_TK_RPAREN, "')'");
}

/* operands = operand ("," operand)*   (exactly the op's arity)
 *          | literal                  (full: its fill value)
 *          | symbol-name              (symbol: the symbol read) */
static fz_status parse_operands(parser *p, pop *op) {
  fz_status st;
  const fz_op_info *info = &fz_op_table[op->code];
  if (info->kind == FZ_KIND_FULL) {
    op->has_fill = parse_literal(p, &op->fill);
    if (!op->has_fill)
      return expected(p, "the fill value of 'full' (a literal)");
    return FZ_OK;
  }
  if (info->kind == FZ_KIND_SYMBOL) {
    /* Only a symbol already named (by an input or an earlier type) can be
     * read: a symbol first seen here would be bound by nothing. */
    if (starts_extent_expr(p)) { /* a derived symbol: `symbol B*S` */
      const fz_token *t = cur(p);
      pextent e;
      if ((st = parse_extent_expr(p, false, &e)) != FZ_OK)
        return st;
      if (e.expr.symbol < 0)
        return ERROR(p, t, "'symbol' reads a symbol, not the constant %lld",
                     (long long)e.expr.value);
      op->symbol = e.expr.symbol;
      return FZ_OK;
    }
    if (!is_kind(p, FZ_TK_IDENT))
      return expected(p, "the name of the symbol 'symbol' reads");
    const fz_token *t = cur(p);
    op->symbol = find_symbol(p, t);
    if (op->symbol < 0)
      return ERROR(p, t,
                   "unknown symbol '%.*s' (a symbol read names a symbol of "
                   "an input or an earlier type)",
                   (int)(t->length > 40 ? 40 : t->length), text_of(p, t));
    next(p);
    return FZ_OK;
  }
  if (info->arity < 0) {
    /* cat: operands up to the first attribute */
    for (;;) {
      fz_value *v;
      if ((st = parse_operand(p, &v)) != FZ_OK)
        return st;
      fz_arena_push(p->f->arena, (void ***)&op->operands, &op->num_operands,
                    &op->cap_operands, v);
      if (!is_kind(p, FZ_TK_COMMA))
        return FZ_OK;
      next(p);
    }
  }
  op->operands = fz_arena_alloc(p->f->arena, sizeof *op->operands * 3);
  for (int i = 0; i < info->arity; i++) {
    if (i > 0 && !is_kind(p, FZ_TK_COMMA)) {
      char got[64];
      return ERROR(p, cur(p), "'%s' takes %d operands; expected ',', got %s",
                   info->name, info->arity,
                   fz_token_describe(p->src, cur(p), got, sizeof got));
    }
    if (i > 0)
      next(p);
    if ((st = parse_operand(p, &op->operands[op->num_operands++])) != FZ_OK)
      return st;
  }
  if (is_kind(p, FZ_TK_COMMA))
    return ERROR(p, cur(p), "too many operands: '%s' takes %d", info->name,
                 info->arity);
  return FZ_OK;
}

static int compare_ints(const void *a, const void *b) {
  return *(const int *)a - *(const int *)b;
}

/* Checks attributes against the operands and fills the builder's view. */
static fz_status make_attrs(parser *p, pop *op, const ptype *declared,
                            fz_attrs *a, fz_type *shape) {
  fz_status st;
  const fz_op_info *info = &fz_op_table[op->code];
  bool needs_dims = info->kind == FZ_KIND_REDUCTION ||
                    info->kind == FZ_KIND_BROADCAST ||
                    info->kind == FZ_KIND_SQUEEZE || info->kind == FZ_KIND_CAT ||
                    info->kind == FZ_KIND_GATHER;
  if ((info->kind == FZ_KIND_SLICE || info->kind == FZ_KIND_PAD) &&
      (st = make_resize_attrs(p, op, declared, a)) != FZ_OK)
    return st;
  if (info->kind == FZ_KIND_CAT && op->dims_tok && op->num_dims != 1)
    return ERROR(p, op->dims_tok, "'cat' needs exactly one axis in dims, "
                 "not %d", op->num_dims);
  if (needs_dims && !op->dims_tok)
    return ERROR(p, op->keyword, "'%s' needs dims(...)", info->name);
  if (info->kind == FZ_KIND_PERMUTE && !op->perm_tok)
    return ERROR(p, op->keyword, "'permute' needs perm(...)");
  if (op->dims_tok) {
    /* Negative dims count from the end of the operand (of the result, for
     * broadcast); duplicates are an error, order is not (dims are a
     * set). */
    int rank = op->operands[0]->type.rank;
    if (info->kind == FZ_KIND_BROADCAST)
      rank += op->num_dims;
    /* a rank-0 operand's dims are 0 or -1, as in PyTorch (the builder
     * turns the reduction into a copy) */
    if (info->kind == FZ_KIND_REDUCTION && rank == 0)
      rank = 1;
    if ((st = wrap_axes(p, op->dims, op->num_dims, op->dims_toks, rank,
                        info->kind == FZ_KIND_BROADCAST ? "the result"
                                                        : "an operand")) !=
            FZ_OK ||
        (st = check_axes(p, "dims", op->dims, op->num_dims, op->dims_toks,
                         FZ_MAX_RANK, "a tensor")) != FZ_OK)
      return st;
    a->num_dims = op->num_dims;
    memcpy(a->dims, op->dims, sizeof a->dims);
    qsort(a->dims, (size_t)a->num_dims, sizeof *a->dims, compare_ints);
  }
  a->keepdim = op->keepdim_tok != NULL;
  if (op->code == FZ_OP_VAR) {
    /* absent: torch.var's default; fz_infer_type checks the value */
    a->correction = !op->correction_tok          ? 1.0
                    : op->correction.kind == PL_INT ? (double)op->correction.i
                                                    : op->correction.f;
    if (op->correction_tok && op->correction.kind != PL_INT &&
        op->correction.kind != PL_FLOAT)
      return ERROR(p, op->correction_tok, "correction must be a number");
  }
  a->symbol = op->symbol;
  if (op->perm_tok) {
    int rank = op->operands[0]->type.rank;
    if (op->num_perm != rank)
      return ERROR(p, op->perm_tok,
                   "perm must list all %d axes of the operand, not %d", rank,
                   op->num_perm);
    if ((st = wrap_axes(p, op->perm, op->num_perm, op->perm_toks, rank,
                        "an operand")) != FZ_OK ||
        (st = check_axes(p, "perm", op->perm, op->num_perm, op->perm_toks,
                         rank, "an operand")) != FZ_OK)
      return st;
    memcpy(a->perm, op->perm, sizeof a->perm);
  }
  switch (info->kind) {
  case FZ_KIND_RESHAPE:
    *shape = make_reshape_target(p, declared, op->operands[0]);
    a->shape = shape;
    break;
  case FZ_KIND_EXPAND:
    *shape = make_expand_target(p, declared, op->operands[0]);
    a->shape = shape;
    break;
  case FZ_KIND_FULL:
  case FZ_KIND_IOTA:
  case FZ_KIND_RANDOM:
    *shape = make_type(p, declared);
    shape->has_layout = false;
    a->shape = shape;
    break;
  case FZ_KIND_CAST:
    *shape = (fz_type){.dtype = declared->dtype};
    a->shape = shape;
    break;
  default:
    break;
  }
  if (op->has_fill &&
      (st = literal_scalar(p, &op->fill, declared->dtype, "the fill value",
                           &a->fill)) != FZ_OK)
    return st;
  if (op->start_tok) {
    a->has_iota_start = true;
    if ((st = literal_scalar(p, &op->start, declared->dtype, "start",
                             &a->iota_start)) != FZ_OK)
      return st;
  }
  if (op->step_tok) {
    a->has_iota_step = true;
    if ((st = literal_scalar(p, &op->step, declared->dtype, "step",
                             &a->iota_step)) != FZ_OK)
      return st;
  }
  return FZ_OK;
}

/* op = value-name "=" op-name operands attribute* ":" type */
static fz_status parse_op(parser *p) {
  fz_status st;
  pop op = {0};
  op.result = next(p);
  if ((st = check_new_name(p, op.result)) != FZ_OK)
    return st;
  if ((st = expect(p, FZ_TK_EQUAL, "'='")) != FZ_OK)
    return st;
  if (!is_kind(p, FZ_TK_IDENT))
    return expected(p, "an op name");
  op.keyword = next(p);
  int code = fz_opcode_from_name(text_of(p, op.keyword), op.keyword->length);
  if (code < 0)
    return ERROR(p, op.keyword, "unknown op '%.*s'",
                 (int)(op.keyword->length > 40 ? 40 : op.keyword->length),
                 text_of(p, op.keyword));
  op.code = (fz_opcode)code;
  if ((st = parse_operands(p, &op)) != FZ_OK)
    return st;
  while (is_kind(p, FZ_TK_IDENT))
    if ((st = parse_attribute(p, &op)) != FZ_OK)
      return st;
  if ((st = expect(p, FZ_TK_COLON, "':' and the result type")) != FZ_OK)
    return st;
  ptype declared;
  if ((st = parse_type(p, &declared)) != FZ_OK)
    return st;

  fz_attrs attrs = {0};
  fz_type shape;
  if ((st = make_attrs(p, &op, &declared, &attrs, &shape)) != FZ_OK)
    return st;
  fz_error build_err = {0};
  fz_value *v =
      fz_build(p->f, op.code, op.num_operands, op.operands, &attrs, &build_err);
  if (!v)
    return fz_diag(
        p->err, build_err.status != FZ_OK ? build_err.status : FZ_ERR_INVALID,
        p->src, op.result, "%s", build_err.message);
  if (!type_matches(p, &declared, &v->type))
    return type_mismatch(p, &declared, &v->type);
  if (declared.has_layout &&
      fz_value_set_layout(v, declared.alloc_order, declared.contiguous,
                          &build_err) != FZ_OK)
    return fz_diag(p->err, build_err.status, p->src, declared.layout_tok, "%s",
                   build_err.message);
  if (v->def)
    v->def->loc = (fz_loc){op.result->line, op.result->col};
  return define(p, op.result, v);
}

/* argument = value-name ":" type */
static fz_status parse_argument(parser *p) {
  fz_status st;
  if (!is_kind(p, FZ_TK_VALUE))
    return expected(p, "an argument ('%name: type')");
  const fz_token *name = next(p);
  if ((st = check_new_name(p, name)) != FZ_OK)
    return st;
  if ((st = expect(p, FZ_TK_COLON, "':' and the argument's type")) != FZ_OK)
    return st;
  ptype declared;
  if ((st = parse_type(p, &declared)) != FZ_OK)
    return st;
  fz_type t = make_type(p, &declared);
  t.has_layout = true; /* row-major unless declared otherwise */
  char what[64];
  fz_error why = {0};
  snprintf(what, sizeof what, "%.*s",
           (int)(name->length > 40 ? 40 : name->length), text_of(p, name));
  if (fz_check_type(p->f, &t, what, &why) != FZ_OK)
    return fz_diag(p->err, why.status, p->src, declared.tok, "%s",
                   why.message);
  return define(p, name, fz_add_input(p->f, NULL, &t));
}

/* return = "return" value-name ("," value-name)*
 * (a fusion without outputs computes nothing; the verifier rejects it) */
static fz_status parse_return(parser *p) {
  fz_status st;
  next(p);
  for (;;) {
    if (!is_kind(p, FZ_TK_VALUE))
      return expected(p, "a value to return");
    const fz_token *t = cur(p);
    fz_value *v;
    if ((st = parse_operand(p, &v)) != FZ_OK)
      return st;
    fz_error add_err = {0};
    if (fz_add_output(p->f, v, &add_err) != FZ_OK)
      return fz_diag(p->err, add_err.status, p->src, t, "%s", add_err.message);
    if (!is_kind(p, FZ_TK_COMMA))
      return FZ_OK;
    next(p);
  }
}

/* fusion = "fusion" global-name "(" (argument ("," argument)*)? ")"
 *          "{" op* return "}" end-of-input */
static fz_status parse_fusion(parser *p) {
  fz_status st;
  if (!is_word(p, "fusion"))
    return expected(p, "'fusion'");
  next(p);
  if (!is_kind(p, FZ_TK_GLOBAL))
    return expected(p, "the fusion's name ('@name')");
  const fz_token *name = next(p);
  p->f->name =
      fz_arena_strndup(p->f->arena, text_of(p, name) + 1, name->length - 1);
  if ((st = expect(p, FZ_TK_LPAREN, "'('")) != FZ_OK)
    return st;
  if (!is_kind(p, FZ_TK_RPAREN)) {
    for (;;) {
      if ((st = parse_argument(p)) != FZ_OK)
        return st;
      if (is_kind(p, FZ_TK_RPAREN))
        break;
      if ((st = expect(p, FZ_TK_COMMA, "',' or ')'")) != FZ_OK)
        return st;
    }
  }
  next(p);
  if ((st = expect(p, FZ_TK_LBRACE, "'{'")) != FZ_OK)
    return st;
  while (is_kind(p, FZ_TK_VALUE))
    if ((st = parse_op(p)) != FZ_OK)
      return st;
  if (!is_word(p, "return"))
    return expected(p, "an op ('%name = ...') or 'return'");
  if ((st = parse_return(p)) != FZ_OK)
    return st;
  if ((st = expect(p, FZ_TK_RBRACE, "',' or '}'")) != FZ_OK)
    return st;
  if (!is_kind(p, FZ_TK_EOF))
    return expected(p, "end of input after the fusion");
  return FZ_OK;
}

fz_status fz_parse_at(const char *filename, int first_line, const char *text,
                      size_t length, fz_fusion **out, fz_error *err) {
  if (!out)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_parse: out is NULL");
  *out = NULL;
  if (!text && length > 0)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_parse: text is NULL");
  fz_source src = {filename ? filename : "<input>", text ? text : "", length,
                   first_line};
  fz_token *toks;
  int num_toks;
  fz_status st = fz_tokenize(&src, &toks, &num_toks, err);
  if (st != FZ_OK)
    return st;
  parser p = {.src = &src, .toks = toks, .num_toks = num_toks, .err = err};
  p.f = fz_fusion_create(NULL);
  st = parse_fusion(&p);
  free(p.names);
  free(toks);
  if (st != FZ_OK) {
    fz_fusion_destroy(p.f);
    return st;
  }
  *out = p.f;
  return FZ_OK;
}

fz_status fz_parse(const char *filename, const char *text, size_t length,
                   fz_fusion **out, fz_error *err) {
  return fz_parse_at(filename, 1, text, length, out, err);
}
