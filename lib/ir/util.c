/* util.c - errors as values, invariant failures, dtype tables, and a
 * growable string for printers.
 */
#include "fz/ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fz_status_name(fz_status status) {
  switch (status) {
#define FZ_X_CASE(e, s)                                                        \
  case e:                                                                      \
    return #e;
    FZ_STATUS_LIST(FZ_X_CASE)
#undef FZ_X_CASE
  }
  return "FZ_ERR_UNKNOWN";
}

static void error_vset(fz_error *err, fz_loc loc, fz_status status,
                       const char *fmt, va_list ap) {
  err->status = status;
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  err->line = loc.line;
  err->col = loc.col;
}

fz_status fz_error_set(fz_error *err, fz_status status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, (fz_loc){0, 0}, status, fmt, ap);
    va_end(ap);
  }
  return status;
}

fz_status fz_error_at(fz_error *err, fz_loc loc, fz_status status,
                      const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, loc, status, fmt, ap);
    va_end(ap);
  }
  return status;
}

void fz_error_locate(fz_error *err, fz_loc loc) {
  if (err && err->line == 0) {
    err->line = loc.line;
    err->col = loc.col;
  }
}

fz_loc fz_error_loc(const fz_error *err) {
  return err ? (fz_loc){err->line, err->col} : (fz_loc){0, 0};
}

fz_loc fz_value_loc(const fz_value *v) {
  return v && v->kind == FZ_VALUE_RESULT && v->def ? v->def->loc
                                                   : (fz_loc){0, 0};
}

_Noreturn void fz_die(const char *file, int line, const char *fmt, ...) {
  fprintf(stderr, "%s:%d: fz internal error: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

static const struct {
  const char *name;
  size_t size;
} dtype_table[FZ_NUM_DTYPES] = {
#define FZ_X_ROW(e, s, n) {s, n},
    FZ_DTYPE_LIST(FZ_X_ROW)
#undef FZ_X_ROW
};

const char *fz_dtype_name(fz_dtype dtype) {
  return (unsigned)dtype < FZ_NUM_DTYPES ? dtype_table[dtype].name : "?";
}

size_t fz_dtype_size(fz_dtype dtype) {
  return (unsigned)dtype < FZ_NUM_DTYPES ? dtype_table[dtype].size : 0;
}

bool fz_dtype_is_float(fz_dtype d) {
  return d == FZ_F64 || d == FZ_F32 || d == FZ_F16 || d == FZ_BF16;
}

bool fz_dtype_is_integer(fz_dtype d) {
  return d == FZ_I64 || d == FZ_I32 || d == FZ_I8;
}

bool fz_dtype_int_range(fz_dtype d, int64_t *min, int64_t *max) {
  switch (d) {
  case FZ_I64: *min = INT64_MIN, *max = INT64_MAX; return true;
  case FZ_I32: *min = INT32_MIN, *max = INT32_MAX; return true;
  case FZ_I8: *min = INT8_MIN, *max = INT8_MAX; return true;
  case FZ_BOOL: *min = 0, *max = 1; return true;
  default: return false;
  }
}

fz_status fz_check_int_in_dtype(int64_t v, fz_dtype dtype, const char *what,
                                fz_error *err) {
  int64_t min, max;
  if (!fz_dtype_int_range(dtype, &min, &max) || (v >= min && v <= max))
    return FZ_OK;
  return fz_error_set(err, FZ_ERR_INVALID,
                      "%s %" PRId64 " is out of range of %s [%" PRId64
                      ", %" PRId64 "]",
                      what, v, fz_dtype_name(dtype), min, max);
}

fz_status fz_scalar_of_double(double v, fz_dtype dtype, const char *what,
                              fz_scalar *out, fz_error *err) {
  if (fz_dtype_is_float(dtype)) {
    out->f = v;
    return FZ_OK;
  }
  if (dtype == FZ_BOOL) {
    out->i = v != 0;
    return FZ_OK;
  }
  int64_t min, max;
  fz_dtype_int_range(dtype, &min, &max);
  /* [-2^63, 2^63) holds every i64, and converts exactly. */
  if (!(v >= -0x1p63 && v < 0x1p63) || (int64_t)v < min || (int64_t)v > max) {
    if (isnan(v))
      return fz_error_set(err, FZ_ERR_INVALID,
                          "%s nan is not an integer, as %s needs", what,
                          fz_dtype_name(dtype));
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s %.15g is out of range of %s [%" PRId64
                        ", %" PRId64 "]",
                        what, v, fz_dtype_name(dtype), min, max);
  }
  if (v != floor(v))
    return fz_error_set(err, FZ_ERR_INVALID,
                        "%s %.15g is not an integer, as %s needs", what, v,
                        fz_dtype_name(dtype));
  out->i = (int64_t)v;
  return FZ_OK;
}

static void buf_reserve(fz_buf *b, size_t extra) {
  if (b->oom || b->len + extra + 1 <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->oom = true;
    return;
  }
  b->data = p;
  b->cap = cap;
}

void fz_buf_puts(fz_buf *b, const char *s) {
  size_t n = strlen(s);
  buf_reserve(b, n);
  if (b->oom)
    return;
  memcpy(b->data + b->len, s, n + 1);
  b->len += n;
}

void fz_buf_printf(fz_buf *b, const char *fmt, ...) {
  if (b->oom)
    return;
  /* one formatting pass when the text fits what is left (the common
   * case once the buffer has grown), a second after growing it */
  size_t room = b->cap - b->len;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? room : 0,
                    fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if (b->data && (size_t)n < room) {
    b->len += (size_t)n;
    return;
  }
  buf_reserve(b, (size_t)n);
  if (b->oom)
    return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *fz_buf_take(fz_buf *b) {
  if (b->oom) {
    free(b->data);
    *b = (fz_buf){0};
    return NULL;
  }
  if (!b->data)
    fz_buf_puts(b, "");
  char *s = b->data;
  *b = (fz_buf){0};
  return s;
}
