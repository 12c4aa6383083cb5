/* hash.c - a 128-bit hash for naming cache entries and checking them.
 *
 * Two 64-bit lanes take 16 bytes per round, each word first scrambled by
 * an invertible mix (xor-shifts and odd multipliers), each lane rotated,
 * multiplied and fed the other lane, so both halves of the result depend
 * on every byte. The length is folded into the starting state, so zero
 * padding of the last round cannot make two inputs equal. The constants
 * are the first hexadecimal digits of pi. Collisions only cost a miss:
 * the cache compares the full key of every entry it loads.
 */
#include "codegen/cache.h"

#include <stdio.h>
#include <string.h>

static const uint64_t K0 = 0x243f6a8885a308d3ull;
static const uint64_t K1 = 0x13198a2e03707345ull;
static const uint64_t K2 = 0xa4093822299f31d1ull;
static const uint64_t K3 = 0x082efa98ec4e6c89ull;

static uint64_t rotl(uint64_t x, unsigned r) {
  return x << r | x >> (64 - r);
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 32;
  x *= K1;
  x ^= x >> 29;
  x *= K3;
  x ^= x >> 32;
  return x;
}

/* Little-endian on every host, so names agree across machines. */
static uint64_t load64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void round16(uint64_t *a, uint64_t *b, const unsigned char *p) {
  *a = rotl(*a ^ mix(load64(p)), 23) * K1 + *b;
  *b = rotl(*b ^ mix(load64(p + 8)), 41) * K3 + *a;
}

fz_hash128 fz_hash128_bytes(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t a = K0 ^ (uint64_t)n, b = K2 + mix((uint64_t)n);
  size_t full = n / 16 * 16;
  for (size_t i = 0; i < full; i += 16)
    round16(&a, &b, p + i);
  unsigned char tail[16] = {0};
  if (n > full)
    memcpy(tail, p + full, n - full);
  round16(&a, &b, tail);
  fz_hash128 h;
  h.lo = mix(a + rotl(b, 31));
  h.hi = mix(b ^ h.lo ^ K0);
  return h;
}

void fz_hash128_hex(fz_hash128 h, char hex[33]) {
  snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h.hi,
           (unsigned long long)h.lo);
}
