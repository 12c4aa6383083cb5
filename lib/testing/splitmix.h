/* splitmix.h - the one pseudo-random generator of fz's tests and tools.
 *
 * splitmix64: every seed is a good seed, and the stream is the same on
 * every machine, so a seed printed by a failing run repeats it anywhere.
 * Random fusions, the tools' host tensors and the randomized unit tests
 * all draw from it. */
#ifndef FZ_TESTING_SPLITMIX_H
#define FZ_TESTING_SPLITMIX_H

#include <stdint.h>

/* The next number of the stream whose state is *state. */
uint64_t fz_splitmix64(uint64_t *state);

#endif
