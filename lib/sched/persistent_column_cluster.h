/* persistent_column_cluster.h - whether an inner-outer plan combines its
 * column partials across a thread-block cluster before they meet in the
 * workspace (persistent_column_cluster.c), asked by persistent.c's
 * heuristics once the launch and the prefetch are chosen. */
#ifndef FZ_SCHED_PERSISTENT_COLUMN_CLUSTER_H
#define FZ_SCHED_PERSISTENT_COLUMN_CLUSTER_H

#include "sched/plan.h"

/* For an INNER_OUTER_PERSISTENT plan whose launch (block_x, grid_x,
 * persistent, vector, prefetch) is set: on sm_90 and later, when the
 * cluster size divides the grid and the exchange fits in shared memory,
 * sets column_cluster and column_chunk and returns true; otherwise
 * leaves them 0 and returns false. FZ_INNER_OUTER_CLUSTER in the
 * environment picks the cluster size: 2, 4 or 8, or off (the default:
 * it measured no faster, persistent_column_cluster.c). */
bool fz_column_cluster_plan(const fz_problem *pb, fz_plan *p);

#endif
