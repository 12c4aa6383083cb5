/* skeleton.h - private to lib/lower: the skeletons' entry points, one
 * kernel body per plan kind, and the limits of the skeletons with limits
 * of their own.
 *
 * lower.c, the driver, is the only caller: it verifies every plan
 * (fz_plan_verify), then calls the plan kind's check here, declares the
 * kernel, reads its parameters and calls the plan kind's fz_emit_* here,
 * which emits the kernel body into k->e.fn. The skeletons include this
 * header only to define what it declares; no helper includes it (emit.h
 * says which files are which).
 */
#ifndef FZ_LOWER_SKELETON_H
#define FZ_LOWER_SKELETON_H

#include "emit.h"

/* ---- pointwise.c --------------------------------------------------------- */

bool fz_emit_pointwise(fz_kernel *k);

/* ---- reduction.c --------------------------------------------------------- */

bool fz_emit_inner_reduction(fz_kernel *k);
bool fz_emit_outer_reduction(fz_kernel *k);

/* ---- transpose.c --------------------------------------------------------- */

/* TRANSPOSE plans: whether the tiles fit in static shared memory, then
 * the body:
 * shared-memory tiles between a load phase along the tiled inputs'
 * contiguous axis and a store phase along the outputs'. */
fz_status fz_check_transpose(const fz_plan *plan, fz_error *err);
bool fz_emit_transpose(fz_kernel *k);

/* ---- persistent.c -------------------------------------------------------- */

/* Whether a thread's share of the rows it holds fits the values the
 * persistent skeleton keeps in registers (FZ_PERS_MAX_VALUES). */
fz_status fz_check_persistent(const fz_plan *plan, fz_error *err);
/* INNER_PERSISTENT, INNER_OUTER_PERSISTENT and OUTER_PERSISTENT kernel
 * bodies. */
bool fz_emit_persistent(fz_kernel *k);

/* ---- persistent_multipass.c ---------------------------------------------- */

/* The kernel body of a multipass plan (plan->multipass). */
bool fz_emit_multipass(fz_kernel *k);

#endif
