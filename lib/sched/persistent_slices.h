/* persistent_slices.h - the column-sliced launch of an outer persistent
 * plan (persistent_slices.c), asked by persistent.c's outer heuristics
 * before they give every block whole rows. */
#ifndef FZ_SCHED_PERSISTENT_SLICES_H
#define FZ_SCHED_PERSISTENT_SLICES_H

#include "sched/plan.h"

/* For an OUTER_PERSISTENT plan (vector set): when its rows are wide
 * enough to be cut into slices of at least 8 groups and the slices still
 * fit, sets the launch (block_x, block_y, persistent 1, persistent_full
 * 0, threads, unroll, grid_x, blocks, column_slices) and returns true;
 * otherwise leaves the plan alone and returns false. `columns` counts
 * the column reductions, `row_loads` the loads held per row. */
bool fz_persistent_slices_plan(const fz_problem *pb, fz_plan *p, int columns,
                               int row_loads);

#endif
