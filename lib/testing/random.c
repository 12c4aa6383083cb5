/* random.c - random valid fusions, for randomized testing.
 *
 * A fusion grows from one *base space*: a shape of rank 1-4 whose axes are
 * symbols or constants. Every input is a view of it (some axes b1, some
 * b1 expanded to the base extent, some dropped, any allocation order), and
 * every value remembers which base axis each of its axes stands for. So
 * two values can always be brought to one shape: permute back to base
 * order and broadcast what is missing, or - for a value whose axes a
 * reshape merged, split or shuffled - reshape to the base shape with b1
 * on the base axes it does not span. Ops are drawn at random and built
 * with fz_build, which checks them; an op it rejects is simply not used,
 * so the generator never needs to restate a shape or promotion rule.
 *
 * The GPU result must stay comparable with the interpreter's, so each
 * value also carries what the generator knows about its numbers:
 *  - exact: the GPU computes it bit for bit as the interpreter does.
 *    Inputs are exact, and so are results of correctly rounded arithmetic,
 *    min/max, comparisons, casts, shape ops, amax/amin, argmax/argmin and
 *    integer math on exact operands (lib/lower/compute.c matches the interpreter there).
 *    Transcendentals and float sums are not. Discontinuous ops (floor,
 *    round, trunc, sign, frac, float mod and fmod, anything with an
 *    integer or bool result) take only exact operands, so a last-ulp
 *    difference never becomes a different integer.
 *  - level: for an inexact value, the coarsest float dtype it was rounded
 *    to. An output may not be finer: an f64 value computed from an f32 exp
 *    is cast to f32 before it is returned. An f16/bf16-level value may be
 *    one ulp of its dtype off, which is all the tolerance there is, so it
 *    only feeds ops that keep its error (casts, abs, max, where, mul by a
 *    literal, shape ops) and outputs; transcendentals run in f32.
 *  - bound: |value| <= bound. Float values above 4 are scaled by a power
 *    of two (exact), integers are kept small with mod, and an op whose
 *    bound would overflow its dtype is not built. Operands are made safe
 *    for their op: log and sqrt of |x|+1, division by |y|+0.5, pow of
 *    |x|+1 to a small exponent, prod of values near 1.
 *  - post: computed from a reduction. Unless the fusion is a "mix" one,
 *    post values only meet values constant along the reduced axes, which
 *    is what the reduction scheduler accepts; mix fusions (normalizations,
 *    reductions over other axes) test everything else.
 * All randomness comes from one splitmix64 stream seeded by the seed.
 *
 * test/unit/test_random.c runs these fusions through the passes and the
 * schedulers on the CPU; fuse-run --random runs them on the GPU. How well
 * the rules above keep GPU results comparable was measured without a GPU:
 * perturbing every inexact result by an ulp or two (both signs, and sums
 * by 2^-22 of their absolute sum) left every output of 8000 fusions
 * within fuse-run's tolerances.
 */
#include "testing/random.h"
#include "testing/splitmix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what the generator knows about a value ------------------------- */

enum { LEVEL_EXACT, LEVEL_F64, LEVEL_F32, LEVEL_F16, LEVEL_BF16 };

typedef struct vinfo {
  bool exact;
  int level;   /* LEVEL_*: the coarsest dtype an inexact value went through */
  double bound; /* |value| <= bound */
  bool post;   /* computed from a reduction result */
  signed char base[FZ_MAX_RANK]; /* base axis of each axis, -1 if none */
} vinfo;

#define MAX_POOL 512
#define MAX_VALUE_RANK 6

typedef struct gen {
  fz_fusion *f;
  uint64_t rng;
  fz_random_options o;
  int rank;                /* of the base space */
  fz_extent ext[4];        /* its extents */
  unsigned reduce;         /* base axes the reductions reduce (bit mask) */
  bool mix;                /* post values may meet anything */
  int num_reductions;
  int op_limit;            /* hard cap on ops, helpers included */
  fz_value *pool[MAX_POOL]; /* operand candidates, in creation order */
  int num_pool;
  vinfo *info; /* by value id */
  int cap_info;
} gen;

/* ---- random numbers -------------------------------------------------- */

static int below(gen *g, int n) {
  return n <= 1 ? 0 : (int)(fz_splitmix64(&g->rng) % (uint64_t)n);
}

static bool chance(gen *g, int percent) { return below(g, 100) < percent; }

/* Index into weights[n], with probability proportional to the weight. */
static int weighted(gen *g, const int *weights, int n) {
  int total = 0;
  for (int i = 0; i < n; i++)
    total += weights[i];
  int r = below(g, total);
  for (int i = 0; i < n; i++) {
    if (r < weights[i])
      return i;
    r -= weights[i];
  }
  return n - 1;
}

/* ---- options ------------------------------------------------------------ */

static fz_random_options with_defaults(const fz_random_options *opts) {
  fz_random_options o = opts ? *opts : (fz_random_options){0};
  if (o.max_ops < 3)
    o.max_ops = o.max_ops <= 0 ? 15 : 3;
  if ((o.dtypes & ((1u << FZ_NUM_DTYPES) - 1)) == 0)
    o.dtypes = FZ_RANDOM_DTYPES_DEFAULT;
  if (o.max_extent <= 0)
    o.max_extent = 40;
  if (o.max_elements <= 0)
    o.max_elements = 1 << 16;
  return o;
}

/* ---- value facts ----------------------------------------------------- */

static vinfo *inf(gen *g, const fz_value *v) {
  if (v->id >= g->cap_info) {
    int cap = g->cap_info ? g->cap_info : 64;
    while (cap <= v->id)
      cap *= 2;
    vinfo *grown = realloc(g->info, sizeof *grown * (size_t)cap);
    FZ_CHECK(grown);
    memset(grown + g->cap_info, 0,
           sizeof *grown * (size_t)(cap - g->cap_info));
    g->info = grown;
    g->cap_info = cap;
  }
  return &g->info[v->id];
}

static bool is_b1(const fz_axis *a) {
  return a->kind == FZ_AXIS_BROADCAST && !a->expanded;
}

static int dtype_level(fz_dtype d) {
  switch (d) {
  case FZ_F64: return LEVEL_F64;
  case FZ_F32: return LEVEL_F32;
  case FZ_F16: return LEVEL_F16;
  case FZ_BF16: return LEVEL_BF16;
  default: return LEVEL_EXACT;
  }
}

/* Largest |value| a dtype may hold here: integers stay far from wrapping,
 * f16 far from inf, and everything exactly readable as a double. */
static double dtype_limit(fz_dtype d) {
  switch (d) {
  case FZ_F16: return 30000;
  case FZ_F64: return 1e300;
  case FZ_I8: return 100;
  case FZ_I32: return 1 << 30;
  case FZ_I64: return 0x1p52;
  case FZ_BOOL: return 1;
  default: return 1e30;
  }
}

/* Largest size an axis can take under fz_random_bindings. */
static double worst_size(const gen *g, const fz_axis *a) {
  fz_extent e = fz_axis_extent(a);
  return e.symbol < 0 ? (double)e.value : (double)g->o.max_extent;
}

static void pool_add(gen *g, fz_value *v) {
  if (g->num_pool < MAX_POOL)
    g->pool[g->num_pool++] = v;
}

static bool is_base(const gen *g, fz_value *v) {
  if (v->type.rank != g->rank)
    return false;
  vinfo *I = inf((gen *)g, v);
  for (int k = 0; k < g->rank; k++)
    if (I->base[k] != k)
      return false;
  return true;
}

static void set_base_identity(gen *g, fz_value *v) {
  vinfo *I = inf(g, v);
  for (int k = 0; k < v->type.rank; k++)
    I->base[k] = (signed char)k;
}

/* ---- literals ---------------------------------------------------------- */

static fz_value *lit_float(gen *g, double x) {
  fz_value *v = fz_literal_float(g->f, x);
  *inf(g, v) = (vinfo){.exact = true, .bound = fabs(x)};
  return v;
}

static fz_value *lit_int(gen *g, int64_t x) {
  fz_value *v = fz_literal_int(g->f, x);
  *inf(g, v) = (vinfo){.exact = true, .bound = fabs((double)x)};
  return v;
}

/* Literals with few significant bits: exact in every float dtype, so an
 * f16 op with one rounds once on both sides. */
static fz_value *nice_literal(gen *g, const fz_value *like) {
  static const double floats[] = {0.5, -0.5, 0.25, 1.5, 2.0,
                                  -2.0, 3.0, 0.75, 1.0, -1.25};
  static const int ints[] = {1, 2, 3, -1, -3, 5};
  bool want_float = fz_dtype_is_float(like->type.dtype) ? !chance(g, 10)
                                                        : chance(g, 30);
  if (want_float)
    return lit_float(g, floats[below(g, 10)]);
  if (like->type.dtype == FZ_BOOL && chance(g, 40)) {
    fz_value *v = fz_literal_bool(g->f, chance(g, 50));
    *inf(g, v) = (vinfo){.exact = true, .bound = 1};
    return v;
  }
  return lit_int(g, ints[below(g, 6)]);
}

static bool literal_is(const fz_value *v, double x) {
  if (v->kind != FZ_VALUE_LITERAL)
    return false;
  return v->type.dtype == FZ_F64 ? v->literal.f == x
                                 : (double)v->literal.i == x;
}

static bool literal_is_pow2(const fz_value *v) {
  if (v->kind != FZ_VALUE_LITERAL || v->type.dtype != FZ_F64)
    return false;
  int e;
  double m = frexp(fabs(v->literal.f), &e);
  return m == 0.5;
}

/* ---- building one op, with its facts --------------------------------- */

/* Whether the op on exact operands gives the interpreter's bits on the
 * GPU (see the comment at the top of lib/lower/compute.c). */
static bool op_is_exact(fz_opcode code, fz_value *const *ops, fz_dtype d) {
  switch (fz_op_table[code].kind) {
  case FZ_KIND_UNARY:
    switch (code) {
    case FZ_OP_EXP: case FZ_OP_EXP2: case FZ_OP_LOG: case FZ_OP_LOG2:
    case FZ_OP_SIN: case FZ_OP_COS: case FZ_OP_TANH: case FZ_OP_SIGMOID:
    case FZ_OP_ERF: case FZ_OP_GELU: case FZ_OP_SILU:
    case FZ_OP_LOG1P: case FZ_OP_EXPM1: case FZ_OP_TAN: case FZ_OP_ATAN:
    case FZ_OP_ASIN: case FZ_OP_ACOS: case FZ_OP_SINH: case FZ_OP_COSH:
    case FZ_OP_ASINH: case FZ_OP_ACOSH: case FZ_OP_ATANH: case FZ_OP_ERFC:
    case FZ_OP_ERFINV: case FZ_OP_LGAMMA:
      return false;
    default:
      return true;
    }
  case FZ_KIND_RANDOM: /* rand bit for bit; randn calls libdevice */
    return code == FZ_OP_RAND;
  case FZ_KIND_BINARY:
    if (code == FZ_OP_POW)
      return !fz_dtype_is_float(d) || literal_is(ops[1], 2.0);
    if (code == FZ_OP_MOD || code == FZ_OP_FMOD)
      return !fz_dtype_is_float(d) || literal_is_pow2(ops[1]);
    if (code == FZ_OP_ATAN2 || code == FZ_OP_HYPOT)
      return false;
    return true;
  case FZ_KIND_REDUCTION:
    return code == FZ_OP_AMAX || code == FZ_OP_AMIN ||
           !fz_dtype_is_float(d);
  default:
    return true;
  }
}

/* Ops whose float result jumps where its operands change a little. */
static bool discontinuous(fz_opcode code) {
  return code == FZ_OP_FLOOR || code == FZ_OP_CEIL || code == FZ_OP_ROUND ||
         code == FZ_OP_MOD || code == FZ_OP_TRUNC || code == FZ_OP_SIGN ||
         code == FZ_OP_FRAC || code == FZ_OP_FMOD;
}

/* Ops that pass an operand's error on without amplifying it against the
 * scale of the result: the only ones an f16/bf16-level value may feed. */
static bool keeps_error(fz_opcode code, fz_value *const *ops) {
  switch (fz_op_table[code].kind) {
  case FZ_KIND_CAST: case FZ_KIND_BROADCAST: case FZ_KIND_SQUEEZE:
  case FZ_KIND_EXPAND: case FZ_KIND_PERMUTE: case FZ_KIND_RESHAPE:
  case FZ_KIND_SET: case FZ_KIND_SLICE: case FZ_KIND_PAD: case FZ_KIND_CAT:
  case FZ_KIND_GATHER:
    return true;
  default:
    break;
  }
  switch (code) {
  case FZ_OP_NEG: case FZ_OP_ABS: case FZ_OP_RELU: case FZ_OP_MAX:
  case FZ_OP_MIN: case FZ_OP_CLAMP: case FZ_OP_WHERE: case FZ_OP_ISNAN:
  case FZ_OP_ISINF: case FZ_OP_ISFINITE: case FZ_OP_AMAX: case FZ_OP_AMIN:
    return true;
  case FZ_OP_MUL:
    return ops[0]->kind == FZ_VALUE_LITERAL || ops[1]->kind == FZ_VALUE_LITERAL;
  default:
    return false;
  }
}

/* Elements a reduction combines, at the largest sizes. */
static double reduced_count(const gen *g, const fz_value *a,
                            const fz_attrs *at) {
  double n = 1;
  for (int d = 0; d < at->num_dims; d++)
    n *= worst_size(g, &a->type.axes[at->dims[d]]);
  return n;
}

/* |result| <= this, given the operands' bounds. Domains are the callers'
 * job: log, sqrt and rsqrt get operands >= 1, reciprocal and div
 * divisors >= 0.5, pow a base >= 1. */
static double predict_bound(gen *g, fz_opcode code, int n,
                            fz_value *const *ops, const fz_attrs *at,
                            const fz_type *t) {
  double B[3] = {0, 0, 0};
  for (int k = 0; k < n; k++)
    B[k] = inf(g, ops[k])->bound;
  if (t->dtype == FZ_BOOL)
    return 1;
  switch (code) {
  case FZ_OP_FLOOR: case FZ_OP_CEIL: case FZ_OP_ROUND: case FZ_OP_TRUNC:
  case FZ_OP_BITWISE_NOT:
    return B[0] + 1;
  case FZ_OP_SIGN: case FZ_OP_FRAC: return 1;
  case FZ_OP_LOG1P: return fmax(log1p(B[0]), 1);
  case FZ_OP_EXPM1: return exp(B[0]);
  case FZ_OP_TAN: return tan(fmin(B[0], 1.5));
  case FZ_OP_ATAN: case FZ_OP_ASIN: return 1.6;
  case FZ_OP_ACOS: case FZ_OP_ATAN2: return 3.2;
  case FZ_OP_SINH: case FZ_OP_COSH: return cosh(B[0]);
  case FZ_OP_ASINH: return fmax(asinh(B[0]), 1);
  case FZ_OP_ACOSH: return fmax(acosh(fmax(B[0], 1)), 1);
  case FZ_OP_ATANH: return fmax(atanh(fmin(B[0], 0.99)), 1);
  case FZ_OP_ERFC: return 2;
  case FZ_OP_ERFINV: return fmax(B[0] * 2, 1); /* |x| <= 0.5 */
  case FZ_OP_LGAMMA: return fmax(lgamma(fmax(B[0], 3)), 1);
  case FZ_OP_HYPOT: return B[0] + B[1];
  case FZ_OP_FMOD: return B[1];
  case FZ_OP_BITWISE_AND: case FZ_OP_BITWISE_OR: case FZ_OP_BITWISE_XOR:
    return 2 * fmax(B[0], B[1]) + 1;
  case FZ_OP_SHL: return B[0] * exp2(fmin(B[1], 64));
  case FZ_OP_SHR: return B[0];
  case FZ_OP_EXP: return exp(B[0]);
  case FZ_OP_EXP2: return exp2(B[0]);
  case FZ_OP_LOG: return fmax(log(fmax(B[0], 1)), 1);
  case FZ_OP_LOG2: return fmax(log2(fmax(B[0], 1)), 1);
  case FZ_OP_SQRT: return sqrt(B[0]);
  case FZ_OP_RSQRT: return 1;
  case FZ_OP_RECIPROCAL: return 2;
  case FZ_OP_SIN: case FZ_OP_COS: case FZ_OP_TANH: case FZ_OP_SIGMOID:
  case FZ_OP_ERF:
    return 1;
  case FZ_OP_GELU: case FZ_OP_SILU: return B[0] + 0.5;
  case FZ_OP_ADD: case FZ_OP_SUB: return B[0] + B[1];
  case FZ_OP_MUL: return B[0] * B[1];
  case FZ_OP_DIV: return 2 * B[0];
  case FZ_OP_POW: return pow(fmax(B[0], 1), B[1]);
  case FZ_OP_MAX: case FZ_OP_MIN: return fmax(B[0], B[1]);
  case FZ_OP_MOD: return B[1];
  case FZ_OP_WHERE: case FZ_OP_CLAMP: return fmax(B[1], B[2]);
  case FZ_OP_FMA: return B[0] * B[1] + B[2];
  case FZ_OP_SUM: return reduced_count(g, ops[0], at) * B[0];
  case FZ_OP_PROD: return pow(fmax(B[0], 1), reduced_count(g, ops[0], at));
  case FZ_OP_ARGMAX: case FZ_OP_ARGMIN: return reduced_count(g, ops[0], at);
  case FZ_OP_MEAN: return B[0];
  /* m2 / count <= B^2, and count / (count - correction) <= 2 for the
   * corrections act_reduce picks (0 and 0.5) */
  case FZ_OP_VAR: return 2 * B[0] * B[0];
  case FZ_OP_CAST:
    return fz_dtype_is_float(t->dtype) ? B[0] : floor(B[0]);
  case FZ_OP_FULL:
    return fz_dtype_is_float(t->dtype) ? fabs(at->fill.f)
                                       : fabs((double)at->fill.i);
  case FZ_OP_SYMBOL:
    return (double)g->o.max_extent;
  case FZ_OP_PAD:
    return fmax(B[0], fz_dtype_is_float(t->dtype) ? fabs(at->fill.f)
                                                  : fabs((double)at->fill.i));
  case FZ_OP_CAT: {
    double b = 0;
    for (int k = 0; k < n; k++)
      b = fmax(b, inf(g, ops[k])->bound);
    return b;
  }
  case FZ_OP_RAND:
    return 1;
  case FZ_OP_RANDN: /* sqrt(-2 log 2^-53): the most Box-Muller reaches */
    return 9;
  case FZ_OP_IOTA: {
    bool fl = fz_dtype_is_float(t->dtype);
    double start = fl ? at->iota_start.f : (double)at->iota_start.i;
    double step = fl ? at->iota_step.f : (double)at->iota_step.i;
    return fabs(start) + fabs(step) * worst_size(g, &t->axes[0]);
  }
  default: /* neg, abs, relu, amax/amin, shape ops */
    return B[0];
  }
}

/* Base axes of a result, from its operands. Reshape, full and iota get
 * -1 everywhere; their callers know better. */
static void derive_base(gen *g, const fz_op *op, vinfo *I) {
  const fz_value *r = op->result;
  for (int k = 0; k < FZ_MAX_RANK; k++)
    I->base[k] = -1;
  const fz_value *a = op->num_operands ? op->operands[0] : NULL;
  const vinfo *A = a ? inf(g, a) : NULL;
  switch (fz_op_table[op->code].kind) {
  case FZ_KIND_UNARY: case FZ_KIND_BINARY: case FZ_KIND_TERNARY:
  case FZ_KIND_CAST: case FZ_KIND_SET: case FZ_KIND_EXPAND:
    for (int k = 0; k < r->type.rank; k++) {
      /* operands that are not b1 here decide; if all are b1, any */
      for (int pass = 0; pass < 2; pass++) {
        int b = -2;
        for (int j = 0; j < op->num_operands; j++) {
          const fz_value *x = op->operands[j];
          if (x->type.rank != r->type.rank ||
              (pass == 0 && is_b1(&x->type.axes[k])))
            continue;
          int xb = inf(g, x)->base[k];
          b = b == -2 || b == xb ? xb : -1;
        }
        if (b != -2) {
          I->base[k] = (signed char)b;
          break;
        }
      }
    }
    break;
  case FZ_KIND_REDUCTION: {
    int j = 0, d = 0;
    for (int i = 0; i < a->type.rank; i++) {
      bool reduced = d < op->num_dims && op->dims[d] == i;
      d += reduced;
      if (!reduced || op->keepdim)
        I->base[j++] = A->base[i];
    }
    break;
  }
  case FZ_KIND_BROADCAST: {
    int d = 0, j = 0;
    for (int i = 0; i < r->type.rank; i++) {
      if (d < op->num_dims && op->dims[d] == i)
        d++;
      else
        I->base[i] = A->base[j++];
    }
    break;
  }
  case FZ_KIND_SQUEEZE: {
    int d = 0, j = 0;
    for (int i = 0; i < a->type.rank; i++) {
      if (d < op->num_dims && op->dims[d] == i)
        d++;
      else
        I->base[j++] = A->base[i];
    }
    break;
  }
  case FZ_KIND_PERMUTE:
    for (int i = 0; i < r->type.rank; i++)
      I->base[i] = A->base[op->perm[i]];
    break;
  default:
    break;
  }
}

/* Build an op if fz_build accepts it and the result stays comparable
 * (see the top of the file); NULL otherwise, with the fusion unchanged. */
static fz_value *mk(gen *g, fz_opcode code, int n, fz_value **ops,
                    const fz_attrs *at) {
  static const fz_attrs none;
  if (!at)
    at = &none;
  if (g->f->num_ops >= g->op_limit)
    return NULL;
  fz_type t;
  if (fz_infer_type(g->f, code, n, ops, at, &t, NULL) != FZ_OK)
    return NULL;
  if (t.rank > MAX_VALUE_RANK)
    return NULL;
  bool exact = op_is_exact(code, ops, t.dtype);
  bool post = false;
  int level = LEVEL_EXACT;
  for (int k = 0; k < n; k++) {
    const vinfo *I = inf(g, ops[k]);
    exact &= I->exact;
    post |= I->post;
    if (I->level > level)
      level = I->level;
  }
  /* no NaN or infinity is ever made, so these are constant */
  if (code == FZ_OP_ISNAN || code == FZ_OP_ISINF || code == FZ_OP_ISFINITE)
    exact = true;
  /* An f16/bf16 value may differ from the interpreter's by one ulp of
   * its dtype, which is all the tolerance there is: such values are only
   * returned, cast, or passed through ops that keep their error; and only
   * reductions (which accumulate in f32 and round once) make them from
   * inexact math. Transcendentals run in f32 (see widened). */
  if (level >= LEVEL_F16 && !keeps_error(code, ops))
    return NULL;
  if (!op_is_exact(code, ops, t.dtype) &&
      fz_op_table[code].kind != FZ_KIND_REDUCTION &&
      dtype_level(t.dtype) >= LEVEL_F16)
    return NULL;
  if (!exact) {
    if (!fz_dtype_is_float(t.dtype) || discontinuous(code))
      return NULL;
    /* rounded to its dtype, an inexact value carries that dtype's error */
    if (dtype_level(t.dtype) > level)
      level = dtype_level(t.dtype);
  }
  double bound = predict_bound(g, code, n, ops, at, &t);
  if (!(bound <= dtype_limit(t.dtype)))
    return NULL;
  fz_value *v = fz_build(g->f, code, n, ops, at, NULL);
  FZ_CHECK(v); /* fz_infer_type accepted it */
  vinfo I = {.exact = exact, .level = exact ? LEVEL_EXACT : level,
             .bound = bound, .post = post};
  derive_base(g, v->def, &I);
  *inf(g, v) = I;
  pool_add(g, v);
  return v;
}

static fz_value *mk1(gen *g, fz_opcode code, fz_value *a) {
  return a ? mk(g, code, 1, &a, NULL) : NULL;
}

static fz_value *mk2(gen *g, fz_opcode code, fz_value *a, fz_value *b) {
  fz_value *ops[2] = {a, b};
  return a && b ? mk(g, code, 2, ops, NULL) : NULL;
}

static fz_value *mk_dims(gen *g, fz_opcode code, fz_value *a, int nd,
                         const int *dims, bool keepdim) {
  fz_attrs at = {.num_dims = nd, .keepdim = keepdim};
  memcpy(at.dims, dims, sizeof dims[0] * (size_t)nd);
  return mk(g, code, 1, &a, &at);
}

/* var with correction 0 or 0.5: below every count (a reduced extent of 1
 * included), so never inf or NaN. */
static fz_value *var_dims(gen *g, fz_value *a, int nd, const int *dims,
                          bool keepdim) {
  fz_attrs at = {.num_dims = nd, .keepdim = keepdim,
                 .correction = chance(g, 50) ? 0.5 : 0};
  memcpy(at.dims, dims, sizeof dims[0] * (size_t)nd);
  return mk(g, FZ_OP_VAR, 1, &a, &at);
}

static fz_value *mk_shape(gen *g, fz_opcode code, fz_value *a,
                          const fz_type *shape) {
  fz_attrs at = {.shape = shape};
  return mk(g, code, 1, &a, &at);
}

static fz_value *mk_cast(gen *g, fz_value *a, fz_dtype d) {
  fz_type t = {.dtype = d};
  return a ? mk_shape(g, FZ_OP_CAST, a, &t) : NULL;
}

/* ---- keeping numbers tame ------------------------------------------- */

/* x scaled by a power of two (exact) so that |x| <= limit; integers and
 * bools become f32 on the way. */
static fz_value *scaled(gen *g, fz_value *x, double limit) {
  if (!x)
    return NULL;
  double b = inf(g, x)->bound;
  if (b <= limit)
    return x;
  int k = (int)ceil(log2(b / limit));
  return mk2(g, FZ_OP_MUL, x, lit_float(g, ldexp(1.0, -k)));
}

/* After each op: floats back to |x| <= 4, integers to small values. */
static fz_value *tame(gen *g, fz_value *v) {
  if (!v)
    return NULL;
  double b = inf(g, v)->bound;
  if (fz_dtype_is_float(v->type.dtype) && b > 4) {
    fz_value *s = scaled(g, v, 4);
    return s ? s : v;
  }
  if (fz_dtype_is_integer(v->type.dtype) && b > 4096) {
    static const int mods[] = {5, 7, 11, 13};
    fz_value *m = mk2(g, FZ_OP_MOD, v, lit_int(g, mods[below(g, 4)]));
    return m ? m : v;
  }
  return v;
}

/* f16 and bf16 operands of inexact math go to f32 first (see mk). */
static fz_value *widened(gen *g, fz_value *x) {
  if (x && (x->type.dtype == FZ_F16 || x->type.dtype == FZ_BF16))
    return mk_cast(g, x, FZ_F32);
  return x;
}

/* |x| + c: the safe operand of log, sqrt, rsqrt, reciprocal and div. */
static fz_value *abs_plus(gen *g, fz_value *x, double c) {
  if (x && x->type.dtype == FZ_BOOL)
    x = mk_cast(g, x, FZ_F32);
  x = mk1(g, FZ_OP_ABS, x);
  if (!x)
    return NULL;
  fz_value *lit = fz_dtype_is_float(x->type.dtype) || c != floor(c)
                      ? lit_float(g, c)
                      : lit_int(g, (int64_t)c);
  return mk2(g, FZ_OP_ADD, x, lit);
}

/* ---- shapes ------------------------------------------------------------ */

/* a and b fit one pointwise op as they are: the builder would accept
 * them, and no axis stands for two different base axes (a b1 axis of one
 * meeting a different axis of the other would make an outer product). */
static bool compatible(gen *g, const fz_value *a, const fz_value *b) {
  if (a->type.rank == 0 || b->type.rank == 0)
    return true;
  if (a->type.rank != b->type.rank)
    return false;
  const vinfo *A = inf(g, a), *B = inf(g, b);
  for (int k = 0; k < a->type.rank; k++) {
    const fz_axis *x = &a->type.axes[k], *y = &b->type.axes[k];
    if (!is_b1(x) && !is_b1(y) &&
        !fz_extent_equal(fz_axis_extent(x), fz_axis_extent(y)))
      return false;
    if (A->base[k] >= 0 && B->base[k] >= 0 && A->base[k] != B->base[k])
      return false;
  }
  return true;
}

static bool varies_on_reduced(gen *g, const fz_value *v) {
  const vinfo *I = inf(g, v);
  for (int k = 0; k < v->type.rank; k++)
    if (!is_b1(&v->type.axes[k]) &&
        (I->base[k] < 0 || ((g->reduce >> I->base[k]) & 1)))
      return true;
  return false;
}

/* May a and b meet in one op? Unless the fusion mixes, a post value only
 * meets values constant along the reduced axes. */
static bool pair_ok(gen *g, const fz_value *a, const fz_value *b) {
  if (g->mix || !g->reduce)
    return true;
  bool pa = inf(g, a)->post, pb = inf(g, b)->post;
  return pa == pb || !varies_on_reduced(g, pa ? b : a);
}

static fz_value *broadcast_to_base(gen *g, fz_value *v, unsigned present) {
  int dims[FZ_MAX_RANK], nd = 0;
  for (int i = 0; i < g->rank; i++)
    if (!((present >> i) & 1))
      dims[nd++] = i;
  if (nd == 0)
    return v;
  fz_value *r = mk_dims(g, FZ_OP_BROADCAST, v, nd, dims, false);
  if (r)
    set_base_identity(g, r);
  return r;
}

/* v as a value of the base shape (b1 where it does not vary), or NULL. */
static fz_value *to_base(gen *g, fz_value *v) {
  if (!v || is_base(g, v))
    return v;
  /* b1 axes that stand for no base axis go first */
  int dims[FZ_MAX_RANK], nd = 0;
  for (int k = 0; k < v->type.rank; k++)
    if (is_b1(&v->type.axes[k]) && inf(g, v)->base[k] < 0)
      dims[nd++] = k;
  if (nd && !(v = mk_dims(g, FZ_OP_SQUEEZE, v, nd, dims, false)))
    return NULL;
  const vinfo *I = inf(g, v);
  unsigned seen = 0;
  bool mapped = true;
  for (int k = 0; k < v->type.rank && mapped; k++) {
    int b = I->base[k];
    mapped = b >= 0 && !((seen >> b) & 1);
    if (mapped)
      seen |= 1u << b;
  }
  if (mapped) {
    /* permute into base order, then broadcast what is missing */
    int perm[FZ_MAX_RANK], rank = v->type.rank;
    bool identity = true;
    for (int k = 0; k < rank; k++)
      perm[k] = k;
    for (int i = 1; i < rank; i++)
      for (int j = i; j > 0 && I->base[perm[j - 1]] > I->base[perm[j]]; j--) {
        int t = perm[j];
        perm[j] = perm[j - 1];
        perm[j - 1] = t;
      }
    for (int k = 0; k < rank; k++)
      identity &= perm[k] == k;
    if (!identity) {
      fz_attrs at = {0};
      memcpy(at.perm, perm, sizeof perm);
      if (!(v = mk(g, FZ_OP_PERMUTE, 1, &v, &at)))
        return NULL;
    }
    return broadcast_to_base(g, v, seen);
  }
  /* merged, split or shuffled axes: reshape to the base shape, with b1 on
   * the base axes whose extents the value does not span */
  int subsets = 1 << g->rank, start = below(g, subsets);
  for (int s = 0; s < subsets; s++) {
    unsigned span = (unsigned)((start + s) % subsets);
    fz_type t = {.dtype = v->type.dtype, .rank = g->rank};
    for (int i = 0; i < g->rank; i++)
      t.axes[i] = (span >> i) & 1
                      ? (fz_axis){.kind = FZ_AXIS_ITER, .extent = g->ext[i]}
                      : (fz_axis){.kind = FZ_AXIS_BROADCAST,
                                  .extent = fz_const_extent(1)};
    fz_value *r = mk_shape(g, FZ_OP_RESHAPE, v, &t);
    if (r) {
      set_base_identity(g, r);
      return r;
    }
  }
  return NULL;
}

/* Bring the non-literal operands to one shape: as they are when they fit,
 * else each to the base shape. */
static bool fit(gen *g, int n, fz_value **ops) {
  bool ok = true;
  for (int i = 0; i < n; i++) {
    if (!ops[i])
      return false;
    for (int j = 0; j < i; j++)
      ok &= compatible(g, ops[i], ops[j]);
  }
  for (int k = 0; k < n && !ok; k++)
    if (ops[k]->kind != FZ_VALUE_LITERAL && ops[k]->type.rank > 0 &&
        !(ops[k] = to_base(g, ops[k])))
      return false;
  return true;
}

/* ---- choosing operands ----------------------------------------------- */

static bool is_sink(const gen *g, const fz_value *v) {
  return v->kind == FZ_VALUE_RESULT && fz_count_uses(g->f, v) == 0;
}

/* An operand: unused inputs and results first (so that the ops form one
 * DAG rather than many chains), else recent values or any. */
static fz_value *pick(gen *g) {
  if (chance(g, 50))
    for (int i = 0; i < g->f->num_inputs; i++)
      if (fz_count_uses(g->f, g->f->inputs[i]) == 0)
        return g->f->inputs[i];
  if (chance(g, 40)) {
    int start = below(g, g->num_pool);
    for (int k = 0; k < g->num_pool; k++) {
      fz_value *v = g->pool[(start + k) % g->num_pool];
      if (is_sink(g, v))
        return v;
    }
  }
  if (g->num_reductions && chance(g, 50)) {
    for (int i = g->num_pool - 1; i >= 0; i--)
      if (inf(g, g->pool[i])->post && chance(g, 60))
        return g->pool[i];
  }
  if (chance(g, 60)) {
    int recent = g->num_pool < 4 ? g->num_pool : 4;
    return g->pool[g->num_pool - 1 - below(g, recent)];
  }
  return g->pool[below(g, g->num_pool)];
}

/* A second operand for a: one that fits it as it is, usually; else any
 * that may meet it (the caller fits them). */
static fz_value *partner(gen *g, fz_value *a, bool need_exact) {
  fz_value *c[MAX_POOL];
  int n = 0;
  bool want_fitting = chance(g, 85);
  for (int pass = 0; pass < 2 && n == 0; pass++) {
    for (int i = 0; i < g->num_pool; i++) {
      fz_value *b = g->pool[i];
      if (pair_ok(g, a, b) && (!need_exact || inf(g, b)->exact) &&
          (pass == 1 || !want_fitting || compatible(g, a, b)))
        c[n++] = b;
    }
  }
  if (n == 0)
    return NULL;
  return chance(g, 50) ? c[n - 1 - below(g, n < 3 ? n : 3)] : c[below(g, n)];
}

static fz_dtype random_dtype(gen *g, bool float_only) {
  static const int weight[FZ_NUM_DTYPES] = {
      [FZ_F64] = 6, [FZ_F32] = 60, [FZ_F16] = 8, [FZ_BF16] = 8,
      [FZ_I64] = 5, [FZ_I32] = 8,  [FZ_I8] = 5,  [FZ_BOOL] = 5};
  int w[FZ_NUM_DTYPES];
  bool any = false;
  for (int d = 0; d < FZ_NUM_DTYPES; d++) {
    bool ok = ((g->o.dtypes >> d) & 1) &&
              (!float_only || fz_dtype_is_float((fz_dtype)d));
    w[d] = ok ? weight[d] : 0;
    any |= ok;
  }
  if (!any)
    return FZ_F32;
  return (fz_dtype)weighted(g, w, FZ_NUM_DTYPES);
}

/* ---- actions: each adds one op (plus helpers) or nothing ------------ */

static fz_value *act_unary(gen *g) {
  static const fz_opcode codes[] = {
      FZ_OP_NEG,     FZ_OP_ABS,   FZ_OP_EXP,   FZ_OP_EXP2,  FZ_OP_LOG,
      FZ_OP_LOG2,    FZ_OP_SQRT,  FZ_OP_RSQRT, FZ_OP_RECIPROCAL,
      FZ_OP_SIN,     FZ_OP_COS,   FZ_OP_TANH,  FZ_OP_SIGMOID, FZ_OP_ERF,
      FZ_OP_RELU,    FZ_OP_GELU,  FZ_OP_SILU,  FZ_OP_FLOOR, FZ_OP_CEIL,
      FZ_OP_ROUND,   FZ_OP_NOT,   FZ_OP_ISNAN, FZ_OP_LOG1P, FZ_OP_EXPM1,
      FZ_OP_TAN,     FZ_OP_ATAN,  FZ_OP_ASIN,  FZ_OP_ACOS,  FZ_OP_SINH,
      FZ_OP_COSH,    FZ_OP_ASINH, FZ_OP_ACOSH, FZ_OP_ATANH, FZ_OP_ERFC,
      FZ_OP_ERFINV,  FZ_OP_LGAMMA, FZ_OP_TRUNC, FZ_OP_SIGN, FZ_OP_FRAC,
      FZ_OP_ISINF,   FZ_OP_ISFINITE, FZ_OP_SIGNBIT, FZ_OP_BITWISE_NOT};
  fz_opcode code = codes[below(g, (int)(sizeof codes / sizeof codes[0]))];
  fz_value *x = pick(g);
  switch (code) {
  case FZ_OP_LOG1P:
    x = abs_plus(g, scaled(g, widened(g, x), 4), 0.0);
    break;
  case FZ_OP_ACOSH: /* away from 1, where its slope is infinite */
    x = abs_plus(g, scaled(g, widened(g, x), 4), 1.5);
    break;
  case FZ_OP_LGAMMA: /* away from its poles at 0, -1, ... */
    x = abs_plus(g, scaled(g, widened(g, x), 4), 0.5);
    break;
  case FZ_OP_TAN:
    x = scaled(g, widened(g, x), 1);
    break;
  case FZ_OP_ASIN: case FZ_OP_ACOS: case FZ_OP_ATANH: case FZ_OP_ERFINV:
    /* inside (-1, 1), away from the edges where the slope is infinite */
    x = scaled(g, widened(g, x), 0.5);
    break;
  case FZ_OP_EXPM1: case FZ_OP_ATAN: case FZ_OP_SINH: case FZ_OP_COSH:
  case FZ_OP_ASINH: case FZ_OP_ERFC:
    x = scaled(g, widened(g, x), 4);
    break;
  case FZ_OP_BITWISE_NOT:
    if (x && fz_dtype_is_float(x->type.dtype))
      x = mk_cast(g, x, FZ_I32);
    break;
  case FZ_OP_LOG: case FZ_OP_LOG2:
    x = abs_plus(g, scaled(g, widened(g, x), 4), 1.0);
    break;
  case FZ_OP_SQRT: case FZ_OP_RSQRT:
    x = abs_plus(g, scaled(g, x, 4), 1.0);
    break;
  case FZ_OP_RECIPROCAL:
    x = abs_plus(g, x, 0.5);
    break;
  case FZ_OP_EXP: case FZ_OP_EXP2: case FZ_OP_SIN: case FZ_OP_COS:
  case FZ_OP_TANH: case FZ_OP_SIGMOID: case FZ_OP_ERF: case FZ_OP_GELU:
  case FZ_OP_SILU:
    x = scaled(g, widened(g, x), 4);
    break;
  default:
    break;
  }
  return tame(g, mk1(g, code, x));
}

static fz_value *act_binary(gen *g) {
  static const fz_opcode codes[] = {
      FZ_OP_ADD, FZ_OP_SUB, FZ_OP_MUL, FZ_OP_DIV, FZ_OP_POW, FZ_OP_MAX,
      FZ_OP_MIN, FZ_OP_MOD, FZ_OP_EQ,  FZ_OP_NE,  FZ_OP_LT,  FZ_OP_LE,
      FZ_OP_GT,  FZ_OP_GE,  FZ_OP_AND, FZ_OP_OR,  FZ_OP_XOR, FZ_OP_ATAN2,
      FZ_OP_FMOD, FZ_OP_HYPOT, FZ_OP_BITWISE_AND, FZ_OP_BITWISE_OR,
      FZ_OP_BITWISE_XOR, FZ_OP_SHL, FZ_OP_SHR};
  static const int weights[] = {6, 5, 6, 4, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1,
                                1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2};
  enum { NUM_CODES = sizeof codes / sizeof codes[0] };
  _Static_assert(sizeof weights / sizeof weights[0] == NUM_CODES,
                 "a weight per op");
  fz_opcode code = codes[weighted(g, weights, NUM_CODES)];
  unsigned flags = fz_op_table[code].flags;
  bool need_exact = (flags & (FZ_F_TO_BOOL | FZ_F_INT_ONLY)) ||
                    code == FZ_OP_MOD || code == FZ_OP_FMOD;
  fz_value *a = pick(g);
  if (need_exact && !inf(g, a)->exact)
    a = partner(g, a, true);
  if (!a)
    return NULL;
  fz_value *b = chance(g, 25) ? nice_literal(g, a) : partner(g, a, need_exact);
  if (!b)
    return NULL;
  if ((flags & FZ_F_INT_ONLY) && fz_dtype_is_float(a->type.dtype))
    a = mk_cast(g, a, FZ_I32);
  if ((flags & FZ_F_INT_ONLY) && b && fz_dtype_is_float(b->type.dtype))
    b = b->kind == FZ_VALUE_LITERAL ? lit_int(g, 3) : mk_cast(g, b, FZ_I32);
  if (!a || !b)
    return NULL;
  bool is_float = fz_dtype_is_float(a->type.dtype) ||
                  fz_dtype_is_float(b->type.dtype);
  switch (code) {
  case FZ_OP_ATAN2: /* a positive x keeps it away from its cut along x < 0 */
    a = widened(g, a);
    b = abs_plus(g, widened(g, b), 0.5);
    break;
  case FZ_OP_HYPOT:
    a = widened(g, a);
    b = widened(g, b);
    break;
  case FZ_OP_SHL: /* small counts, or one outside the width (gives 0) */
    if (b->kind == FZ_VALUE_LITERAL || chance(g, 70))
      b = lit_int(g, chance(g, 10) ? -1 : 1 + below(g, 3));
    break;
  case FZ_OP_DIV:
    if (b->kind == FZ_VALUE_LITERAL)
      b = lit_float(g, chance(g, 50) ? 0.5 : -2.0);
    else
      b = abs_plus(g, b, fz_dtype_is_float(b->type.dtype) ? 0.5 : 1.0);
    break;
  case FZ_OP_POW:
    if (!is_float) { /* integer power, small */
      b = lit_int(g, 2 + below(g, 2));
      if (inf(g, a)->bound > 16)
        a = tame(g, mk2(g, FZ_OP_MOD, a, lit_int(g, 5)));
    } else if (chance(g, 40)) {
      b = lit_float(g, 2.0); /* an exact square */
    } else {
      a = abs_plus(g, scaled(g, widened(g, a), 1), 1.0);
      b = b->kind == FZ_VALUE_LITERAL ? lit_float(g, chance(g, 50) ? 0.5 : -1.5)
                                      : scaled(g, b, 2);
    }
    break;
  case FZ_OP_MOD:
  case FZ_OP_FMOD:
    if (is_float) {
      static const double m[] = {0.5, 0.25, 1.0, 2.0, -0.5};
      b = lit_float(g, m[below(g, 5)]);
    } else if (b->kind == FZ_VALUE_LITERAL || chance(g, 50)) {
      static const int m[] = {3, 5, 7, -4};
      b = lit_int(g, m[below(g, 4)]);
    } else {
      b = abs_plus(g, b, 1.0);
    }
    break;
  default:
    break;
  }
  fz_value *ops[2] = {a, b};
  if (code != FZ_OP_DIV && code != FZ_OP_POW && code != FZ_OP_MOD &&
      code != FZ_OP_FMOD && code != FZ_OP_ATAN2 && code != FZ_OP_SHL &&
      code != FZ_OP_SHR && chance(g, 15)) {
    ops[0] = b; /* a literal or tensor on the left */
    ops[1] = a;
  }
  if (!fit(g, 2, ops))
    return NULL;
  return tame(g, mk(g, code, 2, ops, NULL));
}

/* A bool condition that fits `like`: a bool value, or a comparison of
 * an exact one with a literal. */
static fz_value *condition(gen *g, fz_value *like) {
  fz_value *c = partner(g, like, true);
  if (!c)
    return NULL;
  if (c->type.dtype == FZ_BOOL)
    return c;
  static const fz_opcode cmp[] = {FZ_OP_GT, FZ_OP_LT, FZ_OP_GE, FZ_OP_NE};
  fz_value *zero = fz_dtype_is_float(c->type.dtype) ? lit_float(g, 0.25)
                                                    : lit_int(g, 1);
  return mk2(g, cmp[below(g, 4)], c, zero);
}

static fz_value *act_ternary(gen *g) {
  static const fz_opcode codes[] = {FZ_OP_WHERE, FZ_OP_FMA, FZ_OP_CLAMP};
  fz_opcode code = codes[below(g, 3)];
  fz_value *a = pick(g);
  fz_value *ops[3];
  switch (code) {
  case FZ_OP_WHERE:
    ops[0] = condition(g, a);
    ops[1] = a;
    ops[2] = chance(g, 30) ? nice_literal(g, a) : partner(g, a, false);
    break;
  case FZ_OP_FMA:
    ops[0] = a;
    ops[1] = chance(g, 30) ? nice_literal(g, a) : partner(g, a, false);
    ops[2] = chance(g, 30) ? nice_literal(g, a) : partner(g, a, false);
    break;
  default: /* clamp between two literals, or a literal and a value */
    ops[0] = a;
    ops[1] = lit_float(g, -0.5);
    ops[2] = chance(g, 60) ? lit_float(g, 0.75) : partner(g, a, false);
    if (!fz_dtype_is_float(a->type.dtype) && chance(g, 50)) {
      ops[1] = lit_int(g, -2);
      ops[2] = lit_int(g, 3);
    }
    break;
  }
  if (!fit(g, 3, ops))
    return NULL;
  return tame(g, mk(g, code, 3, ops, NULL));
}

static fz_value *act_cast(gen *g) {
  fz_value *x = pick(g);
  fz_dtype d = random_dtype(g, false);
  if (d == x->type.dtype && chance(g, 90))
    d = d == FZ_F32 ? FZ_F16 : FZ_F32;
  return tame(g, mk_cast(g, x, d));
}

/* The target of a reshape: v's axes with expanded ones made plain. */
static void plain_shape(const fz_value *v, fz_type *t) {
  *t = (fz_type){.dtype = v->type.dtype, .rank = v->type.rank};
  for (int k = 0; k < v->type.rank; k++) {
    const fz_axis *a = &v->type.axes[k];
    t->axes[k] = a->kind == FZ_AXIS_BROADCAST && a->expanded
                     ? (fz_axis){.kind = FZ_AXIS_ITER, .extent = a->expanded_to}
                     : *a;
  }
}

static bool const_extent(const fz_axis *a, int64_t *value) {
  fz_extent e = fz_axis_extent(a);
  *value = e.value;
  return e.symbol < 0;
}

/* A reshape target being edited: axes and the base axis of each. */
typedef struct target {
  fz_type t;
  signed char base[FZ_MAX_RANK];
} target;

static void remove_axis(target *x, int k) {
  for (int i = k; i + 1 < x->t.rank; i++) {
    x->t.axes[i] = x->t.axes[i + 1];
    x->base[i] = x->base[i + 1];
  }
  x->t.rank--;
}

static void insert_axis(target *x, int k, int64_t extent) {
  for (int i = x->t.rank; i > k; i--) {
    x->t.axes[i] = x->t.axes[i - 1];
    x->base[i] = x->base[i - 1];
  }
  x->t.axes[k] = extent == 1 ? (fz_axis){.kind = FZ_AXIS_BROADCAST,
                                         .extent = fz_const_extent(1)}
                             : (fz_axis){.kind = FZ_AXIS_ITER,
                                         .extent = fz_const_extent(extent)};
  x->base[k] = -1;
  x->t.rank++;
}

/* Merge two adjacent constant axes, split a composite one, shuffle the
 * extents (a reinterpretation of the row-major order), or add a b1. */
static fz_value *act_reshape(gen *g) {
  fz_value *v = pick(g);
  target x;
  plain_shape(v, &x.t);
  memcpy(x.base, inf(g, v)->base, sizeof x.base);
  int rank = x.t.rank, k;
  int64_t c1, c2;
  switch (below(g, 4)) {
  case 0: { /* [A, B] -> [A*B] when both are constants or one is 1 */
    if (rank < 2)
      return NULL;
    k = below(g, rank - 1);
    bool k1 = const_extent(&x.t.axes[k], &c1);
    bool k2 = const_extent(&x.t.axes[k + 1], &c2);
    if (k1 && c1 == 1) {
      remove_axis(&x, k);
    } else if (k2 && c2 == 1) {
      remove_axis(&x, k + 1);
    } else if (k1 && k2) {
      remove_axis(&x, k + 1);
      x.t.axes[k] = (fz_axis){.kind = FZ_AXIS_ITER,
                              .extent = fz_const_extent(c1 * c2)};
      x.base[k] = -1;
    } else {
      return NULL;
    }
    break;
  }
  case 1: /* [C] -> [p, C/p] */
    k = below(g, rank);
    if (rank == 0 || rank >= MAX_VALUE_RANK ||
        !const_extent(&x.t.axes[k], &c1))
      return NULL;
    c2 = 0;
    for (int64_t q = 2; q * q <= c1; q++)
      if (c1 % q == 0 && (c2 == 0 || chance(g, 50)))
        c2 = q;
    if (c2 == 0)
      return NULL;
    x.t.axes[k].extent = fz_const_extent(c1 / c2);
    x.t.axes[k].kind = FZ_AXIS_ITER;
    x.base[k] = -1;
    insert_axis(&x, k, c2);
    break;
  case 2: /* shuffle */
    if (rank < 2)
      return NULL;
    for (int i = rank - 1; i > 0; i--) {
      int j = below(g, i + 1);
      fz_axis tmp = x.t.axes[i];
      x.t.axes[i] = x.t.axes[j];
      x.t.axes[j] = tmp;
    }
    memset(x.base, -1, sizeof x.base);
    break;
  default: /* a b1 anywhere */
    if (rank >= MAX_VALUE_RANK)
      return NULL;
    insert_axis(&x, below(g, rank + 1), 1);
    break;
  }
  if (fz_type_same_shape(&x.t, &v->type))
    return NULL;
  fz_value *r = mk_shape(g, FZ_OP_RESHAPE, v, &x.t);
  if (r)
    memcpy(inf(g, r)->base, x.base, sizeof x.base);
  return r;
}

static fz_value *act_permute(gen *g) {
  fz_value *v = pick(g);
  int rank = v->type.rank;
  if (rank < 2)
    return NULL;
  fz_attrs at = {0};
  for (int k = 0; k < rank; k++)
    at.perm[k] = k;
  while (true) {
    for (int i = rank - 1; i > 0; i--) {
      int j = below(g, i + 1), tmp = at.perm[i];
      at.perm[i] = at.perm[j];
      at.perm[j] = tmp;
    }
    bool identity = true;
    for (int k = 0; k < rank; k++)
      identity &= at.perm[k] == k;
    if (!identity)
      break;
  }
  return mk(g, FZ_OP_PERMUTE, 1, &v, &at);
}

/* squeeze size-1 axes, broadcast a new b1 axis, expand a b1 axis to its
 * base extent, or copy with set. */
/* v read back through an index along one of its base axes: index_select
 * by an iota (reversed where the extent is a constant), or gather by that
 * iota broadcast to v's shape. Every index is in range (the reference
 * refuses others), and the result holds v's values, rearranged. */
static fz_value *act_gather(gen *g, fz_value *v) {
  const fz_type *t = &v->type;
  const vinfo *I = inf(g, v);
  int k = t->rank > 0 ? below(g, t->rank) : -1;
  if (k < 0 || I->base[k] < 0 || t->axes[k].kind != FZ_AXIS_ITER)
    return NULL;
  fz_extent e = g->ext[I->base[k]];
  fz_type it = {.dtype = chance(g, 50) ? FZ_I64 : FZ_I32, .rank = 1};
  it.axes[0] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = e};
  fz_attrs at = {.shape = &it, .has_iota_start = true, .has_iota_step = true};
  at.iota_start.i = e.symbol < 0 && e.value > 0 ? e.value - 1 : 0;
  at.iota_step.i = e.symbol < 0 ? -1 : 1;
  fz_value *index = mk(g, FZ_OP_IOTA, 0, NULL, &at);
  if (!index)
    return NULL;
  inf(g, index)->base[0] = I->base[k];
  fz_opcode code = FZ_OP_INDEX_SELECT;
  if (chance(g, 50)) {
    int dims[FZ_MAX_RANK], nd = 0;
    for (int j = 0; j < t->rank; j++)
      if (j != k)
        dims[nd++] = j;
    index = nd ? mk_dims(g, FZ_OP_BROADCAST, index, nd, dims, false) : index;
    if (!index)
      return NULL;
    fz_type s = index->type;
    bool grow = false;
    for (int j = 0; j < t->rank; j++)
      if (j != k && !is_b1(&t->axes[j])) {
        s.axes[j].expanded = true;
        s.axes[j].expanded_to = fz_axis_extent(&t->axes[j]);
        grow = true;
      }
    index = grow ? mk_shape(g, FZ_OP_EXPAND, index, &s) : index;
    code = FZ_OP_GATHER;
  }
  fz_value *ops[2] = {v, index};
  fz_attrs ga = {.num_dims = 1, .dims = {k}};
  fz_value *r = index ? mk(g, code, 2, ops, &ga) : NULL;
  if (r)
    memcpy(inf(g, r)->base, I->base, sizeof I->base);
  return r;
}

static fz_value *act_shape(gen *g) {
  fz_value *v = pick(g);
  const fz_type *t = &v->type;
  const vinfo *I = inf(g, v);
  int dims[FZ_MAX_RANK], nd = 0;
  switch (below(g, 4)) {
  case 0:
    for (int k = 0; k < t->rank; k++) {
      int64_t c;
      if ((is_b1(&t->axes[k]) ||
           (t->axes[k].kind == FZ_AXIS_ITER && const_extent(&t->axes[k], &c) &&
            c == 1)) &&
          chance(g, 70))
        dims[nd++] = k;
    }
    return nd ? mk_dims(g, FZ_OP_SQUEEZE, v, nd, dims, false) : NULL;
  case 1:
    dims[0] = below(g, t->rank + 1);
    return mk_dims(g, FZ_OP_BROADCAST, v, 1, dims, false);
  case 2: {
    fz_type s = *t;
    s.has_layout = false;
    for (int k = 0; k < t->rank; k++)
      if (is_b1(&t->axes[k]) && I->base[k] >= 0 && chance(g, 70)) {
        s.axes[k].expanded = true;
        s.axes[k].expanded_to = g->ext[I->base[k]];
        nd++;
      }
    return nd ? mk_shape(g, FZ_OP_EXPAND, v, &s) : NULL;
  }
  default:
    if (chance(g, 40))
      return act_gather(g, v);
    return mk1(g, FZ_OP_SET, v);
  }
}

/* The resize ops, in round trips that keep the value's shape (so that
 * it still meets the others): along one constant axis of extent E,
 * pad(x[1:], low 1) with a small fill; cat of 2 or 3 slices of x and a
 * partner of its type; or x[::2] padded back at the end. */
static fz_value *act_resize(gen *g) {
  fz_value *v = pick(g);
  const fz_type *t = &v->type;
  int axis = -1;
  int64_t e = 0;
  for (int k = 0, seen = 0; k < t->rank; k++) {
    int64_t c;
    if (!is_b1(&t->axes[k]) && const_extent(&t->axes[k], &c) && c >= 3 &&
        below(g, ++seen) == 0) {
      axis = k;
      e = c;
    }
  }
  if (axis < 0)
    return NULL;
  fz_attrs at = {0};
  for (int k = 0; k < t->rank; k++) {
    at.resize.stop[k] = fz_axis_extent(&t->axes[k]);
    at.resize.step[k] = 1;
  }
  fz_value *r = NULL;
  int kind = below(g, 3);
  if (kind == 0) {
    at.resize.start[axis] = 1;
    fz_value *s = mk(g, FZ_OP_SLICE, 1, &v, &at);
    fz_attrs pa = {0};
    pa.resize.low[axis] = 1;
    double fill = chance(g, 50) ? 0.0 : 1.0;
    if (fz_scalar_of_double(fill, t->dtype, "fill", &pa.fill, NULL) == FZ_OK)
      r = s ? mk(g, FZ_OP_PAD, 1, &s, &pa) : NULL;
  } else if (kind == 1) {
    fz_value *w = partner(g, v, false);
    if (!w || !fz_type_same_shape(&w->type, t))
      w = v;
    int n = e >= 4 && chance(g, 50) ? 3 : 2;
    int64_t cut[4] = {0, 1 + below(g, (int)e - 2), e, e};
    if (n == 3)
      cut[2] = cut[1] + 1 + below(g, (int)(e - cut[1] - 1));
    fz_value *parts[3];
    for (int i = 0; i < n; i++) {
      fz_value *src = i == 1 ? w : v;
      at.resize.start[axis] = cut[i];
      at.resize.stop[axis] = fz_const_extent(cut[i + 1]);
      if (!(parts[i] = mk(g, FZ_OP_SLICE, 1, &src, &at)))
        return NULL;
    }
    fz_attrs ca = {.num_dims = 1, .dims = {axis}};
    r = mk(g, FZ_OP_CAT, n, parts, &ca);
  } else {
    at.resize.step[axis] = 2;
    fz_value *s = mk(g, FZ_OP_SLICE, 1, &v, &at);
    fz_attrs pa = {0};
    pa.resize.high[axis] = e - (e + 1) / 2;
    r = s ? mk(g, FZ_OP_PAD, 1, &s, &pa) : NULL;
  }
  if (r) /* the same shape as v, axis for axis */
    memcpy(inf(g, r)->base, inf(g, v)->base, sizeof inf(g, r)->base);
  return r;
}

/* A reduction over the fusion's reduced axes (or, in a mix fusion,
 * sometimes any), keepdim or not; prod only over a few values near 1. */
static fz_value *act_reduce(gen *g) {
  fz_value *x = NULL;
  for (int tries = 0; tries < 8 && !x; tries++) {
    fz_value *c = pick(g);
    if ((g->mix || !inf(g, c)->post) && c->type.rank > 0 &&
        varies_on_reduced(g, c))
      x = c;
  }
  if (!x)
    x = g->f->inputs[0];
  const vinfo *I = inf(g, x);
  bool unknown = false;
  for (int k = 0; k < x->type.rank; k++)
    unknown |= I->base[k] < 0 && !is_b1(&x->type.axes[k]);
  if (unknown && !(x = to_base(g, x)))
    return NULL;
  I = inf(g, x);
  int dims[FZ_MAX_RANK], nd = 0;
  bool any_axes = g->mix && chance(g, 25);
  for (int k = 0; k < x->type.rank; k++)
    if (any_axes ? chance(g, 50)
                 : I->base[k] >= 0 && ((g->reduce >> I->base[k]) & 1))
      dims[nd++] = k;
  if (nd == 0 && !(x = to_base(g, x)))
    return NULL;
  if (nd == 0)
    for (int i = 0; i < g->rank; i++)
      if ((g->reduce >> i) & 1)
        dims[nd++] = i;
  static const fz_opcode codes[] = {FZ_OP_SUM, FZ_OP_AMAX, FZ_OP_AMIN,
                                    FZ_OP_PROD};
  static const int weights[] = {55, 20, 15, 10};
  fz_opcode code = codes[weighted(g, weights, 4)];
  /* the position of the extreme instead, now and then (mk builds it only
   * from an exact operand: its i64 result is discontinuous) */
  if ((code == FZ_OP_AMAX || code == FZ_OP_AMIN) && chance(g, 30))
    code = code == FZ_OP_AMAX ? FZ_OP_ARGMAX : FZ_OP_ARGMIN;
  /* var and mean (Welford states) in place of some sums of floats; var
   * only of exact values: where its result is small (a small spread) an
   * operand's rounding error would be larger than the tolerance */
  if (code == FZ_OP_SUM && fz_dtype_is_float(x->type.dtype) && chance(g, 30))
    code = inf(g, x)->exact && chance(g, 50) ? FZ_OP_VAR : FZ_OP_MEAN;
  fz_attrs at = {.num_dims = nd};
  memcpy(at.dims, dims, sizeof dims);
  double n = reduced_count(g, x, &at);
  if (code == FZ_OP_PROD && (!fz_dtype_is_float(x->type.dtype) || n > 64))
    code = FZ_OP_SUM;
  if (code == FZ_OP_PROD) { /* values in [15/16, 17/16] */
    x = scaled(g, x, 1.0 / 16);
    x = mk2(g, FZ_OP_ADD, x, lit_float(g, 1.0));
  } else if (code == FZ_OP_SUM && x->type.dtype == FZ_F16 &&
             n * inf(g, x)->bound > dtype_limit(FZ_F16) / 2) {
    x = scaled(g, x, dtype_limit(FZ_F16) / 2 / n); /* far from inf */
  }
  if (!x)
    return NULL;
  fz_value *r = code == FZ_OP_VAR ? var_dims(g, x, nd, dims, chance(g, 50))
                                  : mk_dims(g, code, x, nd, dims, chance(g, 50));
  if (r) {
    inf(g, r)->post = true;
    g->num_reductions++;
  }
  return tame(g, r);
}

/* A value plus a symbol read (the size of a symbolic base axis, an i64
 * scalar read at run time). */
static fz_value *symbol_sum(gen *g) {
  int i = below(g, g->rank);
  if (g->ext[i].symbol < 0)
    return NULL;
  fz_attrs at = {.symbol = g->ext[i].symbol};
  fz_value *s = mk(g, FZ_OP_SYMBOL, 0, NULL, &at);
  return s ? tame(g, mk2(g, FZ_OP_ADD, pick(g), s)) : NULL;
}

/* rand or randn of a base-like shape from literal seeds and offsets
 * (large enough to reach the high words of Philox's key and counter). */
static fz_value *random_draw(gen *g) {
  fz_type t = {.dtype = random_dtype(g, true), .rank = g->rank};
  for (int i = 0; i < g->rank; i++)
    t.axes[i] = chance(g, 20) ? (fz_axis){.kind = FZ_AXIS_BROADCAST,
                                          .extent = fz_const_extent(1)}
                              : (fz_axis){.kind = FZ_AXIS_ITER,
                                          .extent = g->ext[i]};
  fz_attrs at = {.shape = &t};
  fz_value *ops[2] = {lit_int(g, (int64_t)below(g, 1 << 30) * 4099 - 12345),
                      lit_int(g, chance(g, 50) ? below(g, 4)
                                               : (int64_t)below(g, 1 << 30)
                                                     << 20)};
  fz_value *r =
      mk(g, chance(g, 70) ? FZ_OP_RAND : FZ_OP_RANDN, 2, ops, &at);
  if (!r)
    return NULL;
  set_base_identity(g, r);
  return tame(g, r); /* randn reaches 9 */
}

/* iota along one base axis, full of a base-like shape, a random draw, or
 * a symbol read added to a value. */
static fz_value *act_generator(gen *g) {
  if (chance(g, 25))
    return symbol_sum(g);
  if (chance(g, 25))
    return random_draw(g);
  if (chance(g, 50)) {
    int i = below(g, g->rank);
    fz_dtype d = random_dtype(g, false);
    if (d == FZ_BOOL)
      d = FZ_I32;
    fz_type t = {.dtype = d, .rank = 1};
    t.axes[0] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = g->ext[i]};
    fz_attrs at = {.shape = &t};
    at.has_iota_start = chance(g, 50);
    at.has_iota_step = chance(g, 50);
    int64_t start = below(g, 7) - 3, step = chance(g, 50) ? 2 : -1;
    if (fz_dtype_is_float(d)) {
      at.iota_start.f = at.has_iota_start ? (double)start : 0.0;
      at.iota_step.f = at.has_iota_step ? (double)step * 0.5 : 1.0;
    } else {
      at.iota_start.i = at.has_iota_start ? start : 0;
      at.iota_step.i = at.has_iota_step ? step : 1;
    }
    fz_value *r = mk(g, FZ_OP_IOTA, 0, NULL, &at);
    if (!r)
      return NULL;
    inf(g, r)->base[0] = (signed char)i;
    return tame(g, to_base(g, r));
  }
  fz_type t = {.dtype = random_dtype(g, false), .rank = g->rank};
  for (int i = 0; i < g->rank; i++)
    t.axes[i] = chance(g, 30) ? (fz_axis){.kind = FZ_AXIS_BROADCAST,
                                          .extent = fz_const_extent(1)}
                              : (fz_axis){.kind = FZ_AXIS_ITER,
                                          .extent = g->ext[i]};
  fz_attrs at = {.shape = &t};
  if (fz_dtype_is_float(t.dtype))
    at.fill.f = chance(g, 50) ? 0.5 : -1.5;
  else
    at.fill.i = t.dtype == FZ_BOOL ? 1 : 3;
  fz_value *r = mk(g, FZ_OP_FULL, 0, NULL, &at);
  if (r)
    set_base_identity(g, r);
  return r;
}

/* ---- the base space and the inputs ---------------------------------- */

static void make_base(gen *g) {
  static const int ranks[] = {15, 40, 30, 15};
  static const char *names[] = {"N", "M", "K", "L"};
  static const int constants[] = {1, 2, 3, 4, 5, 6, 7, 8, 9,
                                  12, 13, 16, 24, 31, 32, 37, 40};
  g->rank = 1 + weighted(g, ranks, 4);
  int64_t product = 1;
  for (int i = 0; i < g->rank; i++) {
    if (chance(g, 40)) {
      int c = constants[below(g, (int)(sizeof constants / sizeof(int)))];
      if (c <= g->o.max_extent && product * c <= g->o.max_elements) {
        product *= c;
        g->ext[i] = fz_const_extent(c);
        continue;
      }
    }
    int j = i > 0 && chance(g, 10) ? below(g, i) : i; /* sometimes shared */
    if (j != i && g->ext[j].symbol >= 0)
      g->ext[i] = g->ext[j];
    else
      g->ext[i] = fz_symbol_extent(fz_fusion_symbol(g->f, names[i]));
  }
  if (g->o.allow_reductions && chance(g, 85)) {
    if (chance(g, 10))
      g->reduce = (1u << g->rank) - 1;
    else if (g->rank > 1 && chance(g, 30))
      g->reduce = (unsigned)(1 + below(g, (1 << g->rank) - 1));
    else
      g->reduce = 1u << below(g, g->rank);
    g->mix = chance(g, 20);
  }
}

/* Views of the base space: the first input spans all of it (so every
 * symbol is bound by an input); the others may have b1 or expanded axes,
 * b1 along the reduced axes (an epilogue operand), or fewer axes. */
static void make_inputs(gen *g) {
  static const int counts[] = {35, 40, 25};
  int n = 1 + weighted(g, counts, 3);
  for (int i = 0; i < n; i++) {
    fz_type t = {.dtype = random_dtype(g, i == 0), .rank = g->rank};
    vinfo I = {.exact = true,
               .bound = fz_dtype_is_integer(t.dtype) ? 8 : 1};
    for (int k = 0; k < g->rank; k++) {
      t.axes[k] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = g->ext[k]};
      I.base[k] = (signed char)k;
      int r = below(g, 100);
      if (i == 0 || r >= 22)
        continue;
      t.axes[k] = (fz_axis){.kind = FZ_AXIS_BROADCAST,
                            .extent = fz_const_extent(1)};
      if (r < 8) {
        t.axes[k].expanded = true;
        t.axes[k].expanded_to = g->ext[k];
      }
    }
    if (i > 0 && g->reduce && chance(g, 35))
      for (int k = 0; k < g->rank; k++)
        if ((g->reduce >> k) & 1)
          t.axes[k] = (fz_axis){.kind = FZ_AXIS_BROADCAST,
                                .extent = fz_const_extent(1)};
    if (i > 0 && chance(g, 25)) { /* drop the b1 axes, keeping one axis */
      int r = 0;
      for (int k = 0; k < t.rank; k++)
        if (!is_b1(&t.axes[k]) || (r == 0 && k == t.rank - 1)) {
          t.axes[r] = t.axes[k];
          I.base[r++] = I.base[k];
        }
      t.rank = r;
    }
    fz_type_set_row_major(&t);
    if (t.rank >= 2 && chance(g, 45))
      for (int k = t.rank - 1; k > 0; k--) {
        int j = below(g, k + 1), tmp = t.alloc_order[k];
        t.alloc_order[k] = t.alloc_order[j];
        t.alloc_order[j] = tmp;
      }
    if (chance(g, 10))
      t.contiguous[below(g, t.rank)] = false;
    char name[16];
    snprintf(name, sizeof name, "in%d", i);
    fz_value *v = fz_add_input(g->f, name, &t);
    *inf(g, v) = I;
    pool_add(g, v);
  }
}

/* ---- outputs ----------------------------------------------------------- */

/* v, cast so that its dtype is no finer than the error it carries. */
static fz_value *comparable(gen *g, fz_value *v) {
  const vinfo *I = inf(g, v);
  if (I->exact || dtype_level(v->type.dtype) >= I->level)
    return v;
  static const fz_dtype by_level[] = {FZ_F64, FZ_F64, FZ_F32, FZ_F16,
                                      FZ_BF16};
  return mk_cast(g, v, by_level[I->level]);
}

static bool is_output(const fz_fusion *f, const fz_value *v) {
  for (int i = 0; i < f->num_outputs; i++)
    if (f->outputs[i] == v)
      return true;
  return false;
}

/* Joins unused results two by two until at most `want` are left (where
 * they may meet), so that no op the generator built is dead. */
static void join_sinks(gen *g, int want) {
  static const fz_opcode codes[] = {FZ_OP_ADD, FZ_OP_MUL, FZ_OP_MAX,
                                    FZ_OP_SUB, FZ_OP_MIN};
  g->op_limit += 12;
  for (int tries = 0; tries < 12; tries++) {
    fz_value *sinks[MAX_POOL];
    int n = 0;
    for (int i = 0; i < g->num_pool; i++)
      if (is_sink(g, g->pool[i]))
        sinks[n++] = g->pool[i];
    if (n <= want)
      return;
    int i = below(g, n), j = below(g, n - 1);
    j += j >= i;
    if (!pair_ok(g, sinks[i], sinks[j]))
      continue;
    fz_value *ops[2] = {sinks[i], sinks[j]};
    if (fit(g, 2, ops))
      tame(g, mk(g, codes[below(g, 5)], 2, ops, NULL));
  }
}

/* The base axes a value varies along (~0u: some axis is none of them). */
static unsigned span_of(gen *g, const fz_value *v) {
  unsigned span = 0;
  const vinfo *I = inf(g, v);
  for (int k = 0; k < v->type.rank; k++) {
    if (is_b1(&v->type.axes[k]))
      continue;
    if (I->base[k] < 0)
      return ~0u;
    span |= 1u << I->base[k];
  }
  return span;
}

/* Outputs a scheduler can write together: the same space as the first
 * output, or (reduction fusions) the full or the kept space. */
static bool fits_first_output(gen *g, const fz_value *v) {
  if (g->f->num_outputs == 0)
    return true;
  unsigned span = span_of(g, v), full = (1u << g->rank) - 1;
  return span == span_of(g, g->f->outputs[0]) ||
         (g->reduce && (span == full || span == (full & ~g->reduce)));
}

/* Unused results first, newest first, then any results; usually all of
 * one space (else segmentation's business). */
static void make_outputs(gen *g) {
  static const int counts[] = {60, 25, 15};
  int want = 1 + weighted(g, counts, 3);
  bool one_space = chance(g, 75);
  join_sinks(g, one_space ? 1 : want);
  g->op_limit += 8; /* room for the casts below */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = g->num_pool - 1; i >= 0 && g->f->num_outputs < want; i--) {
      fz_value *v = g->pool[i];
      if (v->kind != FZ_VALUE_RESULT || is_output(g->f, v) ||
          (pass == 0 && fz_count_uses(g->f, v) > 0) ||
          (pass == 1 && !chance(g, 30)) ||
          (one_space && !fits_first_output(g, v)))
        continue;
      fz_value *out = comparable(g, v);
      if (!out || is_output(g->f, out))
        continue;
      if (out->type.rank >= 2 && chance(g, 25)) {
        int order[FZ_MAX_RANK];
        for (int k = 0; k < out->type.rank; k++)
          order[k] = k;
        for (int k = out->type.rank - 1; k > 0; k--) {
          int j = below(g, k + 1), tmp = order[k];
          order[k] = order[j];
          order[j] = tmp;
        }
        fz_value_set_layout(out, order, NULL, NULL);
      }
      fz_add_output(g->f, out, NULL);
    }
  }
}

/* ---- entry points ------------------------------------------------------ */

fz_fusion *fz_random_fusion(uint64_t seed, const fz_random_options *opts) {
  char name[48];
  snprintf(name, sizeof name, "random_%llu", (unsigned long long)seed);
  gen g = {.o = with_defaults(opts), .rng = seed};
  g.f = fz_fusion_create(name);
  if (!g.f)
    return NULL;
  make_base(&g);
  make_inputs(&g);
  int target = 3 + below(&g, g.o.max_ops - 2);
  g.op_limit = 2 * target + 12;
  /* unary, binary, ternary, cast, reshape, permute, other shape ops,
   * reduction, iota/full/symbol, resize */
  int weights[] = {20, 30, 9, 7, 6, 5, 8, g.reduce ? 12 : 0, 3, 4};
  for (int tries = 0; g.f->num_ops < target && tries < 400; tries++) {
    int action = weighted(&g, weights, 10);
    if (g.reduce && !g.num_reductions && g.f->num_ops >= target / 3)
      action = 7; /* every reduction fusion reduces */
    switch (action) {
    case 0: act_unary(&g); break;
    case 1: act_binary(&g); break;
    case 2: act_ternary(&g); break;
    case 3: act_cast(&g); break;
    case 4: act_reshape(&g); break;
    case 5: act_permute(&g); break;
    case 6: act_shape(&g); break;
    case 7: act_reduce(&g); break;
    case 9: act_resize(&g); break;
    default: act_generator(&g); break;
    }
  }
  make_outputs(&g);
  if (g.f->num_outputs == 0) /* nothing was built: return a copy */
    fz_add_output(g.f, fz_set(g.f, g.f->inputs[0], NULL), NULL);
  fz_remove_dead_ops(g.f);
  free(g.info);
  return g.f;
}

static int64_t largest_tensor(const fz_fusion *f, const int64_t *values) {
  int64_t most = 0;
  for (int i = 0; i < f->num_inputs + f->num_ops; i++) {
    const fz_value *v =
        i < f->num_inputs ? f->inputs[i] : f->ops[i - f->num_inputs]->result;
    int64_t n = 1;
    for (int k = 0; k < v->type.rank; k++) {
      int64_t s = fz_axis_size(&v->type.axes[k], values);
      n = s > 0 && n > INT64_MAX / s ? INT64_MAX : n * s;
    }
    if (n > most)
      most = n;
  }
  return most;
}

void fz_random_bindings(const fz_fusion *f, uint64_t seed,
                        const fz_random_options *opts, int64_t *values) {
  static const int primes[] = {2, 3, 5, 7, 11, 13, 17, 31, 37, 61, 127, 251};
  fz_random_options o = with_defaults(opts);
  gen g = {.o = o, .rng = seed ^ 0x5151f00dcafe1234ull};
  int64_t max = o.max_extent;
  for (int s = 0; s < f->num_symbols; s++) {
    int64_t v;
    int kind = below(&g, 4);
    if (kind == 0) {
      v = 1 + below(&g, 4);
    } else if (kind == 1) {
      int n = 0;
      while (n < 12 && primes[n] <= max)
        n++;
      v = n ? primes[below(&g, n)] : 1;
    } else if (kind == 2) {
      int bits = 0;
      while ((int64_t)2 << bits <= max)
        bits++;
      v = (int64_t)1 << below(&g, bits + 1);
    } else {
      v = 1 + (int64_t)(fz_splitmix64(&g.rng) % (uint64_t)max);
    }
    values[s] = v;
  }
  /* halve the largest symbols until every tensor fits */
  while (largest_tensor(f, values) > o.max_elements) {
    int big = -1;
    for (int s = 0; s < f->num_symbols; s++)
      if (values[s] > 1 && (big < 0 || values[s] > values[big]))
        big = s;
    if (big < 0)
      break;
    values[big] = (values[big] + 1) / 2;
  }
}
