/* interp_scalar.c - what one element means: rounding to each dtype, the
 * conversions between dtypes, and the math of every pointwise op.
 *
 * The interpreter is the oracle the GPU is checked against, so each rule
 * here is the exact one a GPU store or conversion follows, written out in
 * plain double and int64 arithmetic:
 *  - f16 and bf16 are rounded straight from double by one generic routine
 *    (round to nearest even with the format's precision and exponent range,
 *    gradual underflow, overflow to inf), never through float, because
 *    double -> float -> half rounds twice and is wrong on rare ties;
 *  - integers wrap through uint64 so that overflow is defined behaviour;
 *  - float -> int conversions saturate and send NaN to 0 (cvt.rzi.sat).
 * Ops compute in double on operands already converted to the op's compute
 * dtype; interp.c rounds the result to the result dtype.
 */
#include "interp.h"

#include <math.h>

/* ---- floating-point formats ---------------------------------------------- */

typedef struct fmt {
  int precision; /* significand bits, including the implicit one */
  int emin;      /* exponent of the smallest normal number */
  int emax;      /* exponent of the largest finite number */
  int mant_bits; /* stored fraction bits */
  uint16_t qnan, inf;
} fmt;

static const fmt F16_FMT = {11, -14, 15, 10, 0x7e00, 0x7c00};
static const fmt BF16_FMT = {8, -126, 127, 7, 0x7fc0, 0x7f80};

/* v rounded to the nearest number of the format, ties to even. Scaling by
 * a power of two is exact in double, so nearbyint does the one rounding. */
static double round_fmt(double v, const fmt *f) {
  if (!isfinite(v) || v == 0)
    return v;
  double a = fabs(v);
  int e;
  frexp(a, &e); /* a = m * 2^e with m in [0.5, 1) */
  int exp = e - 1;
  if (exp < f->emin)
    exp = f->emin; /* subnormal: the quantum stops shrinking */
  double quantum = ldexp(1.0, exp - f->precision + 1);
  double r = nearbyint(a / quantum) * quantum;
  double max = ldexp(2.0 - ldexp(1.0, 1 - f->precision), f->emax);
  if (r > max)
    r = INFINITY;
  return copysign(r, v);
}

static uint16_t encode(double v, const fmt *f) {
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  if (isnan(v))
    return sign | f->qnan;
  double r = fabs(round_fmt(v, f));
  if (isinf(r))
    return sign | f->inf;
  double min_normal = ldexp(1.0, f->emin);
  if (r < min_normal) /* subnormal (or zero): a multiple of the quantum */
    return sign | (uint16_t)ldexp(r, f->precision - 1 - f->emin);
  int e;
  double m = frexp(r, &e);
  int bias = 1 - f->emin;
  uint16_t field = (uint16_t)((e - 1 + bias) << f->mant_bits);
  uint16_t frac = (uint16_t)ldexp(2.0 * m - 1.0, f->mant_bits);
  return sign | field | frac;
}

static double decode(uint16_t bits, const fmt *f) {
  int exp_bits = 15 - f->mant_bits;
  unsigned man = bits & ((1u << f->mant_bits) - 1);
  unsigned exp = (bits >> f->mant_bits) & ((1u << exp_bits) - 1);
  int bias = 1 - f->emin;
  double r;
  if (exp == 0)
    r = ldexp((double)man, f->emin - f->mant_bits);
  else if (exp == (1u << exp_bits) - 1)
    r = man ? NAN : INFINITY;
  else
    r = ldexp((double)(man | (1u << f->mant_bits)),
              (int)exp - bias - f->mant_bits);
  return (bits & 0x8000) ? -r : r;
}

uint16_t fz_f16_from_double(double v) { return encode(v, &F16_FMT); }
double fz_f16_to_double(uint16_t bits) { return decode(bits, &F16_FMT); }
uint16_t fz_bf16_from_double(double v) { return encode(v, &BF16_FMT); }
double fz_bf16_to_double(uint16_t bits) { return decode(bits, &BF16_FMT); }

/* ---- integers ------------------------------------------------------------ */

/* uint64 -> int64 two's complement, without implementation-defined casts. */
static int64_t to_signed(uint64_t u) {
  return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static int64_t int_min(fz_dtype d) {
  switch (d) {
  case FZ_I8:
    return INT8_MIN;
  case FZ_I32:
    return INT32_MIN;
  case FZ_BOOL:
    return 0;
  default:
    return INT64_MIN;
  }
}

static int64_t int_max(fz_dtype d) {
  switch (d) {
  case FZ_I8:
    return INT8_MAX;
  case FZ_I32:
    return INT32_MAX;
  case FZ_BOOL:
    return 1;
  default:
    return INT64_MAX;
  }
}

int64_t fz_interp_wrap_int(int64_t v, fz_dtype d) {
  unsigned bits;
  switch (d) {
  case FZ_BOOL:
    return v != 0;
  case FZ_I8:
    bits = 8;
    break;
  case FZ_I32:
    bits = 32;
    break;
  default:
    return v;
  }
  uint64_t mask = (UINT64_C(1) << bits) - 1, sign = UINT64_C(1) << (bits - 1);
  uint64_t u = (uint64_t)v & mask;
  return u & sign ? to_signed(u | ~mask) : (int64_t)u;
}

int64_t fz_interp_float_to_int(double v, fz_dtype d) {
  if (d == FZ_BOOL)
    return v != 0; /* NaN is nonzero, as in PyTorch */
  if (isnan(v))
    return 0;
  double t = trunc(v);
  int64_t lo = int_min(d), hi = int_max(d);
  /* (double)INT64_MAX is 2^63, so >= catches everything not below it. */
  if (t <= (double)lo)
    return lo;
  if (t >= (double)hi)
    return hi;
  return (int64_t)t;
}

double fz_interp_int_to_float(int64_t v, fz_dtype d) {
  switch (d) {
  case FZ_F64:
    return (double)v;
  case FZ_F32:
    return (double)(float)v;
  case FZ_F16:
  case FZ_BF16: {
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    double m;
    if (u < (UINT64_C(1) << 53)) {
      m = (double)u; /* exact */
    } else {
      /* Round to odd into 53 bits (keep a sticky bit for what is shifted
       * out): a later rounding to fewer than 52 bits is then correct. */
      int s = 0;
      while ((u >> s) >= (UINT64_C(1) << 53))
        s++;
      uint64_t kept = u >> s;
      if (u & ((UINT64_C(1) << s) - 1))
        kept |= 1;
      m = ldexp((double)kept, s);
    }
    return fz_round_to_dtype(v < 0 ? -m : m, d);
  }
  case FZ_BOOL:
    return v != 0;
  default:
    return (double)v;
  }
}

double fz_round_to_dtype(double v, fz_dtype d) {
  switch (d) {
  case FZ_F64:
    return v;
  case FZ_F32:
    return (double)(float)v;
  case FZ_F16:
    return round_fmt(v, &F16_FMT);
  case FZ_BF16:
    return round_fmt(v, &BF16_FMT);
  default: /* integers and bool: the float -> int conversion */
    return (double)fz_interp_float_to_int(v, d);
  }
}

/* ---- pointwise math ------------------------------------------------------ */

static double fmax_nan(double a, double b) {
  if (isnan(a) || isnan(b))
    return a + b; /* a quiet NaN */
  return a > b ? a : b;
}

static double fmin_nan(double a, double b) {
  if (isnan(a) || isnan(b))
    return a + b;
  return a < b ? a : b;
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The inverse of erf, which C lacks. A first guess within about 2e-3
 * (S. Winitzki, "A handy approximation for the error function and its
 * inverse", 2008: a = 0.147 in his formula) is refined by Halley steps on
 * erf(x) - y, which converge cubically: x -= u / (1 + x*u) with
 * u = (erf(x) - y) / erf'(x). For |y| > 0.5 the residual is formed as
 * (1 - |y|) - erfc(x), both exact or accurate where erf(x) - y would
 * cancel, so the tails keep their relative accuracy. */
static double erfinv(double y) {
  if (isnan(y) || y == 0)
    return y;
  double t = fabs(y);
  if (t > 1)
    return NAN;
  if (t == 1)
    return copysign(INFINITY, y);
  const double a = 0.147, two_over_sqrt_pi = 1.1283791670955126;
  double x;
  if (t < 1e-3) {
    x = t / two_over_sqrt_pi; /* erf(x) = 2x/sqrt(pi) + O(x^3) */
  } else {
    double l = log1p(-t * t);
    double c = 2 / (3.141592653589793 * a) + l / 2;
    x = sqrt(sqrt(c * c - l / a) - c);
  }
  double tail = 1 - t; /* exact for t >= 0.5 */
  for (int i = 0; i < 6; i++) {
    double r = t <= 0.5 ? erf(x) - t : tail - erfc(x);
    double u = r / (two_over_sqrt_pi * exp(-x * x));
    double step = u / (1 + x * u);
    x -= step;
    if (fabs(step) <= 0x1p-60 * x)
      break;
  }
  return copysign(x, y);
}

/* PyTorch's sign: (0 < a) - (a < 0), so NaN and -0.0 give +0.0. */
static double sign_of(double a) { return (double)((0 < a) - (a < 0)); }

double fz_interp_float_op(fz_opcode code, double a, double b, double c) {
  switch (code) {
  case FZ_OP_NEG:
    return -a;
  case FZ_OP_ABS:
    return fabs(a);
  case FZ_OP_EXP:
    return exp(a);
  case FZ_OP_EXP2:
    return exp2(a);
  case FZ_OP_LOG:
    return log(a);
  case FZ_OP_LOG2:
    return log2(a);
  case FZ_OP_SQRT:
    return sqrt(a);
  case FZ_OP_RSQRT:
    return 1.0 / sqrt(a);
  case FZ_OP_RECIPROCAL:
    return 1.0 / a;
  case FZ_OP_SIN:
    return sin(a);
  case FZ_OP_COS:
    return cos(a);
  case FZ_OP_TANH:
    return tanh(a);
  case FZ_OP_SIGMOID:
    return sigmoid(a);
  case FZ_OP_ERF:
    return erf(a);
  case FZ_OP_RELU:
    return isnan(a) ? a : a > 0 ? a : 0.0;
  case FZ_OP_GELU:
    return 0.5 * a * (1.0 + erf(a / sqrt(2.0)));
  case FZ_OP_SILU:
    return a * sigmoid(a);
  case FZ_OP_FLOOR:
    return floor(a);
  case FZ_OP_CEIL:
    return ceil(a);
  case FZ_OP_ROUND:
    return nearbyint(a); /* the default rounding mode: half to even */
  case FZ_OP_LOG1P:
    return log1p(a);
  case FZ_OP_EXPM1:
    return expm1(a);
  case FZ_OP_TAN:
    return tan(a);
  case FZ_OP_ATAN:
    return atan(a);
  case FZ_OP_ASIN:
    return asin(a);
  case FZ_OP_ACOS:
    return acos(a);
  case FZ_OP_SINH:
    return sinh(a);
  case FZ_OP_COSH:
    return cosh(a);
  case FZ_OP_ASINH:
    return asinh(a);
  case FZ_OP_ACOSH:
    return acosh(a);
  case FZ_OP_ATANH:
    return atanh(a);
  case FZ_OP_ERFC:
    return erfc(a);
  case FZ_OP_ERFINV:
    return erfinv(a);
  case FZ_OP_LGAMMA:
    return lgamma(a);
  case FZ_OP_TRUNC:
    return trunc(a);
  case FZ_OP_SIGN:
    return sign_of(a);
  case FZ_OP_FRAC:
    return a - trunc(a); /* exact; NaN for infinities, as in PyTorch */
  case FZ_OP_ISINF:
    return isinf(a) != 0;
  case FZ_OP_ISFINITE:
    return isfinite(a) != 0;
  case FZ_OP_SIGNBIT:
    return signbit(a) != 0;
  case FZ_OP_ATAN2:
    return atan2(a, b);
  case FZ_OP_FMOD:
    return fmod(a, b);
  case FZ_OP_HYPOT:
    return hypot(a, b);
  case FZ_OP_ADD:
    return a + b;
  case FZ_OP_SUB:
    return a - b;
  case FZ_OP_MUL:
    return a * b;
  case FZ_OP_DIV:
    return a / b;
  case FZ_OP_POW:
    return pow(a, b);
  case FZ_OP_MAX:
    return fmax_nan(a, b);
  case FZ_OP_MIN:
    return fmin_nan(a, b);
  case FZ_OP_MOD: {
    /* PyTorch's remainder: fmod is exact; move it to the divisor's sign. */
    double r = fmod(a, b);
    if (r != 0 && (b < 0) != (r < 0))
      r += b;
    return r;
  }
  case FZ_OP_EQ:
    return a == b;
  case FZ_OP_NE:
    return a != b;
  case FZ_OP_LT:
    return a < b;
  case FZ_OP_LE:
    return a <= b;
  case FZ_OP_GT:
    return a > b;
  case FZ_OP_GE:
    return a >= b;
  case FZ_OP_FMA:
    return fma(a, b, c);
  case FZ_OP_CLAMP:
    return fmin_nan(fmax_nan(a, b), c);
  default:
    FZ_DIE("%s is not a float pointwise op", fz_op_table[code].name);
  }
}

/* a^b for b >= 0 by squaring, wrapping like repeated multiplication. */
static int64_t int_pow(int64_t a, int64_t b) {
  if (b < 0) {
    if (a == 1)
      return 1;
    if (a == -1)
      return (b & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, base = (uint64_t)a;
  for (uint64_t e = (uint64_t)b; e; e >>= 1) {
    if (e & 1)
      result *= base;
    base *= base;
  }
  return to_signed(result);
}

static int64_t int_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) /* -1 also avoids INT64_MIN % -1 */
    return 0;
  int64_t r = a % b;
  if (r != 0 && (r < 0) != (b < 0))
    r += b;
  return r;
}

/* C's truncated remainder (PyTorch's fmod); 0 for a divisor of 0 as for
 * mod, and for -1, which also keeps INT64_MIN % -1 out of C's %. */
static int64_t int_fmod(int64_t a, int64_t b) {
  if (b == 0 || b == -1)
    return 0;
  return a % b;
}

/* a >> n with the sign filling in, for 0 <= n < 64, without C's
 * implementation-defined shift of a negative number. */
static int64_t arithmetic_shr(int64_t a, int n) {
  return a < 0 ? ~(int64_t)(~(uint64_t)a >> n) : (int64_t)((uint64_t)a >> n);
}

int64_t fz_interp_shift(fz_opcode code, int64_t a, int64_t n, fz_dtype d) {
  int bits = (int)fz_dtype_size(d) * 8;
  if (code == FZ_OP_SHL)
    return n < 0 || n >= bits ? 0
                              : fz_interp_wrap_int(
                                    to_signed((uint64_t)a << n), d);
  return arithmetic_shr(a, n < 0 || n >= bits - 1 ? bits - 1 : (int)n);
}

int64_t fz_interp_int_op(fz_opcode code, int64_t a, int64_t b, int64_t c) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b, uc = (uint64_t)c;
  switch (code) {
  case FZ_OP_NEG:
    return to_signed(0 - ua);
  case FZ_OP_ABS:
    return a < 0 ? to_signed(0 - ua) : a;
  case FZ_OP_RELU:
    return a > 0 ? a : 0;
  case FZ_OP_FLOOR:
  case FZ_OP_CEIL:
  case FZ_OP_ROUND:
  case FZ_OP_TRUNC:
    return a;
  case FZ_OP_SIGN:
    return (a > 0) - (a < 0);
  case FZ_OP_BITWISE_NOT:
    return ~a;
  case FZ_OP_BITWISE_AND:
    return a & b;
  case FZ_OP_BITWISE_OR:
    return a | b;
  case FZ_OP_BITWISE_XOR:
    return a ^ b;
  case FZ_OP_FMOD:
    return int_fmod(a, b);
  case FZ_OP_ADD:
    return to_signed(ua + ub);
  case FZ_OP_SUB:
    return to_signed(ua - ub);
  case FZ_OP_MUL:
    return to_signed(ua * ub);
  case FZ_OP_POW:
    return int_pow(a, b);
  case FZ_OP_MAX:
    return a > b ? a : b;
  case FZ_OP_MIN:
    return a < b ? a : b;
  case FZ_OP_MOD:
    return int_mod(a, b);
  case FZ_OP_EQ:
    return a == b;
  case FZ_OP_NE:
    return a != b;
  case FZ_OP_LT:
    return a < b;
  case FZ_OP_LE:
    return a <= b;
  case FZ_OP_GT:
    return a > b;
  case FZ_OP_GE:
    return a >= b;
  case FZ_OP_FMA:
    return to_signed(ua * ub + uc);
  case FZ_OP_CLAMP: {
    int64_t lo = a > b ? a : b;
    return lo < c ? lo : c;
  }
  default:
    FZ_DIE("%s is not an integer pointwise op", fz_op_table[code].name);
  }
}
