/* emit.h - private to lib/lower: the state every emitter shares, and the
 * table of contents of the stage's files.
 *
 *   kernel.c      the kernel: signature, parameters, thread indexing, the
 *                 grid-stride loop with its unrolled slots, group ->
 *                 coordinates -> offsets; the order loads, compute, stores
 *   memory.c      register and memory forms of each dtype, conversions
 *                 between dtypes, vector / splat / per-lane accesses
 *   compute.c     one plan node (op, literal, iota) -> LLVM values
 *   intrinsics.c  special registers, llvm.* intrinsics, libdevice calls
 *
 * Values in registers: f64 is double; f32, f16 and bf16 are float (a f16
 * or bf16 value is always exactly representable in its dtype: every op
 * rounds its result through half/bfloat); i64, i32, i8 are their integer;
 * bool is i1 (i8 0/1 in memory).
 *
 * Errors: the first failure is recorded in the emitter (fz_emit_fail) and
 * the function returns NULL; callers stop at the first NULL.
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
  fz_status status; /* of the first failure */
  bool uses_libdevice;
  LLVMTypeRef t_void, t_i1, t_i8, t_i32, t_i64, t_half, t_bf16, t_f32, t_f64,
      t_ptr;         /* ptr addrspace(1) */
  LLVMTypeRef t_idx; /* i32 when plan->index32, else i64 */
} fz_emit;

/* Records the first error (later ones are dropped) and returns NULL. */
LLVMValueRef fz_emit_fail(fz_emit *e, fz_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

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

/* ---- intrinsics.c -------------------------------------------------------- */

/* %tid.x, %ntid.x, %ctaid.x, %nctaid.x as i32 ("tid.x", ...). */
LLVMValueRef fz_emit_sreg(fz_emit *e, const char *name);
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

#endif
