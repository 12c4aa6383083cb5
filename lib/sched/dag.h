/* dag.h - building a plan's node DAG and its canonical iteration space,
 * for the pointwise, reduction and persistent schedulers (the transpose
 * scheduler starts from the pointwise plan), and the vectorization helpers
 * of pointwise.c that all four share.
 *
 * Every value reachable from the outputs gets an affine map from the
 * reference's coordinates (index_map.h), found once per value (any one:
 * enough to know each output's map). The DAG is then built from the
 * outputs down, memoised on (value, map, space): shape ops dissolve into
 * maps, each distinct (input, strides) pair is one access, and a reduction
 * result becomes a REDUCE node over its input's nodes.
 */
#ifndef FZ_SCHED_DAG_H
#define FZ_SCHED_DAG_H

#include "sched/index_map.h"
#include "sched/itable.h"
#include "sched/plan.h"

/* Maps are interned (fz_dag_intern): equal maps are one map in an
 * arena, so that a large fusion, where most values share a few maps,
 * stores a pointer per value and node rather than a matrix, and maps
 * compare by address. */
typedef struct fz_map_set {
  fz_arena *arena;
  fz_itable index;
  const fz_index_map **list;
  int count, cap;
} fz_map_set;

/* What the schedulers asked about one problem share (plan.h,
 * fz_problem.memo): the interned maps, and the maps found from each
 * reference (fz_dag_find_maps), which every reduction-based scheduler
 * and the pointwise one (for the transpose one too) would find again. */
struct fz_sched_memo {
  fz_arena *arena;
  fz_map_set maps;
  /* the references whose maps were found (with the sizes they were
   * taken at), and for each a map per value id */
  const fz_value **refs;
  int64_t (*ref_sizes)[FZ_MAX_RANK];
  const fz_index_map ***found;
  int count, cap;
};

typedef struct fz_dag {
  const fz_problem *problem;
  fz_arena *arena;
  fz_reason *why;
  int ref_rank;
  int64_t ref_sizes[FZ_MAX_RANK];
  /* The interned maps: the problem's memo's when it has one, else own. */
  fz_map_set own_maps;
  fz_map_set *map_set;
  const fz_index_map *no_map; /* the map of no coefficients, once made */
  /* one map per value id, NULL until found */
  const fz_index_map **maps;
  /* the DAG */
  fz_plan_node *nodes;
  const fz_index_map **node_maps; /* per node, the map it was built at */
  int num_nodes, cap_nodes;
  fz_plan_access *accesses;
  int64_t (*ref_strides)[FZ_MAX_RANK]; /* per access, per reference axis */
  int num_accesses, cap_accesses;
  /* The earliest node computing a value at a map in a space (REDUCE and
   * STORE nodes excepted), the REDUCE node of a value, the access of a
   * tensor at given strides: found without a scan (dag_nodes.c). */
  fz_itable node_index, reduce_index, access_index;
  /* Persistent plans: reduction results may be used back in the full
   * space; a reduction over exactly `rcols` (reference axes, as a bit set)
   * is a row reduction, one over the other non-trivial axes a column
   * reduction. */
  bool persistent;
  unsigned rcols;
} fz_dag;

/* The canonical space: reference axes in physical order, size-1 axes
 * dropped, neighbours of the same kind merged where every access and iota
 * steps the outer one exactly `size` times as far as the inner one. */
typedef struct fz_canon {
  int rank;
  int64_t extents[FZ_MAX_RANK];
  bool reduced[FZ_MAX_RANK];
  int axes[FZ_MAX_RANK][FZ_MAX_RANK]; /* reference axes, outer first */
  int num_axes[FZ_MAX_RANK];
} fz_canon;

/* Sets up for a reference of the given logical sizes; allocates in arena.
 * d must be zeroed before its first fz_dag_init; a later one on the same
 * problem and arena (the next reference candidate) reuses the arrays the
 * earlier one allocated, so that trying many candidates on a large fusion
 * takes the memory of one. */
void fz_dag_init(fz_dag *d, const fz_problem *problem, fz_arena *arena,
                 const int64_t *ref_sizes, int ref_rank, fz_reason *why);
/* The interned copy of m (see fz_map_set), allocated in the set's arena. */
const fz_index_map *fz_dag_intern(fz_dag *d, const fz_index_map *m);
/* Seeds the identity map at `reference`, then finds maps backward and
 * forward. Returns false (with a reason) if some output has none. With a
 * memo, maps found from the same reference before are taken from it. */
bool fz_dag_find_maps(fz_dag *d, const fz_value *reference);
/* Node computing v at map m in the full space, or (post) the row space
 * (plan.h: fz_space); -1 with a reason when v cannot be computed there. */
int fz_dag_node(fz_dag *d, const fz_value *v, const fz_index_map *m,
                bool post);
/* Store node for output i (its map from fz_dag_find_maps). */
int fz_dag_store(fz_dag *d, int output, int source, bool post);
/* The same, for any space. */
int fz_dag_node_in(fz_dag *d, const fz_value *v, const fz_index_map *m,
                   fz_space space);
int fz_dag_store_in(fz_dag *d, int output, int source, fz_space space);
/* Columns (reference axes, as a bit set) a row of a map touches, and all
 * rows together. */
unsigned fz_map_row_columns(const fz_index_map *m, int row);
unsigned fz_map_columns(const fz_index_map *m);
/* Reference-space candidates for a reduction: its input, then values it
 * is computed from through single-operand ops with the same number of
 * elements, more axes first (a reshape is affine from the finer space).
 * Returns the count (at most max). */
int fz_dag_reference_candidates(const fz_problem *pb, const fz_op *reduction,
                                const fz_value **out, int max);
/* Canonical axes, physical order taken from `order_strides` (per
 * reference axis; larger is outer; ties keep logical order); `reduced`
 * (may be NULL) marks reference axes that are reduced. */
void fz_dag_canonical(const fz_dag *d, const int64_t *order_strides,
                      const bool *reduced, fz_canon *c);
/* Move accesses and nodes into `p` with strides in canonical axes. */
void fz_dag_finish(fz_dag *d, const fz_canon *c, fz_plan *p);
/* For builders of nodes outside dag_nodes.c (dag_resize.c): push_node's
 * node (memoised on its value when it has one; m NULL for none), and the
 * access of fusion input `input` at these per-reference-axis strides, an
 * offset in elements and a clamp (plan.h, fz_plan_access), shared with an
 * equal one already made. */
int fz_dag_push_node(fz_dag *d, fz_plan_node node, const fz_index_map *m);
int fz_dag_push_access(fz_dag *d, int input, const int64_t *ref_strides,
                       int64_t offset, int64_t clamp);
/* dag_resize.c: the node of a slice, pad or cat result v at map m (its
 * operands read through windowed accesses of fusion inputs), or -1 with a
 * reason when an operand is not an input (what the pushdown pass could
 * not move there). */
int fz_dag_resize_node(fz_dag *d, const fz_value *v, const fz_index_map *m,
                       fz_space space);
/* When some resize op reads a value computed in this space (one with a
 * map, not an input): declines at it, saying so, and returns true (the
 * reason an output is then missing from the space). */
bool fz_dag_resize_unmapped(fz_dag *d);
/* argreduce.c: the position node of arg-reduction op (its result's
 * REDUCE node reads it), at the map of the op's operand. */
fz_plan_node fz_dag_arg_position(const fz_dag *d, const fz_op *op);
/* Set the reason and return false. _at: a reason about value `about`,
 * located at the op that defines it. */
bool fz_dag_decline(fz_dag *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
bool fz_dag_decline_at(fz_dag *d, const fz_value *about, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* v's label (fz_value_label) for a reason about it, or "" when no reason
 * is wanted (d->why NULL: the executor's questions), so that declining
 * formats nothing then. */
const char *fz_dag_label(const fz_dag *d, const fz_value *v, char *buf,
                         size_t size);
/* True when the n (size, stride) pairs tile a dense block exactly once. */
bool fz_dense_cover(const int64_t *sizes, const int64_t *strides, int n);
int64_t fz_desc_numel(const fz_tensor_desc *d);

/* Reduction-based schedulers build a plan from one reference candidate;
 * fz_dag_try drives `build` over fz_dag_reference_candidates (finest
 * first) as a scheduler's entry point (plan.h): the first candidate whose
 * plan's parameters fit is the plan; the reason kept is the first
 * candidate's (the reduction's own input). */
typedef bool (*fz_dag_build_fn)(fz_dag *d, const fz_problem *pb,
                                fz_arena *arena, fz_reason *why,
                                const fz_op *first, const fz_value *ref,
                                fz_plan **out);
bool fz_dag_try(const fz_problem *pb, fz_arena *arena, fz_plan **out,
                fz_reason *why, fz_dag_build_fn build);

#endif
