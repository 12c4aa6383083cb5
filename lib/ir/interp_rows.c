/* interp_rows.c - moving elements for the reference interpreter: loop
 * nests over strided tensors, and loading and storing runs of elements
 * with dtype conversion.
 *
 * The interpreter must stay usable on the sizes GPU tests run (tens of
 * millions of elements, column-major inputs), so elements move a row chunk
 * at a time: the loop nest is reordered to walk one tensor in memory order
 * and its contiguous axes merged, and each dtype switch happens once per
 * chunk of up to FZ_INTERP_CHUNK elements instead of once per element. What a
 * conversion means is still decided per element by interp_scalar.c.
 */
#include "interp.h"

#include <stdlib.h>
#include <string.h>

/* ---- loop nests ---------------------------------------------------------- */

void fz_loop_nest_init(fz_loop_nest *l, int rank, const int64_t *sizes) {
  memset(l, 0, sizeof *l);
  l->rank = rank;
  if (rank > 0)
    memcpy(l->sizes, sizes, sizeof sizes[0] * (size_t)rank);
}

int fz_loop_nest_add(fz_loop_nest *l, int64_t base, const int64_t *strides) {
  FZ_CHECK(l->n < FZ_IMAX_TENSORS);
  l->base[l->n] = base;
  if (l->rank > 0)
    memcpy(l->strides[l->n], strides, sizeof strides[0] * (size_t)l->rank);
  return l->n++;
}

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

void fz_imemory_order(int rank, const int64_t *strides, int *order) {
  for (int i = 0; i < rank; i++) {
    int a = i, j = i;
    /* insertion sort, stable: larger |stride| goes outward */
    while (j > 0 && abs64(strides[order[j - 1]]) < abs64(strides[a])) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = a;
  }
}

void fz_loop_nest_optimize(fz_loop_nest *l, int guide) {
  int order[FZ_MAX_RANK];
  if (guide >= 0) {
    fz_imemory_order(l->rank, l->strides[guide], order);
  } else {
    for (int i = 0; i < l->rank; i++)
      order[i] = i;
  }
  fz_loop_nest o = *l;
  o.rank = 0;
  for (int i = 0; i < l->rank; i++) {
    int a = order[i];
    if (l->sizes[a] == 1)
      continue; /* contributes no offset */
    int prev = o.rank - 1;
    bool merge = prev >= 0;
    for (int k = 0; k < l->n && merge; k++)
      merge = o.strides[k][prev] == l->strides[k][a] * l->sizes[a];
    if (merge) {
      o.sizes[prev] *= l->sizes[a];
      for (int k = 0; k < l->n; k++)
        o.strides[k][prev] = l->strides[k][a];
      continue;
    }
    o.sizes[o.rank] = l->sizes[a];
    for (int k = 0; k < l->n; k++)
      o.strides[k][o.rank] = l->strides[k][a];
    o.rank++;
  }
  if (o.rank == 0) { /* a single element */
    o.rank = 1;
    o.sizes[0] = 1;
    for (int k = 0; k < l->n; k++)
      o.strides[k][0] = 0;
  }
  *l = o;
}

void fz_chunk_cursor_start(fz_chunk_cursor *c, const fz_loop_nest *l) {
  memset(c, 0, sizeof *c);
  c->l = l;
  FZ_CHECK(l->rank >= 1);
  int inner = l->rank - 1;
  int64_t rows = 1; /* counts were checked for overflow when made */
  for (int d = 0; d < inner; d++)
    rows *= l->sizes[d];
  c->rows_left = l->sizes[inner] == 0 ? 0 : rows;
  for (int k = 0; k < l->n; k++) {
    c->row[k] = l->base[k];
    c->step[k] = l->strides[k][inner];
  }
}

bool fz_chunk_cursor_next(fz_chunk_cursor *c) {
  const fz_loop_nest *l = c->l;
  int inner = l->rank - 1;
  int64_t width = l->sizes[inner];
  if (c->rows_left == 0)
    return false;
  if (c->col == width) {
    if (--c->rows_left == 0)
      return false;
    c->col = 0;
    for (int d = inner - 1; d >= 0; d--) { /* odometer over the rows */
      for (int k = 0; k < l->n; k++)
        c->row[k] += l->strides[k][d];
      if (++c->idx[d] < l->sizes[d])
        break;
      for (int k = 0; k < l->n; k++)
        c->row[k] -= l->strides[k][d] * l->sizes[d];
      c->idx[d] = 0;
    }
  }
  c->len = width - c->col < FZ_INTERP_CHUNK ? width - c->col : FZ_INTERP_CHUNK;
  for (int k = 0; k < l->n; k++)
    c->off[k] = c->row[k] + c->col * c->step[k];
  c->col += c->len;
  return true;
}

int64_t fz_iview_count(const fz_iview *v) {
  int64_t n = 1;
  for (int d = 0; d < v->rank; d++)
    n *= v->sizes[d];
  return n;
}

/* ---- conversion ---------------------------------------------------------- */

static int int_rank(fz_dtype d) {
  switch (d) {
  case FZ_BOOL:
    return 0;
  case FZ_I8:
    return 1;
  case FZ_I32:
    return 2;
  default:
    return 3;
  }
}

/* Whether a value of float dtype `from` may not be representable in `to`. */
static bool float_narrows(fz_dtype from, fz_dtype to) {
  if (to == FZ_F64 || to == from)
    return false;
  if (to == FZ_F32)
    return from == FZ_F64;
  return true;
}

void fz_iconvert(fz_scalar *x, int64_t n, fz_dtype from, fz_dtype to) {
  bool ff = fz_dtype_is_float(from), tf = fz_dtype_is_float(to);
  if (ff && tf) {
    if (float_narrows(from, to))
      for (int64_t i = 0; i < n; i++)
        x[i].f = fz_round_to_dtype(x[i].f, to);
  } else if (ff) {
    for (int64_t i = 0; i < n; i++)
      x[i].i = fz_interp_float_to_int(x[i].f, to);
  } else if (tf) {
    for (int64_t i = 0; i < n; i++)
      x[i].f = fz_interp_int_to_float(x[i].i, to);
  } else if (int_rank(to) < int_rank(from)) {
    for (int64_t i = 0; i < n; i++)
      x[i].i = fz_interp_wrap_int(x[i].i, to);
  }
}

/* ---- loads and stores ---------------------------------------------------- */

/* Element i of a host run, of C type T, converted by `expr` (of x). */
#define HOST_LOAD(T, field, expr)                                              \
  for (int64_t i = 0; i < n; i++) {                                            \
    T x;                                                                       \
    memcpy(&x, p + (off + i * step) * (int64_t)sizeof(T), sizeof x);           \
    out[i].field = (expr);                                                     \
  }                                                                            \
  break

static void load_host(const fz_iview *v, int64_t off, int64_t step, int64_t n,
                      fz_scalar *out) {
  const char *p = v->data;
  switch (v->dtype) {
  case FZ_F64:
    HOST_LOAD(double, f, x);
  case FZ_F32:
    HOST_LOAD(float, f, x);
  case FZ_F16:
    HOST_LOAD(uint16_t, f, fz_f16_to_double(x));
  case FZ_BF16:
    HOST_LOAD(uint16_t, f, fz_bf16_to_double(x));
  case FZ_I64:
    HOST_LOAD(int64_t, i, x);
  case FZ_I32:
    HOST_LOAD(int32_t, i, x);
  case FZ_I8:
    HOST_LOAD(int8_t, i, x);
  case FZ_BOOL:
    HOST_LOAD(uint8_t, i, x != 0);
  default:
    FZ_DIE("load of dtype %d", (int)v->dtype);
  }
}

void fz_iload(const fz_iview *v, int64_t off, int64_t step, int64_t n,
              fz_dtype to, fz_scalar *out) {
  switch (v->st) {
  case FZ_IST_SCALAR:
    for (int64_t i = 0; i < n; i++)
      out[i] = v->scalar;
    break;
  case FZ_IST_DENSE: {
    const fz_scalar *d = v->data;
    for (int64_t i = 0; i < n; i++)
      out[i] = d[off + i * step];
    break;
  }
  case FZ_IST_HOST:
    load_host(v, off, step, n, out);
    break;
  }
  fz_iconvert(out, n, v->dtype, to);
}

/* Element i of vals as C type T, computed by `expr` (of vals[i]). */
#define HOST_STORE(T, expr)                                                    \
  for (int64_t i = 0; i < n; i++) {                                            \
    T x = (T)(expr);                                                           \
    memcpy(p + (off + i * step) * (int64_t)sizeof(T), &x, sizeof x);           \
  }                                                                            \
  break

void fz_istore(fz_iview *v, int64_t off, int64_t step, int64_t n,
               fz_scalar *vals, fz_dtype from) {
  fz_iconvert(vals, n, from, v->dtype);
  if (v->st == FZ_IST_DENSE) {
    fz_scalar *d = v->data;
    for (int64_t i = 0; i < n; i++)
      d[off + i * step] = vals[i];
    return;
  }
  FZ_CHECK(v->st == FZ_IST_HOST);
  char *p = v->data;
  /* Values are now exact in the dtype: only the representation changes. */
  switch (v->dtype) {
  case FZ_F64:
    HOST_STORE(double, vals[i].f);
  case FZ_F32:
    HOST_STORE(float, vals[i].f);
  case FZ_F16:
    HOST_STORE(uint16_t, fz_f16_from_double(vals[i].f));
  case FZ_BF16:
    HOST_STORE(uint16_t, fz_bf16_from_double(vals[i].f));
  case FZ_I64:
    HOST_STORE(int64_t, vals[i].i);
  case FZ_I32:
    HOST_STORE(int32_t, vals[i].i);
  case FZ_I8:
    HOST_STORE(int8_t, vals[i].i);
  case FZ_BOOL:
    HOST_STORE(uint8_t, vals[i].i != 0);
  default:
    FZ_DIE("store of dtype %d", (int)v->dtype);
  }
}

void fz_icopy(const fz_iview *src, fz_iview *dst) {
  fz_loop_nest l;
  fz_loop_nest_init(&l, src->rank, src->sizes);
  fz_loop_nest_add(&l, src->offset, src->strides);
  fz_loop_nest_add(&l, dst->offset, dst->strides);
  fz_loop_nest_optimize(&l, 1);
  fz_scalar x[FZ_INTERP_CHUNK];
  fz_chunk_cursor c;
  fz_chunk_cursor_start(&c, &l);
  fz_dtype exact = fz_iexact_dtype(src->dtype);
  while (fz_chunk_cursor_next(&c)) {
    fz_iload(src, c.off[0], c.step[0], c.len, exact, x);
    fz_istore(dst, c.off[1], c.step[1], c.len, x, exact);
  }
}
