/* host_data.c - typed element access for host buffers.
 *
 * f16 and bf16 are stored as their bit patterns; conversions round to
 * nearest even, as a GPU store does, so that what fuse-run uploads is
 * exactly what the reference interpreter reads.
 */
#include "host_data.h"

#include "testing/splitmix.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)((u + rounding) >> 16);
}

static float bf16_to_float(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t double_to_f16(double d) {
  if (isnan(d))
    return 0x7e00;
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  if (a >= 65520.0) /* rounds to infinity */
    return sign | 0x7c00;
  if (a < 0x1p-14) { /* subnormal: units of 2^-24, round half even */
    double units = a * 0x1p24;
    double r = nearbyint(units); /* default rounding mode: to nearest even */
    return sign | (uint16_t)r;
  }
  int e;
  double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  double frac = m * 2048.0; /* 11 significant bits */
  double r = nearbyint(frac);
  if (r >= 2048.0) {
    r /= 2;
    e++;
  }
  int exp = e - 1 + 15;
  if (exp >= 31)
    return sign | 0x7c00;
  return sign | (uint16_t)(exp << 10) | (uint16_t)((uint32_t)r & 0x3ff);
}

static double f16_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = ldexp(mant, -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = ldexp(mant | 0x400, exp - 25);
  return (h & 0x8000) ? -v : v;
}

double host_load(fz_dtype dtype, const void *p) {
  switch (dtype) {
  case FZ_F64: { double v; memcpy(&v, p, 8); return v; }
  case FZ_F32: { float v; memcpy(&v, p, 4); return v; }
  case FZ_F16: { uint16_t v; memcpy(&v, p, 2); return f16_to_double(v); }
  case FZ_BF16: { uint16_t v; memcpy(&v, p, 2); return bf16_to_float(v); }
  case FZ_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
  case FZ_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case FZ_I8: { int8_t v; memcpy(&v, p, 1); return v; }
  case FZ_BOOL: { uint8_t v; memcpy(&v, p, 1); return v != 0; }
  case FZ_NUM_DTYPES: break;
  }
  return 0;
}

void host_store(fz_dtype dtype, void *p, double v) {
  switch (dtype) {
  case FZ_F64: memcpy(p, &v, 8); break;
  case FZ_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
  case FZ_F16: { uint16_t h = double_to_f16(v); memcpy(p, &h, 2); break; }
  case FZ_BF16: {
    /* via f32 is exact for values already representable in bf16 */
    uint16_t h = float_to_bf16((float)v);
    memcpy(p, &h, 2);
    break;
  }
  case FZ_I64: { int64_t i = (int64_t)v; memcpy(p, &i, 8); break; }
  case FZ_I32: { int32_t i = (int32_t)v; memcpy(p, &i, 4); break; }
  case FZ_I8: { int8_t i = (int8_t)v; memcpy(p, &i, 1); break; }
  case FZ_BOOL: { uint8_t b = v != 0; memcpy(p, &b, 1); break; }
  case FZ_NUM_DTYPES: break;
  }
}

fz_status host_layout(int rank, const int64_t *sizes, fz_dtype dtype,
                      const int *alloc_order, const bool *contiguous,
                      int64_t pad, const char *what, int64_t *strides,
                      int64_t *span, fz_error *err) {
  int64_t stride = 1;
  for (int p = rank - 1; p >= 0; p--) {
    int axis = alloc_order[p];
    if ((contiguous && !contiguous[p] &&
         __builtin_add_overflow(stride, pad, &stride)) ||
        (strides[axis] = stride,
         !fz_size_mul(stride, sizes[axis] > 0 ? sizes[axis] : 1, &stride)))
      return fz_error_set(err, FZ_ERR_ARGUMENT,
                          "%s: its layout, padded by %" PRId64
                          ", overflows int64",
                          what, pad);
  }
  return fz_size_span(rank, sizes, strides, dtype, what, FZ_ERR_ARGUMENT,
                      span, err);
}

double host_random_value(fz_dtype dtype, uint64_t *s) {
  if (fz_dtype_is_float(dtype)) {
    for (;;) {
      double u = (double)(fz_splitmix64(s) >> 11) * 0x1p-53; /* [0, 1) */
      double v = fz_round_to_dtype(2.0 * u - 1.0, dtype);
      if (v != 0.0)
        return v;
    }
  }
  if (dtype == FZ_BOOL)
    return (double)(fz_splitmix64(s) & 1);
  for (;;) {
    int64_t v = (int64_t)(fz_splitmix64(s) % 16) - 8;
    if (v != 0)
      return (double)v;
  }
}
