/* type_spec.h - build fz_types from short specs in tests of the builder,
 * promotion and verifier, which must not depend on the parser.
 *
 * A spec is the text-format type without layout: "f32", "f32[N, 128]",
 * "bf16[b1, b1->N, ?]". Symbols are created in the fusion by name; `?` is a
 * fresh anonymous symbol. A malformed spec fails the test.
 */
#ifndef FZ_TEST_TYPE_SPEC_H
#define FZ_TEST_TYPE_SPEC_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz/ir.h"

static inline fz_extent spec_extent(fz_fusion *f, const char **p) {
  const char *s = *p;
  while (*s == ' ')
    s++;
  fz_extent e;
  if (*s == '?') {
    e = fz_symbol_extent(fz_fusion_symbol(f, NULL));
    s++;
  } else if (*s >= '0' && *s <= '9') {
    char *end;
    e = fz_const_extent(strtoll(s, &end, 10));
    s = end;
  } else {
    char name[64];
    size_t n = 0;
    while ((s[n] == '_' || (s[n] >= 'a' && s[n] <= 'z') ||
            (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9')) &&
           n + 1 < sizeof name) {
      name[n] = s[n];
      n++;
    }
    ck_assert_msg(n > 0, "bad extent in type spec at '%s'", s);
    name[n] = 0;
    e = fz_symbol_extent(fz_fusion_symbol(f, name));
    s += n;
  }
  *p = s;
  return e;
}

static inline fz_type ts(fz_fusion *f, const char *spec) {
  fz_type t;
  memset(&t, 0, sizeof t);
  size_t n = strcspn(spec, "[");
  int dtype = -1;
  for (int d = 0; d < FZ_NUM_DTYPES; d++)
    if (strlen(fz_dtype_name((fz_dtype)d)) == n &&
        strncmp(fz_dtype_name((fz_dtype)d), spec, n) == 0)
      dtype = d;
  ck_assert_msg(dtype >= 0, "bad dtype in type spec '%s'", spec);
  t.dtype = (fz_dtype)dtype;
  const char *s = spec + n;
  if (*s != '[')
    return t;
  s++;
  while (*s && *s != ']') {
    ck_assert_msg(t.rank < FZ_MAX_RANK, "rank too large in '%s'", spec);
    fz_axis *a = &t.axes[t.rank++];
    while (*s == ' ')
      s++;
    if (strncmp(s, "b1", 2) == 0 &&
        (s[2] == ',' || s[2] == ']' || s[2] == '-' || s[2] == ' ')) {
      a->kind = FZ_AXIS_BROADCAST;
      a->extent = fz_const_extent(1);
      s += 2;
      if (strncmp(s, "->", 2) == 0) {
        s += 2;
        a->expanded = true;
        a->expanded_to = spec_extent(f, &s);
      }
    } else {
      a->kind = FZ_AXIS_ITER;
      a->extent = spec_extent(f, &s);
    }
    while (*s == ' ')
      s++;
    if (*s == ',')
      s++;
  }
  ck_assert_msg(*s == ']', "missing ] in type spec '%s'", spec);
  return t;
}

/* An input of the given spec (row-major). */
static inline fz_value *ts_input(fz_fusion *f, const char *name, const char *spec) {
  fz_type t = ts(f, spec);
  return fz_add_input(f, name, &t);
}

/* The type of v as text, for comparisons in messages. */
static inline const char *ts_str(const fz_fusion *f, const fz_type *t) {
  static char buf[4][256];
  static int next;
  char *b = buf[next++ % 4];
  return fz_format_type(f, t, b, 256);
}

/* Asserts that v's type prints as `want` (dtype and axes). */
#define ck_assert_type(f, v, want)                                             \
  do {                                                                         \
    const fz_value *v_ = (v);                                                  \
    ck_assert_msg(v_ != NULL, "value is NULL");                                \
    ck_assert_str_eq(ts_str((f), &v_->type), (want));                          \
  } while (0)

/* Asserts an error whose message contains `needle`. */
#define ck_assert_err(err, needle)                                             \
  do {                                                                         \
    ck_assert_int_eq((err).status, FZ_ERR_INVALID);                            \
    ck_assert_msg(strstr((err).message, (needle)) != NULL,                     \
                  "message '%s' lacks '%s'", (err).message, (needle));         \
  } while (0)

#endif
