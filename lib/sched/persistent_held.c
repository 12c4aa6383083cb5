/* persistent_held.c - where an outer persistent plan (batch norm) holds
 * its rows: in registers, or in shared memory (plan->held_shared).
 *
 * Why: a thread keeps every value of its held rows from the first round
 * to the last, and besides them, per held row, its row index and whether
 * it lies inside the space, until the row's stores in the last round. At
 * 512 threads a block, ptxas has 128 registers a thread. Batch norm
 * forward of NHWC f32 [32, 28, 28, 256] on 132 SMs holds 24 rows of 4
 * lanes a thread: 96 values, 48 indices and flags, 8 column sums; ptxas
 * spilled 176-188 bytes a thread at 128 registers. 16 rows of 4 lanes
 * ([9, 30, 30, 512]) took 123 registers and spilled nothing.
 *
 * So, estimating held * (values + 2) + column accumulators + 24 (the
 * pointers, the thread's indices and loop state) registers a thread,
 * which is 128 for those 16 rows and 176 for the 24: a plan whose
 * estimate passes the block's registers a thread keeps its held inputs
 * in dynamic shared memory instead, copied there once with cp.async
 * (sm_80 and later), every held row in flight at once, and each round
 * walks the held rows in a loop, reading them back and recomputing what
 * it needs, with the row index computed afresh in each trip
 * (lib/lower/persistent_held.c). [32, 28, 28, 256] then keeps 192 KiB of
 * rows in shared memory a block, beside at most 16 KiB of the column
 * combine's scratch. Each held access must move whole cp.async pieces (4,
 * 8 or 16 bytes) a group, as a prefetch's do.
 *
 * FZ_OUTER_SHARED=0 in the environment keeps the rows in registers, the
 * launch to compare with.
 */
#include "sched/persistent_held.h"

#include <stdlib.h>
#include <string.h>

/* The column combine's static shared memory, at most (its budget in
 * lib/lower/persistent_columns.c). */
enum { COLUMN_SCRATCH = 16 * 1024, FIXED_REGISTERS = 24, REGISTER_FILE = 65536 };

void fz_persistent_held_choose(const fz_problem *pb, fz_plan *p, int columns,
                               int row_loads) {
  p->held_shared = false;
  const char *off = getenv("FZ_OUTER_SHARED");
  if ((off && strcmp(off, "0") == 0) || pb->device.sm < 80 ||
      p->kind != FZ_PLAN_OUTER_PERSISTENT)
    return;
  int64_t lanes = (int64_t)p->persistent * p->vector;
  int64_t estimate =
      (int64_t)p->unroll * (lanes * (row_loads ? row_loads : 1) + 2) +
      (int64_t)columns * lanes + FIXED_REGISTERS;
  int64_t budget = REGISTER_FILE / p->threads;
  if (budget > 255)
    budget = 255;
  if (estimate <= budget)
    return;
  p->held_shared = true;
  size_t bytes = fz_plan_shared_bytes(p) + COLUMN_SCRATCH;
  p->held_shared =
      fz_plan_held_pieces_fit(p) && bytes <= (size_t)pb->device.max_shared_per_block;
}
