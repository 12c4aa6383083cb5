/* index_map.h - affine maps from a kernel's reference coordinates to the
 * logical coordinates of any value of the fusion.
 *
 * A map for value v is a matrix A (v's rank rows, the reference's rank
 * columns): coordinate k of v = sum_r A[k][r] * c[r]. Shape ops transform
 * maps exactly (broadcast, squeeze and expand add or drop zero rows,
 * permute reorders rows, reshape combines rows where the shapes allow),
 * so a kernel can read any input at the reference's coordinates through
 * one stride per reference axis. Where a shape op would need division
 * (a reshape that splits a reference axis), there is no affine map and
 * the rule says so.
 */
#ifndef FZ_SCHED_INDEX_MAP_H
#define FZ_SCHED_INDEX_MAP_H

#include "fz/ir.h"

typedef struct fz_index_map {
  int rows; /* rank of the value */
  int cols; /* rank of the reference */
  int64_t a[FZ_MAX_RANK][FZ_MAX_RANK];
} fz_index_map;

fz_index_map fz_index_map_identity(int rank);
bool fz_index_map_equal(const fz_index_map *x, const fz_index_map *y);

/* Map of operand `k` of op given the map of its result (backward). Returns
 * false, with a reason in why (when not NULL), when no affine map exists. symbols are the bound
 * extents (reshape needs real sizes). */
bool fz_index_map_to_operand(const fz_op *op, int k, const fz_index_map *result,
                             const int64_t *symbols, fz_index_map *operand,
                             char *why, size_t why_size);

/* Map of op's result given the map of operand `k` (forward), for the ops
 * where that is determined: pointwise, cast, set, permute, broadcast,
 * squeeze, reshape merges, reductions (the kept axes). */
bool fz_index_map_from_operand(const fz_op *op, int k,
                               const fz_index_map *operand,
                               const int64_t *symbols, fz_index_map *result);

/* gather and index_select: the map through which their data operand is
 * read at the result's map `res`, the gathered axis left out (its
 * coordinate is the index value, added by the kernel). */
fz_index_map fz_index_map_gathered(const fz_op *op, const fz_index_map *res);

/* Element strides per reference axis of a tensor with these logical
 * strides, read through map m: s[r] = sum_k strides[k] * a[k][r]. */
void fz_index_map_strides(const fz_index_map *m, const int64_t *strides,
                          int64_t *out);

#endif
