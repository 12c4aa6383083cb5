/* plan.h - the kernel plan: what a scheduler decides and lowering follows.
 *
 * A plan is plain data, built from a fusion and one concrete *problem* (the
 * sizes, strides, dtypes and pointer alignments of the tensors of one call,
 * and the device). Schedulers never call LLVM; lib/lower reads a plan and
 * emits one kernel, step by step.
 *
 * The plan is the scheduled fusion. Its iteration space is canonical: the
 * reference tensor's logical axes in *physical* order (outermost first),
 * size-1 axes dropped, and adjacent axes merged wherever every tensor the
 * kernel touches can be indexed through the merged axis with one stride.
 * Every global tensor access is an affine map from that space to memory
 * (one element stride per canonical axis, 0 for broadcast). The compute is
 * a DAG of nodes: the fusion's shape ops (broadcast, expand, squeeze,
 * permute, reshape, set) have been resolved into those maps, so only
 * loads, literals, iota, arithmetic and stores remain. One fusion input
 * read through two different maps (x + permute(x)) is two accesses.
 *
 * Extents and strides are kernel parameters, not constants: the compiled
 * kernel depends only on the plan's *structure* (fz_plan_key), so one
 * kernel serves every size that schedules the same way.
 */
#ifndef FZ_SCHED_PLAN_H
#define FZ_SCHED_PLAN_H

#include "fz/ir.h"

/* What the scheduler needs to know about the GPU. */
typedef struct fz_device_info {
  int sm;                  /* compute capability * 10: 90 for H100/H200 */
  int num_sms;             /* 132 on H200 SXM */
  int max_threads_per_block;
  int max_shared_per_block; /* bytes, opt-in maximum */
  int l2_bytes;
} fz_device_info;

/* The H200 defaults, used when no device is present (fuse-opt). */
fz_device_info fz_device_info_default(int sm);

/* One runtime tensor as the scheduler sees it. */
typedef struct fz_tensor_desc {
  fz_dtype dtype;
  int rank;
  int64_t sizes[FZ_MAX_RANK];
  int64_t strides[FZ_MAX_RANK]; /* elements */
  unsigned align;               /* base pointer alignment in bytes (<= 16) */
} fz_tensor_desc;

/* One call's worth of facts. */
typedef struct fz_problem {
  const fz_fusion *fusion;
  const fz_tensor_desc *inputs; /* fusion->num_inputs */
  const fz_tensor_desc *outputs; /* fusion->num_outputs, as allocated */
  const int64_t *symbols;        /* fusion->num_symbols bound values */
  fz_device_info device;
  /* Plans for exactly these sizes, without size classes (persistent.c):
   * what a class-shared kernel is measured against (FZ_PLAN_CLASSES=off
   * in the runtime). */
  bool exact_sizes;
  /* What the schedulers asked about this problem share (dag.h): set by
   * fz_schedule_first for the attempts of one question; NULL otherwise. */
  struct fz_sched_memo *memo;
} fz_problem;

typedef enum fz_plan_kind {
  FZ_PLAN_POINTWISE,
  FZ_PLAN_INNER_REDUCTION, /* innermost canonical axis reduced */
  FZ_PLAN_OUTER_REDUCTION, /* innermost canonical axis kept */
  /* Persistent normalization: each row (R, innermost) is read once into
   * registers and reused by reductions that feed back into it (softmax,
   * layer norm); INNER_OUTER adds column reductions over the rows (layer
   * norm backward's grad-weight and grad-bias) in the same pass. */
  FZ_PLAN_INNER_PERSISTENT,
  FZ_PLAN_INNER_OUTER_PERSISTENT,
  /* Pointwise with a layout change: inputs contiguous along a different
   * axis than the outputs move through shared-memory tiles, so that both
   * reads and writes are coalesced (see the transpose fields below). */
  FZ_PLAN_TRANSPOSE,
  /* Outer normalization (batch norm over the outer axes of channels-last
   * data): every reduction keeps the innermost axis. The lowering sees
   * it as an inner-outer plan without row reductions: a row is one point
   * of the reduced axes, spanning the kept ones (row_axes marks the kept
   * axes here, the reduced ones in the other persistent plans), and the
   * reductions are column reductions whose results feed back into the
   * rows. Each thread holds `unroll` rows in registers across a grid
   * barrier per reduction round (`phases` rounds). */
  FZ_PLAN_OUTER_PERSISTENT,
} fz_plan_kind;

/* A global tensor the kernel reads or writes through an affine map. */
typedef struct fz_plan_access {
  bool is_output;
  int io;          /* index into problem inputs or outputs */
  fz_dtype dtype;
  int64_t strides[FZ_MAX_RANK]; /* per canonical axis, elements; 0 = broadcast */
  int64_t offset;               /* elements added to the base (constant) */
  /* 0, or (an input read through a window of a resize op: a pad or a cat
   * operand) the number of elements the tensor spans: every lane's
   * element offset is clamped to [0, clamp) before it is loaded, so that
   * points outside the window read some element of the tensor rather
   * than memory past it; the plan's nodes select those lanes away (a
   * pad's fill, another cat operand). A clamped access is not vectorized
   * and never staged through shared memory. */
  int64_t clamp;
  /* Elements per memory instruction along the innermost canonical axis:
   * > 1 only if that stride is 1, the base is aligned and every other
   * stride and the innermost extent are multiples of it. A stride of 0
   * along the innermost axis is a splat: one scalar load per group. */
  int vector;
  /* A gathered access (read by GATHER nodes only, never vectorized): its
   * strides cover every axis of the input but `gather_axis`, whose
   * coordinate is an index value the node computes, times
   * `gather_stride`; an index outside [0, gather_extent) is read at 0
   * and reported through the error word (fz_plan_num_params). The stride
   * and extent are kernel parameters. */
  bool gathered;
  int gather_axis;        /* the input's logical axis, for messages */
  int64_t gather_stride;  /* elements */
  int64_t gather_extent;
} fz_plan_access;

typedef enum fz_node_kind {
  FZ_NODE_LOAD,    /* access -> value */
  FZ_NODE_LITERAL, /* scalar constant */
  FZ_NODE_IOTA,    /* start + step * (sum_k coeff[k] * coord[k]) */
  FZ_NODE_OP,      /* unary/binary/ternary/cast on earlier nodes */
  FZ_NODE_STORE,   /* operands[0] -> access */
  FZ_NODE_REDUCE,  /* code (SUM/PROD/AMAX/AMIN) of operands[0] over R */
  FZ_NODE_SYMBOL,  /* the i64 value bound to fusion symbol `symbol` */
  /* code (RAND/RANDN) of element sum_k coeff[k] * coord[k] (the row-major
   * linear index in the fusion value's shape) under operands[0] (seed)
   * and operands[1] (offset), i64 nodes the same at every point */
  FZ_NODE_RANDOM,
  FZ_NODE_GATHER,  /* gathered access at the index operands[0] -> value */
} fz_node_kind;

/* The space a node of a reduction or persistent plan is computed in, set
 * by the scheduler that builds the node. A row is what the ROW space has
 * one point for: in a reduction plan, a kept (I) point and the reduced
 * points it gathers; in a persistent plan, the points along the plan's
 * row_axes (the elements held in registers together).
 *   FULL    every point of the canonical space (pointwise and transpose
 *           plans have only these);
 *   ROW     one value per row: constant along the reduced axes of a
 *           reduction plan, the row_axes of a persistent plan (a row
 *           REDUCE node, the epilogue of a reduction, mean or rstd);
 *   COLUMN  persistent plans with column reductions: one value per point
 *           of a row, constant along the axes that are not row_axes (a
 *           column REDUCE node over the rows, grad-weight). */
typedef enum fz_space {
  FZ_SPACE_FULL,
  FZ_SPACE_ROW,
  FZ_SPACE_COLUMN,
} fz_space;

typedef struct fz_plan_node {
  fz_node_kind kind;
  fz_opcode code;   /* OP */
  fz_dtype dtype;   /* the value's dtype (what it is rounded to) */
  int num_operands;
  int operands[3];  /* indices of earlier nodes */
  int access;       /* LOAD, STORE */
  fz_scalar literal; /* LITERAL value; IOTA start */
  fz_scalar step;    /* IOTA */
  int64_t coeff[FZ_MAX_RANK]; /* IOTA, RANDOM */
  int symbol;                 /* SYMBOL: index into fusion->symbols */
  double correction;          /* REDUCE var: Bessel's correction */
  const fz_value *value; /* the fusion value this node computes (printing) */
  /* Reduction plans: FULL nodes are evaluated at every point of the full
   * space (the prologue, feeding REDUCE nodes, and full-space stores) and
   * read only FULL nodes; ROW nodes once per kept (I) point after the
   * reductions (REDUCE nodes themselves, the epilogue, its stores), and
   * read only ROW nodes, a REDUCE node excepted (it reads a FULL one).
   * Persistent plans: a REDUCE node turns a FULL value into a ROW or
   * COLUMN one; other nodes may read nodes of any space, except that only
   * COLUMN nodes (and, in an OUTER plan, FULL nodes of a later round) read
   * COLUMN ones, and a ROW node never depends on what varies along a row.
   * Pointwise and transpose plans: FULL throughout. fz_plan_verify checks
   * all of this. */
  fz_space space;
  /* Persistent plans: `phase` orders the work within a row: full-space
   * nodes of phase p use row REDUCE nodes of phases < p; a row REDUCE node
   * of phase p accumulates full-space nodes of phase p - 1. Column REDUCE
   * nodes accumulate across every row a block processes, then across
   * blocks (in an OUTER plan, one round each: a column REDUCE node of
   * phase p reads a node of phase p - 1). */
  int phase;
} fz_plan_node;

typedef struct fz_plan {
  fz_plan_kind kind;
  const char *kernel_name;
  const fz_fusion *fusion;
  /* Canonical iteration space, outermost first. */
  int rank;
  int64_t extents[FZ_MAX_RANK];
  const char *reference; /* e.g. "%out" */
  /* Launch shape: each thread handles `vector` consecutive elements of the
   * innermost axis per group, `unroll` groups per loop trip, grid-stride. */
  int vector;
  int unroll;
  int threads;
  int64_t blocks;
  bool index32; /* every offset and the group count fit in int32 */
  int num_accesses;
  fz_plan_access *accesses;
  int num_nodes;
  fz_plan_node *nodes;
  /* reduced[k]: the fusion reduces canonical axis k (an R axis), whatever
   * the plan kind. Reduction and persistent plans: threads are
   * block_x (fastest) by block_y: for INNER, block_x threads share a row
   * (R) and block_y rows share a block; for OUTER, block_x threads walk the
   * kept space (each `vector` lanes wide along the innermost axis) and
   * block_y threads walk R. grid_x blocks cover the kept space in a
   * grid-stride loop over tiles; `split` blocks (gridDim.y) share R, their
   * partials combined through a workspace by the last block to finish a
   * tile (counted in a per-tile counter that the last block resets). */
  bool reduced[FZ_MAX_RANK];
  /* Persistent plans: row_axes[k]: canonical axis k is one a row spans
   * (the innermost always is): the reduced axes in INNER and INNER_OUTER
   * plans, the kept ones in OUTER plans. fz_plan_rows counts the rows. */
  bool row_axes[FZ_MAX_RANK];
  int block_x, block_y;
  int64_t grid_x;
  int split;
  /* Persistent plans: each thread of a row holds `persistent` vector
   * groups of the row in registers (groups g = tx + k*block_x, k <
   * persistent); `phases` is the number of row-reduction rounds. An
   * INNER_OUTER plan is launched cooperatively (all grid_x blocks
   * resident; the executor may lower grid_x to what fits) so that after
   * the rows, every block takes part in combining the column partials
   * (grid-wide barrier on a counter in the workspace). */
  int persistent;
  int phases;
  bool cooperative;
  /* Persistent plans: the sizes one kernel serves. Groups k <
   * persistent_full of every thread lie inside every row; the later ones
   * are masked by the run-time row length, so the kernel serves any row
   * of G groups (row points / vector) with
   *   persistent_full * block_x < G <= persistent * block_x.
   * With dynamic_block (inner persistent plans only), block_x is not
   * compiled in: the kernel reads it from the launch (blockDim.x, a
   * multiple of 32 up to FZ_PLAN_DYNAMIC_MAX_THREADS, block_y 1), and
   * the scheduler picks it per call; such a plan has one block a row
   * (grid_x is the row count) and its kernel no loop over rows. Both make a plan class coarse: the
   * kernel of one class serves every row length of a range (fz_plan_key
   * leaves block_x and threads out when dynamic). */
  int persistent_full;
  bool dynamic_block;
  /* Transpose plans. Canonical axis A = rank - 1 is the outputs'
   * contiguous axis, `tile_axis` (B, < A) that of the accesses marked in
   * `tiled` (inputs with stride 1 along B). Blocks of `threads` threads
   * walk tiles of tile_a (along A) by tile_b (along B) elements, `blocks`
   * of them in a grid-stride loop over the tiles (the group count
   * parameter is the number of tiles: fz_plan_num_tiles). Per tile: each
   * tiled input is read along B, `vector` lanes of its access at a time
   * (its vector runs along B, not along A), into a shared-memory tile
   * padded by one element per row; a barrier; then threads walk the tile
   * along A, plan->vector lanes per group, reading the other inputs
   * directly at their own strides (access vectors along A, as in a
   * pointwise plan), computing, and storing coalesced along A. Shared
   * memory is static (fz_plan_tile_bytes). */
  int tile_axis;
  int tile_a, tile_b;
  const bool *tiled; /* per access; NULL: none */
  /* Persistent plans whose blocks walk several rows: while a block works
   * on one row, the next row's row-varying inputs (fz_plan_prefetched)
   * are already on their way into shared memory (cp.async, sm_80+), two
   * buffers alternating by row, so the block never stops to wait for a
   * row's loads; row-constant inputs (mean, rstd) are loaded a row ahead
   * into registers. Dynamic shared memory: fz_plan_shared_bytes. */
  bool prefetch;
  /* A prefetching cluster plan (sm_90) whose two buffers would not fit
   * the blocks an SM keeps: one buffer, which each thread refills with
   * its share of the next row once the current row's share has left it
   * for registers (lib/lower/persistent_prefetch.c says when), and waits
   * for at the next row's start. Meaningless without prefetch. */
  bool prefetch_single;
  /* A prefetching plan with three buffers instead of two: the copies go
   * out two rows ahead, so that twice a row's bytes are in flight while
   * a block works (an SM that keeps one block of a plan otherwise has
   * only the next row's loads in flight). Meaningless without prefetch;
   * never with prefetch_single. */
  bool prefetch_deep;
  /* A prefetching plan whose rows read row-constant inputs (mean, rstd,
   * a label: fz_plan_row_value_staged) copies the next row's values of
   * them into its buffer too, one slot a thread, by cp.async with the
   * rest, and reads them back once the row's copies have landed. Loaded
   * into registers a row ahead instead, such a load is placed by ptxas
   * near the end of the row loop (which shortens its live range), where
   * the loop's back edge waits a full memory latency for it. */
  bool prefetch_row_values;
  /* An inner persistent plan whose rows read a weight row (an input
   * that varies along the row and not across rows:
   * fz_plan_has_weight_row) loads it before the combine of its last row
   * reduction, so that the load's latency overlaps the combine's
   * shuffles and block barrier, instead of where it is first used,
   * after that barrier. Its values then live across the barrier. */
  bool weights_early;
  /* A persistent plan whose rows read bf16 inputs straight from memory
   * forgets them after each row combine (lib/lower/persistent.c
   * mark_refetch): loaded again where next used, LLVM merges the load
   * with the first and only the bf16 bits live across the barrier, not
   * f32 values (RMS norm bf16 16384x8192: 72 registers instead of 96).
   * Not on a multipass walk or held rows. */
  bool refetch_bf16;
  /* An inner-outer plan records when each block reaches each phase
   * (lib/lower/persistent_trace.c: the row walk, the column partials,
   * the grid barrier, the final pass) into its module's fz_trace array,
   * which fz_executor_last_trace reads back: where a launch's fixed cost
   * goes, on the GPU, without a profiler. For measurement only. */
  bool trace_phases;
  /* Plans with column reductions across the grid (fz_plan_has_grid_columns):
   * the most warps that share a column group's partials in the final
   * pass (1, 2 or 4; lib/lower/persistent_columns.c takes as many as the
   * grid has warps to spare for, up to this). 1 by default, a warp a
   * group; 2 and 4 with FZ_COLUMN_PARTS, for A/B timing. Printed only
   * when not 1. */
  int column_parts;
  /* The symbols the SYMBOL nodes read, as fusion symbol indices in the
   * order of the nodes that first read them, and their bound values:
   * kernel parameters like the extents (fz_plan_symbol_param gives a
   * node's), so they are not part of fz_plan_key. */
  int num_symbols;
  const int *symbols;
  const int64_t *symbol_values;
  /* INNER_PERSISTENT plans whose row does not fit one SM (sm_90+): 0 for
   * none, else the c blocks of a thread-block cluster (gridDim.x is a
   * multiple of c, launched with a cluster dimension of c) share one row,
   * block_y is 1 and the row is walked by c * block_x threads: block
   * rank q's thread tx holds groups (q * block_x + tx) + k * c * block_x.
   * A row reduction combines the block's partial with the other blocks'
   * through distributed shared memory (lib/lower/persistent_cluster.c);
   * clusters walk the rows (clusterid, nclusterid). */
  int cluster;
  /* Inner and outer reduction plans: the resident blocks an SM keeps
   * that grid_x and split were sized for (lib/sched/split_grid.h), and
   * whether that is the loaded kernel's occupancy (the executor sizes the
   * grid again once the kernel is loaded) or the scheduler's estimate. */
  int resident_per_sm;
  bool resident_measured;
  /* OUTER_PERSISTENT plans: 0 or 1 for none, else the kept points (a
   * row's groups) are cut into `column_slices` slices and block b serves
   * slice b % column_slices (its thread tx holds group
   * slice * block_x + tx, persistent is 1) for the rows of tile walk
   * b / column_slices of gridDim.x / column_slices; a column reduction
   * is then combined among the blocks of one slice only, behind a
   * barrier of those blocks (lib/lower/persistent_slices.c). */
  int column_slices;
  /* INNER_PERSISTENT plans whose row fits neither one SM nor a cluster
   * (persistent_multipass.c): the row is not held. One block a row
   * (block_y 1) walks it once per round, `persistent` groups a thread a
   * trip (groups tx + k * block_x from each trip's start, all masked by
   * the row length: persistent_full is 0), re-reading the inputs from
   * global memory and recomputing the pointwise values instead of
   * keeping them, accumulating the round's row reductions in registers
   * and combining them over the block after the walk. Any row length. */
  bool multipass;
  /* OUTER_PERSISTENT plans (sm_80+): the held rows' inputs that vary
   * along both the rows and the row (fz_plan_held_in_shared) are kept in
   * dynamic shared memory instead of registers: copied there once by
   * cp.async, then every round walks the thread's held rows in a loop,
   * reading them back and recomputing what it needs
   * (lib/lower/persistent_held.c). Dynamic shared memory:
   * fz_plan_shared_bytes. */
  bool held_shared;
  /* INNER_OUTER_PERSISTENT plans on sm_90+ (persistent_column_cluster.c):
   * 0 for none, else the blocks are launched in thread-block clusters of
   * `column_cluster` blocks along x (grid_x a multiple of it) that
   * combine their column partials through distributed shared memory
   * before publishing them, so the workspace holds one row of partials
   * per cluster (gridDim.x / column_cluster rows), not per block. The
   * exchange goes `column_chunk` held groups of a thread at a time
   * (1 <= column_chunk <= persistent) through a buffer in dynamic shared
   * memory (fz_plan_column_exchange_bytes) that overlays the prefetch
   * buffers, idle once the rows are done. The launch stays cooperative. */
  int column_cluster;
  int column_chunk;
} fz_plan;

/* The largest cluster a plan asks for: the portable limit. */
enum { FZ_PLAN_MAX_CLUSTER = 8 };
/* The cluster dimension a plan is launched with: cluster or
 * column_cluster (never both), 0 for none. */
int fz_plan_cluster_dim(const fz_plan *plan);
/* The bytes of the column exchange buffer of a column_cluster plan (0
 * without): per column REDUCE node, column_chunk * block_x groups of
 * `vector` accumulators. Part of fz_plan_shared_bytes. */
size_t fz_plan_column_exchange_bytes(const fz_plan *plan);
/* Whether the plan has gathered accesses (and so the error word). */
bool fz_plan_has_gather(const fz_plan *plan);
/* The position among the scalar parameters of gathered access a's three:
 * its gather stride, its gather extent and its *site*, the number the
 * kernel writes into the error word for a bad index. The plan leaves the
 * site 0; the executor sets it to a number of its own (nonzero) that
 * names the access of this launch. */
int fz_plan_gather_param(const fz_plan *plan, int a);

/* Which of plan->symbols a SYMBOL node reads (its position there). */
int fz_plan_symbol_param(const fz_plan *plan, const fz_plan_node *node);

/* The phase marks of a traced inner-outer kernel (trace_phases), in the
 * order a block reaches them, and where they are stored: the module's
 * global array fz_trace holds, for each of the grid's first
 * FZ_TRACE_BLOCKS blocks and each mark, the global timer (ns, one clock
 * for every SM) and then the SM's cycle counter (clock64) when the
 * block's thread 0 got there, at words (block * FZ_TRACE_MARKS + mark) *
 * 2 and + 1. A block that walks no row leaves FZ_TRACE_FIRST_ROW zero. */
typedef enum fz_trace_mark {
  FZ_TRACE_START,     /* past the entry's setup */
  FZ_TRACE_FIRST_ROW, /* the block's first row stored */
  FZ_TRACE_ROWS,      /* every row of the block stored */
  FZ_TRACE_PUBLISHED, /* its column partials written */
  FZ_TRACE_BARRIER,   /* past the grid barrier */
  FZ_TRACE_END,       /* its share of the final column pass done */
  FZ_TRACE_MARKS
} fz_trace_mark;
enum { FZ_TRACE_BLOCKS = 1024 };
/* "start", "first-row", ...: the mark's name in reports. */
const char *fz_trace_mark_name(fz_trace_mark m);

/* Whether access `a` is one a prefetching plan copies ahead: an input
 * read in the full space that varies along the rows and the columns. */
bool fz_plan_prefetched(const fz_plan *plan, int a);
/* Whether access `a` is one whose next row's value a prefetching plan
 * with prefetch_row_values copies into its buffer: an input that varies
 * along the rows only (one value a row), of 4 or 8 bytes an element (a
 * whole cp.async piece), read by LOAD nodes, neither clamped nor
 * gathered. */
bool fz_plan_row_value_staged(const fz_plan *p, int a);
/* Whether some access of the plan would be staged so were
 * prefetch_row_values set (the scheduler asks before it sets it). */
bool fz_plan_has_row_values(const fz_plan *p);
/* Whether a persistent plan loads a weight row in the full space: an
 * input that varies along the row and not across rows (what
 * weights_early moves). */
bool fz_plan_has_weight_row(const fz_plan *p);
/* Whether a persistent plan reads a bf16 input that varies along the row
 * and from row to row straight from memory (not from a prefetch buffer
 * or held rows): what refetch_bf16 forgets after a row combine. */
bool fz_plan_has_refetchable_bf16(const fz_plan *p);
/* Whether access a is such an input (the lowering's rule per load). */
bool fz_plan_refetchable_bf16(const fz_plan *p, int a);
/* Whether access `a` is one whose held rows a held_shared plan keeps in
 * shared memory: the same inputs as a prefetch's. */
bool fz_plan_held_in_shared(const fz_plan *plan, int a);
/* Whether a held_shared plan's held inputs move in whole cp.async pieces
 * (4, 8 or a multiple of 16 bytes a group, as a prefetch's), at least one
 * of them held: the scheduler asks before it sets held_shared, the
 * verifier after. */
bool fz_plan_held_pieces_fit(const fz_plan *plan);
/* The same for the inputs a prefetch copies (fz_plan_prefetched's, with
 * or without p->prefetch set): the scheduler asks before it sets
 * prefetch, the verifier after. */
bool fz_plan_prefetch_pieces_fit(const fz_plan *plan);
/* INNER, INNER_OUTER and OUTER persistent plans (rows held on chip). */
bool fz_plan_is_persistent(const fz_plan *plan);
/* INNER_OUTER and OUTER persistent plans: column reductions combined
 * across the grid through a workspace, behind a grid barrier. */
bool fz_plan_has_grid_columns(const fz_plan *plan);

/* The most groups (for an outer persistent plan: rows held) one thread
 * takes per loop trip: lowering unrolls them all, and refuses more. */
enum { FZ_PLAN_MAX_UNROLL = 64 };
/* The most rounds of reductions (phases) a persistent plan has: lowering
 * refuses more. */
enum { FZ_PLAN_MAX_PHASES = 64 };
/* The widest block of a dynamic_block plan: its kernel is compiled for
 * at most this many threads (maxntid), which leaves it 128 registers a
 * thread. */
enum { FZ_PLAN_DYNAMIC_MAX_THREADS = 512 };
/* A dynamic_block plan launches one block a row (grid_x is the row
 * count, its kernel has no loop over rows): at most this many rows,
 * CUDA's largest grid.x. */
#define FZ_PLAN_DYNAMIC_MAX_GRID INT64_C(2147483647)

/* argreduce.c: arg-reductions (argmax, argmin). Their REDUCE node reads
 * the value (operands[0]) and its i64 position (operands[1], a full-space
 * IOTA node: row-major over the reduced axes of the fusion op's operand,
 * in logical order) and carries a (value, position) pair: the value in
 * the accumulator dtype of operands[0]'s dtype, the position as i64, one
 * partial taking FZ_ARG_STATE_BYTES bytes of shared memory or workspace.
 * fz_plan_reduce_acc is the accumulator (value) dtype of any REDUCE node,
 * fz_plan_reduce_bytes the bytes of one of its partials. */
enum { FZ_ARG_STATE_BYTES = 16 };
bool fz_plan_node_is_arg(const fz_plan_node *n);
fz_dtype fz_plan_reduce_acc(const fz_plan *p, const fz_plan_node *n);
size_t fz_plan_reduce_bytes(const fz_plan *p, const fz_plan_node *n);
/* The rules of an arg REDUCE node (plan_verify.c asks). */
fz_status fz_plan_verify_arg(const fz_plan *p, int i, fz_error *err);

/* ---- kernel parameters: the one place lowering and launch agree ------- *
 * Order: one pointer per access (same order as plan->accesses), then the
 * group count (i64), then extents[0..rank) (i64), then for each access
 * strides[0..rank) and its offset (i64), then the values of the symbols
 * the plan reads, symbol_values[0..num_symbols) (i64; none for a plan
 * without SYMBOL nodes, whose parameters stay as they were); then, for
 * reduction plans with
 * split > 1 and for the cooperative persistent plans whose column
 * reductions meet across the grid (fz_plan_has_grid_columns), the
 * workspace pointer and the counters pointer; last, for a plan with
 * gathered accesses, the error word's pointer: two i64, zero until a
 * kernel meets an index out of range, then the first such index's site
 * (compare-and-swap from 0) and the index. For reduction plans the
 * group count is the number of kept (I) points, for persistent plans the
 * number of rows, for transpose plans the number of tiles. */
int fz_plan_num_params(const fz_plan *plan);

/* Every parameter is 8 bytes (a pointer or an i64). A launch may pass at
 * most 4 KiB of parameters through CUDA drivers before 12.1, and PTX below
 * ISA 8.1 declares at most 4,352 bytes (fz leaves the ISA version to LLVM:
 * 7.8 for sm_90); 32,764 bytes needs both newer. So a plan whose
 * parameters exceed FZ_MAX_PARAM_BYTES is declined by its scheduler: a
 * fusion with that many tensors is split into segments whose kernels fit,
 * or rejected. */
#define FZ_MAX_PARAM_BYTES 4096
#define FZ_MAX_PARAMS (FZ_MAX_PARAM_BYTES / 8)
/* Launch dimensions (gridDim, blockDim) for this plan; a cooperative plan's
 * grid_x may then be lowered by the launcher to what fits on the device.
 * Dynamic shared memory: fz_plan_shared_bytes. */
void fz_plan_launch_shape(const fz_plan *plan, unsigned grid[3],
                          unsigned block[3]);
size_t fz_plan_shared_bytes(const fz_plan *plan);
/* A prefetching plan's buffers: 1 (prefetch_single), 2, or 3
 * (prefetch_deep); 0 without prefetch. */
int fz_plan_prefetch_buffers(const fz_plan *plan);
/* The i64 scalars, the parameters between the access pointers and the
 * workspace pointers: how many, and their values in order (the group
 * count, the extents, each access's strides and offset, the symbols'
 * values). */
int fz_plan_num_scalar_params(const fz_plan *plan);
void fz_plan_scalar_params(const fz_plan *plan, int64_t *out);
/* The number of groups (`vector` elements each) in the whole space. */
int64_t fz_plan_num_groups(const fz_plan *plan);

/* Reduction plans: points of the kept space, length of the reduced space,
 * the accumulator dtype of a REDUCE node's result dtype (f32 for f16, bf16
 * and f32; f64; i64 for integers and bool), the number of tiles (blocks'
 * worth of kept points, or of rows in a persistent plan), and the
 * workspace a split plan needs (partials of every REDUCE node for every
 * kept point and split, then one 32-bit counter per tile, zeroed once). A plan
 * with grid columns takes a workspace too: a row of column partials per block
 * (an OUTER persistent plan adds a row of results), and the grid barrier's
 * 8-byte counter. */
int64_t fz_plan_kept_points(const fz_plan *plan);
int64_t fz_plan_reduced_points(const fz_plan *plan);
/* Persistent plans: the number of rows (points of the axes no row spans)
 * and the points of one row (of its row_axes). */
int64_t fz_plan_rows(const fz_plan *plan);
int64_t fz_plan_row_points(const fz_plan *plan);
fz_dtype fz_reduce_acc_dtype(fz_dtype result);
int64_t fz_plan_num_tiles(const fz_plan *plan); /* transpose: tiles */
/* var and mean: REDUCE codes whose partials are Welford states (count,
 * mean, m2), each three accumulators wide (welford_plan.c). */
bool fz_reduce_is_welford(fz_opcode code);
/* The bytes of one partial of a REDUCE node of `code` with result dtype
 * `result`: its accumulator, or a Welford state of three. */
size_t fz_reduce_partial_bytes(fz_opcode code, fz_dtype result);
size_t fz_plan_workspace_bytes(const fz_plan *plan);
size_t fz_plan_counter_bytes(const fz_plan *plan);

/* Transpose plans: the bytes of one shared-memory tile element of a tiled
 * access of dtype d (8-byte dtypes keep their width, narrower ones are
 * widened to 4 bytes so that the one-element row padding keeps a warp's
 * accesses on distinct banks), and the static shared memory of all the
 * plan's tiles. */
size_t fz_tile_element_bytes(fz_dtype d);
size_t fz_plan_tile_bytes(const fz_plan *plan);

/* A string that identifies the compiled kernel: everything in the plan
 * except sizes, strides and the launch grid. Arena-allocated. */
const char *fz_plan_key(const fz_plan *plan, fz_arena *arena);
/* plan_id.c: the same key in binary, without printing (what the
 * executor's kernel cache compares): equal exactly when the texts of
 * fz_plan_key are equal. The bytes are arena-allocated. */
typedef struct fz_plan_id {
  uint64_t hash;
  size_t len;
  const unsigned char *bytes;
} fz_plan_id;
fz_plan_id fz_plan_identify(const fz_plan *plan, fz_arena *arena);
bool fz_plan_id_equal(const fz_plan_id *a, const fz_plan_id *b);

/* Text form for fuse-opt --emit=sched and lit tests. */
void fz_plan_print(const fz_plan *plan, fz_buf *out);

/* plan_verify.c: whether the plan obeys the rules of this header that
 * lowering relies on (operands, accesses, spaces, phases, launch shapes);
 * FZ_ERR_INTERNAL with a message naming the node or access and the rule
 * when not. fz_schedule verifies every plan a scheduler returns, and
 * lowering every plan it is given. */
fz_status fz_plan_verify(const fz_plan *plan, fz_error *err);

/* ---- schedulers --------------------------------------------------------- */

/* Why a scheduler declined, for --explain and error messages, and where:
 * the location of the op the reason is about (zero: the fusion as a
 * whole), which errors built from the reason carry. */
typedef struct fz_reason {
  char text[256];
  fz_loc loc;
} fz_reason;

/* Whether the plan's parameters fit in FZ_MAX_PARAM_BYTES; when not, *why
 * says how many bytes it needs. Every scheduler asks before accepting. */
bool fz_plan_params_fit(const fz_plan *plan, fz_reason *why);
/* The same question before building a plan, from what any plan of the
 * problem needs at least (every output is a written access: a pointer,
 * one stride per canonical axis and an offset, then the group count and
 * the extents; at least one axis); cheap, so that a fusion with thousands
 * of outputs is declined before its DAG is built. Every scheduler asks
 * first, so a fusion with too many outputs for this bound is one no
 * scheduler accepts (the segmenter relies on it: fz_outputs_params_fit
 * answers it from the output count alone). */
bool fz_problem_params_fit(const fz_problem *problem, fz_reason *why);
bool fz_outputs_params_fit(int num_outputs, fz_reason *why);

/* Every scheduler has one entry point, fz_<name>_try, that either builds
 * its plan or says why not:
 *  - accepted: returns true, *out is the plan, allocated in `arena`;
 *  - declined: returns false, *out is NULL, and *why (may be NULL) holds
 *    the reason and the location of the op it is about. Memory the
 *    attempt took stays in `arena` (fz_schedule_first gives each attempt
 *    a scratch arena).
 * Declining is the only way a scheduler fails: running out of memory in
 * an arena is fatal (fz_arena_alloc), so there is no fz_status to return.
 * The shared rules they apply are in heuristics.h. */
typedef bool (*fz_scheduler_try)(const fz_problem *problem, fz_arena *arena,
                                 fz_plan **out, fz_reason *why);

/* pointwise.c: accepts fusions without reductions whose every output and
 * input maps affinely onto the reference output's iteration space. */
bool fz_pointwise_try(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_reason *why);

/* reduction.c: accepts fusions whose reductions all reduce the same axes
 * of one iteration space, with a pointwise prologue and an epilogue that
 * only uses reduced values and tensors constant along the reduced axes.
 * Inner vs outer is decided by the physical order of what is read. */
bool fz_reduction_try(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_reason *why);

/* persistent.c: accepts fusions whose reductions reduce either the
 * physically innermost axes of one space (row reductions, whose results
 * may be used back in the full space: normalizations) or exactly the
 * other axes (column reductions, with row reductions present), when a row
 * fits in registers. */
bool fz_persistent_try(const fz_problem *problem, fz_arena *arena,
                       fz_plan **out, fz_reason *why);

/* persistent_multipass.c: accepts what persistent.c declines only because
 * a row fits neither one SM's registers nor a cluster, for inner
 * normalizations with enough rows to fill the device: a multipass plan
 * (plan.h) that re-reads each row once a round instead of splitting the
 * fusion into kernels that round-trip intermediates through memory. */
bool fz_multipass_try(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_reason *why);
/* An online softmax sum: the row sum node that row amax node `m` feeds
 * only as sum(exp(x - m)) over its own operand x, one phase later and
 * in the same accumulator dtype (softmax, log-softmax, cross-entropy), or
 * -1. A multipass walk computes that sum along with the max, from a
 * running max (lib/lower/persistent_multipass.c). */
int fz_multipass_online_sum(const fz_plan *plan, int m);
/* Whether a multipass walk would read an INNER_PERSISTENT plan's row
 * once: nothing is stored along the row, and every row reduction is of
 * the first round or an online sum of one. */
bool fz_multipass_reads_once(const fz_plan *plan);

/* transpose.c: accepts what the pointwise scheduler accepts when some
 * input is contiguous along another canonical axis (B) than the outputs
 * (A, the innermost), both axes are long enough to fill tiles, and the
 * tiles fit in shared memory; declines (pointwise then takes the fusion)
 * when every access shares the innermost axis. */
bool fz_transpose_try(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_reason *why);
/* The same from the problem's pointwise plan, which is left as it is
 * (the transpose plan shares its nodes: keep its arena as long). */
bool fz_transpose_from_pointwise(const fz_problem *problem,
                                 const fz_plan *pointwise, fz_arena *arena,
                                 fz_plan **out, fz_reason *why);

/* schedule.c: the scheduler table (transpose, pointwise, reduction,
 * persistent, multipass: the order they are asked in) and the questions asked of it,
 * for a fusion taken whole (a whole fusion or one segment of it:
 * segment.c splits what no scheduler takes). */
enum { FZ_NUM_SCHEDULERS = 5 };
/* dag.c: a memo for the attempts on one problem (fz_problem.memo), and
 * its end (NULL: nothing). */
typedef struct fz_sched_memo fz_sched_memo;
void fz_sched_memo_begin(fz_sched_memo **memo);
void fz_sched_memo_end(fz_sched_memo *memo);
/* Room for fz_schedule_reasons' text: every reason whole. */
#define FZ_SCHEDULE_REASONS_CHARS (FZ_NUM_SCHEDULERS * (256 + 16))

/* Asks the schedulers in order, each in a scratch arena of its own, and
 * returns the name of the first that accepts. Its plan is moved into
 * `arena` and returned in *out; with arena NULL only the verdict is
 * wanted and the plan is freed. NULL when none accepts; why (may be
 * NULL) then holds every scheduler's reason, in table order (when one
 * accepts, the reasons of those asked before it). Each scheduler builds
 * at most one plan. */
const char *fz_schedule_first(const fz_problem *problem, fz_arena *arena,
                              fz_plan **out,
                              fz_reason why[FZ_NUM_SCHEDULERS]);
/* The reasons of a fusion no scheduler accepts, as "transpose: why;
 * pointwise: why; ...", in out (n bytes, truncated to fit). */
void fz_schedule_reasons(const fz_reason why[FZ_NUM_SCHEDULERS], char *out,
                         size_t n);
/* The plan of the first scheduler that accepts, in arena; when none does,
 * FZ_ERR_UNSUPPORTED "no scheduler accepts fusion @f (reasons)" located
 * at the first reason that names an op. */
fz_status fz_schedule(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_error *err);
/* Each scheduler's verdict on the whole fusion, one line each (--explain). */
void fz_schedule_explain(const fz_problem *problem, fz_buf *out);
/* Name of the scheduler fz_schedule would use, or NULL. */
const char *fz_schedule_pick(const fz_problem *problem);

#endif
