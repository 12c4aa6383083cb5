/* persistent_held.h - where an outer persistent plan holds its rows
 * (persistent_held.c), asked by persistent.c's outer heuristics once the
 * launch is chosen. */
#ifndef FZ_SCHED_PERSISTENT_HELD_H
#define FZ_SCHED_PERSISTENT_HELD_H

#include "sched/plan.h"

/* For an OUTER_PERSISTENT plan whose launch is set (block, persistent,
 * unroll): sets held_shared when the held rows would not leave the
 * thread's registers room enough and they fit in shared memory instead.
 * `columns` counts the column reductions, `row_loads` the loads held per
 * row. */
void fz_persistent_held_choose(const fz_problem *pb, fz_plan *p, int columns,
                               int row_loads);

#endif
