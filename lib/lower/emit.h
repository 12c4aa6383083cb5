/* emit.h - private to lib/lower: the state every emitter shares, the
 * helpers' prototypes, and the table of contents of the stage.
 *
 * The stage's files, top down: each calls only files listed below it, so
 * that no two files call each other in a circle.
 *
 *   driver
 *   lower.c       fz_lower_plan: check the plan, set up the emitter and
 *                 the NVPTX module, declare the kernel, hand its body to
 *                 the plan kind's skeleton, verify the module; the only
 *                 caller of the skeletons (skeleton.h)
 *
 *   skeletons: each emits one plan kind's kernel body (skeleton.h)
 *   pointwise.c   a grid-stride loop over element groups with unrolled
 *                 slots; loads, compute, stores
 *   reduction.c   the inner and outer reduction skeletons: tiles of kept
 *                 points, the unrolled R loop, the epilogue
 *   transpose.c   tiles staged through shared memory between loads along
 *                 the inputs' contiguous axis and stores along the
 *                 outputs'
 *   persistent.c  the persistent normalization skeleton: rows held in
 *                 registers, the rounds of row reductions, the stores;
 *                 the files below it are its own (persistent.h):
 *     persistent_slices.c    an outer plan's column slices: a round's
 *                            barrier among the blocks of one slice
 *     persistent_columns.c   the column half: block partials of column
 *                            reductions, the grid barrier, the final pass
 *     persistent_column_cluster.c  column partials summed across a
 *                            thread-block cluster before they are
 *                            published
 *     persistent_prefetch.c  the next row's loads copied ahead into
 *                            shared memory
 *     persistent_held.c      an outer plan's held rows kept in shared
 *                            memory: copied once, read back each round
 *     persistent_cluster.c   a row shared by a thread-block cluster: the
 *                            exchange of row reductions across it
 *     persistent_common.c    what they share: allocas in the entry
 *                            block, a row's offset bases, cp.async
 *
 *   helpers (prototypes below, grouped by file)
 *   combine.c     accumulators: identities, combining, warp shuffles, the
 *                 shared-memory trees and the grid-reduction protocol
 *   argreduce.c   argmax / argmin partials: (value, position) pairs
 *   slot.c        one node of a slot (LOAD, value, STORE) evaluated over
 *                 its lanes
 *   gather.c      a GATHER node's lanes: reads where an index says, bad
 *                 indices clamped and recorded in the error word
 *   kernel.c      the kernel: its signature and parameters, index ->
 *                 coordinates -> offsets
 *   compute.c     one plan node (op, literal, iota) -> LLVM values
 *   random.c      a RANDOM node's lanes: Philox and its uniform and
 *                 normal values
 *   memory.c      register and memory forms of each dtype, conversions
 *                 between dtypes, vector / splat / per-lane accesses
 *   walk.c        evaluating a node after its operands, on demand
 *   control.c     structured control flow: the counted loop, if without
 *                 else
 *   intrinsics.c  special registers, barriers, shuffles, llvm.*
 *                 intrinsics, libdevice calls
 *   emit.c        the emitter's types, the first failure, value names
 *
 * Headers: lower.h (the stage's interface), emit.h (this one, which every
 * file of the stage includes, directly or through the others),
 * skeleton.h (the skeletons' entry points: lower.c calls them),
 * persistent.h (the persistent skeleton's state, shared by its files).
 *
 * Values in registers: f64 is double; f32, f16 and bf16 are float (a f16
 * or bf16 value is always exactly representable in its dtype: every op
 * rounds its result through half/bfloat); i64, i32, i8 are their integer;
 * bool is i1 (i8 0/1 in memory).
 *
 * Errors: the first failure is recorded in the emitter (fz_emit_fail) and
 * the function returns NULL; callers stop at the first NULL. A failure
 * while a node is emitted (e->node), or one about a given node
 * (fz_emit_fail_at), carries the location of the op the node computes.
 */
#ifndef FZ_LOWER_EMIT_H
#define FZ_LOWER_EMIT_H

#include <llvm-c/Core.h>

#include "sched/plan.h"

typedef struct fz_emit {
  const fz_plan *plan;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  fz_error *err;
  bool failed;
  fz_status status;         /* of the first failure */
  const fz_plan_node *node; /* the node being emitted, if any */
  bool uses_libdevice;
  /* bf16 loads widen to f32 by moving the bits up (exact, as fpext is)
   * instead of by fpext: a value loaded again after a barrier is then not
   * merged by LLVM with the first load's widened value, so only the
   * loaded bf16 bits live across the barrier (lib/lower/persistent.c) */
  bool bf16_by_bits;
  LLVMTypeRef t_void, t_i1, t_i8, t_i32, t_i64, t_half, t_bf16, t_f32, t_f64,
      t_ptr,         /* ptr addrspace(1) */
      t_sptr;        /* ptr addrspace(3): shared memory */
  LLVMTypeRef t_idx; /* i32 when plan->index32, else i64 */
} fz_emit;

/* ---- emit.c -------------------------------------------------------------- */

/* Fills the t_* types from e->ctx; t_idx as e->plan->index32 says. */
void fz_emit_init_types(fz_emit *e);
/* Records the first error (later ones are dropped) and returns NULL.
 * _at: an error about node `node` of the plan rather than e->node. */
LLVMValueRef fz_emit_fail(fz_emit *e, fz_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
LLVMValueRef fz_emit_fail_at(fz_emit *e, int node, fz_status status,
                             const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Names v (at most 63 characters): readable IR, and values tests can find. */
void fz_set_name(LLVMValueRef v, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- walk.c --------------------------------------------------------------- */

/* What a node needs when it is asked for: nothing (DONE: already
 * evaluated), to be evaluated without evaluating operands first (LEAF),
 * its operands first (OPERANDS), or the walk stops (FAIL, the error
 * recorded). */
typedef enum fz_walk_step {
  FZ_WALK_DONE,
  FZ_WALK_LEAF,
  FZ_WALK_OPERANDS,
  FZ_WALK_FAIL,
} fz_walk_step;

/* Evaluates plan node `root`: enter(ctx, i) says what node i needs; once
 * its operands (when asked for) are evaluated, in order, leave(ctx, i)
 * evaluates it (false stops the walk). The order is the recursion's
 * (walk.c), on an explicit stack. False when the walk stopped. */
bool fz_walk_nodes(fz_emit *e, int root, fz_walk_step (*enter)(void *, int),
                   bool (*leave)(void *, int), void *ctx);

/* ---- kernel.c ------------------------------------------------------------ */

/* Lanes per group at most: 16 bytes of i8 is the widest group a scheduler
 * asks for; a few times that leaves room without unbounded stack use. */
enum { FZ_LOWER_MAX_LANES = 64 };

/* One access's parameters, read once in the entry block. */
typedef struct fz_access_params {
  LLVMValueRef ptr;
  LLVMValueRef stride[FZ_MAX_RANK]; /* index type; NULL when structural */
  LLVMValueRef offset;
  /* gathered accesses: stride (index type), extent and site (i64) */
  LLVMValueRef gather_stride, gather_extent, gather_site;
} fz_access_params;

/* The kernel being emitted: the emitter plus its parameters. */
typedef struct fz_kernel {
  fz_emit e;
  fz_access_params *access;         /* per access */
  LLVMValueRef groups;              /* the group (kept point) count */
  LLVMValueRef ext[FZ_MAX_RANK];    /* extents; NULL when never read */
  LLVMValueRef workspace, counters; /* split or grid-column plans, else NULL */
  LLVMValueRef *symbol;             /* per plan symbol: its value, i64 */
  LLVMValueRef error_word;          /* plans with gathers, else NULL */
} fz_kernel;

/* Declares k->e.fn with plan.h's parameters (fz_plan_num_params of them)
 * and its NVPTX annotations. */
bool fz_kernel_declare(fz_kernel *k);
/* Reads the parameters into k, in the entry block where the builder is. */
void fz_kernel_read_params(fz_kernel *k);
/* A constant of the index type. */
LLVMValueRef fz_kernel_idx(fz_kernel *k, int64_t v);
/* i32 and i64 constants (the low 32 bits of v for i32), and an i32 or i64
 * value zero-extended to i64. */
static inline LLVMValueRef fz_emit_i32(fz_emit *e, unsigned long long v) {
  return LLVMConstInt(e->t_i32, v, 0);
}
static inline LLVMValueRef fz_emit_i64(fz_emit *e, int64_t v) {
  return LLVMConstInt(e->t_i64, (unsigned long long)v, 1);
}
static inline LLVMValueRef fz_emit_zext_i64(fz_emit *e, LLVMValueRef v) {
  return LLVMTypeOf(v) == e->t_i64 ? v : LLVMBuildZExt(e->b, v, e->t_i64, "");
}
/* A special register ("tid.x", "ctaid.y", ...) in the index type. */
LLVMValueRef fz_kernel_sreg(fz_kernel *k, const char *name);
/* Row-major decomposition of `index` over axes[0..n) (outermost first)
 * into c[axes[i]]. The last axis counts `vec` elements per index step:
 * c[last] = (index % per_row) * vec with per_row = its extent / vec (given,
 * hoisted by the caller; unused when n == 1). The outermost coordinate is
 * the quotient, so `index` must lie inside the space. */
void fz_kernel_decompose(fz_kernel *k, LLVMValueRef index, const int *axes,
                         int n, int vec, LLVMValueRef per_row, LLVMValueRef *c);
/* base + sum of c[d] * stride[d] of access a over the canonical axes in
 * the mask `axes`: the element offset of lane 0. An innermost stride of 1
 * or 0 is structure (no multiply, no term). */
LLVMValueRef fz_kernel_offset(fz_kernel *k, int a, LLVMValueRef base,
                              const LLVMValueRef *c, unsigned axes);
/* The step between lanes of access a along the innermost axis. */
LLVMValueRef fz_kernel_inner_stride(fz_kernel *k, int a);

/* ---- slot.c -------------------------------------------------------------- */

/* A slot's values: table[node * plan->vector + lane]. */
static inline LLVMValueRef *fz_slot_val(const fz_plan *p, LLVMValueRef *table,
                                        int node) {
  return table + (size_t)node * (size_t)p->vector;
}
/* LOAD node i: `lanes` lanes at element offset `off`, in the node dtype. */
bool fz_kernel_load_node(fz_kernel *k, int i, LLVMValueRef *table,
                         LLVMValueRef off, int lanes);
/* LITERAL, IOTA (at coordinates c) or OP node i over `lanes` lanes; a node
 * whose operands are the same in every lane is computed once. */
bool fz_kernel_value_node(fz_kernel *k, int i, LLVMValueRef *table,
                          const LLVMValueRef *c, int lanes);
/* STORE node i: its operand's lanes converted and stored at `off`. */
bool fz_kernel_store_node(fz_kernel *k, int i, LLVMValueRef *table,
                          LLVMValueRef off, int lanes);

/* ---- gather.c ------------------------------------------------------------ */

/* GATHER node i over `lanes` lanes at coordinates c (of lane 0), reading
 * its index operand's lanes from the table. */
bool fz_kernel_gather_node(fz_kernel *k, int i, LLVMValueRef *table,
                           const LLVMValueRef *c, int lanes);

/* ---- control.c ----------------------------------------------------------- */

/* for (iv = start; iv + ahead < end; iv += step), unsigned compare, ahead
 * may be NULL; fz_emit_loop_begin leaves the builder in the body and
 * returns iv (of start's type), fz_emit_loop_end closes the loop and
 * leaves the builder after it. iv is named `name`; blocks name.head,
 * name.body, name.done. */
typedef struct fz_loop {
  LLVMBasicBlockRef pre, head, exit;
  LLVMValueRef start, iv;
} fz_loop;
LLVMValueRef fz_emit_loop_begin(fz_emit *e, fz_loop *l, LLVMValueRef start,
                                LLVMValueRef ahead, LLVMValueRef end,
                                const char *name);
void fz_emit_loop_end(fz_emit *e, fz_loop *l, LLVMValueRef step);

/* if (cond) { ... } without an else: fz_if_begin leaves the builder in the
 * then-block, fz_if_end in the merge block, where fz_if_merge joins a
 * value computed inside with the one it replaces. */
typedef struct fz_if {
  LLVMBasicBlockRef from, then_end, merge;
} fz_if;
void fz_if_begin(fz_emit *e, fz_if *f, LLVMValueRef cond, const char *name);
void fz_if_end(fz_emit *e, fz_if *f);
LLVMValueRef fz_if_merge(fz_emit *e, const fz_if *f, LLVMValueRef then_val,
                         LLVMValueRef else_val);

/* ---- memory.c ------------------------------------------------------------ */

/* How an access touches memory along the innermost axis. */
typedef enum fz_access_shape {
  FZ_ACCESS_VECTOR,  /* vector > 1, stride 1: <v x T> instructions */
  FZ_ACCESS_SPLAT,   /* stride 0: one scalar for every lane */
  FZ_ACCESS_STRIDED, /* one scalar per lane at offset + lane * stride */
} fz_access_shape;

fz_access_shape fz_access_shape_of(const fz_plan *plan,
                                   const fz_plan_access *a);
LLVMTypeRef fz_emit_reg_type(fz_emit *e, fz_dtype d);
LLVMTypeRef fz_emit_mem_type(fz_emit *e, fz_dtype d);
/* v (register form of `from`) as the register form of `to`, exactly as the
 * interpreter converts: floats round to nearest even (f16/bf16 once, from
 * the exact value), float -> int truncates and saturates (NaN -> 0), int
 * narrowing wraps, anything -> bool is != 0. */
LLVMValueRef fz_emit_convert(fz_emit *e, LLVMValueRef v, fz_dtype from,
                             fz_dtype to);
/* A dtype's constant: s.f for float dtypes, s.i otherwise. */
LLVMValueRef fz_emit_scalar_const(fz_emit *e, fz_dtype d, fz_scalar s);
/* Load plan->vector lanes of access a (register form of a->dtype) for the
 * group whose lane 0 is at element offset `off`; inner_stride is the
 * runtime innermost stride (used only by FZ_ACCESS_STRIDED). */
bool fz_emit_load(fz_emit *e, const fz_plan_access *a, LLVMValueRef ptr,
                  LLVMValueRef off, LLVMValueRef inner_stride, int lanes,
                  LLVMValueRef *out);
/* Store lanes (register form of a->dtype), the mirror of fz_emit_load. */
bool fz_emit_store(fz_emit *e, const fz_plan_access *a, LLVMValueRef ptr,
                   LLVMValueRef off, LLVMValueRef inner_stride, int lanes,
                   const LLVMValueRef *vals);

/* ---- compute.c ----------------------------------------------------------- */

/* The dtype an op node's operands are converted to before it computes. */
fz_dtype fz_node_compute_dtype(const fz_plan *plan, const fz_plan_node *n);
/* An OP node: args are its operands in their nodes' dtypes; the result is
 * in n->dtype, rounded to it. */
LLVMValueRef fz_emit_op_node(fz_emit *e, const fz_plan_node *n,
                             const LLVMValueRef *args);
/* A LITERAL node's value in n->dtype. */
LLVMValueRef fz_emit_literal(fz_emit *e, const fz_plan_node *n);
/* An IOTA node's value at linear index `index` (i64). */
LLVMValueRef fz_emit_iota(fz_emit *e, const fz_plan_node *n,
                          LLVMValueRef index);

/* ---- random.c ------------------------------------------------------------ */

/* RANDOM node n's values (register form of n->dtype) for `lanes` lanes at
 * element indices index + l * step (i64); seed and offset are i64.
 * `aligned`: step is 1, lanes is a multiple of fz_philox_per_call and so
 * is index, so that each Philox call serves that many lanes. */
bool fz_emit_random(fz_emit *e, const fz_plan_node *n, LLVMValueRef seed,
                    LLVMValueRef offset, LLVMValueRef index, int64_t step,
                    bool aligned, int lanes, LLVMValueRef *out);

/* ---- combine.c ----------------------------------------------------------- */

/* The reductions of a plan: its REDUCE nodes in order, with their
 * accumulators' dtype (fz_reduce_acc_dtype). Values below are always in
 * the register form of that dtype. */
enum { FZ_LOWER_MAX_COLUMNS = 256 }; /* reductions * lanes per thread */
typedef struct fz_reduce_set {
  int count;
  int node[FZ_LOWER_MAX_COLUMNS];
  fz_opcode code[FZ_LOWER_MAX_COLUMNS];
  fz_dtype acc[FZ_LOWER_MAX_COLUMNS];
} fz_reduce_set;

/* Layout questions, answered without emitting anything. */
typedef struct fz_reduce_layout {
  int lanes;          /* accumulators per thread per reduction */
  unsigned warp_mask; /* the threads of a warp that exist */
  /* inner: a row's block_x threads are shuffle_width lanes of one warp,
   * or warps_per_row whole warps */
  int shuffle_width, warps_per_row;
  /* a dynamic block (plan.h): the row's warps at run time (i32), at most
   * warps_per_row, which then only sizes the scratch; NULL otherwise */
  LLVMValueRef warps;
  /* shared memory, bytes: the cross-warp / cross-ty scratch and how many
   * (reduction, lane) columns of it fit at once */
  size_t scratch_bytes, column_bytes;
  int columns_per_pass;
} fz_reduce_layout;

/* Fails (UNSUPPORTED) when reductions * lanes exceed FZ_LOWER_MAX_COLUMNS.
 * A var or mean whose state an earlier entry keeps gets no entry of its
 * own (fz_reduce_entry_of finds it). */
bool fz_reduce_set_of(fz_emit *e, fz_reduce_set *rs);
/* One element x (in the accumulator dtype) into a partial: combined, or
 * for var and mean a Welford update. */
LLVMValueRef fz_reduce_accumulate(fz_emit *e, fz_opcode code, fz_dtype acc,
                                  LLVMValueRef partial, LLVMValueRef x);
void fz_reduce_layout_of(const fz_plan *p, const fz_reduce_set *rs,
                         fz_reduce_layout *l);
LLVMValueRef fz_reduce_identity(fz_emit *e, fz_opcode code, fz_dtype acc);
LLVMValueRef fz_reduce_combine(fz_emit *e, fz_opcode code, fz_dtype acc,
                               LLVMValueRef a, LLVMValueRef b);

/* A partial of reduction `code` over accumulator dtype acc: its LLVM
 * type (the register form of acc, an arg-reduction's pair or a Welford
 * state), its bytes in shared memory and workspaces, and a partial made
 * of one element x (in dtype `from`; `position` is its i64 position for
 * an arg-reduction, NULL otherwise; fz_reduce_accumulate folds it in).
 * For sum, prod, amax and amin these are fz_emit_reg_type, the dtype's
 * size and fz_emit_convert. A final partial's value is fz_reduce_value
 * (welford.c). */
LLVMTypeRef fz_reduce_state_type(fz_emit *e, fz_opcode code, fz_dtype acc);
size_t fz_reduce_state_bytes(fz_opcode code, fz_dtype acc);
LLVMValueRef fz_reduce_input(fz_emit *e, fz_opcode code, fz_dtype acc,
                             LLVMValueRef x, fz_dtype from,
                             LLVMValueRef position);

/* ---- argreduce.c --------------------------------------------------------- */

/* An arg-reduction's pair {register form of acc, i64 position}; its
 * identity, the pair of one element, the final position, and the
 * combination (argreduce.c says which pair wins). */
LLVMTypeRef fz_arg_state_type(fz_emit *e, fz_dtype acc);
LLVMValueRef fz_arg_identity(fz_emit *e, fz_opcode code, fz_dtype acc);
LLVMValueRef fz_arg_input(fz_emit *e, fz_dtype acc, LLVMValueRef x,
                          fz_dtype from, LLVMValueRef position);
LLVMValueRef fz_arg_position(fz_emit *e, LLVMValueRef state);
LLVMValueRef fz_arg_combine(fz_emit *e, fz_opcode code, fz_dtype acc,
                            LLVMValueRef a, LLVMValueRef b);

/* The thread position and block-wide state the combines share. */
typedef struct fz_block_state {
  LLVMValueRef tid, tx, ty; /* i32 */
  LLVMValueRef scratch;     /* addrspace(3) scratch, or NULL */
  LLVMValueRef last_flag;   /* addrspace(3) i32, split plans */
} fz_block_state;

/* Declares the static shared memory the layout asks for. */
void fz_reduce_declare_shared(fz_kernel *k, const fz_reduce_layout *l,
                              fz_block_state *bs);
/* INNER: vals[r] (one per reduction) combined over the block_x threads of
 * each row: valid afterwards in tx == 0. Every thread must call it. */
bool fz_emit_row_combine(fz_kernel *k, const fz_reduce_set *rs,
                         const fz_reduce_layout *l, const fz_block_state *bs,
                         LLVMValueRef *vals);
/* OUTER: vals[r * lanes + lane] combined over the block_y threads of each
 * column: valid afterwards in ty == 0. Every thread must call it. */
bool fz_emit_column_combine(fz_kernel *k, const fz_reduce_set *rs,
                            const fz_reduce_layout *l, const fz_block_state *bs,
                            LLVMValueRef *vals);
/* Split plans: the grid reduction of one tile. Threads where `writer`
 * holds publish vals[r * lanes + lane] as the partial of kept points
 * `point + lane` for split ctaid.y; the last block of the tile to arrive
 * (the returned i1, uniform in the block) has in its writers the
 * combination of every split's partial, in split order. Every thread must
 * call it. */
LLVMValueRef fz_emit_grid_combine(fz_kernel *k, const fz_reduce_set *rs,
                                  const fz_reduce_layout *l,
                                  const fz_block_state *bs, LLVMValueRef writer,
                                  LLVMValueRef point, LLVMValueRef tile,
                                  LLVMValueRef *vals);

/* ---- intrinsics.c -------------------------------------------------------- */

/* %tid.x, %ntid.x, %ctaid.x, %nctaid.x as i32 ("tid.x", ...). */
LLVMValueRef fz_emit_sreg(fz_emit *e, const char *name);
/* bar.sync 0: every thread of the block must reach it. */
void fz_emit_barrier(fz_emit *e);
/* membar.gl (__threadfence): this thread's writes are seen by the whole
 * GPU before any of its later writes. */
void fz_emit_fence_gpu(fz_emit *e);
/* shfl.sync.bfly: v (f32, f64, i32 or i64) of lane (laneid ^ offset), for
 * the threads of `mask`; 64-bit values move as two 32-bit halves, structs
 * (an arg-reduction's pair, a Welford state) field by field. */
LLVMValueRef fz_emit_shfl_bfly(fz_emit *e, LLVMValueRef v, int offset,
                               unsigned mask);
/* A struct value with `f` applied to each field (f(e, field, ctx)); NULL
 * when any call fails. How a shuffle moves a Welford state. */
LLVMValueRef fz_emit_map_fields(fz_emit *e, LLVMValueRef v,
                                LLVMValueRef (*f)(fz_emit *, LLVMValueRef,
                                                  void *),
                                void *ctx);
/* A call of the llvm.* intrinsic `name` with the given overload types. */
LLVMValueRef fz_emit_intrinsic(fz_emit *e, const char *name,
                               LLVMTypeRef *overloads, int num_overloads,
                               LLVMValueRef *args, int num_args);
/* Overloaded on the type of the first argument (llvm.fabs, llvm.maximum). */
LLVMValueRef fz_emit_intrinsic1(fz_emit *e, const char *name, LLVMValueRef a);
LLVMValueRef fz_emit_intrinsic2(fz_emit *e, const char *name, LLVMValueRef a,
                                LLVMValueRef b);
/* __nv_<base>f for float arguments, __nv_<base> for double. */
LLVMValueRef fz_emit_libdevice(fz_emit *e, const char *base, LLVMValueRef *args,
                               int num_args);

/* ---- welford.c: var and mean as Welford states -------------------------- */

/* The register type of a var or mean partial: a struct of three (mean,
 * m2, count) in the accumulator dtype (fz_reduce_state_type asks). */
LLVMTypeRef fz_welford_state_type(fz_emit *e, fz_dtype acc);
LLVMValueRef fz_welford_identity(fz_emit *e, fz_dtype acc);
LLVMValueRef fz_welford_combine(fz_emit *e, fz_dtype acc, LLVMValueRef a,
                                LLVMValueRef b);
LLVMValueRef fz_welford_update(fz_emit *e, fz_dtype acc, LLVMValueRef state,
                               LLVMValueRef x);
/* The entry of rs whose partial gives REDUCE node `node`: its own, or the
 * Welford state of an entry with the same operand, space, phase and
 * accumulator; -1 when none. */
int fz_reduce_entry_of(const fz_plan *p, const fz_reduce_set *rs, int node);
/* Whether `node` is a var or mean that an entry of rs already serves. */
bool fz_reduce_shares_state(const fz_plan *p, const fz_reduce_set *rs,
                            int node);
/* REDUCE node n's value, in n->dtype, from its entry's final partial. */
LLVMValueRef fz_reduce_value(fz_emit *e, const fz_plan_node *n, fz_dtype acc,
                             LLVMValueRef partial);

#endif
