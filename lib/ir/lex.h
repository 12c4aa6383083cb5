/* lex.h - tokens of the .fz text format, and the diagnostics that point
 * at them. Private to lib/ir (the parser is its only user).
 */
#ifndef FZ_IR_LEX_H
#define FZ_IR_LEX_H

#include "fz/ir.h"

typedef enum fz_token_kind {
  FZ_TK_EOF,
  FZ_TK_IDENT,    /* [A-Za-z_][A-Za-z0-9_]*: keywords, dtypes, symbols */
  FZ_TK_VALUE,    /* %name */
  FZ_TK_GLOBAL,   /* @name */
  FZ_TK_INT,      /* 3, -2 */
  FZ_TK_FLOAT,    /* 0.5, 1e-4, -inf (inf and nan alone are identifiers) */
  FZ_TK_LPAREN,   /* ( */
  FZ_TK_RPAREN,   /* ) */
  FZ_TK_LBRACKET, /* [ */
  FZ_TK_RBRACKET, /* ] */
  FZ_TK_LBRACE,   /* { */
  FZ_TK_RBRACE,   /* } */
  FZ_TK_COMMA,    /* , */
  FZ_TK_COLON,    /* : */
  FZ_TK_EQUAL,    /* = */
  FZ_TK_ARROW,    /* -> */
  FZ_TK_QUESTION, /* ? */
  FZ_TK_STAR,     /* * (in extent expressions: N*K) */
  FZ_TK_SLASH,    /* / (in extent expressions: M/K; // starts a comment) */
} fz_token_kind;

typedef struct fz_token {
  fz_token_kind kind;
  size_t offset, length; /* spelling in the source text */
  size_t line_start;     /* offset of the first byte of its line */
  int line, col;         /* 1-based (line counts from the source's first) */
  int64_t i;             /* FZ_TK_INT */
  double f;              /* FZ_TK_FLOAT */
} fz_token;

/* A source text, which need not be NUL-terminated. */
typedef struct fz_source {
  const char *filename;
  const char *text;
  size_t length;
  int first_line;
} fz_source;

/* Splits src into tokens ending with FZ_TK_EOF. On success *out is a
 * malloc'd array (caller frees) of *count tokens. On failure returns
 * FZ_ERR_PARSE with a diagnostic (or FZ_ERR_OUT_OF_MEMORY) and *out NULL. */
fz_status fz_tokenize(const fz_source *src, fz_token **out, int *count,
                      fz_error *err);

/* Fills err with "file:line:col: error: message", the source line and a
 * caret under the token, and err->line and col with the token's; returns
 * status. */
fz_status fz_diag(fz_error *err, fz_status status, const fz_source *src,
                  const fz_token *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Writes a short description of a token for messages ("'foo'", "end of
 * input"), truncated to fit; returns buf. */
const char *fz_token_describe(const fz_source *src, const fz_token *tok,
                              char *buf, size_t size);

#endif
