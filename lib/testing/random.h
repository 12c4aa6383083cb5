/* random.h - random valid fusions for randomized testing (random.c).
 *
 * Part of fz_testing, the support library of fuse-run --random and the
 * unit tests; libfz does not contain it. */
#ifndef FZ_TESTING_RANDOM_H
#define FZ_TESTING_RANDOM_H

#include "fz/ir.h"

/* What fz_random_fusion may generate; zero fields take the defaults. */
typedef struct fz_random_options {
  bool allow_reductions; /* sum/prod/amax/amin and their epilogues */
  int max_ops;           /* ops to aim for, at least 3 (0: 15) */
  unsigned dtypes;       /* input and cast dtypes, bits 1u << FZ_<dtype>
                            (0: FZ_RANDOM_DTYPES_DEFAULT) */
  int max_extent;        /* largest symbol value and constant extent (0: 40) */
  int64_t max_elements;  /* largest tensor fz_random_bindings allows
                            (0: 65536) */
} fz_random_options;

#define FZ_RANDOM_DTYPES_DEFAULT                                               \
  ((1u << FZ_F32) | (1u << FZ_F16) | (1u << FZ_BF16) | (1u << FZ_I32) |        \
   (1u << FZ_BOOL))

/* A random fusion that fz_verify accepts, the same for the same seed and
 * options: 1-3 inputs of rank 1-4 with random layouts, 3..max_ops ops,
 * 1-3 outputs. Its values stay comparable between the GPU and the
 * interpreter (no discontinuity after an inexact op, bounded magnitudes,
 * outputs no finer than their error). NULL only when out of memory. */
fz_fusion *fz_random_fusion(uint64_t seed, const fz_random_options *opts);
/* Random values for the fusion's symbols (values[num_symbols]), each in
 * [1, max_extent], shrunk until no tensor has more than max_elements.
 * opts may be NULL. */
void fz_random_bindings(const fz_fusion *fusion, uint64_t seed,
                        const fz_random_options *opts, int64_t *values);

#endif
