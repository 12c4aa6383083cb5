/* philox.c - what rand and randn compute: the Philox4x32-10 counter-based
 * generator (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11) and the maps from its 32-bit words to uniform
 * and normal values. This file is the definition the interpreter uses;
 * lib/lower/random.c emits the same arithmetic for the GPU, and
 * docs/format.md states the contract.
 *
 * Element i of a result (its row-major linear index in the result's
 * logical shape) is computed by one Philox call on
 *   counter = (q low, q high, offset low, offset high), q = i / G,
 *   key     = (seed low, seed high),
 * from the call's words starting at word (i % G) * (4 / G), where G
 * (fz_philox_per_call) is how many elements one call feeds: 4 for rand of
 * 32-bit and narrower floats (one word each), 2 for rand f64 and randn of
 * those (two words each), 1 for randn f64 (all four words). So a value
 * depends on (seed, offset, i) alone, never on how a kernel walks the
 * elements.
 */
#include "fz/ir.h"

#include <math.h>

enum {
  PHILOX_M0 = 0xD2511F53u, /* the round multipliers */
  PHILOX_M1 = 0xCD9E8D57u,
  PHILOX_W0 = 0x9E3779B9u, /* the key schedule's increments (Weyl) */
  PHILOX_W1 = 0xBB67AE85u,
};

static void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
  uint64_t p = (uint64_t)a * b;
  *hi = (uint32_t)(p >> 32);
  *lo = (uint32_t)p;
}

void fz_philox4x32_10(const uint32_t counter[4], const uint32_t key[2],
                      uint32_t out[4]) {
  uint32_t x0 = counter[0], x1 = counter[1], x2 = counter[2], x3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(PHILOX_M0, x0, &hi0, &lo0);
    mulhilo(PHILOX_M1, x2, &hi1, &lo1);
    uint32_t y0 = hi1 ^ x1 ^ k0, y2 = hi0 ^ x3 ^ k1;
    x0 = y0;
    x1 = lo1;
    x2 = y2;
    x3 = lo0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

int fz_philox_per_call(fz_opcode code, fz_dtype dtype) {
  bool wide = dtype == FZ_F64;
  if (code == FZ_OP_RAND)
    return wide ? 2 : 4;
  return wide ? 1 : 2;
}

int fz_philox_uniform_bits(fz_dtype dtype) {
  switch (dtype) {
  case FZ_F16:
    return 11;
  case FZ_BF16:
    return 8;
  case FZ_F64:
    return 53;
  default:
    return 24;
  }
}

/* The top 53 bits of the 64-bit number hi:lo. */
static uint64_t bits53(uint32_t lo, uint32_t hi) {
  return (((uint64_t)hi << 32) | lo) >> 11;
}

double fz_philox_from_words(fz_opcode code, fz_dtype dtype,
                            const uint32_t *w) {
  if (dtype == FZ_F64) {
    if (code == FZ_OP_RAND)
      return (double)bits53(w[0], w[1]) * 0x1p-53;
    double u1 = (double)(bits53(w[0], w[1]) + 1) * 0x1p-53; /* (0, 1] */
    double u2 = (double)bits53(w[2], w[3]) * 0x1p-53;
    return sqrt(-2.0 * log(u1)) * cos(FZ_PHILOX_TWO_PI * u2);
  }
  if (code == FZ_OP_RAND) {
    /* exactly representable in the dtype: no rounding can reach 1.0 */
    int bits = fz_philox_uniform_bits(dtype);
    return (double)(w[0] >> (32 - bits)) * ldexp(1.0, -bits);
  }
  /* f32 arithmetic, rounded to a narrower dtype afterwards */
  float u1 = (float)((w[0] >> 8) + 1) * 0x1p-24f;
  float u2 = (float)(w[1] >> 8) * 0x1p-24f;
  float r = sqrtf(-2.0f * logf(u1));
  float theta = (float)FZ_PHILOX_TWO_PI * u2;
  return (double)(r * cosf(theta));
}

double fz_philox_value(fz_opcode code, fz_dtype dtype, int64_t seed,
                       int64_t offset, int64_t index) {
  int per_call = fz_philox_per_call(code, dtype);
  uint64_t q = (uint64_t)index / (uint64_t)per_call;
  uint64_t off = (uint64_t)offset, key64 = (uint64_t)seed;
  uint32_t counter[4] = {(uint32_t)q, (uint32_t)(q >> 32), (uint32_t)off,
                         (uint32_t)(off >> 32)};
  uint32_t key[2] = {(uint32_t)key64, (uint32_t)(key64 >> 32)};
  uint32_t words[4];
  fz_philox4x32_10(counter, key, words);
  int first = (int)((uint64_t)index % (uint64_t)per_call) * (4 / per_call);
  return fz_philox_from_words(code, dtype, words + first);
}
