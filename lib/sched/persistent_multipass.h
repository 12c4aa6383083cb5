/* persistent_multipass.h - the multipass launch of an inner persistent
 * plan whose row does not stay on chip (persistent_multipass.c), and the
 * persistent scheduler's build it goes through (persistent.c). */
#ifndef FZ_SCHED_PERSISTENT_MULTIPASS_H
#define FZ_SCHED_PERSISTENT_MULTIPASS_H

#include "sched/dag.h"

/* How a block walks a row: block_x threads, `trip` groups a thread a trip
 * (plan->persistent), `blocks` blocks walking the rows. */
typedef struct fz_multipass_shape {
  int block_x;
  int trip;
  int64_t blocks;
} fz_multipass_shape;

/* The shape for `rows` rows of `groups` vector groups of `vector` lanes,
 * of which a thread reads `held` 32-bit registers per element (one per
 * row tensor, two for an 8-byte dtype), on `num_sms` SMs: false when
 * there are fewer rows than SMs (a block a row would leave SMs idle,
 * where the segmenter's kernels split rows over the grid). */
bool fz_multipass_shape_choose(int64_t rows, int64_t groups, int vector,
                               int held, int num_sms,
                               fz_multipass_shape *out);

/* For an INNER_PERSISTENT plan (vector set, `groups` groups a row) that
 * reads its row once in a multipass walk (fz_multipass_reads_once):
 * whether a multipass plan should take it rather than a cluster, because
 * its row outgrows one SM and its rows fill the device (the file's
 * comment says why). persistent.c's heuristics then decline the row as
 * too long. */
bool fz_multipass_prefer(const fz_problem *pb, const fz_plan *p,
                         int64_t groups);

/* For an INNER_PERSISTENT plan (vector set) that persistent.c's
 * heuristics declined because its row fits neither a block nor a
 * cluster: sets the multipass launch and returns true, or declines
 * through the DAG. */
bool fz_multipass_plan(fz_dag *d, const fz_problem *pb, fz_plan *p);

/* persistent.c's plan builder (an fz_dag_build_fn with a mode): with
 * multipass false, the persistent scheduler's; with multipass true, it
 * accepts only what the persistent heuristics decline for the row's
 * length, as a multipass plan. */
bool fz_persistent_build(fz_dag *d, const fz_problem *pb, fz_arena *arena,
                         fz_reason *why, const fz_op *first,
                         const fz_value *ref, fz_plan **out, bool multipass);

#endif
