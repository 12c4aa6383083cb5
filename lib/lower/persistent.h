/* persistent.h - private to lib/lower: the state of a persistent kernel,
 * shared by its row half (persistent.c: rows held in registers, the
 * rounds, stores), its column half (persistent_columns.c: block partials
 * of column reductions, the grid barrier, the final column pass), the
 * prefetch of the next row (persistent_prefetch.c), an outer plan's rows
 * held in shared memory (persistent_held.c), the column slices of an
 * outer plan (persistent_slices.c), the exchange of a cluster plan's row
 * reductions (persistent_cluster.c), the cluster combine of a
 * column_cluster plan's column partials (persistent_column_cluster.c),
 * the walks of a multipass plan (persistent_multipass.c) and what they
 * share (persistent_common.c). persistent.c calls the others but
 * persistent_multipass.c, which lower.c calls and which calls
 * persistent.c; persistent_columns.c calls persistent_column_cluster.c,
 * which calls persistent_cluster.c; persistent_prefetch.c,
 * persistent_held.c and persistent_cluster.c call only
 * persistent_common.c.
 *
 * Every node lives in one of five spaces, decided from its plan space
 * (node->space) and, within the full space, from what it varies along: a
 * full-space node that only reads row-constant data (rstd * rstd) is
 * computed once per row, not once per element. "Along R" is along the
 * plan's row_axes, "the kept axes" the others.
 *   CONST   varies along nothing (literals, scalar inputs): once, in the
 *           entry block, one lane;
 *   ROW     constant along R (row REDUCE nodes, mean/rstd, FZ_SPACE_ROW):
 *           once per row, one lane;
 *   COLC    constant along the kept axes, not a column node (a weight
 *           row): for inner-outer plans, whose blocks walk many rows, once
 *           per thread and group, in the entry; for inner plans (a block
 *           mostly has one row) where first used, like FULL;
 *   FULL    varies along both: per row, per group, per lane;
 *   COLUMN  FZ_SPACE_COLUMN (column REDUCE nodes and what follows them):
 *           in the final column pass.
 */
#ifndef FZ_LOWER_PERSISTENT_H
#define FZ_LOWER_PERSISTENT_H

#include "emit.h"

typedef enum pers_space {
  PS_CONST,
  PS_ROW,
  PS_COLC,
  PS_FULL,
  PS_COLUMN,
} pers_space;

enum { PERS_MAX_COLUMN_REDUCES = 32 };

/* Values a thread holds per row tensor: persistent groups * lanes. */
enum { FZ_PERS_MAX_VALUES = FZ_LOWER_MAX_COLUMNS };

typedef struct pers {
  fz_kernel *k;
  const fz_plan *p;
  int G, V;   /* groups per thread (plan->persistent), lanes per group */
  bool outer; /* INNER_OUTER, OUTER: column reductions across the grid */
  int held;   /* OUTER: rows held per thread (plan->unroll), else 0 */
  int col_round; /* persistent_columns.c: the round being combined, or -1 */
  unsigned char *space;       /* [node] */
  /* canonical axes, outermost first: those rows differ along (k), and
   * those a row spans (r: plan->row_axes) */
  int kaxes[FZ_MAX_RANK], nk;
  int raxes[FZ_MAX_RANK], nr;
  unsigned kmask, rmask;
  fz_block_state bs;
  LLVMValueRef tx, ty;    /* index type */
  /* threads of a row (index type): plan->block_x, or the launch's
   * blockDim.x for a dynamic block, whose warps (i32) the row combine
   * then counts at run time */
  LLVMValueRef bx, warps;
  LLVMValueRef r_groups;  /* R points / V: groups in a row */
  LLVMValueRef r_per_row; /* groups along the innermost R axis */
  LLVMValueRef *g;        /* [G] group tx + k * block_x, clamped */
  LLVMValueRef *gactive;  /* [G] i1: the group lies inside the row */
  LLVMValueRef (*coord)[FZ_MAX_RANK]; /* [G] R coordinates, then the row's */
  LLVMValueRef *roff; /* [G * accesses] R terms of each offset */
  /* A dynamic block with one row axis: a group's offsets are built where
   * they are used, each a step (a run-time multiple of the width:
   * step[access]) past the one before, rather than kept from the row's
   * start (persistent.c: group_offsets). */
  bool chain;
  LLVMValueRef *step;
  /* chain plans: inside a masked group's store branch, where what is
   * computed holds only there (row_stores) */
  bool in_branch;
  LLVMValueRef *full; /* [G][node][V] values of the current row */
  LLVMValueRef *rowt; /* [node][V] one-lane values (CONST, ROW) */
  bool *done;         /* [(G + 1) * node]: group tables, row table */
  /* [node]: a full-space value cheap to compute again from bf16 inputs
   * read straight from memory (refetchable), forgotten after each row
   * combine so that only the inputs' bf16 bits live across its barrier */
  bool *refetch;
  LLVMValueRef *base; /* [access] offset + the row's kept terms */
  LLVMValueRef row_coord[FZ_MAX_RANK];
  /* column reductions: nodes, and allocas [j][G][V] of the partials */
  int ncol;
  int colnode[PERS_MAX_COLUMN_REDUCES];
  LLVMValueRef *colacc;
  bool row_scratch; /* the row combine uses shared memory */
  /* plan->prefetch (persistent_prefetch.c): the dynamic shared buffers,
   * the buffer of the current row (i32 alloca, 0 or 1), and per node an
   * alloca carrying a row-constant load one row ahead (or NULL). */
  LLVMValueRef pf_smem, pf_buf; /* pf_buf: the current row's buffer (i32) */
  LLVMValueRef *pf_rowval;
  /* plan->prefetch_single: the next row (clamped) and whether there is
   * one (i1), from the row's start until its copies are issued (NULL
   * before and after) */
  LLVMValueRef pf_next, pf_more;
  /* the threads along a row and this thread's place among them: block_x
   * and tx, or in a cluster plan (persistent_cluster.c) cluster * block_x
   * and rank * block_x + tx */
  int row_threads;
  LLVMValueRef row_tx;
  /* plan->cluster: the block's rank in its cluster (i32), the partial
   * slots in shared memory, the i32 alloca of the slot half in use, and
   * the generic address of the slots this thread reads (another block's) */
  LLVMValueRef cl_rank, cl_slots, cl_parity, cl_remote;
  /* plan->column_slices > 1 (persistent_slices.c): the block's slice
   * (index type), and per column REDUCE node j the results at the
   * thread's group once its round is combined, slice_res[j * V + l] in
   * the node's dtype (NULL before) */
  LLVMValueRef slice;
  LLVMValueRef *slice_res;
  /* plan->held_shared (persistent_held.c): the dynamic shared memory of
   * the held rows, and the held row (index type) whose trip is being
   * emitted (NULL outside one) */
  LLVMValueRef held_smem, held_t;
} pers;

static inline LLVMValueRef *pers_full(pers *s, int k, int node) {
  return s->full +
         ((size_t)k * (size_t)s->p->num_nodes + (size_t)node) * (size_t)s->V;
}

static inline LLVMValueRef *pers_colacc(pers *s, int j, int k, int lane) {
  return &s->colacc[((size_t)j * (size_t)s->G + (size_t)k) * (size_t)s->V +
                    (size_t)lane];
}

/* ---- persistent_common.c ------------------------------------------------ */

/* An alloca in the entry block (so that mem2reg promotes it), from
 * wherever the builder is. */
LLVMValueRef fz_pers_entry_alloca(pers *s, LLVMTypeRef t, const char *name);
/* The offset bases of every access for one row (what persistent.c's
 * row_start computes for the current row). */
void fz_pers_row_bases(pers *s, LLVMValueRef row, LLVMValueRef *base);
/* The vector groups of a row (r_groups) and of its innermost R axis
 * (r_per_row, for rows over several axes), from the run-time extents. */
void fz_pers_row_groups(pers *s);
/* A launch the kernel was not built for (`bad`, i1) traps: a failed
 * launch, never a wrong answer. Blocks bad.<name> and <name>.ok; the
 * builder is left in the latter. */
bool fz_pers_trap_if(pers *s, LLVMValueRef bad, const char *name);
/* cp.async of `bytes` (4, 8 or a multiple of 16) from global `src` to
 * shared `dst`, in 16-byte pieces where they are that large. */
bool fz_pers_copy_async(pers *s, LLVMValueRef dst, LLVMValueRef src,
                        size_t bytes);
/* Tells ptxas (.minnctapersm n) that the kernel's blocks share an SM n at
 * a time, so that it budgets 64K / (n * threads) registers a thread and
 * trades no spills for an occupancy the launch does not have. */
void fz_pers_blocks_an_sm(pers *s, int n);

/* Column REDUCE node j's accumulator dtype. */
fz_dtype fz_pers_col_acc(const pers *s, int j);
/* n lanes of type t (`size` bytes each) at consecutive elements from
 * `at`, in 16-byte (or narrower) vectors aligned to their size: the
 * workspace's regions and the column exchange are laid out for them. */
void fz_pers_store_lanes(fz_emit *e, LLVMTypeRef t, size_t size,
                         LLVMValueRef at, const LLVMValueRef *v, int n);
void fz_pers_load_lanes(fz_emit *e, LLVMTypeRef t, size_t size,
                        LLVMValueRef at, LLVMValueRef *v, int n);

/* ---- persistent_prefetch.c ----------------------------------------------- */

/* Before the row loop, the first row's copies (`first`: the clamped row
 * index, `any`: i1, the block has a row) and, with three buffers
 * (plan->prefetch_deep), the second row's (`second`, `any_second`; else
 * unused); in the loop, after row_start, the copies of the row `ahead`
 * (the next row, or with three buffers the one after it; `more_ahead`:
 * i1, it exists), the wait for the current row's, and the row-constant
 * loads of the `next` row; fz_pers_prefetch_load reads LOAD node i of
 * group g from the current buffer into the group's table;
 * fz_pers_prefetch_end moves on to the next buffer at the end of a row. */
bool fz_pers_prefetch_begin(pers *s, LLVMValueRef first, LLVMValueRef any,
                            LLVMValueRef second, LLVMValueRef any_second);
bool fz_pers_prefetch_next(pers *s, LLVMValueRef next, LLVMValueRef ahead,
                           LLVMValueRef more_ahead);
bool fz_pers_prefetch_load(pers *s, int i, int g);
void fz_pers_prefetch_end(pers *s);
/* With one buffer (plan->prefetch_single), instead of
 * fz_pers_prefetch_next and _end: after row_start, the current row's
 * row-constant values and the wait for its copies
 * (fz_pers_prefetch_wait); after a block barrier that follows the row's
 * loads, the copies of row s->pf_next into the same buffer if s->pf_more,
 * and its row-constant loads (fz_pers_prefetch_refill, which clears
 * pf_next and pf_more). */
bool fz_pers_prefetch_wait(pers *s);
bool fz_pers_prefetch_refill(pers *s);

/* ---- persistent_held.c --------------------------------------------------- */

/* The held rows' dynamic shared memory (declared once, in the entry). */
void fz_pers_held_declare(pers *s);
/* After row_start of held row t (index type): cp.async of the thread's
 * groups of every held input into the row's slots. */
bool fz_pers_held_copy(pers *s, LLVMValueRef t);
/* After the copies of every held row: the thread's own copies landed. */
void fz_pers_held_wait(pers *s);
/* LOAD node i (a held input) of group g, from the slots of held row
 * s->held_t into the group's table. */
bool fz_pers_held_load(pers *s, int i, int g);

/* ---- persistent_cluster.c ------------------------------------------------ */

/* In the entry, after tx: traps unless the block is in a cluster of
 * plan->cluster blocks, reads its rank and sets row_tx; declares the
 * partial slots. */
bool fz_pers_cluster_entry(pers *s);
/* After the block's combine (every thread holds the block's vals[r]):
 * vals[r] becomes the row's value, the blocks' partials combined in rank
 * order, the same bits in every block. Every thread must call it. */
bool fz_pers_cluster_combine(pers *s, const fz_reduce_set *rs,
                             LLVMValueRef *vals);
/* Before the kernel returns: no block leaves while another may still read
 * its shared memory. */
void fz_pers_cluster_exit(pers *s);
/* The pieces persistent_column_cluster.c shares: the block's rank in its
 * cluster into s->cl_rank, trapping unless the cluster has `cluster`
 * blocks; the generic address of shared variable `shared` (addrspace 3)
 * in the shared memory of the cluster's block `rank` (i32, mapa); and the
 * two halves of a cluster barrier (arrive: release, wait: acquire). */
bool fz_pers_cluster_join(pers *s, int cluster);
LLVMValueRef fz_pers_cluster_map(pers *s, LLVMValueRef shared,
                                 LLVMValueRef rank);
void fz_pers_cluster_arrive(fz_emit *e);
void fz_pers_cluster_wait(fz_emit *e);

/* ---- persistent_column_cluster.c ----------------------------------------- */

/* A column_cluster plan's step 2 (persistent_columns.c), instead of each
 * block's publication: with vals as fz_pers_block_partials leaves them,
 * the cluster's blocks sum their partials through distributed shared
 * memory, each its share of the columns, in rank order, and store the
 * sums in row %clusterid.x of the workspace (region[j]: column REDUCE
 * node j's, `points` accumulators a row, i64). Ends with a cluster
 * barrier's arrive: its wait must come before the kernel returns, after
 * the grid barrier. Every thread must call it. */
bool fz_pers_cluster_publish(pers *s, const LLVMValueRef *region,
                             LLVMValueRef points, LLVMValueRef *vals);

/* ---- persistent_trace.c -------------------------------------------------- */

/* With plan->trace_phases, where `when` holds (i1, the same in every
 * thread of the block; NULL: always), a block barrier, then thread 0
 * records `mark` (both clocks, plan.h); nothing otherwise. Every thread
 * of the block must call it. */
bool fz_pers_trace(pers *s, fz_trace_mark mark, LLVMValueRef when);

/* ---- persistent.c, for persistent_multipass.c ----------------------------- */

/* The kernel's state (spaces, tables) for the plan, and its release. */
bool fz_pers_setup(pers *s, fz_kernel *k);
void fz_pers_teardown(pers *s);
/* Node i in the row table (CONST, ROW), or for group g in its table. */
bool fz_pers_eval_row(pers *s, int i);
bool fz_pers_eval_full(pers *s, int i, int g);
/* The row REDUCE nodes of round `round` (phase round + 1). */
void fz_pers_round_set(pers *s, int round, fz_reduce_set *rs);
/* The bytes of one of the two halves of the rows' shared scratch. */
size_t fz_pers_row_half_bytes(pers *s);
/* Row REDUCE entry r's partial over the thread's groups (s->G) and
 * lanes: a group not active gives nothing. */
LLVMValueRef fz_pers_thread_partial(pers *s, const fz_reduce_set *rs, int r);
/* The threads' partials vals[r] of round `round` combined over the row
 * (in the half of the scratch the round's parity picks): the REDUCE
 * nodes' values in the row table. Every thread must call it. */
bool fz_pers_row_combine(pers *s, int round, const fz_reduce_set *rs,
                         LLVMValueRef *vals);

/* ---- persistent_columns.c ------------------------------------------------ */

/* The shared memory the ty tree of the column partials needs (0 when
 * block_y is 1), declared with the rows' scratch. */
size_t fz_pers_column_scratch(const pers *s);
/* The column partials of the thread's groups combined across ty,
 * published, the grid barrier, and the final pass that sums every block's
 * partial and stores the column outputs. Every thread of every block must
 * call it. round -1 (INNER_OUTER, after the row loop): every column
 * reduction. round r (OUTER): the column reductions of phase r + 1; the
 * pass also writes their results to the workspace and ends with a second
 * grid barrier, after which fz_pers_column_results reads them. */
bool fz_pers_columns(pers *s, int round);
/* The pieces of fz_pers_columns that a column-sliced plan shares: the
 * round's partials combined across ty (valid in ty == 0), that tree alone
 * on vals (every thread must call both), ty == 0's publication of the
 * block's partials, and the partials of column point `col` of blocks
 * from, from + step, ... below gridDim.x combined into the allocas
 * acc[j * V + l] in block order. */
bool fz_pers_block_partials(pers *s, int round, LLVMValueRef *vals);
bool fz_pers_ty_combine(pers *s, LLVMValueRef *vals);
bool fz_pers_publish(pers *s, LLVMValueRef *vals);
bool fz_pers_sum_partials(pers *s, LLVMValueRef *acc, LLVMValueRef col,
                          LLVMValueRef from, int step);
/* The column outputs of group gc: its coordinates into c->coord, then,
 * with c->vals holding the column REDUCE results (c->done set), the
 * stores of the round's column outputs. */
typedef struct fz_pers_colpass {
  LLVMValueRef coord[FZ_MAX_RANK];
  LLVMValueRef *vals; /* [node][V] */
  bool *done;         /* [node] */
} fz_pers_colpass;
void fz_pers_col_coords(pers *s, fz_pers_colpass *c, LLVMValueRef gc);
bool fz_pers_col_stores(pers *s, fz_pers_colpass *c);

/* ---- persistent_slices.c ------------------------------------------------- */

/* In the entry, after tx: traps unless gridDim.x is a multiple of the
 * slices; sets the block's slice, row_tx and row_threads. */
bool fz_pers_slices_entry(pers *s);
/* Round `round` of a column-sliced plan: the block's partials published,
 * a barrier of the slice's blocks, every block's sum of its slice's
 * partials, the column outputs of the round (by the slice's first
 * block), and in res[j * V + l] (node dtype) the results of the round's
 * column REDUCE nodes at the thread's group, in every thread. Every
 * thread of every block must call it. */
bool fz_pers_slice_columns(pers *s, int round, LLVMValueRef *res);

/* Column REDUCE number j's results at the thread's groups, res[g * V +
 * l], in the node's dtype (OUTER, after fz_pers_columns(s, round)). */
bool fz_pers_column_results(pers *s, int round, int j, LLVMValueRef *res);

#endif
