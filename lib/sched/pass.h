/* pass.h - lib/sched's IR-to-IR passes and the table that names them
 * (fz_run_pass in fz.h, fuse-opt --pass), grouped by the file that
 * defines them. */
#ifndef FZ_SCHED_PASS_H
#define FZ_SCHED_PASS_H

#include "fz/ir.h"

/* ---- pass.c: the pass table --------------------------------------------- */

/* A pass edits a fusion in place; it returns non-FZ_OK only for input it
 * cannot handle, never leaving the fusion half-rewritten and invalid. */
typedef fz_status (*fz_pass_fn)(fz_fusion *fusion, fz_error *err);
typedef struct fz_pass_info {
  const char *name;        /* as given to fz_run_pass and --pass */
  fz_pass_fn run;
  const char *description; /* one line, for --help */
} fz_pass_info;
/* The table, in registration order; fz_pass_at returns NULL out of range. */
int fz_pass_count(void);
const fz_pass_info *fz_pass_at(int index);
/* The pass with this name, or NULL. */
const fz_pass_info *fz_pass_find(const char *name);

/* ---- canonicalize.c ----------------------------------------------------- */

/* Folds squeeze(broadcast(x)), broadcast(squeeze(x)), set chains,
 * permute(permute(x)) and arithmetic on literals, merges common
 * subexpressions and drops dead ops, to a fixpoint. Values are preserved
 * exactly, and so is every declared layout of a fusion output. */
fz_status fz_pass_canonicalize(fz_fusion *fusion, fz_error *err);

/* ---- cse.c -------------------------------------------------------------- */

/* One sweep of common-subexpression elimination: a later op equal to an
 * earlier one (opcode, operands, attributes, type including layout) has its
 * uses moved to the earlier result. Returns whether anything changed; the
 * merged ops are left dead for fz_remove_dead_ops. */
bool fz_cse(fz_fusion *fusion);
/* The same sweep through an index of f's uses (fz_uses_build), which it
 * keeps up to date. */
bool fz_cse_uses(fz_fusion *fusion, fz_uses *uses);
/* The "cse" pass: fz_cse to a fixpoint, then dead ops removed. */
fz_status fz_pass_cse(fz_fusion *fusion, fz_error *err);

/* ---- alloc_order.c ------------------------------------------------------ */

/* The "alloc-order" pass: every op result of rank > 0 without a declared
 * layout takes the allocation order of the operand it is computed from
 * (carried through permute, broadcast, squeeze, reductions and reshapes
 * that keep it derivable; rules in alloc_order.c), fully contiguous, with
 * has_layout set. Declared layouts are never changed. Outputs included:
 * the executor allocates them in the order chosen. */
fz_status fz_pass_alloc_order(fz_fusion *fusion, fz_error *err);

/* ---- resize_pushdown.c -------------------------------------------------- */

/* The "resize-pushdown" pass: slices, pads and cats of computed values
 * become elementwise ops of windows of their inputs (and a `where` where
 * padded points or a cat's operands must be told apart), so that a
 * kernel reads inputs through windows; what cannot move is left in place.
 * Values are preserved exactly. The executor runs it on its copy of a
 * fusion, as fuse-opt does before scheduling. */
fz_status fz_pass_resize_pushdown(fz_fusion *fusion, fz_error *err);

/* ---- gather_pushdown.c -------------------------------------------------- */

/* The "gather-pushdown" pass: gathers and index_selects of values computed
 * by pointwise ops, casts and copies become those ops computed at the
 * gathered points, down to gathers of fusion inputs (or of values no rule
 * goes through); broadcast operands stay as they are. Exact. */
fz_status fz_pass_gather_pushdown(fz_fusion *fusion, fz_error *err);

#endif
