/* symbol_expr.c - derived symbols: extents that are products and quotients
 * of symbols and constants (`N*K`, `M/4`, `M/K`).
 *
 * A reshape over symbolic extents needs size arithmetic ([N, K] -> [N*K],
 * [M] -> [M/K, K]). Rather than widen fz_extent, which every pass reads,
 * such an extent is a symbol of its own whose value is computed from the
 * base symbols when sizes are bound. Everything downstream of binding
 * (schedulers, kernel parameters, size classes) reads symbol values from
 * one array and sees a derived symbol as any other. Only what proves
 * shapes statically (reshape's element counts, the reshape groups of the
 * axis map) looks inside, through fz_monomial.
 *
 * A derived symbol is named by its canonical expression, so two spellings
 * of one product (`K*N`, `N*K`) are one symbol and print alike: terms are
 * sorted by name (not by index, so that a printed fusion parses back to
 * the same names), the constant first, divisors after `/`.
 */
#include "fz/ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest power of one symbol in an extent. */
#define FZ_MAX_POWER 64

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

void fz_monomial_init(fz_monomial *m) {
  memset(m, 0, sizeof *m);
  m->num = 1;
  m->den = 1;
}

static void reduce(fz_monomial *m) {
  if (m->num == 0) {
    m->den = 1;
    return;
  }
  /* gcd64 of INT64_MIN may be -1, and INT64_MIN / -1 is no int64 */
  if (m->num == INT64_MIN || m->den == INT64_MIN) {
    m->overflow = true;
    return;
  }
  int64_t g = gcd64(m->num, m->den);
  m->num /= g;
  m->den /= g;
}

/* Once overflowed, a monomial keeps its numbers as they were: an
 * overflowing product is not stored (__builtin_mul_overflow would store
 * its wrapped value, which reduce could then divide by -1). */
static void mul_constant(fz_monomial *m, int64_t c, int power) {
  if (m->overflow)
    return;
  if (power <= 0 && c == 0) {
    m->overflow = true; /* a division by zero proves nothing */
    return;
  }
  int64_t *into = power > 0 ? &m->num : &m->den, product;
  if (!fz_size_mul(*into, c, &product)) {
    m->overflow = true;
    return;
  }
  *into = product;
  reduce(m);
}

/* Terms sort by name; unnamed symbols (only without a fusion, or `?`,
 * which cannot be part of a derived name) after named ones, by index. */
static int term_order(const fz_fusion *f, int32_t a, int32_t b) {
  const char *na = f && a < f->num_symbols ? f->symbols[a].name : NULL;
  const char *nb = f && b < f->num_symbols ? f->symbols[b].name : NULL;
  if (na && nb)
    return strcmp(na, nb);
  if (na || nb)
    return na ? -1 : 1;
  return (a > b) - (a < b);
}

static void add_term(const fz_fusion *f, fz_monomial *m, int32_t symbol,
                     int power) {
  int i = 0;
  while (i < m->num_terms && term_order(f, m->terms[i].symbol, symbol) < 0)
    i++;
  if (i < m->num_terms && m->terms[i].symbol == symbol) {
    if (abs(m->terms[i].power + power) > FZ_MAX_POWER) {
      m->overflow = true; /* N^65: no extent; keeps powers and loops small */
      return;
    }
    m->terms[i].power += power;
    if (m->terms[i].power == 0) {
      memmove(&m->terms[i], &m->terms[i + 1],
              sizeof m->terms[0] * (size_t)(m->num_terms - i - 1));
      m->num_terms--;
    }
    return;
  }
  if (m->num_terms == FZ_MONOMIAL_TERMS || abs(power) > FZ_MAX_POWER) {
    m->overflow = true;
    return;
  }
  memmove(&m->terms[i + 1], &m->terms[i],
          sizeof m->terms[0] * (size_t)(m->num_terms - i));
  m->terms[i] = (fz_symbol_term){.symbol = symbol, .power = power};
  m->num_terms++;
}

void fz_monomial_mul_extent(const fz_fusion *f, fz_monomial *m, fz_extent e,
                            int power) {
  if (e.symbol < 0) {
    mul_constant(m, e.value, power);
    return;
  }
  const fz_symbol *s =
      f && e.symbol < f->num_symbols ? &f->symbols[e.symbol] : NULL;
  if (!s || s->num_terms == 0) {
    add_term(f, m, e.symbol, power);
    return;
  }
  mul_constant(m, power > 0 ? s->num : s->den, 1);
  mul_constant(m, power > 0 ? s->den : s->num, -1);
  for (int i = 0; i < s->num_terms; i++)
    add_term(f, m, s->terms[i].symbol, s->terms[i].power * power);
}

void fz_monomial_mul_type(const fz_fusion *f, fz_monomial *m,
                          const fz_type *t, int power) {
  for (int i = 0; i < t->rank; i++)
    fz_monomial_mul_extent(f, m, fz_axis_extent(&t->axes[i]), power);
}

bool fz_monomial_equal(const fz_monomial *a, const fz_monomial *b) {
  if (a->overflow || b->overflow)
    return false;
  if (a->num == 0 && b->num == 0)
    return true;
  if (a->num != b->num || a->den != b->den || a->num_terms != b->num_terms)
    return false;
  for (int i = 0; i < a->num_terms; i++)
    if (a->terms[i].symbol != b->terms[i].symbol ||
        a->terms[i].power != b->terms[i].power)
      return false;
  return true;
}

bool fz_monomial_divides(const fz_monomial *a, const fz_monomial *b) {
  if (a->overflow || b->overflow || a->num == 0)
    return false;
  /* b / a = (b.num * a.den) / (b.den * a.num), an integer */
  int64_t top, bottom;
  if (!fz_size_mul(b->num, a->den, &top) ||
      !fz_size_mul(b->den, a->num, &bottom) || top % bottom != 0)
    return false;
  for (int i = 0; i < a->num_terms; i++) {
    int have = 0;
    for (int j = 0; j < b->num_terms; j++)
      if (b->terms[j].symbol == a->terms[i].symbol)
        have = b->terms[j].power;
    if (have < a->terms[i].power)
      return false;
  }
  for (int j = 0; j < b->num_terms; j++) {
    if (b->terms[j].power >= 0)
      continue;
    int want = 0;
    for (int i = 0; i < a->num_terms; i++)
      if (a->terms[i].symbol == b->terms[j].symbol)
        want = a->terms[i].power;
    if (want > b->terms[j].power)
      return false;
  }
  return true;
}

static const char *term_name(const fz_fusion *f, int32_t s) {
  return f && s < f->num_symbols && f->symbols[s].name ? f->symbols[s].name
                                                       : "?";
}

static void format(const fz_fusion *f, const fz_monomial *m, fz_buf *b,
                   bool always_constant) {
  bool any = false, positive = false;
  for (int i = 0; i < m->num_terms; i++)
    positive |= m->terms[i].power > 0;
  if (always_constant || m->num != 1 || !positive) {
    fz_buf_printf(b, "%" PRId64, m->num);
    any = true;
  }
  for (int i = 0; i < m->num_terms; i++)
    for (int k = 0; k < m->terms[i].power; k++) {
      fz_buf_printf(b, "%s%s", any ? "*" : "", term_name(f, m->terms[i].symbol));
      any = true;
    }
  for (int i = 0; i < m->num_terms; i++)
    for (int k = 0; k < -m->terms[i].power; k++)
      fz_buf_printf(b, "/%s", term_name(f, m->terms[i].symbol));
  if (m->den != 1)
    fz_buf_printf(b, "/%" PRId64, m->den);
}

void fz_monomial_format(const fz_fusion *f, const fz_monomial *m, fz_buf *b) {
  format(f, m, b, true);
}

fz_status fz_monomial_extent(fz_fusion *f, const fz_monomial *m,
                             fz_extent *out, fz_error *err) {
  if (m->overflow)
    return fz_error_set(err, FZ_ERR_INVALID,
                        "the extent overflows or divides by zero");
  if (m->num == 0) {
    *out = fz_const_extent(0);
    return FZ_OK;
  }
  if (m->num_terms == 0) {
    if (m->den != 1)
      return fz_error_set(err, FZ_ERR_INVALID,
                          "the extent %" PRId64 "/%" PRId64
                          " is not an integer",
                          m->num, m->den);
    *out = fz_const_extent(m->num);
    return FZ_OK;
  }
  if (m->num_terms == 1 && m->terms[0].power == 1 && m->num == 1 &&
      m->den == 1) {
    *out = fz_symbol_extent(m->terms[0].symbol);
    return FZ_OK;
  }
  for (int i = 0; i < m->num_terms; i++)
    if (!f->symbols[m->terms[i].symbol].name)
      return fz_error_set(err, FZ_ERR_INVALID,
                          "a product of extents cannot use an anonymous "
                          "extent (`?`)");
  fz_buf b = {0};
  format(f, m, &b, false);
  char *name = fz_buf_take(&b);
  if (!name)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  int s = fz_fusion_find_symbol(f, name);
  if (s < 0) {
    s = fz_fusion_symbol(f, name);
    fz_symbol_term *terms =
        fz_arena_alloc(f->arena, sizeof *terms * (size_t)m->num_terms);
    memcpy(terms, m->terms, sizeof *terms * (size_t)m->num_terms);
    f->symbols[s].terms = terms;
    f->symbols[s].num_terms = m->num_terms;
    f->symbols[s].num = m->num;
    f->symbols[s].den = m->den;
  }
  free(name);
  *out = fz_symbol_extent(s);
  return FZ_OK;
}

int fz_fusion_copy_symbol(fz_fusion *f, const fz_symbol *s) {
  int i = fz_fusion_symbol(f, NULL);
  fz_symbol *c = &f->symbols[i];
  c->name = s->name ? fz_arena_strdup(f->arena, s->name) : NULL;
  if (s->num_terms) {
    fz_symbol_term *terms =
        fz_arena_alloc(f->arena, sizeof *terms * (size_t)s->num_terms);
    memcpy(terms, s->terms, sizeof *terms * (size_t)s->num_terms);
    c->terms = terms;
    c->num_terms = s->num_terms;
    c->num = s->num;
    c->den = s->den;
  }
  return i;
}

bool fz_is_extent_expr(const char *name) {
  return name && (strchr(name, '*') || strchr(name, '/'));
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct expr_term {
  const char *text; /* a name, or NULL for a constant */
  size_t length;
  int64_t value;
  int power;
} expr_term;

static bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

/* Splits the expression into terms without touching the fusion. */
static fz_status split_terms(const char *text, size_t length,
                             expr_term *terms, int *count, fz_error *err) {
  size_t i = 0;
  int power = 1;
  *count = 0;
  for (;;) {
    while (i < length && text[i] == ' ')
      i++;
    if (*count == FZ_MONOMIAL_TERMS)
      return fz_error_set(err, FZ_ERR_INVALID,
                          "extent \"%.*s\" has more than %d terms",
                          (int)length, text, FZ_MONOMIAL_TERMS);
    expr_term *t = &terms[(*count)++];
    *t = (expr_term){.power = power};
    size_t start = i;
    if (i < length && is_name_start(text[i])) {
      while (i < length && is_name_char(text[i]))
        i++;
      t->text = text + start;
      t->length = i - start;
      if (t->length == 2 && memcmp(t->text, "b1", 2) == 0)
        return fz_error_set(err, FZ_ERR_INVALID,
                            "extent \"%.*s\": b1 is not an extent",
                            (int)length, text);
    } else if (i < length && text[i] >= '0' && text[i] <= '9') {
      for (; i < length && text[i] >= '0' && text[i] <= '9'; i++)
        if (!fz_size_mul(t->value, 10, &t->value) ||
            t->value > INT64_MAX - (text[i] - '0'))
          return fz_error_set(err, FZ_ERR_INVALID,
                              "extent \"%.*s\": a constant overflows int64",
                              (int)length, text);
        else
          t->value += text[i] - '0';
      if (power < 0 && t->value == 0)
        return fz_error_set(err, FZ_ERR_INVALID,
                            "extent \"%.*s\" divides by zero", (int)length,
                            text);
    } else {
      return fz_error_set(err, FZ_ERR_INVALID,
                          "extent \"%.*s\": expected a symbol or an integer "
                          "at offset %zu",
                          (int)length, text, start);
    }
    while (i < length && text[i] == ' ')
      i++;
    if (i == length)
      return FZ_OK;
    if (text[i] != '*' && text[i] != '/')
      return fz_error_set(err, FZ_ERR_INVALID,
                          "extent \"%.*s\": expected '*' or '/' at offset %zu",
                          (int)length, text, i);
    power = text[i++] == '*' ? 1 : -1;
  }
}

static int find_named(const fz_fusion *f, const char *text, size_t length) {
  for (int i = 0; i < f->num_symbols; i++) {
    const char *s = f->symbols[i].name;
    if (s && f->symbols[i].num_terms == 0 && strlen(s) == length &&
        memcmp(s, text, length) == 0)
      return i;
  }
  return -1;
}

fz_status fz_parse_extent_expr(fz_fusion *f, const char *text, size_t length,
                               bool create_bases, fz_extent *out,
                               fz_error *err) {
  expr_term terms[FZ_MONOMIAL_TERMS];
  int count;
  fz_status st = split_terms(text, length, terms, &count, err);
  if (st)
    return st;
  for (int i = 0; i < count && !create_bases; i++)
    if (terms[i].text && find_named(f, terms[i].text, terms[i].length) < 0)
      return fz_error_set(err, FZ_ERR_INVALID,
                          "extent \"%.*s\": symbol %.*s is not an extent of "
                          "any input, so nothing would bind it",
                          (int)length, text, (int)terms[i].length,
                          terms[i].text);
  fz_monomial m;
  fz_monomial_init(&m);
  for (int i = 0; i < count; i++) {
    if (!terms[i].text) {
      mul_constant(&m, terms[i].value, terms[i].power);
      continue;
    }
    int s = find_named(f, terms[i].text, terms[i].length);
    if (s < 0)
      s = fz_fusion_symbol(
          f, fz_arena_strndup(f->arena, terms[i].text, terms[i].length));
    add_term(f, &m, s, terms[i].power);
  }
  fz_error why;
  st = fz_monomial_extent(f, &m, out, &why);
  if (st)
    return fz_error_set(err, st, "extent \"%.*s\": %s", (int)length, text,
                        why.message);
  return FZ_OK;
}

/* ---- values at run time -------------------------------------------------- */

/* A derived extent that is not an integer at these sizes, said with the
 * first op whose result has it (a reshape, usually): where it comes from. */
static fz_status where_used(const fz_fusion *f, int symbol, fz_status st,
                            fz_error *err) {
  for (int k = 0; k < f->num_ops; k++) {
    const fz_value *v = f->ops[k]->result;
    for (int i = 0; i < v->type.rank; i++) {
      if (fz_axis_extent(&v->type.axes[i]).symbol != symbol)
        continue;
      char l[64], from[256], to[256];
      const fz_value *x = f->ops[k]->num_operands ? f->ops[k]->operands[0] : v;
      fz_error why = *err;
      return fz_error_set(err, st, "%s = %s of %s to %s: %s",
                          fz_value_label(v, l, sizeof l),
                          fz_op_table[f->ops[k]->code].name,
                          fz_format_type(f, &x->type, from, sizeof from),
                          fz_format_type(f, &v->type, to, sizeof to),
                          why.message);
    }
  }
  return st;
}

fz_status fz_symbols_derive(const fz_fusion *f, int64_t *values,
                            fz_error *err) {
  for (int s = 0; s < f->num_symbols; s++) {
    const fz_symbol *sym = &f->symbols[s];
    if (sym->num_terms == 0)
      continue;
    int64_t top = sym->num, bottom = sym->den;
    bool overflow = false, unbound = false;
    for (int i = 0; i < sym->num_terms; i++)
      unbound |= values[sym->terms[i].symbol] < 0;
    if (unbound)
      continue; /* left unbound, for the caller to report where it is used */
    for (int i = 0; i < sym->num_terms; i++) {
      const fz_symbol_term *t = &sym->terms[i];
      int64_t v = values[t->symbol];
      for (int k = 0; k < abs(t->power); k++)
        overflow |= !fz_size_mul(t->power > 0 ? top : bottom, v,
                                 t->power > 0 ? &top : &bottom);
    }
    if (overflow)
      return where_used(f, s,
                        fz_error_set(err, FZ_ERR_ARGUMENT,
                                     "extent %s overflows int64 at these sizes",
                                     sym->name),
                        err);
    if (bottom == 0 || top % bottom != 0) {
      fz_buf b = {0};
      for (int i = 0; i < sym->num_terms; i++)
        fz_buf_printf(&b, "%s%s = %" PRId64, i ? ", " : "",
                      f->symbols[sym->terms[i].symbol].name,
                      values[sym->terms[i].symbol]);
      char *bound = fz_buf_take(&b);
      fz_status st = fz_error_set(
          err, FZ_ERR_ARGUMENT,
          "extent %s is not an integer at these sizes (%s: %" PRId64
          " / %" PRId64 ")",
          sym->name, bound ? bound : "", top, bottom);
      free(bound);
      return where_used(f, s, st, err);
    }
    values[s] = top / bottom;
  }
  return FZ_OK;
}
