/* axis_map.h - which axes of a fusion denote the same loop.
 *
 * A union-find over the logical axes of every value (inputs and op
 * results; literals have none). Axes that an op ties together are joined
 * into one *class*:
 *   pointwise, cast, set, where/fma/clamp: operand axis i with result axis
 *     i, except an unexpanded broadcast (b1) operand axis under a result
 *     axis that is not b1: that b1 is only "broadcast to" the result axis
 *     (an edge, no join). Two b1 axes join.
 *   broadcast: operand axes with the result's non-inserted axes, in order;
 *     inserted axes start classes of their own.
 *   squeeze: the remaining axes, in order.
 *   expand: every axis positionally; the class of an expanded axis b1->E
 *     records E as its extent.
 *   permute: result axis i with operand axis perm[i].
 *   reshape: axes that pass through unchanged (a group of one operand axis
 *     and one result axis of provably equal extent) join; the axes of a
 *     split or merge are related by reshape edges instead.
 *   reduction: kept axes join positionally; the reduced operand axes mark
 *     their class as reduced by that op; with keepdim, the b1 axes left in
 *     the result are edges to ("broadcast of") the reduced class, not
 *     members of it.
 *
 * The map is a snapshot of the fusion when it was built; rebuild it after
 * a pass changes the fusion. Everything lives in the arena it was built in.
 */
#ifndef FZ_SCHED_AXIS_MAP_H
#define FZ_SCHED_AXIS_MAP_H

#include "fz/ir.h"

typedef struct fz_axis_map fz_axis_map;

/* Builds the map of a verified fusion. Never fails: operands and results
 * that do not fit an op's rule (unverified IR) simply join nothing. */
fz_axis_map *fz_axis_map_build(const fz_fusion *fusion, fz_arena *arena);

/* Classes are numbered 0..n-1 in the order of their first member, members
 * taken inputs first, then op results in op order, axes ascending. */
int fz_axis_map_num_classes(const fz_axis_map *map);
/* Class of axis `axis` of `value`, or -1 (a literal, an axis out of range,
 * a value built after the map). */
int fz_axis_map_class(const fz_axis_map *map, const fz_value *value, int axis);
/* Some reduction of the fusion reduces an axis of class c. */
bool fz_axis_map_class_is_reduced(const fz_axis_map *map, int c);

/* Do the two axes provably have the same extent? An axis's extent here is
 * the extent of the loop it denotes: its extent, for an expanded axis its
 * expanded extent, and for an unexpanded b1 axis that of the class it was
 * joined into (b1 -> expand -> b1->E: E). Same class suffices unless the
 * class mixes provably different extents (a b1 expanded to two extents);
 * otherwise the extents must be the same constant or the same symbol. */
bool fz_axis_map_same_extent(const fz_axis_map *map, const fz_value *a,
                             int axis_a, const fz_value *b, int axis_b);

/* Is axis `axis` of `value` the image of a reduced axis of `reduction`
 * (a reduction op) - the post-reduction broadcast question of seed 000?
 * True when its class is the class of a reduced axis of the reduction's
 * operand, or is a keepdim image of it, or is broadcast to it by a
 * pointwise op; and for a broadcast class that never meets an iteration
 * axis at all (an expanded value only stored), when its expanded extent is
 * provably the reduced extent. Answered on classes, so it does not depend
 * on the chain of shape ops between the reduction and the value. */
bool fz_axis_map_is_reduction_broadcast(const fz_axis_map *map,
                                        const fz_value *value, int axis,
                                        const fz_op *reduction);

/* One line per class, in class order:
 *   class 3: %x[1] %t[1] %e[1] (reduced by %s)
 * followed by what the class carries: (reduced by %a, %b),
 * (expanded to E), (broadcast of class k) for keepdim images,
 * (broadcast to class k, ...) for b1 axes stretched by pointwise ops,
 * (reshaped from class k, ...), (conflicting extents). Values print under
 * the names fz_print gives them. */
void fz_axis_map_print(const fz_axis_map *map, fz_buf *out);

/* ---- reshape groups (shared with alloc_order.c) ------------------------ */

/* A reshape splits into groups: consecutive operand axes whose element
 * count equals that of consecutive result axes. A size-1 axis on one side
 * only is a group of its own with nothing on the other side. `exact` is
 * false only for a trailing group whose counts could not be proved equal
 * (symbolic extents that do not factor). A pass-through axis is a group of
 * one axis on each side with exact set. */
typedef struct fz_reshape_group {
  int num_from, num_to;
  int from[FZ_MAX_RANK]; /* operand axes, ascending */
  int to[FZ_MAX_RANK];   /* result axes, ascending */
  bool exact;
} fz_reshape_group;

/* Fills groups (in axis order) and returns how many. */
int fz_reshape_groups(const fz_fusion *f, const fz_type *from,
                      const fz_type *to,
                      fz_reshape_group groups[2 * FZ_MAX_RANK]);

#endif
