/* persistent_cluster.h - the cluster-persistent launch of an inner
 * persistent plan (persistent_cluster.c), asked by persistent.c's
 * heuristics before they size a row for one block. */
#ifndef FZ_SCHED_PERSISTENT_CLUSTER_H
#define FZ_SCHED_PERSISTENT_CLUSTER_H

#include "sched/plan.h"

/* How c blocks of a cluster share a row: threads per block (block_x) and
 * vector groups per thread (persistent). */
typedef struct fz_cluster_shape {
  int cluster;
  int block_x;
  int persistent;
} fz_cluster_shape;

/* The shape, in *out, for a row of `groups` vector groups of `vector`
 * lanes, of which a thread holds `held` 32-bit registers per element
 * (one per row tensor, two for an 8-byte dtype): true when
 * the row outgrows one SM (more than FZ_CLUSTER_SM_VALUES values held)
 * and fits a cluster of at most FZ_PLAN_MAX_CLUSTER blocks; false
 * otherwise (one block a row, as before). */
enum { FZ_CLUSTER_SM_VALUES = 32 * 1024 };
bool fz_cluster_shape_choose(int64_t groups, int vector, int held,
                             fz_cluster_shape *out);

/* The row tensors a thread holds through the rounds, in 32-bit
 * registers a value (an 8-byte dtype counts twice): the loads that vary
 * along the row and from row to row (a weight row, constant across rows,
 * is loaded where it is used, after the reductions). At least 1. */
int fz_persistent_row_tensors(const fz_plan *p);

/* For an INNER_PERSISTENT plan (vector set, `groups` groups a row) on a
 * device with clusters (sm_90+): when fz_cluster_shape_choose says so for
 * the row tensors its threads hold, sets the plan's launch (block_x,
 * block_y 1, persistent, threads, cluster, grid_x, blocks, index32) and
 * returns true; otherwise leaves the plan alone and returns false. */
bool fz_persistent_cluster_plan(const fz_problem *pb, fz_plan *p,
                                int64_t groups);

#endif
