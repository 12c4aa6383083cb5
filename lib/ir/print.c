/* print.c - a fusion in the .fz text format.
 *
 * The output is the canonical form of the text: parsing it and printing
 * again gives the same bytes (the fuzzer checks this on every input it
 * finds). Canonical means: two-space indent, ", " between list items, one
 * op per line, dims in the stored (sorted) order, noncontig axes in
 * ascending order, an input's layout only when it is not row-major, an op
 * result's layout exactly when it has one, iota's start and step only when
 * they are not 0 and 1.
 *
 * Floats are printed in the shortest decimal form that strtod reads back
 * to the same double, always with a '.' or an exponent so that they stay
 * floats, and `inf`, `-inf`, `nan` for the values that have no digits.
 *
 * Values made by the builder may have no name; they get numbers (%0, %1,
 * ...) that skip any number already used as a stored name, so a printed
 * fusion never has two values with the same name.
 */
#include "fz/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes v in the shortest form that round-trips through strtod. */
static void format_double(char out[64], double v) {
  if (isnan(v)) {
    strcpy(out, "nan");
    return;
  }
  if (isinf(v)) {
    strcpy(out, v > 0 ? "inf" : "-inf");
    return;
  }
  /* Fewest significant digits that read back exactly. %e and strtod use
   * the same locale, so the check is sound whatever the decimal point. */
  char e[48];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(e, sizeof e, "%.*e", prec - 1, v);
    if (strtod(e, NULL) == v)
      break;
  }
  /* e is [-]d[.ddd]e(+|-)xx: take its digits and exponent, then lay them
   * out ourselves so the decimal point is always '.'. */
  char digits[24];
  int n = 0, exp10 = 0;
  const char *s = e;
  bool neg = *s == '-';
  if (neg)
    s++;
  for (; *s && *s != 'e'; s++)
    if (*s >= '0' && *s <= '9' && n < (int)sizeof digits - 1)
      digits[n++] = *s;
  digits[n] = '\0';
  if (*s == 'e')
    exp10 = (int)strtol(s + 1, NULL, 10);

  char *o = out;
  if (neg)
    *o++ = '-';
  if (exp10 < -4 || exp10 >= 16) {
    *o++ = digits[0];
    if (n > 1) {
      *o++ = '.';
      memcpy(o, digits + 1, (size_t)n - 1);
      o += n - 1;
    }
    snprintf(o, 16, "e%d", exp10);
    return;
  }
  if (exp10 >= 0) {
    for (int i = 0; i <= exp10; i++)
      *o++ = i < n ? digits[i] : '0';
    *o++ = '.';
    if (n > exp10 + 1) {
      memcpy(o, digits + exp10 + 1, (size_t)(n - exp10 - 1));
      o += n - exp10 - 1;
    } else {
      *o++ = '0';
    }
  } else {
    *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -exp10 - 1; i++)
      *o++ = '0';
    memcpy(o, digits, (size_t)n);
    o += n;
  }
  *o = '\0';
}

static void print_scalar(fz_buf *b, fz_scalar s, fz_dtype dtype) {
  if (fz_dtype_is_float(dtype)) {
    char buf[64];
    format_double(buf, s.f);
    fz_buf_puts(b, buf);
  } else if (dtype == FZ_BOOL) {
    fz_buf_puts(b, s.i ? "true" : "false");
  } else {
    fz_buf_printf(b, "%lld", (long long)s.i);
  }
}

static void print_extent(fz_buf *b, const fz_fusion *f, fz_extent e) {
  if (e.symbol < 0)
    fz_buf_printf(b, "%lld", (long long)e.value);
  else if (e.symbol < f->num_symbols && f->symbols[e.symbol].name)
    fz_buf_puts(b, f->symbols[e.symbol].name);
  else
    fz_buf_puts(b, "?");
}

static void print_ints(fz_buf *b, const char *attr, const int *v, int n) {
  fz_buf_printf(b, " %s(", attr);
  for (int i = 0; i < n; i++)
    fz_buf_printf(b, i ? ", %d" : "%d", v[i]);
  fz_buf_puts(b, ")");
}

static void print_int64s(fz_buf *b, const char *attr, const int64_t *v,
                         int n) {
  fz_buf_printf(b, " %s(", attr);
  for (int i = 0; i < n; i++)
    fz_buf_printf(b, i ? ", %lld" : "%lld", (long long)v[i]);
  fz_buf_puts(b, ")");
}

/* slice: start, stop (a constant or the axis's symbol), and step unless
 * every step is 1; pad: low, high and the value. */
static void print_resize(fz_buf *b, const fz_fusion *f, const fz_op *op,
                         int rank, fz_dtype dtype) {
  const fz_resize *r = &op->resize;
  if (op->code == FZ_OP_PAD) {
    print_int64s(b, "low", r->low, rank);
    print_int64s(b, "high", r->high, rank);
    fz_buf_puts(b, " value(");
    print_scalar(b, op->fill, dtype);
    fz_buf_puts(b, ")");
    return;
  }
  print_int64s(b, "start", r->start, rank);
  fz_buf_puts(b, " stop(");
  for (int i = 0; i < rank; i++) {
    fz_buf_puts(b, i ? ", " : "");
    print_extent(b, f, r->stop[i]);
  }
  fz_buf_puts(b, ")");
  for (int i = 0; i < rank; i++)
    if (r->step[i] != 1) {
      print_int64s(b, "step", r->step, rank);
      break;
    }
}

/* The rank, clamped so that a broken fusion cannot make us read past the
 * axis arrays (the printer is used to debug such fusions). */
static int safe_rank(const fz_type *t) {
  return t->rank < 0 ? 0 : t->rank > FZ_MAX_RANK ? FZ_MAX_RANK : t->rank;
}

static void print_noncontig(fz_buf *b, const fz_type *t) {
  int axes[FZ_MAX_RANK], n = 0, rank = safe_rank(t);
  for (int axis = 0; axis < rank; axis++)
    for (int pos = 0; pos < rank; pos++)
      if (t->alloc_order[pos] == axis && !t->contiguous[pos])
        axes[n++] = axis;
  if (n)
    print_ints(b, "noncontig", axes, n);
}

static bool is_row_major(const fz_type *t) {
  for (int i = 0; i < safe_rank(t); i++)
    if (t->alloc_order[i] != i)
      return false;
  return true;
}

void fz_print_type(fz_buf *b, const fz_fusion *f, const fz_type *t,
                   bool layout) {
  fz_buf_puts(b, fz_dtype_name(t->dtype));
  int rank = safe_rank(t);
  if (rank > 0) {
    fz_buf_puts(b, "[");
    for (int i = 0; i < rank; i++) {
      const fz_axis *a = &t->axes[i];
      if (i)
        fz_buf_puts(b, ", ");
      if (a->kind == FZ_AXIS_BROADCAST) {
        fz_buf_puts(b, "b1");
        if (a->expanded) {
          fz_buf_puts(b, "->");
          print_extent(b, f, a->expanded_to);
        }
      } else {
        print_extent(b, f, a->extent);
      }
    }
    fz_buf_puts(b, "]");
  }
  if (layout && t->has_layout) {
    print_ints(b, "layout", t->alloc_order, rank);
    print_noncontig(b, t);
  }
}

/* ---- value names --------------------------------------------------------- */

typedef struct namer {
  int *number; /* by value id: the printed number of an unnamed value, or -1 */
  int size;
} namer;

/* The number a stored name spells ("12"), or -1. */
static long long name_number(const char *s) {
  if (!s || !*s || (s[0] == '0' && s[1]) || strlen(s) > 9)
    return -1;
  long long n = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    n = n * 10 + (*s - '0');
  }
  return n;
}

int *fz_print_value_numbers(const fz_fusion *f) {
  int count = f->num_inputs + f->num_ops;
  int size = f->next_value_id > 0 ? f->next_value_id : 0;
  int *number = malloc(sizeof(int) * (size_t)(size + 1));
  bool *taken = calloc((size_t)count + 1, sizeof(bool));
  if (!number || !taken) {
    free(number);
    free(taken);
    return NULL;
  }
  for (int i = 0; i < size; i++)
    number[i] = -1;
  /* Only numbers up to `count` can be handed out, so only they matter. */
  for (int i = 0; i < count; i++) {
    const fz_value *v =
        i < f->num_inputs ? f->inputs[i] : f->ops[i - f->num_inputs]->result;
    long long n = v ? name_number(v->name) : -1;
    if (n >= 0 && n <= count)
      taken[n] = true;
  }
  int next = 0;
  for (int i = 0; i < count; i++) {
    const fz_value *v =
        i < f->num_inputs ? f->inputs[i] : f->ops[i - f->num_inputs]->result;
    if (!v || v->name || v->id < 0 || v->id >= size || number[v->id] >= 0)
      continue;
    while (next <= count && taken[next])
      next++;
    number[v->id] = next++;
  }
  free(taken);
  return number;
}

void fz_print_value_label(fz_buf *b, const fz_value *v, const int *numbers) {
  if (v->name)
    fz_buf_printf(b, "%%%s", v->name);
  else if (numbers && v->id >= 0 && numbers[v->id] >= 0)
    fz_buf_printf(b, "%%%d", numbers[v->id]);
  else
    fz_buf_printf(b, "%%%d", v->id);
}

const char *fz_value_label(const fz_value *v, char *buf, size_t size) {
  if (!v->name) {
    snprintf(buf, size, "%%%d", v->id);
    return buf;
  }
  /* what snprintf would write, without its cost: checks label values on
   * every call of a fusion */
  if (size == 0)
    return buf;
  size_t n = strlen(v->name);
  if (size == 1) {
    buf[0] = '\0';
    return buf;
  }
  if (n > size - 2)
    n = size - 2;
  buf[0] = '%';
  memcpy(buf + 1, v->name, n);
  buf[1 + n] = '\0';
  return buf;
}

static bool namer_init(namer *nm, const fz_fusion *f) {
  nm->size = f->next_value_id > 0 ? f->next_value_id : 0;
  nm->number = fz_print_value_numbers(f);
  return nm->number != NULL;
}

static void print_value(fz_buf *b, const namer *nm, const fz_value *v) {
  if (!v) {
    fz_buf_puts(b, "%<null>");
  } else if (v->kind == FZ_VALUE_LITERAL) {
    print_scalar(b, v->literal, v->type.dtype);
  } else if (v->name) {
    fz_buf_printf(b, "%%%s", v->name);
  } else if (v->id >= 0 && v->id < nm->size && nm->number[v->id] >= 0) {
    fz_buf_printf(b, "%%%d", nm->number[v->id]);
  } else {
    fz_buf_printf(b, "%%<unknown value %d>", v->id);
  }
}

/* ---- ops and the fusion -------------------------------------------------- */

static void print_op(fz_buf *b, const fz_fusion *f, const namer *nm,
                     const fz_op *op) {
  const fz_op_info *info =
      (unsigned)op->code < FZ_NUM_OPCODES ? &fz_op_table[op->code] : NULL;
  fz_buf_puts(b, "  ");
  print_value(b, nm, op->result);
  fz_buf_printf(b, " = %s", info ? info->name : "<bad opcode>");
  for (int i = 0; i < op->num_operands && op->operands; i++) {
    fz_buf_puts(b, i ? ", " : " ");
    print_value(b, nm, op->operands[i]);
  }
  const fz_type *t = op->result ? &op->result->type : NULL;
  fz_dtype dtype = t ? t->dtype : FZ_F32;
  int num_dims = op->num_dims < 0             ? 0
                 : op->num_dims > FZ_MAX_RANK ? FZ_MAX_RANK
                                              : op->num_dims;
  switch (info ? info->kind : FZ_KIND_UNARY) {
  case FZ_KIND_FULL:
    fz_buf_puts(b, " ");
    print_scalar(b, op->fill, dtype);
    break;
  case FZ_KIND_REDUCTION:
    print_ints(b, "dims", op->dims, num_dims);
    if (op->keepdim)
      fz_buf_puts(b, " keepdim");
    if (op->code == FZ_OP_VAR)
      fz_buf_printf(b, " correction(%.17g)", op->correction);
    break;
  case FZ_KIND_BROADCAST:
  case FZ_KIND_SQUEEZE:
  case FZ_KIND_CAT:
  case FZ_KIND_GATHER:
    print_ints(b, "dims", op->dims, num_dims);
    break;
  case FZ_KIND_SLICE:
  case FZ_KIND_PAD:
    print_resize(b, f, op, t ? safe_rank(t) : 0, dtype);
    break;
  case FZ_KIND_PERMUTE:
    print_ints(b, "perm", op->perm, t ? safe_rank(t) : 0);
    break;
  case FZ_KIND_SYMBOL:
    fz_buf_printf(b, " %s",
                  op->symbol >= 0 && op->symbol < f->num_symbols &&
                          f->symbols[op->symbol].name
                      ? f->symbols[op->symbol].name
                      : "<bad symbol>");
    break;
  case FZ_KIND_IOTA: {
    bool is_float = fz_dtype_is_float(dtype);
    if (is_float ? op->iota_start.f != 0.0 : op->iota_start.i != 0) {
      fz_buf_puts(b, " start(");
      print_scalar(b, op->iota_start, dtype);
      fz_buf_puts(b, ")");
    }
    if (is_float ? op->iota_step.f != 1.0 : op->iota_step.i != 1) {
      fz_buf_puts(b, " step(");
      print_scalar(b, op->iota_step, dtype);
      fz_buf_puts(b, ")");
    }
    break;
  }
  default:
    break;
  }
  fz_buf_puts(b, " : ");
  if (t)
    fz_print_type(b, f, t, true);
  fz_buf_puts(b, "\n");
}

char *fz_print(const fz_fusion *f) {
  if (!f)
    return NULL;
  namer nm;
  if (!namer_init(&nm, f))
    return NULL;
  fz_buf b = {0};
  fz_buf_printf(&b, "fusion @%s(", f->name ? f->name : "fusion");
  for (int i = 0; i < f->num_inputs; i++) {
    const fz_value *v = f->inputs[i];
    if (i)
      fz_buf_puts(&b, ", ");
    print_value(&b, &nm, v);
    fz_buf_puts(&b, ": ");
    fz_print_type(&b, f, &v->type, false);
    if (v->type.has_layout) {
      if (!is_row_major(&v->type))
        print_ints(&b, "layout", v->type.alloc_order, safe_rank(&v->type));
      print_noncontig(&b, &v->type);
    }
  }
  fz_buf_puts(&b, ") {\n");
  for (int i = 0; i < f->num_ops; i++)
    print_op(&b, f, &nm, f->ops[i]);
  fz_buf_puts(&b, "  return");
  for (int i = 0; i < f->num_outputs; i++) {
    fz_buf_puts(&b, i ? ", " : " ");
    print_value(&b, &nm, f->outputs[i]);
  }
  fz_buf_puts(&b, "\n}\n");
  free(nm.number);
  return fz_buf_take(&b);
}
