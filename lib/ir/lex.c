/* lex.c - the tokenizer of the .fz text format, and source diagnostics.
 *
 * The whole input is split into an array of tokens before parsing starts
 * (as chibicc does), so the parser can look ahead freely and never has to
 * handle a lexical error in the middle of a rule. The text is a pointer and
 * a length, not a C string: every read is checked against the length, so
 * an input with a NUL or without a final newline is just more input.
 *
 * Numbers are converted here. Integers are accumulated with an explicit
 * overflow check (strtoll would silently clamp); floats go through strtod
 * in the "C" locale, so that an application that set a locale with a
 * decimal comma still reads `0.5` as one half, and are refused when they
 * overflow to inf or underflow to zero (lex_number).
 *
 * A diagnostic shows the offending line (a window of it, if the line is
 * long) with a caret under the token, in the style of chibicc and clang.
 */
#include "lex.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  MAX_NUMBER_LENGTH = 400, /* longer numbers are rejected, not truncated */
  DIAG_WINDOW = 160,       /* columns of a long source line shown */
};

typedef struct lexer {
  const fz_source *src;
  size_t pos;
  size_t line_start;
  int line;
  locale_t c_locale; /* created on the first float; 0 if unavailable */
  fz_token *toks;
  size_t count, cap;
} lexer;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

/* Characters of %value and @fusion names. */
static bool is_name_char(char c) { return is_ident_char(c) || c == '.'; }

static char peek(const lexer *lx, size_t ahead) {
  size_t p = lx->pos + ahead;
  return p < lx->src->length ? lx->src->text[p] : '\0';
}

static bool at_end(const lexer *lx, size_t ahead) {
  return lx->pos + ahead >= lx->src->length;
}

static fz_token token_at(const lexer *lx, size_t offset, size_t length) {
  fz_token t = {0};
  t.offset = offset;
  t.length = length;
  t.line_start = lx->line_start;
  t.line = lx->line;
  t.col = (int)(offset - lx->line_start) + 1;
  return t;
}

static fz_status lex_error(lexer *lx, size_t offset, size_t length,
                           fz_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static fz_status lex_error(lexer *lx, size_t offset, size_t length,
                           fz_error *err, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fz_token t = token_at(lx, offset, length);
  return fz_diag(err, FZ_ERR_PARSE, lx->src, &t, "%s", msg);
}

static bool push(lexer *lx, fz_token t) {
  if (lx->count == lx->cap) {
    size_t cap = lx->cap ? lx->cap * 2 : 256;
    fz_token *grown = realloc(lx->toks, cap * sizeof *grown);
    if (!grown)
      return false;
    lx->toks = grown;
    lx->cap = cap;
  }
  lx->toks[lx->count++] = t;
  return true;
}

static double strtod_c(lexer *lx, const char *s) {
  if (!lx->c_locale)
    lx->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  locale_t old = lx->c_locale ? uselocale(lx->c_locale) : (locale_t)0;
  double v = strtod(s, NULL);
  if (lx->c_locale)
    uselocale(old);
  return v;
}

/* Whether the significand (what precedes the exponent) of a float literal
 * is nonzero. */
static bool has_nonzero_digit(const char *number) {
  for (const char *c = number; *c && *c != 'e' && *c != 'E'; c++)
    if (*c >= '1' && *c <= '9')
      return true;
  return false;
}

/* number = "-"? digit+ ("." digit*)? (("e"|"E") ("+"|"-")? digit+)?
 * A float literal is rounded to the nearest f64 (subnormals included), and
 * one that f64 cannot hold as a nonzero finite number is refused rather
 * than silently turned into inf or 0: 1e999 and 1e-999 are both errors
 * (inf, -inf and 0.0 say those values outright). */
static fz_status lex_number(lexer *lx, fz_token *t, fz_error *err) {
  const char *s = lx->src->text;
  size_t start = lx->pos, q = lx->pos;
  size_t len = lx->src->length;
  bool neg = s[q] == '-';
  bool is_float = false;
  if (neg)
    q++;
  size_t digits_start = q;
  while (q < len && is_digit(s[q]))
    q++;
  size_t digits_end = q;
  if (q < len && s[q] == '.') {
    is_float = true;
    q++;
    while (q < len && is_digit(s[q]))
      q++;
  }
  if (q < len && (s[q] == 'e' || s[q] == 'E')) {
    size_t r = q + 1;
    if (r < len && (s[r] == '+' || s[r] == '-'))
      r++;
    if (r < len && is_digit(s[r])) {
      is_float = true;
      q = r;
      while (q < len && is_digit(s[q]))
        q++;
    }
  }
  if (q < len && is_name_char(s[q])) {
    size_t end = q;
    while (end < len && is_name_char(s[end]))
      end++;
    size_t n = end - start;
    return lex_error(lx, start, n, err, "invalid number '%.*s%s'",
                     (int)(n > 40 ? 40 : n), s + start, n > 40 ? "..." : "");
  }
  *t = token_at(lx, start, q - start);
  if (is_float) {
    if (q - start > MAX_NUMBER_LENGTH)
      return lex_error(lx, start, q - start, err,
                       "number is too long (more than %d characters)",
                       MAX_NUMBER_LENGTH);
    char buf[MAX_NUMBER_LENGTH + 1];
    memcpy(buf, s + start, q - start);
    buf[q - start] = '\0';
    double v = strtod_c(lx, buf);
    if (isinf(v))
      return lex_error(
          lx, start, q - start, err,
          "float literal is out of range (write inf for infinity)");
    if (v == 0 && has_nonzero_digit(buf))
      return lex_error(lx, start, q - start, err,
                       "float literal underflows to zero (write 0.0 for "
                       "zero)");
    t->kind = FZ_TK_FLOAT;
    t->f = v;
  } else {
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t mag = 0;
    for (size_t i = digits_start; i < digits_end; i++) {
      uint64_t d = (uint64_t)(s[i] - '0');
      if (mag > (limit - d) / 10)
        return lex_error(lx, start, q - start, err,
                         "integer literal is out of range of i64");
      mag = mag * 10 + d;
    }
    t->kind = FZ_TK_INT;
    if (!neg)
      t->i = (int64_t)mag;
    else if (mag == (uint64_t)INT64_MAX + 1)
      t->i = INT64_MIN;
    else
      t->i = -(int64_t)mag;
  }
  lx->pos = q;
  return FZ_OK;
}

/* value-name = "%" name-char+ ; global-name = "@" name-char+ */
static fz_status lex_name(lexer *lx, fz_token *t, fz_error *err) {
  const char *s = lx->src->text;
  size_t start = lx->pos, q = lx->pos + 1;
  while (q < lx->src->length && is_name_char(s[q]))
    q++;
  if (q == start + 1)
    return lex_error(lx, start, 1, err, "expected a name after '%c'", s[start]);
  *t = token_at(lx, start, q - start);
  t->kind = s[start] == '%' ? FZ_TK_VALUE : FZ_TK_GLOBAL;
  lx->pos = q;
  return FZ_OK;
}

static fz_token_kind punct_kind(char c) {
  switch (c) {
  case '(':
    return FZ_TK_LPAREN;
  case ')':
    return FZ_TK_RPAREN;
  case '[':
    return FZ_TK_LBRACKET;
  case ']':
    return FZ_TK_RBRACKET;
  case '{':
    return FZ_TK_LBRACE;
  case '}':
    return FZ_TK_RBRACE;
  case ',':
    return FZ_TK_COMMA;
  case ':':
    return FZ_TK_COLON;
  case '=':
    return FZ_TK_EQUAL;
  case '?':
    return FZ_TK_QUESTION;
  case '*':
    return FZ_TK_STAR;
  case '/':
    return FZ_TK_SLASH;
  default:
    return FZ_TK_EOF; /* not punctuation */
  }
}

static fz_status lex_one(lexer *lx, fz_token *t, fz_error *err) {
  const char *s = lx->src->text;
  char c = s[lx->pos];
  if (is_ident_start(c)) {
    size_t start = lx->pos;
    while (!at_end(lx, 0) && is_ident_char(peek(lx, 0)))
      lx->pos++;
    *t = token_at(lx, start, lx->pos - start);
    t->kind = FZ_TK_IDENT;
    return FZ_OK;
  }
  if (is_digit(c) || (c == '-' && is_digit(peek(lx, 1))))
    return lex_number(lx, t, err);
  if (c == '-' && peek(lx, 1) == '>') {
    *t = token_at(lx, lx->pos, 2);
    t->kind = FZ_TK_ARROW;
    lx->pos += 2;
    return FZ_OK;
  }
  if (c == '-' && peek(lx, 1) == 'i' && peek(lx, 2) == 'n' &&
      peek(lx, 3) == 'f' && !is_ident_char(peek(lx, 4))) {
    *t = token_at(lx, lx->pos, 4);
    t->kind = FZ_TK_FLOAT;
    t->f = -INFINITY;
    lx->pos += 4;
    return FZ_OK;
  }
  if (c == '%' || c == '@')
    return lex_name(lx, t, err);
  fz_token_kind k = punct_kind(c);
  if (k != FZ_TK_EOF) {
    *t = token_at(lx, lx->pos, 1);
    t->kind = k;
    lx->pos++;
    return FZ_OK;
  }
  unsigned char u = (unsigned char)c;
  if (u >= 0x20 && u < 0x7f)
    return lex_error(lx, lx->pos, 1, err, "unexpected character '%c'", c);
  return lex_error(lx, lx->pos, 1, err, "unexpected byte 0x%02x", u);
}

/* Skips blanks and // comments, counting lines. */
static void skip_space(lexer *lx) {
  const char *s = lx->src->text;
  while (!at_end(lx, 0)) {
    char c = s[lx->pos];
    if (c == '\n') {
      lx->pos++;
      lx->line_start = lx->pos;
      if (lx->line < INT32_MAX)
        lx->line++;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      lx->pos++;
    } else if (c == '/' && peek(lx, 1) == '/') {
      while (!at_end(lx, 0) && s[lx->pos] != '\n')
        lx->pos++;
    } else {
      return;
    }
  }
}

fz_status fz_tokenize(const fz_source *src, fz_token **out, int *count,
                      fz_error *err) {
  *out = NULL;
  *count = 0;
  if (src->length > (size_t)INT32_MAX / 2)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "%s: input is too large",
                        src->filename);
  lexer lx = {.src = src, .line = src->first_line};
  fz_status st = FZ_OK;
  for (;;) {
    skip_space(&lx);
    fz_token t;
    if (at_end(&lx, 0)) {
      /* End of input is reported just after the last token, where the
       * missing text belongs, not past trailing blank lines. */
      if (lx.count > 0) {
        t = lx.toks[lx.count - 1];
        t.offset += t.length;
        t.col += (int)t.length;
      } else {
        t = token_at(&lx, lx.pos, 0);
      }
      t.length = 0;
      t.kind = FZ_TK_EOF;
    } else if ((st = lex_one(&lx, &t, err)) != FZ_OK) {
      break;
    }
    if (!push(&lx, t)) {
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory tokenizing %s", src->filename);
      break;
    }
    if (t.kind == FZ_TK_EOF)
      break;
  }
  if (lx.c_locale)
    freelocale(lx.c_locale);
  if (st != FZ_OK) {
    free(lx.toks);
    return st;
  }
  *out = lx.toks;
  *count = (int)lx.count;
  return FZ_OK;
}

const char *fz_token_describe(const fz_source *src, const fz_token *tok,
                              char *buf, size_t size) {
  if (tok->kind == FZ_TK_EOF) {
    snprintf(buf, size, "end of input");
    return buf;
  }
  size_t n = tok->length;
  snprintf(buf, size, "'%.*s%s'", (int)(n > 40 ? 40 : n),
           src->text + tok->offset, n > 40 ? "..." : "");
  return buf;
}

fz_status fz_diag(fz_error *err, fz_status status, const fz_source *src,
                  const fz_token *at, const char *fmt, ...) {
  if (!err)
    return status;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);

  const char *s = src->text;
  size_t len = src->length;
  size_t ls = at->line_start < len ? at->line_start : len;
  size_t le = ls;
  while (le < len && s[le] != '\n')
    le++;
  if (le > ls && s[le - 1] == '\r')
    le--;
  size_t pos = at->offset < ls ? ls : at->offset > le ? le : at->offset;
  /* Show a window of a long line, keeping the caret in view. */
  size_t ws = ls, we = le;
  if (we - ws > DIAG_WINDOW) {
    if (pos - ws > DIAG_WINDOW / 2)
      ws = pos - DIAG_WINDOW / 2;
    if (we - ws > DIAG_WINDOW)
      we = ws + DIAG_WINDOW;
  }
  char line[DIAG_WINDOW + 1], caret[DIAG_WINDOW + 2];
  size_t n = 0;
  for (size_t i = ws; i < we; i++) {
    unsigned char c = (unsigned char)s[i];
    line[n++] = (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c;
  }
  line[n] = '\0';
  n = 0;
  for (size_t i = ws; i < pos && i < we; i++)
    caret[n++] = s[i] == '\t' ? '\t' : ' ';
  caret[n++] = '^';
  caret[n] = '\0';
  return fz_error_at(err, (fz_loc){at->line, at->col}, status,
                     "%s:%d:%d: error: %s\n%s\n%s", src->filename, at->line,
                     at->col, msg, line, caret);
}
