/* test_philox.c - rand and randn: the Philox4x32-10 generator against the
 * published known-answer vectors, the element-to-counter contract, and
 * the statistics of what the interpreter generates (uniformity,
 * independence between offsets, seeds and neighbouring elements, normal
 * moments, dropout's keep ratio).
 *
 * The statistical tests use fixed seeds, so they are deterministic; their
 * thresholds sit five or more standard deviations from the expected value,
 * so that a correct generator passes for any seed while a broken one
 * (a constant, a repeated stream, a biased map) fails by far.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* ---- the generator ------------------------------------------------------- */

/* The three philox4x32 10-round lines of kat_vectors in the Random123
 * distribution (D. E. Shaw Research): counter, key, expected output. */
START_TEST(philox_known_answers) {
  static const struct {
    uint32_t counter[4], key[2], want[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (size_t t = 0; t < sizeof kat / sizeof *kat; t++) {
    uint32_t out[4];
    fz_philox4x32_10(kat[t].counter, kat[t].key, out);
    for (int i = 0; i < 4; i++)
      ck_assert_msg(out[i] == kat[t].want[i], "vector %zu word %d: %08x, want %08x",
                    t, i, out[i], kat[t].want[i]);
  }
}
END_TEST

static void words_of(int64_t seed, int64_t offset, uint64_t q, uint32_t w[4]) {
  uint64_t s = (uint64_t)seed, o = (uint64_t)offset;
  uint32_t counter[4] = {(uint32_t)q, (uint32_t)(q >> 32), (uint32_t)o,
                         (uint32_t)(o >> 32)};
  uint32_t key[2] = {(uint32_t)s, (uint32_t)(s >> 32)};
  fz_philox4x32_10(counter, key, w);
}

/* Element i takes call i / G, words from (i % G) * (4 / G): the layout
 * docs/format.md promises, with 64-bit seeds, offsets and indices split
 * into low and high words. */
START_TEST(elements_take_their_words) {
  const int64_t seed = -3, offset = 0x123456789ab;
  const int64_t index = ((int64_t)5 << 32) + 13; /* high counter word 1 */
  uint32_t w[4];
  words_of(seed, offset, (uint64_t)index / 4, w);
  ck_assert_double_eq(fz_philox_value(FZ_OP_RAND, FZ_F32, seed, offset, index),
                      (double)(w[1] >> 8) * 0x1p-24);
  ck_assert_double_eq(fz_philox_value(FZ_OP_RAND, FZ_F16, seed, offset, index),
                      (double)(w[1] >> 21) * 0x1p-11);
  ck_assert_double_eq(fz_philox_value(FZ_OP_RAND, FZ_BF16, seed, offset, index),
                      (double)(w[1] >> 24) * 0x1p-8);
  words_of(seed, offset, (uint64_t)index / 2, w);
  uint64_t bits = ((((uint64_t)w[3]) << 32) | w[2]) >> 11;
  ck_assert_double_eq(fz_philox_value(FZ_OP_RAND, FZ_F64, seed, offset, index),
                      (double)bits * 0x1p-53);
  ck_assert_double_eq(
      fz_philox_value(FZ_OP_RANDN, FZ_F32, seed, offset, index),
      fz_philox_from_words(FZ_OP_RANDN, FZ_F32, w + 2));
  words_of(seed, offset, (uint64_t)index, w);
  ck_assert_double_eq(
      fz_philox_value(FZ_OP_RANDN, FZ_F64, seed, offset, index),
      fz_philox_from_words(FZ_OP_RANDN, FZ_F64, w));
}
END_TEST

/* The largest words give the largest uniform values, still below 1 in
 * every dtype (no rounding happens: the values are exact there); the
 * smallest give 0; randn's log argument is in (0, 1], so the extreme
 * words give finite values. */
START_TEST(uniform_ends_and_normal_extremes) {
  const uint32_t ones[4] = {~0u, ~0u, ~0u, ~0u}, zeros[4] = {0, 0, 0, 0};
  const fz_dtype dtypes[] = {FZ_F32, FZ_F16, FZ_BF16, FZ_F64};
  for (int d = 0; d < 4; d++) {
    double top = fz_philox_from_words(FZ_OP_RAND, dtypes[d], ones);
    int bits = fz_philox_uniform_bits(dtypes[d]);
    ck_assert_double_eq(top, 1.0 - ldexp(1.0, -bits));
    ck_assert_double_eq(fz_round_to_dtype(top, dtypes[d]), top);
    ck_assert_double_eq(fz_philox_from_words(FZ_OP_RAND, dtypes[d], zeros),
                        0.0);
    double n0 = fz_philox_from_words(FZ_OP_RANDN, dtypes[d], zeros);
    double n1 = fz_philox_from_words(FZ_OP_RANDN, dtypes[d], ones);
    ck_assert_msg(isfinite(n0) && n0 > 5.0 && n0 < 9.0, "randn(0) = %g", n0);
    ck_assert_msg(isfinite(n1) && fabs(n1) < 1e-6, "randn(ones) = %g", n1);
  }
}
END_TEST

/* ---- the interpreter ----------------------------------------------------- */

enum { ROWS = 256, COLS = 256, COUNT = ROWS * COLS };

/* Runs `text` (inputs %seed and %off, i64 scalars; one output of COUNT
 * elements, [ROWS, COLS]) and returns the output as doubles (malloc'd). */
static double *run(const char *text, fz_dtype dtype, int64_t seed,
                   int64_t offset) {
  fz_fusion *f = test_parse(text);
  fz_host_tensor in[2] = {{.dtype = FZ_I64, .rank = 0, .data = &seed},
                          {.dtype = FZ_I64, .rank = 0, .data = &offset}};
  size_t size = dtype == FZ_F64 ? 8 : dtype == FZ_F32 ? 4 : 2;
  void *data = malloc(size * COUNT);
  fz_host_tensor out = {.dtype = dtype,
                        .rank = 2,
                        .sizes = {ROWS, COLS},
                        .strides = {COLS, 1},
                        .data = data};
  fz_error err = {0};
  fz_status st = fz_interpret(f, in, 2, &out, 1, &err);
  ck_assert_msg(st == FZ_OK, "interpret failed: %s", err.message);
  fz_fusion_destroy(f);
  double *v = malloc(sizeof *v * COUNT);
  for (int i = 0; i < COUNT; i++) {
    switch (dtype) {
    case FZ_F64: v[i] = ((double *)data)[i]; break;
    case FZ_F32: v[i] = ((float *)data)[i]; break;
    case FZ_F16: v[i] = fz_f16_to_double(((uint16_t *)data)[i]); break;
    default: v[i] = fz_bf16_to_double(((uint16_t *)data)[i]); break;
    }
  }
  free(data);
  return v;
}

static double *generate(const char *op, fz_dtype dtype, int64_t seed,
                        int64_t offset) {
  char text[256];
  snprintf(text, sizeof text,
           "fusion @r(%%seed: i64, %%off: i64) {\n"
           "  %%u = %s %%seed, %%off : %s[%d, %d]\n"
           "  return %%u\n}\n",
           op, fz_dtype_name(dtype), ROWS, COLS);
  return run(text, dtype, seed, offset);
}

/* Each element is the definition's value at its row-major index, however
 * the result is viewed afterwards; literal operands work as inputs do. */
START_TEST(interpreter_follows_the_definition) {
  const int64_t seed = 77, offset = 5;
  double *u = generate("rand", FZ_F32, seed, offset);
  double *t = run("fusion @t(%seed: i64, %off: i64) {\n"
                  "  %u = rand 77, 5 : f32[256, 256]\n"
                  "  %p = permute %u perm(1, 0) : f32[256, 256]\n"
                  "  return %p\n}\n",
                  FZ_F32, 0, 0);
  for (int i = 0; i < COUNT; i++) {
    ck_assert_double_eq(u[i], fz_philox_value(FZ_OP_RAND, FZ_F32, seed,
                                              offset, i));
    int r = i / COLS, c = i % COLS;
    ck_assert_double_eq(t[c * COLS + r], u[i]);
  }
  free(u);
  free(t);
  double *n = generate("randn", FZ_F32, seed, offset);
  for (int i = 0; i < COUNT; i++)
    ck_assert_double_eq(n[i], (float)fz_philox_value(FZ_OP_RANDN, FZ_F32, seed,
                                                      offset, i));
  free(n);
}
END_TEST

/* Pearson's chi-square of counts against equal expectations. */
static double chi_square(const int *counts, int bins, int total) {
  double want = (double)total / bins, chi = 0;
  for (int b = 0; b < bins; b++)
    chi += (counts[b] - want) * (counts[b] - want) / want;
  return chi;
}

/* 64 bins, 63 degrees of freedom: mean 63, standard deviation 11.2; the
 * bound is 6 deviations above. */
#define CHI63_BOUND 130.0

static double uniform_chi(const double *u, int n) {
  int counts[64] = {0};
  for (int i = 0; i < n; i++) {
    ck_assert_msg(u[i] >= 0.0 && u[i] < 1.0, "u[%d] = %.17g", i, u[i]);
    counts[(int)(u[i] * 64)]++;
  }
  return chi_square(counts, 64, n);
}

START_TEST(rand_is_uniform) {
  const fz_dtype dtypes[] = {FZ_F32, FZ_F64, FZ_F16, FZ_BF16};
  const int64_t seeds[] = {0, 1, 0x5eed, -1};
  for (int d = 0; d < 4; d++)
    for (int s = 0; s < 4; s++) {
      double *u = generate("rand", dtypes[d], seeds[s], s * 1000);
      double chi = uniform_chi(u, COUNT);
      ck_assert_msg(chi < CHI63_BOUND, "%s seed %d: chi-square %g",
                    fz_dtype_name(dtypes[d]), s, chi);
      free(u);
    }
}
END_TEST

/* Pairs (a[i], b[i]) on an 8 x 8 grid: independent uniforms fill it
 * evenly (63 degrees of freedom). */
static double pair_chi(const double *a, const double *b, int n) {
  int counts[64] = {0};
  for (int i = 0; i < n; i++)
    counts[(int)(a[i] * 8) * 8 + (int)(b[i] * 8)]++;
  return chi_square(counts, 64, n);
}

static double correlation(const double *a, const double *b, int n) {
  double ma = 0, mb = 0;
  for (int i = 0; i < n; i++) {
    ma += a[i];
    mb += b[i];
  }
  ma /= n;
  mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (int i = 0; i < n; i++) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / sqrt(saa * sbb);
}

/* 65536 pairs: a correlation's standard deviation is 1/256; the bound is
 * 5 of them. */
#define CORRELATION_BOUND 0.02

static void check_independent(const char *what, const double *a,
                              const double *b, int n) {
  double r = correlation(a, b, n), chi = pair_chi(a, b, n);
  ck_assert_msg(fabs(r) < CORRELATION_BOUND, "%s: correlation %g", what, r);
  ck_assert_msg(chi < CHI63_BOUND, "%s: pair chi-square %g", what, chi);
}

/* Streams of neighbouring offsets and seeds, words of one call and the
 * same word of neighbouring counters show no dependence. */
START_TEST(streams_and_neighbours_are_independent) {
  double *a = generate("rand", FZ_F32, 42, 0);
  double *b = generate("rand", FZ_F32, 42, 1);
  double *c = generate("rand", FZ_F32, 43, 0);
  check_independent("offsets 0 and 1", a, b, COUNT);
  check_independent("seeds 42 and 43", a, c, COUNT);
  for (int i = 0; i < COUNT; i++)
    ck_assert_msg(a[i] != b[i] || a[(i + 1) % COUNT] != b[(i + 1) % COUNT],
                  "offsets 0 and 1 repeat at %d", i);
  /* element i and i + 1 share a call (i % 4 < 3) or not; i and i + 4 are
   * the same word of neighbouring counters */
  static double x[COUNT / 2], y[COUNT / 2];
  for (int step = 1; step <= 4; step *= 2) {
    int n = 0;
    for (int i = 0; i + step < COUNT && n < COUNT / 2; i += 2 * step)
      for (int k = 0; k < step && n < COUNT / 2; k++) {
        x[n] = a[i + k];
        y[n++] = a[i + k + step];
      }
    char what[64];
    snprintf(what, sizeof what, "elements %d apart", step);
    check_independent(what, x, y, n);
  }
  free(a);
  free(b);
  free(c);
}
END_TEST

/* Mean 0 and variance 1 (standard deviations of the estimates 1/256 and
 * sqrt(2)/256: bounds of 5 and 5.4 of them), and the share within one
 * standard deviation, 0.6827 (deviation 0.0018: bound 5.5 of them). */
START_TEST(randn_is_standard_normal) {
  const fz_dtype dtypes[] = {FZ_F32, FZ_F64, FZ_BF16};
  for (int d = 0; d < 3; d++) {
    double *z = generate("randn", dtypes[d], 9, 2);
    double sum = 0, sq = 0;
    int within = 0;
    for (int i = 0; i < COUNT; i++) {
      ck_assert_msg(isfinite(z[i]), "z[%d] = %g", i, z[i]);
      sum += z[i];
      sq += z[i] * z[i];
      within += fabs(z[i]) < 1.0;
    }
    double mean = sum / COUNT, var = sq / COUNT - mean * mean;
    double share = (double)within / COUNT;
    const char *name = fz_dtype_name(dtypes[d]);
    ck_assert_msg(fabs(mean) < 0.02, "%s: mean %g", name, mean);
    ck_assert_msg(fabs(var - 1.0) < 0.03, "%s: variance %g", name, var);
    ck_assert_msg(fabs(share - 0.6827) < 0.01, "%s: share within 1: %g", name,
                  share);
    free(z);
  }
}
END_TEST

/* Dropout as the Python front end builds it: keep where rand < 1 - p,
 * kept values divided by 1 - p. */
START_TEST(dropout_keeps_its_share_and_scales) {
  const char *text = "fusion @d(%seed: i64, %off: i64) {\n"
                     "  %x = full 3.0 : f32[256, 256]\n"
                     "  %u = rand %seed, %off : f32[256, 256]\n"
                     "  %keep = lt %u, 0.75 : bool[256, 256]\n"
                     "  %s = div %x, 0.75 : f32[256, 256]\n"
                     "  %o = where %keep, %s, 0.0 : f32[256, 256]\n"
                     "  return %o\n}\n";
  double *o = run(text, FZ_F32, 1234, 0);
  int kept = 0;
  for (int i = 0; i < COUNT; i++) {
    if (o[i] != 0.0) {
      kept++;
      ck_assert_double_eq(o[i], 4.0);
    }
  }
  /* binomial: standard deviation sqrt(0.75 * 0.25 / 65536) = 0.0017 */
  double share = (double)kept / COUNT;
  ck_assert_msg(fabs(share - 0.75) < 0.01, "kept %g", share);
  free(o);
}
END_TEST

/* ---- building ------------------------------------------------------------ */

START_TEST(build_random_checks_its_arguments) {
  fz_fusion *f = fz_fusion_create("b");
  fz_fusion *g = fz_fusion_create("other");
  fz_error err = {0};
  fz_value *seed = fz_fusion_add_scalar(f, "seed", FZ_I64, &err);
  fz_value *off = fz_literal_int(f, 3);
  fz_value *wide = fz_fusion_add_scalar(f, "w", FZ_F32, &err);
  int64_t ext[2] = {4, FZ_EXTENT_SYMBOL};
  const char *syms[2] = {NULL, "N"};
  ck_assert_ptr_null(
      fz_build_random(f, "rand", FZ_F32, 2, ext, syms, seed, off, &err));
  ck_assert_msg(strstr(err.message, "N"), "%s", err.message); /* unknown N */
  ext[1] = 8;
  ck_assert_ptr_null(
      fz_build_random(f, "exp", FZ_F32, 2, ext, NULL, seed, off, &err));
  ck_assert_msg(strstr(err.message, "is not rand or randn"), "%s", err.message);
  ck_assert_ptr_null(
      fz_build_random(f, "rand", FZ_I32, 2, ext, NULL, seed, off, &err));
  ck_assert_msg(strstr(err.message, "must be a float"), "%s", err.message);
  ck_assert_ptr_null(
      fz_build_random(f, "randn", FZ_F32, 2, ext, NULL, wide, off, &err));
  ck_assert_msg(strstr(err.message, "operand 0 (the seed) must be an i64 "
                                    "scalar, not f32"),
                "%s", err.message);
  ck_assert_ptr_null(fz_build_random(f, "randn", FZ_F32, 2, ext, NULL, seed,
                                     fz_literal_int(g, 1), &err));
  ck_assert_int_eq(err.status, FZ_ERR_ARGUMENT);
  fz_value *r =
      fz_build_random(f, "randn", FZ_BF16, 2, ext, NULL, seed, off, &err);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->type.dtype, FZ_BF16);
  ck_assert_int_eq(r->def->code, FZ_OP_RANDN);
  fz_fusion_destroy(f);
  fz_fusion_destroy(g);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("philox");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, philox_known_answers);
  tcase_add_test(tc, elements_take_their_words);
  tcase_add_test(tc, uniform_ends_and_normal_extremes);
  tcase_add_test(tc, interpreter_follows_the_definition);
  tcase_add_test(tc, rand_is_uniform);
  tcase_add_test(tc, streams_and_neighbours_are_independent);
  tcase_add_test(tc, randn_is_standard_normal);
  tcase_add_test(tc, dropout_keeps_its_share_and_scales);
  tcase_add_test(tc, build_random_checks_its_arguments);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make_suite()); }
