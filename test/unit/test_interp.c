/* test_interp.c - the reference interpreter against hand-computed results.
 *
 * The interpreter is the oracle for every GPU test, so each rule of the
 * Semantics list is pinned here at a few points, including the edge cases
 * (NaN, inf, ties, overflow, saturation) where implementations differ.
 * Fusions are written in the text format; inputs are small literal arrays.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

/* ---- helpers ------------------------------------------------------------- */

static fz_status interp(const char *text, fz_host_tensor *in, int nin,
                        fz_host_tensor *out, int nout, fz_error *err) {
  fz_fusion *f = test_parse(text);
  fz_status st = fz_interpret(f, in, nin, out, nout, err);
  fz_fusion_destroy(f);
  return st;
}

static void run_ok(const char *text, fz_host_tensor *in, int nin,
                   fz_host_tensor *out, int nout) {
  fz_error err = {0};
  fz_status st = interp(text, in, nin, out, nout, &err);
  ck_assert_msg(st == FZ_OK, "interpret failed: %s", err.message);
}

static void run_fails(const char *text, fz_host_tensor *in, int nin,
                      fz_host_tensor *out, int nout, fz_status want,
                      const char *needle) {
  fz_error err = {0};
  fz_status st = interp(text, in, nin, out, nout, &err);
  ck_assert_msg(st == want, "got %s (%s), want %s", fz_status_name(st),
                err.message, fz_status_name(want));
  ck_assert_msg(strstr(err.message, needle), "message \"%s\" lacks \"%s\"",
                err.message, needle);
}

static fz_dtype dtype_named(const char *name) {
  for (int d = 0; d < FZ_NUM_DTYPES; d++)
    if (strcmp(fz_dtype_name((fz_dtype)d), name) == 0)
      return (fz_dtype)d;
  ck_abort_msg("no dtype %s", name);
  return FZ_F32;
}

/* One element of any dtype, to and from double (ints through int64). */
typedef union cell {
  double f64;
  float f32;
  uint16_t h;
  int64_t i64;
  int32_t i32;
  int8_t i8;
  uint8_t b;
} cell;

static cell cell_of(fz_dtype d, double v) {
  cell c;
  memset(&c, 0, sizeof c);
  switch (d) {
  case FZ_F64:
    c.f64 = v;
    break;
  case FZ_F32:
    c.f32 = (float)v;
    break;
  case FZ_F16:
    c.h = fz_f16_from_double(v);
    break;
  case FZ_BF16:
    c.h = fz_bf16_from_double(v);
    break;
  case FZ_I64:
    c.i64 = (int64_t)v;
    break;
  case FZ_I32:
    c.i32 = (int32_t)v;
    break;
  case FZ_I8:
    c.i8 = (int8_t)v;
    break;
  default:
    c.b = v != 0;
    break;
  }
  return c;
}

static double cell_value(fz_dtype d, const cell *c) {
  switch (d) {
  case FZ_F64:
    return c->f64;
  case FZ_F32:
    return c->f32;
  case FZ_F16:
    return fz_f16_to_double(c->h);
  case FZ_BF16:
    return fz_bf16_to_double(c->h);
  case FZ_I64:
    return (double)c->i64;
  case FZ_I32:
    return c->i32;
  case FZ_I8:
    return c->i8;
  default:
    return c->b;
  }
}

/* `%r = op %a[, %b[, %c]]` on one-element tensors of dtype `in` with a
 * result of dtype `out`; returns the result cell. */
static cell op_cells(const char *op, const char *in, const char *out, int arity,
                     const cell *args) {
  char text[512];
  const char *operands[] = {"%a", "%a, %b", "%a, %b, %c"};
  snprintf(text, sizeof text,
           "fusion @t(%%a: %s[1], %%b: %s[1], %%c: %s[1]) {\n"
           "  %%r = %s %s : %s[1]\n"
           "  return %%r\n"
           "}\n",
           in, in, in, op, operands[arity - 1], out);
  fz_dtype di = dtype_named(in), dout = dtype_named(out);
  cell a[3] = {args[0], arity > 1 ? args[1] : args[0],
               arity > 2 ? args[2] : args[0]};
  cell r;
  memset(&r, 0xA5, sizeof r);
  fz_host_tensor ins[3] = {test_host_tensor(di, &a[0], 1, 1),
                           test_host_tensor(di, &a[1], 1, 1),
                           test_host_tensor(di, &a[2], 1, 1)};
  fz_host_tensor outs[1] = {test_host_tensor(dout, &r, 1, 1)};
  run_ok(text, ins, 3, outs, 1);
  return r;
}

/* Float ops on f64 values. */
static double fop(const char *op, const char *dt, const char *rdt, int arity,
                  double a, double b, double c) {
  fz_dtype di = dtype_named(dt);
  cell args[3] = {cell_of(di, a), cell_of(di, b), cell_of(di, c)};
  cell r = op_cells(op, dt, rdt, arity, args);
  return cell_value(dtype_named(rdt), &r);
}
#define F1(op, a) fop(op, "f64", "f64", 1, a, 0, 0)
#define F2(op, a, b) fop(op, "f64", "f64", 2, a, b, 0)
#define F3(op, a, b, c) fop(op, "f64", "f64", 3, a, b, c)
#define FB(op, a, b) fop(op, "f64", "bool", 2, a, b, 0)

/* Integer ops on int64 values of dtype dt (exact: no trip through double). */
static int64_t iop(const char *op, const char *dt, const char *rdt, int arity,
                   int64_t a, int64_t b, int64_t c) {
  fz_dtype di = dtype_named(dt);
  int64_t v[3] = {a, b, c};
  cell args[3];
  for (int k = 0; k < 3; k++) {
    memset(&args[k], 0, sizeof args[k]);
    if (di == FZ_I64)
      args[k].i64 = v[k];
    else if (di == FZ_I32)
      args[k].i32 = (int32_t)v[k];
    else
      args[k].i8 = (int8_t)v[k];
  }
  cell r = op_cells(op, dt, rdt, arity, args);
  fz_dtype dr = dtype_named(rdt);
  return dr == FZ_I64 ? r.i64 : dr == FZ_I32 ? r.i32 : dr == FZ_I8 ? r.i8 : r.b;
}

/* ---- unary --------------------------------------------------------------- */

START_TEST(unary_float_ops) {
  ck_assert_double_eq(F1("neg", 2.5), -2.5);
  ck_assert_double_eq(F1("abs", -3.0), 3.0);
  ck_assert_double_eq(F1("exp", 0.0), 1.0);
  ck_assert_double_eq_tol(F1("exp", 1.0), 2.718281828459045, 1e-15);
  ck_assert_double_eq(F1("exp2", 10.0), 1024.0);
  ck_assert_double_eq(F1("log", 1.0), 0.0);
  ck_assert_double_eq(F1("log", 0.0), -INFINITY);
  ck_assert_double_nan(F1("log", -1.0));
  ck_assert_double_eq(F1("log2", 8.0), 3.0);
  ck_assert_double_eq(F1("sqrt", 2.25), 1.5);
  ck_assert_double_nan(F1("sqrt", -1.0));
  ck_assert_double_eq(F1("rsqrt", 4.0), 0.5);
  ck_assert_double_eq(F1("rsqrt", 0.0), INFINITY);
  ck_assert_double_eq(F1("reciprocal", -4.0), -0.25);
  ck_assert_double_eq_tol(F1("sin", 0.5), 0.479425538604203, 1e-15);
  ck_assert_double_eq_tol(F1("cos", 0.5), 0.8775825618903728, 1e-15);
  ck_assert_double_eq_tol(F1("tanh", 0.5), 0.46211715726000974, 1e-15);
  ck_assert_double_eq(F1("tanh", INFINITY), 1.0);
  ck_assert_double_eq(F1("sigmoid", 0.0), 0.5);
  ck_assert_double_eq_tol(F1("sigmoid", 2.0), 0.8807970779778823, 1e-15);
  ck_assert_double_eq(F1("sigmoid", -INFINITY), 0.0);
  ck_assert_double_eq_tol(F1("erf", 0.5), 0.5204998778130465, 1e-15);
  ck_assert_double_eq(F1("relu", -2.0), 0.0);
  ck_assert_double_eq(F1("relu", 3.0), 3.0);
  ck_assert_double_nan(F1("relu", NAN));
  /* gelu is the erf form, not the tanh approximation (0.8411919906). */
  ck_assert_double_eq_tol(F1("gelu", 1.0), 0.8413447460685429, 1e-15);
  ck_assert_double_eq_tol(F1("gelu", -1.0), -0.15865525393145707, 1e-15);
  ck_assert_double_eq_tol(F1("silu", 1.0), 0.7310585786300049, 1e-15);
  ck_assert_double_eq(F1("floor", -1.5), -2.0);
  ck_assert_double_eq(F1("ceil", -1.5), -1.0);
  /* round is half to even */
  ck_assert_double_eq(F1("round", 0.5), 0.0);
  ck_assert_double_eq(F1("round", 1.5), 2.0);
  ck_assert_double_eq(F1("round", 2.5), 2.0);
  ck_assert_double_eq(F1("round", -2.5), -2.0);
  ck_assert_double_eq(F1("round", 2.6), 3.0);
}
END_TEST

START_TEST(unary_results_round_to_their_dtype) {
  /* exp(1) in f32 is the f32 nearest e, not the double. */
  ck_assert_double_eq(fop("exp", "f32", "f32", 1, 1.0, 0, 0),
                      (double)2.71828182845904523f);
  /* exp(12) = 162754.79 overflows f16 (max 65504) to inf. */
  ck_assert_double_eq(fop("exp", "f16", "f16", 1, 12.0, 0, 0), INFINITY);
  /* 1/3 in bf16 has 8 significant bits: 0x3eab = 0.333984375. */
  ck_assert_double_eq(fop("reciprocal", "bf16", "bf16", 1, 3.0, 0, 0),
                      0.333984375);
}
END_TEST

START_TEST(unary_integer_ops) {
  ck_assert_int_eq(iop("neg", "i32", "i32", 1, 5, 0, 0), -5);
  ck_assert_int_eq(iop("abs", "i32", "i32", 1, -7, 0, 0), 7);
  /* two's complement: |INT32_MIN| and -(-128) wrap to themselves */
  ck_assert_int_eq(iop("abs", "i32", "i32", 1, INT32_MIN, 0, 0), INT32_MIN);
  ck_assert_int_eq(iop("neg", "i8", "i8", 1, -128, 0, 0), -128);
  ck_assert_int_eq(iop("relu", "i64", "i64", 1, -9, 0, 0), 0);
  ck_assert_int_eq(iop("floor", "i64", "i64", 1, -9, 0, 0), -9);
  ck_assert_int_eq(iop("round", "i32", "i32", 1, 7, 0, 0), 7);
  /* exp of an integer is a float op: i32 -> f32 */
  cell a = {.i32 = 0};
  cell r = op_cells("exp", "i32", "f32", 1, &a);
  ck_assert_float_eq(r.f32, 1.0f);
}
END_TEST

START_TEST(predicates_and_logic) {
  ck_assert_double_eq(fop("isnan", "f64", "bool", 1, NAN, 0, 0), 1);
  ck_assert_double_eq(fop("isnan", "f64", "bool", 1, INFINITY, 0, 0), 0);
  ck_assert_int_eq(iop("isnan", "i32", "bool", 1, 3, 0, 0), 0);
  /* not/and/or treat nonzero (NaN too) as true */
  ck_assert_double_eq(fop("not", "f64", "bool", 1, 0.0, 0, 0), 1);
  ck_assert_double_eq(fop("not", "f64", "bool", 1, -0.5, 0, 0), 0);
  ck_assert_double_eq(fop("not", "f64", "bool", 1, NAN, 0, 0), 0);
  ck_assert_double_eq(FB("and", 2.0, 0.0), 0);
  ck_assert_double_eq(FB("and", 2.0, -3.0), 1);
  ck_assert_double_eq(FB("or", NAN, 0.0), 1);
  ck_assert_double_eq(FB("or", 0.0, 0.0), 0);
  ck_assert_int_eq(iop("and", "i32", "bool", 2, 4, 8, 0), 1);
  ck_assert_int_eq(iop("or", "i8", "bool", 2, 0, 0, 0), 0);
}
END_TEST

/* ---- binary -------------------------------------------------------------- */

START_TEST(binary_float_ops) {
  ck_assert_double_eq(F2("add", 1.5, 2.25), 3.75);
  ck_assert_double_eq(F2("sub", 1.5, 2.25), -0.75);
  ck_assert_double_eq(F2("mul", 1.5, -2.0), -3.0);
  ck_assert_double_eq(F2("div", 1.0, 4.0), 0.25);
  ck_assert_double_eq(F2("div", 1.0, 0.0), INFINITY);
  ck_assert_double_eq(F2("div", -1.0, 0.0), -INFINITY);
  ck_assert_double_nan(F2("div", 0.0, 0.0));
  ck_assert_double_eq(F2("pow", 2.0, 10.0), 1024.0);
  ck_assert_double_eq(F2("pow", 4.0, -0.5), 0.5);
  ck_assert_double_eq(F2("pow", NAN, 0.0), 1.0);
  ck_assert_double_nan(F2("pow", -8.0, 1.0 / 3.0));
  /* max/min propagate NaN from either side */
  ck_assert_double_eq(F2("max", 1.0, 2.0), 2.0);
  ck_assert_double_eq(F2("min", 1.0, 2.0), 1.0);
  ck_assert_double_nan(F2("max", NAN, 1.0));
  ck_assert_double_nan(F2("max", 1.0, NAN));
  ck_assert_double_nan(F2("min", NAN, 1.0));
  ck_assert_double_nan(F2("min", 1.0, NAN));
  ck_assert_double_eq(F2("max", -INFINITY, 3.0), 3.0);
  /* mod is PyTorch's remainder: the result has the divisor's sign */
  ck_assert_double_eq(F2("mod", 5.5, 2.0), 1.5);
  ck_assert_double_eq(F2("mod", -5.5, 2.0), 0.5);
  ck_assert_double_eq(F2("mod", 5.5, -2.0), -0.5);
  ck_assert_double_eq(F2("mod", -5.5, -2.0), -1.5);
  ck_assert_double_eq(F2("mod", 4.0, 2.0), 0.0);
  ck_assert_double_nan(F2("mod", 1.0, 0.0));
}
END_TEST

/* mod's edge cases, where the textbook a - b*floor(a/b) and PyTorch's
 * remainder (fmod, then moved to the divisor's sign) part ways, in each
 * float dtype. */
START_TEST(mod_follows_pytorch_remainder) {
  static const char *const dts[] = {"f64", "f32", "f16", "bf16"};
  for (int i = 0; i < 4; i++) {
    const char *d = dts[i];
    ck_assert_double_eq(fop("mod", d, d, 2, 1.0, INFINITY, 0), 1.0);
    ck_assert_double_eq(fop("mod", d, d, 2, -1.0, INFINITY, 0), INFINITY);
    ck_assert_double_eq(fop("mod", d, d, 2, 1.0, -INFINITY, 0), -INFINITY);
    double z = fop("mod", d, d, 2, -0.0, 2.0, 0);
    ck_assert_msg(z == 0.0 && signbit(z), "%s: mod(-0.0, 2) = %g", d, z);
    z = fop("mod", d, d, 2, 4.0, -2.0, 0);
    ck_assert_msg(z == 0.0 && !signbit(z), "%s: mod(4, -2) = %g", d, z);
    ck_assert_double_eq(fop("mod", d, d, 2, -1.0, 3.0, 0), 2.0);
    ck_assert_double_eq(fop("mod", d, d, 2, 1.0, -3.0, 0), -2.0);
    ck_assert_double_nan(fop("mod", d, d, 2, 1.0, 0.0, 0));
    ck_assert_double_nan(fop("mod", d, d, 2, -0.0, 0.0, 0));
    ck_assert_double_nan(fop("mod", d, d, 2, INFINITY, 2.0, 0));
    ck_assert_double_nan(fop("mod", d, d, 2, NAN, 2.0, 0));
  }
  ck_assert_int_eq(iop("mod", "i32", "i32", 2, -1, 3, 0), 2);
  ck_assert_int_eq(iop("mod", "i32", "i32", 2, 1, -3, 0), -2);
  ck_assert_int_eq(iop("mod", "i8", "i8", 2, -1, 0, 0), 0);
}
END_TEST

START_TEST(comparisons) {
  ck_assert_double_eq(FB("eq", 1.0, 1.0), 1);
  ck_assert_double_eq(FB("eq", NAN, NAN), 0);
  ck_assert_double_eq(FB("ne", NAN, NAN), 1);
  ck_assert_double_eq(FB("lt", 1.0, 2.0), 1);
  ck_assert_double_eq(FB("lt", 2.0, 2.0), 0);
  ck_assert_double_eq(FB("le", 2.0, 2.0), 1);
  ck_assert_double_eq(FB("gt", 3.0, 2.0), 1);
  ck_assert_double_eq(FB("ge", 1.0, 2.0), 0);
  ck_assert_double_eq(FB("lt", NAN, 1.0), 0);
  ck_assert_double_eq(FB("ge", NAN, 1.0), 0);
  ck_assert_double_eq(FB("lt", -INFINITY, -1e308), 1);
  ck_assert_int_eq(iop("lt", "i64", "bool", 2, INT64_MIN, INT64_MAX, 0), 1);
  ck_assert_int_eq(iop("eq", "i32", "bool", 2, -3, -3, 0), 1);
  ck_assert_int_eq(iop("ne", "i8", "bool", 2, 1, 1, 0), 0);
}
END_TEST

START_TEST(binary_integer_ops) {
  /* arithmetic wraps in the result dtype */
  ck_assert_int_eq(iop("add", "i32", "i32", 2, INT32_MAX, 1, 0), INT32_MIN);
  ck_assert_int_eq(iop("add", "i8", "i8", 2, 100, 100, 0), -56);
  ck_assert_int_eq(iop("sub", "i64", "i64", 2, INT64_MIN, 1, 0), INT64_MAX);
  ck_assert_int_eq(iop("mul", "i64", "i64", 2, INT64_C(1) << 62, 4, 0), 0);
  ck_assert_int_eq(iop("mul", "i32", "i32", 2, -6, 7, 0), -42);
  /* integer pow; negative exponents give 0 unless the base is +-1 */
  ck_assert_int_eq(iop("pow", "i64", "i64", 2, 3, 4, 0), 81);
  ck_assert_int_eq(iop("pow", "i64", "i64", 2, -2, 3, 0), -8);
  ck_assert_int_eq(iop("pow", "i64", "i64", 2, 7, 0, 0), 1);
  ck_assert_int_eq(iop("pow", "i64", "i64", 2, 2, -1, 0), 0);
  ck_assert_int_eq(iop("pow", "i64", "i64", 2, 1, -5, 0), 1);
  ck_assert_int_eq(iop("pow", "i64", "i64", 2, -1, -3, 0), -1);
  ck_assert_int_eq(iop("pow", "i64", "i64", 2, -1, -4, 0), 1);
  ck_assert_int_eq(iop("pow", "i32", "i32", 2, 2, 31, 0), INT32_MIN);
  ck_assert_int_eq(iop("max", "i32", "i32", 2, -3, 2, 0), 2);
  ck_assert_int_eq(iop("min", "i32", "i32", 2, -3, 2, 0), -3);
  /* mod: the divisor's sign; x mod 0 = 0; INT64_MIN mod -1 = 0 */
  ck_assert_int_eq(iop("mod", "i64", "i64", 2, 7, 3, 0), 1);
  ck_assert_int_eq(iop("mod", "i64", "i64", 2, -7, 3, 0), 2);
  ck_assert_int_eq(iop("mod", "i64", "i64", 2, 7, -3, 0), -2);
  ck_assert_int_eq(iop("mod", "i64", "i64", 2, -7, -3, 0), -1);
  ck_assert_int_eq(iop("mod", "i32", "i32", 2, 7, 0, 0), 0);
  ck_assert_int_eq(iop("mod", "i64", "i64", 2, INT64_MIN, -1, 0), 0);
  /* div of integers is true division into f32 */
  cell a[2] = {{.i32 = 7}, {.i32 = 2}};
  cell r = op_cells("div", "i32", "f32", 2, a);
  ck_assert_float_eq(r.f32, 3.5f);
}
END_TEST

/* ---- the later pointwise ops, at PyTorch's values ------------------------ */

/* |got - want| within `ulps` units in the last place of want (f64). */
static void ck_ulps(double got, double want, int ulps, const char *what) {
  double ulp = nextafter(fabs(want), INFINITY) - fabs(want);
  ck_assert_msg(fabs(got - want) <= ulps * ulp, "%s = %.17g, want %.17g", what,
                got, want);
}

static bool negative_zero(double v) { return v == 0 && signbit(v); }

START_TEST(special_functions_at_their_edges) {
  ck_assert_double_eq(F1("log1p", -1.0), -INFINITY);
  ck_assert_double_nan(F1("log1p", -2.0));
  ck_assert_double_eq(F1("log1p", 1e-20), 1e-20);
  ck_assert_double_eq(F1("expm1", 1e-20), 1e-20);
  ck_assert_double_eq(F1("expm1", -INFINITY), -1.0);
  ck_ulps(F1("tan", 0.5), 0.5463024898437905, 1, "tan(0.5)");
  ck_assert_double_eq(F1("atan", INFINITY), 1.5707963267948966);
  ck_assert_double_eq(F1("asin", 1.0), 1.5707963267948966);
  ck_assert_double_nan(F1("asin", 1.5));
  ck_assert_double_eq(F1("acos", -1.0), 3.141592653589793);
  ck_assert_double_nan(F1("acos", 2.0));
  ck_ulps(F1("sinh", 1.0), 1.1752011936438014, 1, "sinh(1)");
  ck_assert_double_eq(F1("cosh", 0.0), 1.0);
  ck_assert_double_eq(F1("asinh", -INFINITY), -INFINITY);
  ck_assert_double_eq(F1("acosh", 1.0), 0.0);
  ck_assert_double_nan(F1("acosh", 0.5));
  ck_assert_double_eq(F1("atanh", 1.0), INFINITY);
  ck_assert_double_eq(F1("atanh", -1.0), -INFINITY);
  ck_assert_double_nan(F1("atanh", 2.0));
  ck_assert_double_eq(F1("erfc", 0.0), 1.0);
  ck_assert_double_eq(F1("erfc", INFINITY), 0.0);
  ck_assert_double_eq(F1("erfc", -INFINITY), 2.0);
  ck_ulps(F1("erfc", 0.5), 0.4795001221869535, 1, "erfc(0.5)");
  ck_assert_double_eq(F1("lgamma", 0.0), INFINITY);
  ck_assert_double_eq(F1("lgamma", -1.0), INFINITY);
  ck_assert_double_eq(F1("lgamma", -INFINITY), INFINITY);
  ck_assert_double_eq(F1("lgamma", 1.0), 0.0);
  ck_ulps(F1("lgamma", 0.5), 0.5723649429247001, 1, "lgamma(0.5)");
  ck_ulps(F1("lgamma", -2.5), -0.056243716497674054, 2, "lgamma(-2.5)");
  /* integers become f32 first, as PyTorch's float ops do */
  cell a = {.i32 = 0};
  ck_assert_float_eq(op_cells("log1p", "i32", "f32", 1, &a).f32, 0.0f);
}
END_TEST

/* erfinv, which C lacks: exact edges, and within an ulp of the true value
 * (mpmath at 50 digits) in the middle and the tails. */
START_TEST(erfinv_is_accurate) {
  ck_assert_double_eq(F1("erfinv", 0.0), 0.0);
  ck_assert(negative_zero(F1("erfinv", -0.0)));
  ck_assert_double_eq(F1("erfinv", 1.0), INFINITY);
  ck_assert_double_eq(F1("erfinv", -1.0), -INFINITY);
  ck_assert_double_nan(F1("erfinv", 1.5));
  ck_assert_double_nan(F1("erfinv", NAN));
  static const double y[] = {0.5, 0.9, -0.999, 1e-300, 1 - 0x1p-53, 0.1,
                             0.75, -0.3};
  static const double want[] = {
      0.4769362762044699,    1.1630871536766743, -2.3267537655135246,
      8.86226925452758e-301, 5.8635847487551676, 0.08885599049425769,
      0.8134198475976185,    -0.2724627147267543};
  for (size_t i = 0; i < sizeof y / sizeof y[0]; i++) {
    char what[64];
    snprintf(what, sizeof what, "erfinv(%.17g)", y[i]);
    ck_ulps(F1("erfinv", y[i]), want[i], 1, what);
  }
  ck_assert_double_eq(fop("erfinv", "f32", "f32", 1, 0.5, 0, 0),
                      (double)0.4769362762f);
}
END_TEST

START_TEST(trunc_sign_frac) {
  ck_assert_double_eq(F1("trunc", -1.5), -1.0);
  ck_assert(negative_zero(F1("trunc", -0.5)));
  ck_assert_double_eq(F1("trunc", INFINITY), INFINITY);
  ck_assert_int_eq(iop("trunc", "i32", "i32", 1, -7, 0, 0), -7);
  /* (0 < x) - (x < 0): NaN and -0.0 give +0.0 */
  ck_assert_double_eq(F1("sign", -3.5), -1.0);
  ck_assert_double_eq(F1("sign", INFINITY), 1.0);
  double z = F1("sign", NAN);
  ck_assert_msg(z == 0 && !signbit(z), "sign(NaN) = %g", z);
  z = F1("sign", -0.0);
  ck_assert_msg(z == 0 && !signbit(z), "sign(-0.0) = %g", z);
  ck_assert_int_eq(iop("sign", "i8", "i8", 1, -128, 0, 0), -1);
  ck_assert_int_eq(iop("sign", "i64", "i64", 1, 0, 0, 0), 0);
  ck_assert_double_eq(F1("frac", -1.5), -0.5);
  ck_assert_double_eq(F1("frac", 2.0), 0.0);
  ck_assert_double_nan(F1("frac", INFINITY));
  ck_assert_double_eq(fop("frac", "f16", "f16", 1, 3.75, 0, 0), 0.75);
}
END_TEST

START_TEST(value_tests) {
  ck_assert_double_eq(fop("isinf", "f64", "bool", 1, INFINITY, 0, 0), 1);
  ck_assert_double_eq(fop("isinf", "f64", "bool", 1, -INFINITY, 0, 0), 1);
  ck_assert_double_eq(fop("isinf", "f64", "bool", 1, NAN, 0, 0), 0);
  ck_assert_double_eq(fop("isinf", "f16", "bool", 1, 1e6, 0, 0), 1);
  ck_assert_double_eq(fop("isfinite", "f64", "bool", 1, NAN, 0, 0), 0);
  ck_assert_double_eq(fop("isfinite", "f64", "bool", 1, -INFINITY, 0, 0), 0);
  ck_assert_double_eq(fop("isfinite", "f64", "bool", 1, 1e308, 0, 0), 1);
  ck_assert_double_eq(fop("signbit", "f64", "bool", 1, -0.0, 0, 0), 1);
  ck_assert_double_eq(fop("signbit", "f64", "bool", 1, 0.0, 0, 0), 0);
  ck_assert_double_eq(fop("signbit", "f64", "bool", 1, -NAN, 0, 0), 1);
  /* bool is unsigned: PyTorch's signbit of true is false */
  ck_assert_double_eq(fop("signbit", "bool", "bool", 1, 1, 0, 0), 0);
  ck_assert_double_eq(fop("signbit", "bf16", "bool", 1, -0.0, 0, 0), 1);
  ck_assert_int_eq(iop("isinf", "i32", "bool", 1, 3, 0, 0), 0);
  ck_assert_int_eq(iop("isfinite", "i8", "bool", 1, -3, 0, 0), 1);
  ck_assert_int_eq(iop("signbit", "i64", "bool", 1, INT64_MIN, 0, 0), 1);
  ck_assert_int_eq(iop("signbit", "i32", "bool", 1, 0, 0, 0), 0);
}
END_TEST

START_TEST(atan2_fmod_hypot) {
  ck_assert_double_eq(F2("atan2", 1.0, 1.0), 0.7853981633974483);
  ck_assert_double_eq(F2("atan2", 0.0, -0.0), 3.141592653589793);
  ck_assert_double_eq(F2("atan2", -0.0, -0.0), -3.141592653589793);
  ck_assert_double_eq(F2("atan2", 1.0, 0.0), 1.5707963267948966);
  cell a[2] = {{.i32 = 1}, {.i32 = 1}}; /* integers: f32 */
  ck_assert_float_eq(op_cells("atan2", "i32", "f32", 2, a).f32,
                     0.78539816f);
  /* fmod keeps the dividend's sign (remainder, mod, the divisor's) */
  ck_assert_double_eq(F2("fmod", -3.0, 2.0), -1.0);
  ck_assert_double_eq(F2("fmod", 3.0, -2.0), 1.0);
  ck_assert(negative_zero(F2("fmod", -0.0, 1.0)));
  ck_assert(negative_zero(F2("fmod", -4.0, 2.0)));
  ck_assert_double_eq(F2("fmod", 1.0, INFINITY), 1.0);
  ck_assert_double_nan(F2("fmod", 1.0, 0.0));
  ck_assert_double_nan(F2("fmod", INFINITY, 1.0));
  ck_assert_double_eq(fop("fmod", "bf16", "bf16", 2, 5.5, 2.0, 0), 1.5);
  ck_assert_int_eq(iop("fmod", "i32", "i32", 2, -7, 3, 0), -1);
  ck_assert_int_eq(iop("fmod", "i32", "i32", 2, 7, -3, 0), 1);
  ck_assert_int_eq(iop("fmod", "i32", "i32", 2, 7, 0, 0), 0);
  ck_assert_int_eq(iop("fmod", "i64", "i64", 2, INT64_MIN, -1, 0), 0);
  ck_assert_int_eq(iop("fmod", "i8", "i8", 2, -128, -1, 0), 0);
  ck_assert_double_eq(F2("hypot", 3.0, 4.0), 5.0);
  ck_assert_double_eq(F2("hypot", INFINITY, NAN), INFINITY);
  ck_assert_double_eq(F2("hypot", 1e308, 1e308), 1.4142135623730951e308);
}
END_TEST

START_TEST(bitwise_and_logical_xor) {
  ck_assert_int_eq(iop("bitwise_and", "i32", "i32", 2, 12, 10, 0), 8);
  ck_assert_int_eq(iop("bitwise_or", "i32", "i32", 2, 12, 10, 0), 14);
  ck_assert_int_eq(iop("bitwise_xor", "i32", "i32", 2, 12, 10, 0), 6);
  ck_assert_int_eq(iop("bitwise_and", "i64", "i64", 2, -1, INT64_MIN, 0),
                   INT64_MIN);
  ck_assert_int_eq(iop("bitwise_not", "i32", "i32", 1, 0, 0, 0), -1);
  ck_assert_int_eq(iop("bitwise_not", "i8", "i8", 1, 127, 0, 0), -128);
  /* on bool, the bitwise ops are logical; bitwise_not is not */
  cell t = {.b = 1}, f = {.b = 0};
  ck_assert_int_eq(op_cells("bitwise_not", "bool", "bool", 1, &t).b, 0);
  ck_assert_int_eq(op_cells("bitwise_not", "bool", "bool", 1, &f).b, 1);
  cell tf[2] = {t, f};
  ck_assert_int_eq(op_cells("bitwise_xor", "bool", "bool", 2, tf).b, 1);
  ck_assert_int_eq(op_cells("bitwise_and", "bool", "bool", 2, tf).b, 0);
  ck_assert_int_eq(op_cells("abs", "bool", "bool", 1, &t).b, 1);
  ck_assert_int_eq(op_cells("sign", "bool", "bool", 1, &t).b, 1);
  ck_assert_double_eq(FB("xor", 2.0, 0.0), 1);
  ck_assert_double_eq(FB("xor", NAN, 1.0), 0);
  ck_assert_int_eq(iop("xor", "i32", "bool", 2, 0, 0, 0), 0);
}
END_TEST

/* PyTorch's CUDA shifts: counts outside the width give 0 (left) or the
 * sign (right), negative counts included. */
START_TEST(shifts_at_every_count) {
  ck_assert_int_eq(iop("bitwise_left_shift", "i32", "i32", 2, 1, 31, 0),
                   INT32_MIN);
  ck_assert_int_eq(iop("bitwise_left_shift", "i32", "i32", 2, 3, 30, 0),
                   -1073741824);
  ck_assert_int_eq(iop("bitwise_left_shift", "i32", "i32", 2, 1, 32, 0), 0);
  ck_assert_int_eq(iop("bitwise_left_shift", "i32", "i32", 2, 1, -1, 0), 0);
  ck_assert_int_eq(iop("bitwise_left_shift", "i8", "i8", 2, 1, 7, 0), -128);
  ck_assert_int_eq(iop("bitwise_left_shift", "i8", "i8", 2, 3, 7, 0), -128);
  ck_assert_int_eq(iop("bitwise_left_shift", "i8", "i8", 2, 1, 8, 0), 0);
  ck_assert_int_eq(iop("bitwise_left_shift", "i64", "i64", 2, 1, 63, 0),
                   INT64_MIN);
  ck_assert_int_eq(iop("bitwise_left_shift", "i64", "i64", 2, 1, 64, 0), 0);
  ck_assert_int_eq(iop("bitwise_right_shift", "i32", "i32", 2, -8, 1, 0), -4);
  ck_assert_int_eq(iop("bitwise_right_shift", "i32", "i32", 2, -8, 31, 0),
                   -1);
  ck_assert_int_eq(iop("bitwise_right_shift", "i32", "i32", 2, -8, 32, 0),
                   -1);
  ck_assert_int_eq(iop("bitwise_right_shift", "i32", "i32", 2, -8, -1, 0),
                   -1);
  ck_assert_int_eq(iop("bitwise_right_shift", "i32", "i32", 2, 8, 40, 0), 0);
  ck_assert_int_eq(iop("bitwise_right_shift", "i8", "i8", 2, -128, 7, 0), -1);
  ck_assert_int_eq(iop("bitwise_right_shift", "i8", "i8", 2, 100, 6, 0), 1);
  ck_assert_int_eq(iop("bitwise_right_shift", "i64", "i64", 2, INT64_MIN, 63,
                       0),
                   -1);
  ck_assert_int_eq(iop("bitwise_right_shift", "i64", "i64", 2, 5, 100, 0), 0);
  ck_assert_int_eq(iop("bitwise_right_shift", "i64", "i64", 2, -5, -3, 0), -1);
}
END_TEST

/* nan_to_num with PyTorch's defaults in each float dtype (the largest
 * finite value for +inf, its negation for -inf), explicit replacements
 * rounded to the dtype, and integers copied. */
static void nan_to_num_case(fz_dtype d, const double *posinf, double nan,
                            const double want[4]) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  int64_t four = 4;
  fz_value *x =
      fz_fusion_add_tensor(f, "x", d, 1, &four, NULL, NULL, NULL, &err);
  fz_value *r = fz_build_nan_to_num(f, x, nan, posinf, NULL, &err);
  ck_assert_msg(r, "%s", err.message);
  ck_assert_int_eq(fz_add_output(f, r, &err), FZ_OK);
  double in[4] = {NAN, INFINITY, -INFINITY, 1.5};
  cell ci[4], co[4];
  for (int i = 0; i < 4; i++)
    ci[i] = cell_of(d, in[i]);
  /* cells are unions: gather each dtype's elements contiguously */
  unsigned char src[32], dst[32];
  size_t size = fz_dtype_size(d);
  for (int i = 0; i < 4; i++)
    memcpy(src + size * (size_t)i, &ci[i], size);
  fz_host_tensor hin[1] = {test_host_tensor(d, src, 1, 4)},
                 hout[1] = {test_host_tensor(d, dst, 1, 4)};
  ck_assert_msg(fz_interpret(f, hin, 1, hout, 1, &err) == FZ_OK, "%s",
                err.message);
  for (int i = 0; i < 4; i++) {
    memset(&co[i], 0, sizeof co[i]);
    memcpy(&co[i], dst + size * (size_t)i, size);
    double got = cell_value(d, &co[i]);
    ck_assert_msg(got == want[i], "%s: nan_to_num(%g) = %.17g, want %.17g",
                  fz_dtype_name(d), in[i], got, want[i]);
  }
  fz_fusion_destroy(f);
}

START_TEST(nan_to_num_defaults_per_dtype) {
  nan_to_num_case(FZ_F32, NULL, 0.0,
                  (double[]){0.0, FLT_MAX, -FLT_MAX, 1.5});
  nan_to_num_case(FZ_F64, NULL, 0.0,
                  (double[]){0.0, DBL_MAX, -DBL_MAX, 1.5});
  nan_to_num_case(FZ_F16, NULL, 0.0,
                  (double[]){0.0, 65504.0, -65504.0, 1.5});
  nan_to_num_case(FZ_BF16, NULL, 0.0,
                  (double[]){0.0, 0x1.fep127, -0x1.fep127, 1.5});
  /* 1e10 is inf in f16, as static_cast<Half>(1e10) is */
  nan_to_num_case(FZ_F16, &(double){1e10}, -2.5,
                  (double[]){-2.5, INFINITY, -65504.0, 1.5});
  nan_to_num_case(FZ_F32, &(double){0.1}, 7.0,
                  (double[]){7.0, (double)0.1f, -FLT_MAX, 1.5});
}
END_TEST

START_TEST(nan_to_num_of_integers_is_a_copy) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  int64_t three = 3;
  fz_value *x =
      fz_fusion_add_tensor(f, "x", FZ_I32, 1, &three, NULL, NULL, NULL, &err);
  fz_value *r = fz_build_nan_to_num(f, x, 0.0, NULL, NULL, &err);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->def->code, FZ_OP_SET);
  ck_assert_ptr_null(fz_build_nan_to_num(f, NULL, 0.0, NULL, NULL, &err));
  fz_fusion_destroy(f);
}
END_TEST

/* torch.sum(x, dim=[]) reduces every axis; a rank-0 operand's reduction
 * is its value, in the reduction's dtype. */
START_TEST(reductions_over_no_dims_follow_pytorch) {
  float x[6] = {1, 2, 3, 4, 5, 6}, all = 0;
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 2, 3)},
                 out[1] = {test_host_tensor(FZ_F32, &all, 0)};
  run_ok("fusion @t(%x: f32[2, 3]) {\n"
         "  %s = sum %x dims() : f32\n"
         "  return %s\n"
         "}\n",
         in, 1, out, 1);
  ck_assert_float_eq(all, 21.0f);
  float v = -2.5f, m = 0;
  fz_host_tensor sin[1] = {test_host_tensor(FZ_F32, &v, 0)},
                 sout[1] = {test_host_tensor(FZ_F32, &m, 0)};
  run_ok("fusion @t(%v: f32) {\n"
         "  %m = amax %v dims(-1) keepdim : f32\n"
         "  return %m\n"
         "}\n",
         sin, 1, sout, 1);
  ck_assert_float_eq(m, -2.5f);
  uint8_t b = 1;
  int64_t n = 0;
  fz_host_tensor bin[1] = {test_host_tensor(FZ_BOOL, &b, 0)},
                 bout[1] = {test_host_tensor(FZ_I64, &n, 0)};
  run_ok("fusion @t(%b: bool) {\n"
         "  %n = sum %b dims(0) : i64\n"
         "  return %n\n"
         "}\n",
         bin, 1, bout, 1);
  ck_assert_int_eq(n, 1);
}
END_TEST

/* ---- ternary ------------------------------------------------------------- */

START_TEST(ternary_ops) {
  ck_assert_double_eq(F3("fma", 2.0, 3.0, 4.0), 10.0);
  /* fma is fused in f64 too: (1+u)(1-u) - 1 = -u^2, not 0 */
  double u = ldexp(1.0, -52);
  ck_assert_double_eq(F3("fma", 1.0 + u, 1.0 - u, -1.0), -u * u);
  ck_assert_double_eq(F3("clamp", 5.0, 0.0, 3.0), 3.0);
  ck_assert_double_eq(F3("clamp", -5.0, 0.0, 3.0), 0.0);
  ck_assert_double_eq(F3("clamp", 1.0, 0.0, 3.0), 1.0);
  ck_assert_double_nan(F3("clamp", NAN, 0.0, 3.0));
  ck_assert_double_nan(F3("clamp", 1.0, NAN, 3.0));
  ck_assert_double_nan(F3("clamp", 1.0, 0.0, NAN));
  ck_assert_int_eq(iop("clamp", "i32", "i32", 3, 9, -2, 4), 4);
  ck_assert_int_eq(iop("fma", "i64", "i64", 3, 3, -4, 5), -7);
  /* fma rounds once: a*b+c exactly, then to f32 */
  double eps = ldexp(1.0, -23);
  double fma32 = fop("fma", "f32", "f32", 3, 1.0 + eps, 1.0 - eps, -1.0);
  ck_assert_double_eq(fma32, -eps * eps);

  const char *text = "fusion @t(%c: bool[4], %x: f32[4]) {\n"
                     "  %r = where %c, %x, -1.0 : f32[4]\n"
                     "  return %r\n"
                     "}\n";
  uint8_t c[4] = {1, 0, 1, 0};
  float x[4] = {10, 20, NAN, 40}, r[4];
  fz_host_tensor in[2] = {test_host_tensor(FZ_BOOL, c, 1, 4),
                          test_host_tensor(FZ_F32, x, 1, 4)};
  fz_host_tensor out[1] = {test_host_tensor(FZ_F32, r, 1, 4)};
  run_ok(text, in, 2, out, 1);
  ck_assert_float_eq(r[0], 10.0f);
  ck_assert_float_eq(r[1], -1.0f);
  ck_assert_float_nan(r[2]);
  ck_assert_float_eq(r[3], -1.0f);
}
END_TEST

/* ---- casts and rounding -------------------------------------------------- */

/* Every finite f16 (bf16) value round-trips, and every midpoint between
 * neighbours rounds to the even one, values just off it to the nearer:
 * an exhaustive check of round-to-nearest-even, subnormals and overflow
 * (the midpoint above the largest finite value goes to inf). */
static void check_half_format(uint16_t (*enc)(double), double (*dec)(uint16_t),
                              uint16_t max_finite) {
  for (uint32_t b = 0; b < 0x10000; b++) {
    double v = dec((uint16_t)b);
    uint16_t back = enc(v);
    if (isnan(v))
      ck_assert_msg(isnan(dec(back)), "NaN %04x became %04x", b, back);
    else
      ck_assert_msg(back == b, "%04x -> %g -> %04x", b, v, back);
  }
  for (uint32_t b = 0; b <= max_finite; b++) {
    double lo = dec((uint16_t)b), hi = dec((uint16_t)(b + 1));
    double mid = lo + (hi - lo) / 2; /* exact for finite neighbours */
    if (isinf(hi)) /* the overflow threshold: max + half an ulp */
      mid = lo + (lo - dec((uint16_t)(b - 1))) / 2;
    uint16_t even = (b & 1) ? (uint16_t)(b + 1) : (uint16_t)b;
    ck_assert_msg(enc(mid) == even, "tie %.17g: %04x", mid, enc(mid));
    ck_assert_msg(enc(-mid) == (even | 0x8000), "-tie %.17g", mid);
    ck_assert_int_eq(enc(nextafter(mid, 0)), b);
    ck_assert_int_eq(enc(nextafter(mid, INFINITY)), b + 1);
  }
}

START_TEST(half_formats_round_to_nearest_even) {
  check_half_format(fz_f16_from_double, fz_f16_to_double, 0x7bff);
  check_half_format(fz_bf16_from_double, fz_bf16_to_double, 0x7f7f);
  ck_assert_int_eq(fz_f16_from_double(65504.0), 0x7bff);
  ck_assert_int_eq(fz_f16_from_double(1e6), 0x7c00);
  ck_assert_int_eq(fz_f16_from_double(-INFINITY), 0xfc00);
  ck_assert_int_eq(fz_f16_from_double(ldexp(1, -24)), 0x0001);
  ck_assert_int_eq(fz_f16_from_double(ldexp(1, -25)), 0x0000); /* tie */
  ck_assert_int_eq(fz_f16_from_double(-0.0), 0x8000);
  ck_assert_int_eq(fz_bf16_from_double(1.0), 0x3f80);
  ck_assert_int_eq(fz_bf16_from_double(FLT_MAX), 0x7f80);
  ck_assert_double_eq(fz_round_to_dtype(2049.0, FZ_F16), 2048.0);
  ck_assert_double_eq(fz_round_to_dtype(2051.0, FZ_F16), 2052.0);
  ck_assert_double_eq(fz_round_to_dtype(1.0 + ldexp(1, -24), FZ_F32), 1.0);
  ck_assert_double_eq(fz_round_to_dtype(-2.7, FZ_I32), -2.0);
  ck_assert_double_eq(fz_round_to_dtype(3e9, FZ_I32), 2147483647.0);
  ck_assert_double_eq(fz_round_to_dtype(NAN, FZ_I8), 0.0);
  ck_assert_double_eq(fz_round_to_dtype(0.25, FZ_BOOL), 1.0);
}
END_TEST

/* cast from f64 (or i64) to a narrow dtype; returns the result's bits. */
static uint16_t cast_bits(const char *from, const char *to, cell v) {
  cell r = op_cells("cast", from, to, 1, &v);
  return r.h;
}

START_TEST(cast_to_half_formats) {
  /* f32 -> bf16 ties: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 */
  cell c = {.f32 = 1.0f + 0x1p-8f};
  ck_assert_int_eq(cast_bits("f32", "bf16", c), 0x3f80);
  c.f32 = 1.0f + 3 * 0x1p-8f; /* halfway between odd 0x3f81 and 0x3f82 */
  ck_assert_int_eq(cast_bits("f32", "bf16", c), 0x3f82);
  c.f32 = 1.0f + 0x1p-8f + 0x1p-20f; /* just above the tie */
  ck_assert_int_eq(cast_bits("f32", "bf16", c), 0x3f81);
  c.f32 = FLT_MAX;
  ck_assert_int_eq(cast_bits("f32", "bf16", c), 0x7f80);
  c.f32 = NAN;
  ck_assert_msg(isnan(fz_bf16_to_double(cast_bits("f32", "bf16", c))),
                "NaN must stay NaN");
  /* an f32 subnormal of 12.5 bf16 quanta (2^-133): a tie, to even 12 */
  c.f32 = 0x1.9p-130f;
  ck_assert_int_eq(cast_bits("f32", "bf16", c), 0x000c);
  /* f32 -> f16: overflow and ties */
  c.f32 = 65519.0f;
  ck_assert_int_eq(cast_bits("f32", "f16", c), 0x7bff);
  c.f32 = 65520.0f;
  ck_assert_int_eq(cast_bits("f32", "f16", c), 0x7c00);
  c.f32 = -70000.0f;
  ck_assert_int_eq(cast_bits("f32", "f16", c), 0xfc00);
  c.f32 = 2049.0f;
  ck_assert_int_eq(cast_bits("f32", "f16", c), 0x6800); /* 2048 */
  c.f32 = 0x1p-25f * 3; /* 1.5 f16 quanta (2^-24): a tie, to even 2 */
  ck_assert_int_eq(cast_bits("f32", "f16", c), 0x0002);
  /* f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the tie, though
   * through f32 it would become the tie and round down to 1.0. */
  c.f64 = 1.0 + ldexp(1, -11) + ldexp(1, -40);
  ck_assert_int_eq(cast_bits("f64", "f16", c), 0x3c01);
  /* i64 -> bf16 rounds once too: 2^60 + 2^52 + 1 is above the tie. */
  c.i64 = (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1;
  ck_assert_int_eq(cast_bits("i64", "bf16", c), 0x5d81);
  c.i64 = (INT64_C(1) << 60) + (INT64_C(1) << 52);
  ck_assert_int_eq(cast_bits("i64", "bf16", c), 0x5d80);
}
END_TEST

START_TEST(cast_float_to_int_saturates) {
  cell c = {.f32 = 3e9f};
  ck_assert_int_eq(op_cells("cast", "f32", "i32", 1, &c).i32, INT32_MAX);
  c.f32 = -3e9f;
  ck_assert_int_eq(op_cells("cast", "f32", "i32", 1, &c).i32, INT32_MIN);
  c.f32 = INFINITY;
  ck_assert_int_eq(op_cells("cast", "f32", "i32", 1, &c).i32, INT32_MAX);
  c.f32 = NAN;
  ck_assert_int_eq(op_cells("cast", "f32", "i32", 1, &c).i32, 0);
  c.f32 = -2.7f;
  ck_assert_int_eq(op_cells("cast", "f32", "i32", 1, &c).i32, -2);
  c.f32 = 2.7f;
  ck_assert_int_eq(op_cells("cast", "f32", "i8", 1, &c).i8, 2);
  c.f32 = 200.0f;
  ck_assert_int_eq(op_cells("cast", "f32", "i8", 1, &c).i8, 127);
  c.f64 = 1e19;
  ck_assert_int_eq(op_cells("cast", "f64", "i64", 1, &c).i64, INT64_MAX);
  c.f64 = -1e19;
  ck_assert_int_eq(op_cells("cast", "f64", "i64", 1, &c).i64, INT64_MIN);
  /* int -> int narrowing wraps */
  c.i32 = 200;
  ck_assert_int_eq(op_cells("cast", "i32", "i8", 1, &c).i8, -56);
  c.i64 = (INT64_C(1) << 32) + 5;
  ck_assert_int_eq(op_cells("cast", "i64", "i32", 1, &c).i32, 5);
  /* anything -> bool is != 0 */
  c.f32 = NAN;
  ck_assert_int_eq(op_cells("cast", "f32", "bool", 1, &c).b, 1);
  c.f32 = -0.0f;
  ck_assert_int_eq(op_cells("cast", "f32", "bool", 1, &c).b, 0);
  c.i32 = 256;
  ck_assert_int_eq(op_cells("cast", "i32", "bool", 1, &c).b, 1);
  /* int -> float rounds to nearest even: 2^24 + 1 -> 2^24 */
  c.i32 = 16777217;
  ck_assert_float_eq(op_cells("cast", "i32", "f32", 1, &c).f32, 16777216.0f);
  c.b = 1;
  ck_assert_double_eq(op_cells("cast", "bool", "f64", 1, &c).f64, 1.0);
}
END_TEST

/* ---- promotion ----------------------------------------------------------- */

START_TEST(promotion_results) {
  /* f32[N] == 0.1 compares with 0.1 rounded to f32, as PyTorch does */
  {
    const char *text = "fusion @t(%x: f32[2]) {\n"
                       "  %r = eq %x, 0.1 : bool[2]\n"
                       "  return %r\n"
                       "}\n";
    float x[2] = {0.1f, 0.2f};
    uint8_t r[2] = {9, 9};
    fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 1, 2)};
    fz_host_tensor out[1] = {test_host_tensor(FZ_BOOL, r, 1, 2)};
    run_ok(text, in, 1, out, 1);
    ck_assert_int_eq(r[0], 1);
    ck_assert_int_eq(r[1], 0);
  }
  /* i32[N] + 2.5 is f32, the integer converted to f32 first */
  {
    const char *text = "fusion @t(%x: i32[2]) {\n"
                       "  %r = add %x, 0.5 : f32[2]\n"
                       "  return %r\n"
                       "}\n";
    int32_t x[2] = {16777217, 3};
    float r[2];
    fz_host_tensor in[1] = {test_host_tensor(FZ_I32, x, 1, 2)};
    fz_host_tensor out[1] = {test_host_tensor(FZ_F32, r, 1, 2)};
    run_ok(text, in, 1, out, 1);
    ck_assert_float_eq(r[0], 16777216.0f);
    ck_assert_float_eq(r[1], 3.5f);
  }
  /* i32[N] + (f64 scalar input) is f64; f16[N] * 3 stays f16 */
  {
    const char *text = "fusion @t(%x: i32[2], %s: f64, %h: f16[2]) {\n"
                       "  %r = add %x, %s : f64[2]\n"
                       "  %q = mul %h, 3 : f16[2]\n"
                       "  return %r, %q\n"
                       "}\n";
    int32_t x[2] = {1, 16777217};
    double s = 0.25, r[2];
    uint16_t h[2] = {fz_f16_from_double(1.5), fz_f16_from_double(30000)};
    uint16_t q[2];
    fz_host_tensor in[3] = {test_host_tensor(FZ_I32, x, 1, 2),
                            test_host_tensor(FZ_F64, &s, 0),
                            test_host_tensor(FZ_F16, h, 1, 2)};
    fz_host_tensor out[2] = {test_host_tensor(FZ_F64, r, 1, 2),
                             test_host_tensor(FZ_F16, q, 1, 2)};
    run_ok(text, in, 3, out, 2);
    ck_assert_double_eq(r[0], 1.25);
    ck_assert_double_eq(r[1], 16777217.25);
    ck_assert_double_eq(fz_f16_to_double(q[0]), 4.5);
    ck_assert_double_eq(fz_f16_to_double(q[1]), INFINITY);
  }
  /* f16 ops compute in f32 (PyTorch's opmath): the literal is rounded to
   * f32, not f16. (1 + 2^-10) + (1 + 2^-11 - 2^-20) is 0.749 of an f16
   * ulp above 2, so 2 + 2^-9; with the literal rounded to f16 (1.0) it
   * would be a tie, rounded to even 2.0. */
  {
    const char *text = "fusion @t(%h: f16[1]) {\n"
                       "  %r = add %h, 1.00048732757568359375 : f16[1]\n"
                       "  return %r\n"
                       "}\n";
    uint16_t h = 0x3c01, r;
    fz_host_tensor in[1] = {test_host_tensor(FZ_F16, &h, 1, 1)};
    fz_host_tensor out[1] = {test_host_tensor(FZ_F16, &r, 1, 1)};
    run_ok(text, in, 1, out, 1);
    ck_assert_int_eq(r, 0x4001);
  }
  /* i8 + i32 is i32; i8 + int literal stays i8 and wraps; bool + bool is
   * bool (logical or) */
  {
    const char *text = "fusion @t(%a: i8[2], %b: i32[2], %c: bool[2]) {\n"
                       "  %r = add %a, %b : i32[2]\n"
                       "  %s = add %a, 100 : i8[2]\n"
                       "  %t = add %c, %c : bool[2]\n"
                       "  return %r, %s, %t\n"
                       "}\n";
    int8_t a[2] = {100, -100};
    int32_t b[2] = {100, -100}, r[2];
    uint8_t c[2] = {1, 0}, t[2];
    int8_t s[2];
    fz_host_tensor in[3] = {test_host_tensor(FZ_I8, a, 1, 2),
                            test_host_tensor(FZ_I32, b, 1, 2),
                            test_host_tensor(FZ_BOOL, c, 1, 2)};
    fz_host_tensor out[3] = {test_host_tensor(FZ_I32, r, 1, 2),
                             test_host_tensor(FZ_I8, s, 1, 2),
                             test_host_tensor(FZ_BOOL, t, 1, 2)};
    run_ok(text, in, 3, out, 3);
    ck_assert_int_eq(r[0], 200);
    ck_assert_int_eq(r[1], -200);
    ck_assert_int_eq(s[0], -56);
    ck_assert_int_eq(s[1], 0);
    ck_assert_int_eq(t[0], 1);
    ck_assert_int_eq(t[1], 0);
  }
}
END_TEST

/* Every intermediate holds exactly what its dtype can: what a GPU that
 * stores it (or keeps it in a register of that type) would see next. */
START_TEST(intermediates_hold_only_their_dtype) {
  const char *text = "fusion @t(%x: f32[1], %h: f16[1], %i: i32[1], "
                     "%g: f16[2]) {\n"
                     "  %a = add %x, 1e-9 : f32[1]\n"
                     "  %b = sub %a, %x : f32[1]\n"
                     "  %c = add %h, 0.0001 : f16[1]\n"
                     "  %d = sub %c, %h : f16[1]\n"
                     "  %j = add %i, %i : i32[1]\n"
                     "  %k = cast %j : i64[1]\n"
                     "  %l = cast %x : bf16[1]\n"
                     "  %m = cast %l : f64[1]\n"
                     "  %s = sum %g dims(0) : f16\n"
                     "  %n = sub %s, 2048.0 : f16\n"
                     "  return %b, %d, %k, %m, %n\n"
                     "}\n";
  float x = 1.0f + 0x1p-23f, b = -1;
  uint16_t h = fz_f16_from_double(1.0), d = 0xffff, n = 0xffff;
  uint16_t g[2] = {fz_f16_from_double(2048), fz_f16_from_double(1)};
  int32_t i = 1 << 30;
  int64_t k = 0;
  double m = 0;
  fz_host_tensor in[4] = {
      test_host_tensor(FZ_F32, &x, 1, 1), test_host_tensor(FZ_F16, &h, 1, 1),
      test_host_tensor(FZ_I32, &i, 1, 1), test_host_tensor(FZ_F16, g, 1, 2)};
  fz_host_tensor out[5] = {
      test_host_tensor(FZ_F32, &b, 1, 1), test_host_tensor(FZ_F16, &d, 1, 1),
      test_host_tensor(FZ_I64, &k, 1, 1), test_host_tensor(FZ_F64, &m, 1, 1),
      test_host_tensor(FZ_F16, &n, 0)};
  run_ok(text, in, 4, out, 5);
  ck_assert_float_eq(b, 0.0f);    /* 1 + 1e-9 is 1 in f32 */
  ck_assert_int_eq(d, 0x0000);    /* 1 + 1e-4 is 1 in f16 */
  ck_assert_int_eq(k, INT32_MIN); /* 2^30 + 2^30 wraps in i32 */
  ck_assert_double_eq(m, 1.0);    /* bf16 keeps 8 bits of 1 + 2^-23 */
  ck_assert_int_eq(n, 0x0000);    /* a sum is rounded too: 2049 -> 2048 */
}
END_TEST

START_TEST(scalar_inputs_and_outputs) {
  const char *text = "fusion @t(%x: f32[3], %eps: f64, %k: i32) {\n"
                     "  %y = add %x, %eps : f32[3]\n"
                     "  %z = mul %k, 2 : i32\n"
                     "  %s = sum %x dims(0) : f32\n"
                     "  return %y, %z, %s\n"
                     "}\n";
  float x[3] = {1, 2, 3}, y[3], s;
  double eps = 0.5;
  int32_t k = 21, z;
  fz_host_tensor in[3] = {test_host_tensor(FZ_F32, x, 1, 3),
                          test_host_tensor(FZ_F64, &eps, 0),
                          test_host_tensor(FZ_I32, &k, 0)};
  fz_host_tensor out[3] = {test_host_tensor(FZ_F32, y, 1, 3),
                           test_host_tensor(FZ_I32, &z, 0),
                           test_host_tensor(FZ_F32, &s, 0)};
  run_ok(text, in, 3, out, 3);
  ck_assert_float_eq(y[0], 1.5f);
  ck_assert_float_eq(y[2], 3.5f);
  ck_assert_int_eq(z, 42);
  ck_assert_float_eq(s, 6.0f);
}
END_TEST

/* symbol reads are the sizes the inputs bind: a row mean divides by K,
 * and N * K is the element count. */
START_TEST(symbol_reads_are_bound_sizes) {
  const char *text = "fusion @t(%x: f32[N, K]) {\n"
                     "  %s = sum %x dims(1) : f32[N]\n"
                     "  %k = symbol K : i64\n"
                     "  %m = div %s, %k : f32[N]\n"
                     "  %n = symbol N : i64\n"
                     "  %c = mul %n, %k : i64\n"
                     "  return %m, %c\n"
                     "}\n";
  float x[6] = {1, 2, 3, 4, 5, 6}, m[3];
  int64_t c;
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 3, 2)};
  fz_host_tensor out[2] = {test_host_tensor(FZ_F32, m, 1, 3),
                           test_host_tensor(FZ_I64, &c, 0)};
  run_ok(text, in, 1, out, 2);
  ck_assert_float_eq(m[0], 1.5f);
  ck_assert_float_eq(m[2], 5.5f);
  ck_assert_int_eq(c, 6);
  /* The same fusion at another size reads the new sizes. */
  fz_host_tensor in2[1] = {test_host_tensor(FZ_F32, x, 2, 2, 3)};
  fz_host_tensor out2[2] = {test_host_tensor(FZ_F32, m, 1, 2),
                            test_host_tensor(FZ_I64, &c, 0)};
  run_ok(text, in2, 1, out2, 2);
  ck_assert_float_eq(m[0], 2.0f);
  ck_assert_float_eq(m[1], 5.0f);
  ck_assert_int_eq(c, 6);
}
END_TEST

/* A symbol that no input names has no value to read. */
START_TEST(symbol_read_needs_a_binding) {
  fz_fusion *f = test_parse("fusion @t(%x: f32[N]) {\n"
                            "  %y = neg %x : f32[N]\n"
                            "  return %y\n"
                            "}\n");
  fz_error err = {0};
  fz_value *m = fz_read_symbol(f, fz_fusion_symbol(f, "M"), &err);
  ck_assert_msg(m != NULL, "%s", err.message);
  m->name = "m";
  ck_assert_int_eq(fz_add_output(f, m, &err), FZ_OK);
  float x[2] = {1, 2}, y[2];
  int64_t v;
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 1, 2)};
  fz_host_tensor out[2] = {test_host_tensor(FZ_F32, y, 1, 2),
                           test_host_tensor(FZ_I64, &v, 0)};
  ck_assert_int_eq(fz_interpret(f, in, 1, out, 2, &err), FZ_ERR_ARGUMENT);
  ck_assert_msg(strstr(err.message, "%m: symbol M is not bound by any input"),
                "%s", err.message);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- reductions ---------------------------------------------------------- */

/* x[i][j][k] = 12i + 4j + k over f32[2, 3, 4]. */
static void fill_234(float *x) {
  for (int e = 0; e < 24; e++)
    x[e] = (float)e;
}

static void reduce_234(const char *op, const char *dims, bool keepdim,
                       const char *rtype, int rank, const int *sizes,
                       float *out) {
  char text[256];
  snprintf(text, sizeof text,
           "fusion @t(%%x: f32[2, 3, 4]) {\n"
           "  %%r = %s %%x dims(%s)%s : %s\n"
           "  return %%r\n"
           "}\n",
           op, dims, keepdim ? " keepdim" : "", rtype);
  float x[24];
  fill_234(x);
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 3, 2, 3, 4)};
  fz_host_tensor o = {.dtype = FZ_F32, .rank = rank, .data = out};
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    o.sizes[i] = sizes[i];
    o.strides[i] = s;
    s *= sizes[i];
  }
  run_ok(text, in, 1, &o, 1);
}

static void expect_floats(const float *got, const float *want, int n) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "element %d: %g, want %g", i, got[i],
                  want[i]);
}

START_TEST(sum_over_each_axis) {
  float r[12];
  reduce_234("sum", "0", false, "f32[3, 4]", 2, (int[]){3, 4}, r);
  expect_floats(r, (float[]){12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34},
                12);
  reduce_234("sum", "1", false, "f32[2, 4]", 2, (int[]){2, 4}, r);
  expect_floats(r, (float[]){12, 15, 18, 21, 48, 51, 54, 57}, 8);
  reduce_234("sum", "2", false, "f32[2, 3]", 2, (int[]){2, 3}, r);
  expect_floats(r, (float[]){6, 22, 38, 54, 70, 86}, 6);
  reduce_234("sum", "0, 2", false, "f32[3]", 1, (int[]){3}, r);
  expect_floats(r, (float[]){60, 92, 124}, 3);
  reduce_234("sum", "0, 1, 2", false, "f32", 0, NULL, r);
  expect_floats(r, (float[]){276}, 1);
  reduce_234("sum", "1", true, "f32[2, b1, 4]", 3, (int[]){2, 1, 4}, r);
  expect_floats(r, (float[]){12, 15, 18, 21, 48, 51, 54, 57}, 8);
  reduce_234("sum", "0, 2", true, "f32[b1, 3, b1]", 3, (int[]){1, 3, 1}, r);
  expect_floats(r, (float[]){60, 92, 124}, 3);
}
END_TEST

START_TEST(prod_amax_amin) {
  float r[12];
  reduce_234("amax", "1", false, "f32[2, 4]", 2, (int[]){2, 4}, r);
  expect_floats(r, (float[]){8, 9, 10, 11, 20, 21, 22, 23}, 8);
  reduce_234("amin", "2", true, "f32[2, 3, b1]", 3, (int[]){2, 3, 1}, r);
  expect_floats(r, (float[]){0, 4, 8, 12, 16, 20}, 6);
  reduce_234("prod", "0", false, "f32[3, 4]", 2, (int[]){3, 4}, r);
  expect_floats(
      r, (float[]){0, 13, 28, 45, 64, 85, 108, 133, 160, 189, 220, 253}, 12);
  reduce_234("amax", "0, 1", false, "f32[4]", 1, (int[]){4}, r);
  expect_floats(r, (float[]){20, 21, 22, 23}, 4);
}
END_TEST

START_TEST(amax_amin_propagate_nan) {
  const char *text = "fusion @t(%x: f32[2, 3]) {\n"
                     "  %a = amax %x dims(1) : f32[2]\n"
                     "  %b = amin %x dims(1) : f32[2]\n"
                     "  return %a, %b\n"
                     "}\n";
  float x[6] = {1, NAN, 3, -INFINITY, -1, -2}, a[2], b[2];
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 2, 3)};
  fz_host_tensor out[2] = {test_host_tensor(FZ_F32, a, 1, 2),
                           test_host_tensor(FZ_F32, b, 1, 2)};
  run_ok(text, in, 1, out, 2);
  ck_assert_float_nan(a[0]);
  ck_assert_float_nan(b[0]);
  ck_assert_float_eq(a[1], -1.0f);
  ck_assert_float_eq(b[1], -INFINITY);
}
END_TEST

START_TEST(reductions_accumulate_wide_and_round_once) {
  /* In f32 step by step, 1e8 + 1 - 1e8 is 0; in f64 it is 1. */
  const char *text = "fusion @t(%x: f32[3], %h: f16[3], %i: i32[3], "
                     "%c: bool[4]) {\n"
                     "  %s = sum %x dims(0) : f32\n"
                     "  %t = sum %h dims(0) : f16\n"
                     "  %u = sum %i dims(0) : i64\n"
                     "  %v = sum %c dims(0) : i64\n"
                     "  %w = prod %i dims(0) : i64\n"
                     "  return %s, %t, %u, %v, %w\n"
                     "}\n";
  float x[3] = {1e8f, 1.0f, -1e8f}, s;
  /* f16: 2048 + 1 + 1 is 2048 if rounded per step, 2050 if once */
  uint16_t h[3] = {fz_f16_from_double(2048), fz_f16_from_double(1),
                   fz_f16_from_double(1)};
  uint16_t t;
  int32_t i[3] = {INT32_MAX, INT32_MAX, 2};
  uint8_t c[4] = {1, 0, 1, 1};
  int64_t u, v, w;
  fz_host_tensor in[4] = {
      test_host_tensor(FZ_F32, x, 1, 3), test_host_tensor(FZ_F16, h, 1, 3),
      test_host_tensor(FZ_I32, i, 1, 3), test_host_tensor(FZ_BOOL, c, 1, 4)};
  fz_host_tensor out[5] = {
      test_host_tensor(FZ_F32, &s, 0), test_host_tensor(FZ_F16, &t, 0),
      test_host_tensor(FZ_I64, &u, 0), test_host_tensor(FZ_I64, &v, 0),
      test_host_tensor(FZ_I64, &w, 0)};
  run_ok(text, in, 4, out, 5);
  ck_assert_float_eq(s, 1.0f);
  ck_assert_double_eq(fz_f16_to_double(t), 2050.0);
  ck_assert_int_eq(u, 2 * (int64_t)INT32_MAX + 2); /* no i32 overflow */
  ck_assert_int_eq(v, 3);
  ck_assert_int_eq(w, 2 * (int64_t)INT32_MAX * INT32_MAX);
}
END_TEST

/* Sums and products of f32, f16 and bf16 accumulate in f32 on the GPU (as
 * in PyTorch): a partial result past FLT_MAX is inf for good. The
 * interpreter keeps its f64 accuracy but not beyond f32's range; f64
 * reductions have f64's. */
START_TEST(f32_accumulators_overflow_as_on_the_gpu) {
  const char *text = "fusion @t(%x: f32[3], %d: f64[3], %h: bf16[3]) {\n"
                     "  %s = sum %x dims(0) : f32\n"
                     "  %p = prod %x dims(0) : f32\n"
                     "  %sd = sum %d dims(0) : f64\n"
                     "  %sh = sum %h dims(0) : bf16\n"
                     "  return %s, %p, %sd, %sh\n"
                     "}\n";
  float x[3] = {3e38f, 3e38f, -3e38f}, s, p;
  double d[3] = {3e38, 3e38, -3e38}, sd;
  uint16_t h[3] = {fz_bf16_from_double(3e38), fz_bf16_from_double(3e38),
                   fz_bf16_from_double(-3e38)};
  uint16_t sh;
  fz_host_tensor in[3] = {test_host_tensor(FZ_F32, x, 1, 3),
                          test_host_tensor(FZ_F64, d, 1, 3),
                          test_host_tensor(FZ_BF16, h, 1, 3)};
  fz_host_tensor out[4] = {
      test_host_tensor(FZ_F32, &s, 0), test_host_tensor(FZ_F32, &p, 0),
      test_host_tensor(FZ_F64, &sd, 0), test_host_tensor(FZ_BF16, &sh, 0)};
  run_ok(text, in, 3, out, 4);
  ck_assert_float_eq(s, INFINITY);
  ck_assert_float_eq(p, -INFINITY);
  ck_assert_double_eq(sd, 3e38);
  ck_assert_double_eq(fz_bf16_to_double(sh), INFINITY);

  /* Back in range in time: no partial result leaves it. */
  float y[3] = {3e38f, -3e38f, 3e38f};
  in[0] = test_host_tensor(FZ_F32, y, 1, 3);
  run_ok(text, in, 3, out, 4);
  ck_assert_float_eq(s, 3e38f);

  /* An infinite partial result meets an opposite infinity: NaN; the
   * largest finite values add up to inf, and FLT_MAX stays finite. */
  float z[3] = {FLT_MAX, FLT_MAX, -INFINITY}, m[3] = {FLT_MAX, 0, 0};
  in[0] = test_host_tensor(FZ_F32, z, 1, 3);
  run_ok(text, in, 3, out, 4);
  ck_assert_float_nan(s);
  in[0] = test_host_tensor(FZ_F32, m, 1, 3);
  run_ok(text, in, 3, out, 4);
  ck_assert_float_eq(s, FLT_MAX);
  ck_assert_float_eq(p, 0.0f);
}
END_TEST

START_TEST(amax_over_empty_axis_is_an_error) {
  const char *text = "fusion @t(%x: f32[2, N]) {\n"
                     "  %a = amax %x dims(1) : f32[2]\n"
                     "  return %a\n"
                     "}\n";
  float x[1], a[2];
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 2, 0)};
  fz_host_tensor out[1] = {test_host_tensor(FZ_F32, a, 1, 2)};
  run_fails(text, in, 1, out, 1, FZ_ERR_INVALID, "empty axis");
  /* a sum over an empty axis is 0 */
  const char *sum = "fusion @t(%x: f32[2, N]) {\n"
                    "  %a = sum %x dims(1) : f32[2]\n"
                    "  return %a\n"
                    "}\n";
  a[0] = a[1] = 7;
  run_ok(sum, in, 1, out, 1);
  ck_assert_float_eq(a[0], 0.0f);
  ck_assert_float_eq(a[1], 0.0f);
}
END_TEST

/* ---- strides ------------------------------------------------------------- */

static const char *ADD_SUM = "fusion @t(%x: f32[2, 3], %y: f32[2, 3]) {\n"
                             "  %a = add %x, %y : f32[2, 3]\n"
                             "  %s = sum %a dims(0) : f32[3]\n"
                             "  return %a, %s\n"
                             "}\n";

START_TEST(permuted_and_zero_strides_read_the_same_values) {
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {10, 20, 30, 10, 20, 30};
  float a_ref[6], s_ref[3];
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, x, 2, 2, 3),
                          test_host_tensor(FZ_F32, y, 2, 2, 3)};
  fz_host_tensor out[2] = {test_host_tensor(FZ_F32, a_ref, 2, 2, 3),
                           test_host_tensor(FZ_F32, s_ref, 1, 3)};
  run_ok(ADD_SUM, in, 2, out, 2);
  expect_floats(a_ref, (float[]){11, 22, 33, 14, 25, 36}, 6);
  expect_floats(s_ref, (float[]){25, 47, 69}, 3);

  /* x column-major, y as one row expanded with stride 0 */
  float xc[6] = {1, 4, 2, 5, 3, 6}, yrow[3] = {10, 20, 30}, a[6], s[3];
  in[0].data = xc;
  in[0].strides[0] = 1;
  in[0].strides[1] = 2;
  in[1].data = yrow;
  in[1].strides[0] = 0;
  out[0].data = a;
  out[1].data = s;
  run_ok(ADD_SUM, in, 2, out, 2);
  expect_floats(a, a_ref, 6);
  expect_floats(s, s_ref, 3);

  /* y reversed through negative strides */
  float yrev[6] = {30, 20, 10, 30, 20, 10};
  in[0] = test_host_tensor(FZ_F32, x, 2, 2, 3);
  in[1] = test_host_tensor(FZ_F32, yrev + 5, 2, 2, 3);
  in[1].strides[0] = -3;
  in[1].strides[1] = -1;
  memset(a, 0, sizeof a);
  run_ok(ADD_SUM, in, 2, out, 2);
  expect_floats(a, a_ref, 6);
}
END_TEST

START_TEST(outputs_written_through_their_strides) {
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
  float a[16], s[8];
  for (int i = 0; i < 16; i++)
    a[i] = -99;
  for (int i = 0; i < 8; i++)
    s[i] = -99;
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, x, 2, 2, 3),
                          test_host_tensor(FZ_F32, y, 2, 2, 3)};
  /* a column-major; s every other element */
  fz_host_tensor out[2] = {test_host_tensor(FZ_F32, a, 2, 2, 3),
                           test_host_tensor(FZ_F32, s, 1, 3)};
  out[0].strides[0] = 1;
  out[0].strides[1] = 2;
  out[1].strides[0] = 2;
  run_ok(ADD_SUM, in, 2, out, 2);
  expect_floats(a, (float[]){1, 4, 2, 5, 3, 6, -99}, 7);
  expect_floats(s, (float[]){5, -99, 7, -99, 9, -99}, 6);

  /* padded rows: stride 8 along axis 0 leaves the gaps alone */
  for (int i = 0; i < 16; i++)
    a[i] = -99;
  out[0].strides[0] = 8;
  out[0].strides[1] = 1;
  out[1].strides[0] = 1;
  run_ok(ADD_SUM, in, 2, out, 2);
  expect_floats(a, (float[]){1, 2, 3, -99, -99, -99, -99, -99, 4, 5, 6, -99},
                12);
}
END_TEST

/* Rows longer than the interpreter's chunk, walked column-major. */
START_TEST(long_rows_and_column_major_walks) {
  const char *text = "fusion @t(%x: f32[3, 1000] layout(1, 0)) {\n"
                     "  %y = mul %x, 2.0 : f32[3, 1000]\n"
                     "  %r = sum %y dims(1) : f32[3]\n"
                     "  %c = sum %y dims(0) : f32[1000]\n"
                     "  %t = permute %y perm(1, 0) : f32[1000, 3]\n"
                     "  %f = reshape %t : f32[3000]\n"
                     "  return %y, %r, %c, %f\n"
                     "}\n";
  static float x[3000], y[3000], c[1000], f[3000];
  float r[3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 1000; j++)
      x[j * 3 + i] = (float)(i * 1000 + j); /* column-major */
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 3, 1000)};
  in[0].strides[0] = 1;
  in[0].strides[1] = 3;
  fz_host_tensor out[4] = {test_host_tensor(FZ_F32, y, 2, 3, 1000),
                           test_host_tensor(FZ_F32, r, 1, 3),
                           test_host_tensor(FZ_F32, c, 1, 1000),
                           test_host_tensor(FZ_F32, f, 1, 3000)};
  run_ok(text, in, 1, out, 4);
  for (int i = 0; i < 3; i++) {
    ck_assert_float_eq(r[i], 2000000.0f * (float)i + 999000.0f);
    for (int j = 0; j < 1000; j++) {
      ck_assert_float_eq(y[i * 1000 + j], 2.0f * (float)(i * 1000 + j));
      ck_assert_float_eq(f[j * 3 + i], 2.0f * (float)(i * 1000 + j));
    }
  }
  for (int j = 0; j < 1000; j++)
    ck_assert_float_eq(c[j], 6.0f * (float)j + 6000.0f);
}
END_TEST

/* ---- shape ops ----------------------------------------------------------- */

START_TEST(broadcast_expand_squeeze) {
  const char *text = "fusion @t(%x: f32[2, 3]) {\n"
                     "  %s = sum %x dims(1) : f32[2]\n"
                     "  %b = broadcast %s dims(1) : f32[2, b1]\n"
                     "  %e = expand %b : f32[2, b1->3]\n"
                     "  %d = sub %x, %e : f32[2, 3]\n"
                     "  %q = squeeze %b dims(1) : f32[2]\n"
                     "  %c = broadcast %q dims(0) : f32[b1, 2]\n"
                     "  return %d, %e, %c\n"
                     "}\n";
  float x[6] = {1, 2, 3, 4, 5, 6}, d[6], e[6], c[2];
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 2, 3)};
  fz_host_tensor out[3] = {test_host_tensor(FZ_F32, d, 2, 2, 3),
                           test_host_tensor(FZ_F32, e, 2, 2, 3),
                           test_host_tensor(FZ_F32, c, 2, 1, 2)};
  run_ok(text, in, 1, out, 3);
  expect_floats(d, (float[]){-5, -4, -3, -11, -10, -9}, 6);
  expect_floats(e, (float[]){6, 6, 6, 15, 15, 15}, 6);
  expect_floats(c, (float[]){6, 15}, 2);
}
END_TEST

START_TEST(b1_operands_stretch_in_pointwise_ops) {
  const char *text = "fusion @t(%x: f32[2, 3], %w: f32[b1, 3]) {\n"
                     "  %m = mul %x, %w : f32[2, 3]\n"
                     "  return %m\n"
                     "}\n";
  float x[6] = {1, 2, 3, 4, 5, 6}, w[3] = {1, 10, 100}, m[6];
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, x, 2, 2, 3),
                          test_host_tensor(FZ_F32, w, 2, 1, 3)};
  fz_host_tensor out[1] = {test_host_tensor(FZ_F32, m, 2, 2, 3)};
  run_ok(text, in, 2, out, 1);
  expect_floats(m, (float[]){1, 20, 300, 4, 50, 600}, 6);
}
END_TEST

START_TEST(expanded_input_axis) {
  const char *text = "fusion @t(%x: f32[b1->N, 2]) {\n"
                     "  %s = sum %x dims(0) : f32[2]\n"
                     "  return %s\n"
                     "}\n";
  float x[2] = {1.5f, 2.0f}, s[2];
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 4, 2)};
  in[0].strides[0] = 0;
  fz_host_tensor out[1] = {test_host_tensor(FZ_F32, s, 1, 2)};
  run_ok(text, in, 1, out, 1);
  expect_floats(s, (float[]){6, 8}, 2);
}
END_TEST

START_TEST(permute_and_reshape_are_logical) {
  const char *text = "fusion @t(%x: f32[2, 3]) {\n"
                     "  %p = permute %x perm(1, 0) : f32[3, 2]\n"
                     "  %r = reshape %x : f32[3, 2]\n"
                     "  %pr = reshape %p : f32[6]\n"
                     "  %rr = reshape %r : f32[1, 6]\n"
                     "  return %p, %r, %pr, %rr\n"
                     "}\n";
  float x[6] = {1, 2, 3, 4, 5, 6}, p[6], r[6], pr[6], rr[6];
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 2, 3)};
  fz_host_tensor out[4] = {test_host_tensor(FZ_F32, p, 2, 3, 2),
                           test_host_tensor(FZ_F32, r, 2, 3, 2),
                           test_host_tensor(FZ_F32, pr, 1, 6),
                           test_host_tensor(FZ_F32, rr, 2, 1, 6)};
  run_ok(text, in, 1, out, 4);
  expect_floats(p, (float[]){1, 4, 2, 5, 3, 6}, 6);
  expect_floats(r, (float[]){1, 2, 3, 4, 5, 6}, 6);
  expect_floats(pr, (float[]){1, 4, 2, 5, 3, 6}, 6);
  expect_floats(rr, (float[]){1, 2, 3, 4, 5, 6}, 6);

  /* the same from a column-major input: layout never changes values */
  float xc[6] = {1, 4, 2, 5, 3, 6};
  in[0].data = xc;
  in[0].strides[0] = 1;
  in[0].strides[1] = 2;
  memset(r, 0, sizeof r);
  memset(pr, 0, sizeof pr);
  run_ok(text, in, 1, out, 4);
  expect_floats(r, (float[]){1, 2, 3, 4, 5, 6}, 6);
  expect_floats(pr, (float[]){1, 4, 2, 5, 3, 6}, 6);
}
END_TEST

START_TEST(set_copies_and_inputs_can_be_outputs) {
  const char *text = "fusion @t(%x: i32[3]) {\n"
                     "  %y = set %x : i32[3]\n"
                     "  return %y, %x\n"
                     "}\n";
  int32_t x[3] = {7, -8, 9}, y[3], z[3];
  fz_host_tensor in[1] = {test_host_tensor(FZ_I32, x, 1, 3)};
  fz_host_tensor out[2] = {test_host_tensor(FZ_I32, y, 1, 3),
                           test_host_tensor(FZ_I32, z, 1, 3)};
  run_ok(text, in, 1, out, 2);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(y[i], x[i]);
    ck_assert_int_eq(z[i], x[i]);
  }
}
END_TEST

START_TEST(iota_and_full) {
  const char *text = "fusion @t(%x: f32[N]) {\n"
                     "  %i = iota start(2) step(3) : i64[N]\n"
                     "  %g = iota start(0.5) step(0.25) : f32[4]\n"
                     "  %f = full 0.1 : f16[2, N]\n"
                     "  %b = full true : bool[N]\n"
                     "  %n = full -7 : i8[N]\n"
                     "  return %i, %g, %f, %b, %n\n"
                     "}\n";
  float x[4] = {0}, g[4];
  int64_t i[4];
  uint16_t f[8];
  uint8_t b[4];
  int8_t n[4];
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 1, 4)};
  fz_host_tensor out[5] = {
      test_host_tensor(FZ_I64, i, 1, 4), test_host_tensor(FZ_F32, g, 1, 4),
      test_host_tensor(FZ_F16, f, 2, 2, 4), test_host_tensor(FZ_BOOL, b, 1, 4),
      test_host_tensor(FZ_I8, n, 1, 4)};
  run_ok(text, in, 1, out, 5);
  for (int k = 0; k < 4; k++) {
    ck_assert_int_eq(i[k], 2 + 3 * k);
    ck_assert_float_eq(g[k], 0.5f + 0.25f * (float)k);
    ck_assert_int_eq(b[k], 1);
    ck_assert_int_eq(n[k], -7);
  }
  for (int k = 0; k < 8; k++)
    ck_assert_int_eq(f[k], 0x2e66); /* 0.1 in f16 */
}
END_TEST

/* ---- binding and argument errors ----------------------------------------- */

static const char *BIND = "fusion @t(%x: f32[N, 4], %y: f32[N, b1]) {\n"
                          "  %a = add %x, %y : f32[N, 4]\n"
                          "  return %a\n"
                          "}\n";

START_TEST(bind_errors_name_the_input_and_axis) {
  float x[12] = {0}, y[3] = {0}, a[12];
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, x, 2, 3, 4),
                          test_host_tensor(FZ_F32, y, 2, 3, 1)};
  fz_host_tensor out[1] = {test_host_tensor(FZ_F32, a, 2, 3, 4)};
  fz_fusion *f = test_parse(BIND);
  fz_bindings b;
  fz_error err = {0};
  ck_assert_int_eq(fz_bind_inputs(f, in, 2, &b, &err), FZ_OK);
  ck_assert_int_eq(b.num_symbols, 1);
  ck_assert_int_eq(b.values[0], 3);
  int64_t sizes[FZ_MAX_RANK];
  ck_assert_int_eq(fz_output_sizes(f, 0, &b, sizes, &err), FZ_OK);
  ck_assert_int_eq(sizes[0], 3);
  ck_assert_int_eq(sizes[1], 4);
  ck_assert_int_eq(fz_output_sizes(f, 1, &b, sizes, &err), FZ_ERR_ARGUMENT);
  fz_bindings_free(&b);
  fz_bindings_free(&b); /* idempotent */
  fz_fusion_destroy(f);

  in[1].dtype = FZ_F16;
  run_fails(BIND, in, 2, out, 1, FZ_ERR_ARGUMENT,
            "input 1 (%y): dtype f16 does not match the declared f32");
  in[1] = test_host_tensor(FZ_F32, y, 1, 3);
  run_fails(BIND, in, 2, out, 1, FZ_ERR_ARGUMENT,
            "input 1 (%y): rank 1 does not match the declared rank 2");
  in[1] = test_host_tensor(FZ_F32, y, 2, 2, 1);
  run_fails(BIND, in, 2, out, 1, FZ_ERR_ARGUMENT,
            "input 1 (%y) axis 0: size 2 but symbol N is 3 (bound by input 0 "
            "(%x) axis 0)");
  in[1] = test_host_tensor(FZ_F32, y, 2, 3, 2);
  run_fails(BIND, in, 2, out, 1, FZ_ERR_ARGUMENT,
            "input 1 (%y) axis 1: size 2 but the axis is declared b1");
  in[1] = test_host_tensor(FZ_F32, y, 2, 3, 1);
  in[0] = test_host_tensor(FZ_F32, x, 2, 3, 5);
  run_fails(BIND, in, 2, out, 1, FZ_ERR_ARGUMENT,
            "input 0 (%x) axis 1: size 5 does not match the declared extent "
            "4");
  in[0] = test_host_tensor(FZ_F32, x, 2, 3, 4);
  run_fails(BIND, in, 1, out, 1, FZ_ERR_ARGUMENT,
            "takes 2 inputs but was given 1");
  in[0].sizes[0] = -1;
  run_fails(BIND, in, 2, out, 1, FZ_ERR_ARGUMENT, "negative size");
}
END_TEST

START_TEST(output_descriptors_are_checked_before_writing) {
  const char *text = "fusion @t(%x: f32[N]) {\n"
                     "  %a = neg %x : f32[N]\n"
                     "  %b = abs %x : f32[N]\n"
                     "  return %a, %b\n"
                     "}\n";
  float x[3] = {1, 2, 3}, a[3] = {-99, -99, -99}, b[3];
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 1, 3)};
  fz_host_tensor out[2] = {test_host_tensor(FZ_F32, a, 1, 3),
                           test_host_tensor(FZ_F64, b, 1, 3)};
  run_fails(text, in, 1, out, 2, FZ_ERR_ARGUMENT,
            "output 1 (%b): dtype f64 but the value is f32");
  ck_assert_float_eq(a[0], -99.0f); /* nothing was written */
  out[1] = test_host_tensor(FZ_F32, b, 1, 2);
  run_fails(text, in, 1, out, 2, FZ_ERR_ARGUMENT,
            "output 1 (%b) axis 0: size 2 but the value has size 3");
  out[1] = test_host_tensor(FZ_F32, b, 2, 3, 1);
  run_fails(text, in, 1, out, 2, FZ_ERR_ARGUMENT, "output 1 (%b): rank 2");
  out[1] = test_host_tensor(FZ_F32, NULL, 1, 3);
  run_fails(text, in, 1, out, 2, FZ_ERR_ARGUMENT, "data is NULL");
  run_fails(text, in, 1, out, 1, FZ_ERR_ARGUMENT,
            "has 2 outputs but was given 1");
  ck_assert_float_eq(a[0], -99.0f);
}
END_TEST

START_TEST(unbound_result_symbol_is_an_error) {
  const char *text = "fusion @t(%x: f32[N]) {\n"
                     "  %f = full 1.0 : f32[M]\n"
                     "  return %f\n"
                     "}\n";
  float x[2], r[2];
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 1, 2)};
  fz_host_tensor out[1] = {test_host_tensor(FZ_F32, r, 1, 2)};
  run_fails(text, in, 1, out, 1, FZ_ERR_ARGUMENT,
            "%f axis 0: symbol M is not bound by any input");
}
END_TEST

START_TEST(huge_sizes_fail_cleanly) {
  /* 2^30 x 2^30 elements, all one element through zero strides: reading
   * is fine, but the intermediate cannot be allocated. */
  const char *text = "fusion @t(%x: f32[N, N]) {\n"
                     "  %e = exp %x : f32[N, N]\n"
                     "  %s = sum %e dims(0, 1) : f32\n"
                     "  return %s\n"
                     "}\n";
  float x = 1, s = -99;
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, &x, 2, 1, 1)};
  in[0].sizes[0] = in[0].sizes[1] = INT64_C(1) << 30;
  in[0].strides[0] = in[0].strides[1] = 0;
  fz_host_tensor out[1] = {test_host_tensor(FZ_F32, &s, 0)};
  run_fails(text, in, 1, out, 1, FZ_ERR_OUT_OF_MEMORY, "%e");
  ck_assert_float_eq(s, -99.0f);
  /* an element count that overflows int64: sizes no tensor can have */
  in[0].sizes[0] = in[0].sizes[1] = INT64_C(1) << 40;
  run_fails(text, in, 1, out, 1, FZ_ERR_ARGUMENT,
            "%x: extent product 1099511627776 x 1099511627776 overflows "
            "int64");
}
END_TEST

START_TEST(dead_ops_are_not_run) {
  /* %dead would fail (amax over an empty axis) but nothing uses it */
  const char *text = "fusion @t(%x: f32[2, N]) {\n"
                     "  %dead = amax %x dims(1) : f32[2]\n"
                     "  %s = sum %x dims(1) : f32[2]\n"
                     "  return %s\n"
                     "}\n";
  float x[1], s[2] = {5, 5};
  fz_host_tensor in[1] = {test_host_tensor(FZ_F32, x, 2, 2, 0)};
  fz_host_tensor out[1] = {test_host_tensor(FZ_F32, s, 1, 2)};
  run_ok(text, in, 1, out, 1);
  ck_assert_float_eq(s[0], 0.0f);
}
END_TEST

/* A longer chain whose intermediates are shared, freed early and viewed
 * through several shape ops: the layer-norm-like pattern of seed 000. */
START_TEST(normalization_chain) {
  const char *text = "fusion @t(%x: f32[2, 4], %w: f32[4]) {\n"
                     "  %s = sum %x dims(1) : f32[2]\n"
                     "  %m = mul %s, 0.25 : f32[2]\n"
                     "  %mb = broadcast %m dims(1) : f32[2, b1]\n"
                     "  %c = sub %x, %mb : f32[2, 4]\n"
                     "  %c2 = mul %c, %c : f32[2, 4]\n"
                     "  %v = sum %c2 dims(1) keepdim : f32[2, b1]\n"
                     "  %vm = mul %v, 0.25 : f32[2, b1]\n"
                     "  %r = rsqrt %vm : f32[2, b1]\n"
                     "  %n = mul %c, %r : f32[2, 4]\n"
                     "  %wb = broadcast %w dims(0) : f32[b1, 4]\n"
                     "  %y = mul %n, %wb : f32[2, 4]\n"
                     "  %yb = cast %y : bf16[2, 4]\n"
                     "  return %y, %yb\n"
                     "}\n";
  float x[8] = {1, 2, 3, 4, 10, 10, 10, 10}, w[4] = {1, 2, 1, 2}, y[8];
  uint16_t yb[8];
  fz_host_tensor in[2] = {test_host_tensor(FZ_F32, x, 2, 2, 4),
                          test_host_tensor(FZ_F32, w, 1, 4)};
  fz_host_tensor out[2] = {test_host_tensor(FZ_F32, y, 2, 2, 4),
                           test_host_tensor(FZ_BF16, yb, 2, 2, 4)};
  run_ok(text, in, 2, out, 2);
  /* row 0: mean 2.5, var 1.25, rsqrt = 0.894427190999916 in f32 */
  float r = (float)(1.0 / sqrt(1.25));
  float want[4] = {-1.5f * r, -0.5f * r * 2, 0.5f * r, 1.5f * r * 2};
  for (int k = 0; k < 4; k++) {
    ck_assert_float_eq(y[k], want[k]);
    ck_assert_int_eq(yb[k], fz_bf16_from_double(want[k]));
  }
  /* row 1: variance 0, rsqrt(0) = inf, 0 * inf = NaN */
  ck_assert_float_nan(y[4]);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("interp");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, unary_float_ops);
  tcase_add_test(tc, unary_results_round_to_their_dtype);
  tcase_add_test(tc, unary_integer_ops);
  tcase_add_test(tc, predicates_and_logic);
  tcase_add_test(tc, binary_float_ops);
  tcase_add_test(tc, mod_follows_pytorch_remainder);
  tcase_add_test(tc, comparisons);
  tcase_add_test(tc, binary_integer_ops);
  tcase_add_test(tc, special_functions_at_their_edges);
  tcase_add_test(tc, erfinv_is_accurate);
  tcase_add_test(tc, trunc_sign_frac);
  tcase_add_test(tc, value_tests);
  tcase_add_test(tc, atan2_fmod_hypot);
  tcase_add_test(tc, bitwise_and_logical_xor);
  tcase_add_test(tc, shifts_at_every_count);
  tcase_add_test(tc, nan_to_num_defaults_per_dtype);
  tcase_add_test(tc, nan_to_num_of_integers_is_a_copy);
  tcase_add_test(tc, reductions_over_no_dims_follow_pytorch);
  tcase_add_test(tc, ternary_ops);
  tcase_add_test(tc, half_formats_round_to_nearest_even);
  tcase_add_test(tc, cast_to_half_formats);
  tcase_add_test(tc, cast_float_to_int_saturates);
  tcase_add_test(tc, promotion_results);
  tcase_add_test(tc, intermediates_hold_only_their_dtype);
  tcase_add_test(tc, scalar_inputs_and_outputs);
  tcase_add_test(tc, symbol_reads_are_bound_sizes);
  tcase_add_test(tc, symbol_read_needs_a_binding);
  tcase_add_test(tc, sum_over_each_axis);
  tcase_add_test(tc, prod_amax_amin);
  tcase_add_test(tc, amax_amin_propagate_nan);
  tcase_add_test(tc, reductions_accumulate_wide_and_round_once);
  tcase_add_test(tc, f32_accumulators_overflow_as_on_the_gpu);
  tcase_add_test(tc, amax_over_empty_axis_is_an_error);
  tcase_add_test(tc, permuted_and_zero_strides_read_the_same_values);
  tcase_add_test(tc, outputs_written_through_their_strides);
  tcase_add_test(tc, long_rows_and_column_major_walks);
  tcase_add_test(tc, broadcast_expand_squeeze);
  tcase_add_test(tc, b1_operands_stretch_in_pointwise_ops);
  tcase_add_test(tc, expanded_input_axis);
  tcase_add_test(tc, permute_and_reshape_are_logical);
  tcase_add_test(tc, set_copies_and_inputs_can_be_outputs);
  tcase_add_test(tc, iota_and_full);
  tcase_add_test(tc, bind_errors_name_the_input_and_axis);
  tcase_add_test(tc, output_descriptors_are_checked_before_writing);
  tcase_add_test(tc, unbound_result_symbol_is_an_error);
  tcase_add_test(tc, huge_sizes_fail_cleanly);
  tcase_add_test(tc, dead_ops_are_not_run);
  tcase_add_test(tc, normalization_chain);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
