/* heuristics.h - the rules every scheduler shares: rounding, which axes an
 * op reduces, vector widths, 32-bit indexing.
 *
 * Each scheduler decides its own launch (how many threads share a row,
 * how far to unroll), but the questions below have one answer for all of
 * them: a tensor's vector width is set by its strides, offset and pointer
 * alignment whatever kernel reads it, and a kernel may index in 32 bits
 * under the same condition everywhere. Kept in one place so that the
 * schedulers cannot drift apart on them.
 */
#ifndef FZ_SCHED_HEURISTICS_H
#define FZ_SCHED_HEURISTICS_H

#include "sched/plan.h"

/* ---- arithmetic ------------------------------------------------------ */

/* The smallest power of two >= n (1 for n <= 1): block dimensions are
 * powers of two so that tree reductions in shared memory halve evenly. */
int64_t fz_pow2_ceil(int64_t n);
/* a / b rounded up, for a >= 0 and b > 0: tiles, blocks and per-thread
 * trips that must cover every element. */
int64_t fz_cdiv(int64_t a, int64_t b);

/* Whether reduction `op` reduces axis `axis` of its operand. */
bool fz_op_reduces_axis(const fz_op *op, int axis);

/* ---- vector widths --------------------------------------------------- */

/* The runtime descriptor of an access (an input's or an output's). */
const fz_tensor_desc *fz_plan_access_desc(const fz_problem *pb,
                                          const fz_plan_access *a);

/* Whether access `a` (descriptor `d`) can move v elements at once along
 * the innermost canonical axis: unit stride there, every vector starting
 * at a multiple of v elements (extent, outer strides and offset divisible
 * by v), and the pointer aligned to the vector's bytes (16 at most). */
bool fz_plan_access_can_vectorize(const fz_plan *p, const fz_plan_access *a,
                                  const fz_tensor_desc *d, int v);

/* Which accesses a scheduler counts for a question: `access` is an index
 * into p->accesses; ctx is the scheduler's. */
typedef bool (*fz_access_filter)(const fz_plan *p, int access,
                                 const void *ctx);

/* Lanes for 16-byte vectors of the narrowest access with unit innermost
 * stride among those `counts` accepts (NULL: all), at most 8 (one
 * thread's 8 lanes of a 2-byte dtype are 16 bytes: the widest load);
 * 1 when none is contiguous. */
int fz_plan_widest_vector(const fz_plan *p, fz_access_filter counts,
                          const void *ctx);

/* v halved until it divides the innermost extent (a vector never spans
 * two rows), and, with outputs_decide, until every output contiguous
 * along the innermost axis can be written at that width: a scalar store
 * splits a vector's worth of work across instructions anyway, while an
 * input that cannot take it is simply read scalar. */
int fz_plan_fit_vector(const fz_problem *pb, const fz_plan *p, int v,
                       bool outputs_decide);

/* Each access's own width: v where it walks the innermost axis (`walks`
 * accepts it; NULL: all do) and fz_plan_access_can_vectorize allows it,
 * else 1. */
void fz_plan_set_access_vectors(const fz_problem *pb, fz_plan *p, int v,
                                fz_access_filter walks, const void *ctx);

/* ---- prefetch ------------------------------------------------------- */

/* Sets p->prefetch_row_values: a prefetching persistent plan that has
 * row-constant inputs stages them in its buffers (plan.h) when a thread
 * prefetches at most 64 bytes a row (heuristics.c says what was
 * measured); FZ_PREFETCH_ROW_VALUES=0 never, =1 always (for A/B timing).
 * Call it with p->prefetch set, before fz_plan_shared_bytes. */
void fz_plan_choose_row_values(fz_plan *p);
/* The most groups of a row a thread of a persistent normalization holds,
 * which sets how many threads share the row: `dflt`, or with
 * FZ_PERSISTENT_GROUPS=N (a power of two from 1 to 64) N, for A/B timing
 * of wider and narrower blocks. */
int fz_persistent_most_groups(int dflt);
/* The blocks of an inner-outer plan an SM keeps at most: `dflt`, or with
 * FZ_INNER_OUTER_BLOCKS=1 one, for A/B timing of half the grid (half
 * the column partials through the workspace, each block walking twice
 * the rows). */
int fz_inner_outer_blocks_per_sm(int dflt);
/* Sets p->prefetch_deep: three buffers, the copies two rows ahead
 * (plan.h), with FZ_PREFETCH_BUFFERS=3 (for A/B timing); two otherwise
 * (measured faster; heuristics.c).
 * Call it with p->prefetch set, before fz_plan_shared_bytes. */
void fz_plan_choose_deep(fz_plan *p);
/* Sets p->weights_early (plan.h) on an inner persistent plan that reads
 * a weight row and reduces its rows, with FZ_WEIGHT_LOAD=early (for A/B
 * timing); the weights are loaded where first used otherwise. */
void fz_plan_choose_weights_early(fz_plan *p);
/* Sets p->refetch_bf16 (plan.h) on a persistent plan of rows, not a
 * multipass walk, that reads a bf16 input straight from memory, with
 * FZ_REFETCH_BF16=1 (for A/B timing, and until it has run on a GPU). */
void fz_plan_choose_refetch(fz_plan *p);
/* Sets p->trace_phases (plan.h) on an inner-outer plan with
 * FZ_TRACE=phases: the kernel records when each block reaches each phase
 * (for measurement; it costs a few stores a block). */
void fz_plan_choose_trace(fz_plan *p);
/* Sets p->column_parts (plan.h): on a plan with column reductions across
 * the grid, 1, or 2 or 4 with FZ_COLUMN_PARTS=2 or 4 (for A/B timing,
 * and until they have run on a GPU); 0 on other plans. */
void fz_plan_choose_column_parts(fz_plan *p);

/* ---- indexing -------------------------------------------------------- */

/* Every offset, extent and the loop bound fit in int32: the kernel then
 * indexes in 32 bits, which saves registers and integer instructions. */
bool fz_plan_fits_int32(const fz_plan *p, int64_t loop_bound);

#endif
