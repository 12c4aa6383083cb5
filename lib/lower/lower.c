/* lower.c - the stage's driver, the one file that knows every skeleton:
 *
 *   check the plan (lowering never trusts a malformed one to LLVM);
 *   set up the emitter and the module for NVPTX;
 *   declare the kernel and read its parameters (kernel.c);
 *   hand the body to the plan kind's skeleton (pointwise.c, reduction.c,
 *   persistent.c, transpose.c);
 *   verify the module.
 */
#include "lower/lower.h"
#include "emit.h"
#include "skeleton.h"

#include <llvm-c/Analysis.h>
#include <stdlib.h>

/* NVPTX's layout for 64-bit pointers (as the target machine reports it). */
static const char *NVPTX_TRIPLE = "nvptx64-nvidia-cuda";
static const char *NVPTX_DATALAYOUT =
    "e-i64:64-i128:128-v16:16-v32:32-n16:32:64";

/* ---- checking the plan --------------------------------------------------- */

static bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

static bool is_reduction(const fz_plan *p) {
  return p->kind == FZ_PLAN_INNER_REDUCTION ||
         p->kind == FZ_PLAN_OUTER_REDUCTION;
}

static bool is_persistent(const fz_plan *p) {
  return fz_plan_is_persistent(p);
}

static fz_status check_access(const fz_plan *p, int i, fz_error *err) {
  const fz_plan_access *a = &p->accesses[i];
  if ((unsigned)a->dtype >= FZ_NUM_DTYPES)
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: access a%d has no dtype",
                        i);
  if (a->vector < 1 || a->vector > p->vector || p->vector % a->vector != 0 ||
      (a->vector > 1 && !is_pow2(a->vector)))
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: access a%d has vector %d in a plan of %d lanes",
                        i, a->vector, p->vector);
  if (a->vector > 1 && a->strides[p->rank - 1] != 1)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: access a%d is a vector of %d but its innermost "
                        "stride is %lld",
                        i, a->vector, (long long)a->strides[p->rank - 1]);
  return FZ_OK;
}

/* Reduction plans: a node of the kept space (post) reads only kept-space
 * values and memory constant along R; a node of the full space only
 * full-space values; a REDUCE node turns a full-space value into a kept
 * one. */
static fz_status check_domain(const fz_plan *p, int i, fz_error *err) {
  const fz_plan_node *n = &p->nodes[i];
  if (n->kind == FZ_NODE_REDUCE) {
    if (!n->post || n->num_operands != 1 || p->nodes[n->operands[0]].post)
      return fz_error_set(err, FZ_ERR_INTERNAL,
                          "lower: reduce n%d must be post over a pre value", i);
    switch (n->code) {
    case FZ_OP_SUM:
    case FZ_OP_PROD:
    case FZ_OP_AMAX:
    case FZ_OP_AMIN:
      return FZ_OK;
    default:
      return fz_error_set(
          err, FZ_ERR_UNSUPPORTED, "lower: reduce n%d: %s is not a reduction",
          i,
          (unsigned)n->code < FZ_NUM_OPCODES ? fz_op_table[n->code].name : "?");
    }
  }
  for (int k = 0; k < n->num_operands; k++)
    if (p->nodes[n->operands[k]].post != n->post)
      return fz_error_set(err, FZ_ERR_INTERNAL,
                          "lower: node n%d (%s) reads n%d of the other domain",
                          i, n->post ? "post" : "pre", n->operands[k]);
  if ((n->kind == FZ_NODE_LOAD || n->kind == FZ_NODE_STORE) && n->post) {
    const fz_plan_access *a = &p->accesses[n->access];
    for (int d = 0; d < p->rank; d++)
      if (p->reduced[d] && a->strides[d] != 0)
        return fz_error_set(err, FZ_ERR_INTERNAL,
                            "lower: post node n%d: a%d varies along R axis %d",
                            i, n->access, d);
    if (p->kind == FZ_PLAN_INNER_REDUCTION && a->vector != 1)
      return fz_error_set(err, FZ_ERR_INTERNAL,
                          "lower: post node n%d: a%d is a vector in an inner "
                          "reduction",
                          i, n->access);
  }
  return FZ_OK;
}

static fz_status check_node(const fz_plan *p, int i, fz_error *err) {
  const fz_plan_node *n = &p->nodes[i];
  if ((unsigned)n->dtype >= FZ_NUM_DTYPES)
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: node n%d has no dtype",
                        i);
  if (n->num_operands < 0 || n->num_operands > 3)
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: node n%d has %d operands",
                        i, n->num_operands);
  for (int k = 0; k < n->num_operands; k++) {
    int o = n->operands[k];
    if (o < 0 || o >= i || p->nodes[o].kind == FZ_NODE_STORE)
      return fz_error_set(err, FZ_ERR_INTERNAL,
                          "lower: node n%d: operand %d is not an earlier "
                          "value node",
                          i, k);
  }
  switch (n->kind) {
  case FZ_NODE_LOAD:
  case FZ_NODE_STORE: {
    bool store = n->kind == FZ_NODE_STORE;
    if (n->access < 0 || n->access >= p->num_accesses ||
        p->accesses[n->access].is_output != store)
      return fz_error_set(err, FZ_ERR_INTERNAL,
                          "lower: node n%d: %s through a%d, not an %s access",
                          i, store ? "store" : "load", n->access,
                          store ? "output" : "input");
    if (store && n->num_operands != 1)
      return fz_error_set(err, FZ_ERR_INTERNAL,
                          "lower: store n%d needs one operand", i);
    return is_reduction(p) ? check_domain(p, i, err) : FZ_OK;
  }
  case FZ_NODE_LITERAL:
  case FZ_NODE_IOTA:
    return is_reduction(p) ? check_domain(p, i, err) : FZ_OK;
  case FZ_NODE_REDUCE:
    if (p->kind == FZ_PLAN_POINTWISE || p->kind == FZ_PLAN_TRANSPOSE)
      return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                          "lower: node n%d: a reduction in a pointwise plan",
                          i);
    return is_reduction(p) ? check_domain(p, i, err) : FZ_OK;
  case FZ_NODE_OP: {
    if ((unsigned)n->code >= FZ_NUM_OPCODES)
      return fz_error_set(err, FZ_ERR_INTERNAL, "lower: node n%d: bad opcode",
                          i);
    const fz_op_info *info = &fz_op_table[n->code];
    if (info->kind != FZ_KIND_UNARY && info->kind != FZ_KIND_CAST &&
        info->kind != FZ_KIND_BINARY && info->kind != FZ_KIND_TERNARY)
      return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                          "lower: node n%d: %s is not a pointwise op", i,
                          info->name);
    if (n->num_operands != info->arity)
      return fz_error_set(err, FZ_ERR_INTERNAL,
                          "lower: node n%d: %s takes %d operands, not %d", i,
                          info->name, info->arity, n->num_operands);
    return is_reduction(p) ? check_domain(p, i, err) : FZ_OK;
  }
  }
  return fz_error_set(err, FZ_ERR_INTERNAL, "lower: node n%d has no kind", i);
}

/* The launch shape of a reduction: block_x by block_y threads, powers of
 * two (the butterfly and the tree halve them), whole warps or one partial
 * warp, R and I where the kind says. An outer plan may have no R axis at
 * all (the reduced axes had size 1): R is then one point. */
static fz_status check_reduction(const fz_plan *p, fz_error *err) {
  int last = p->rank - 1;
  bool inner = p->kind == FZ_PLAN_INNER_REDUCTION;
  if (!is_pow2(p->block_x) || !is_pow2(p->block_y) ||
      (int64_t)p->block_x * p->block_y != p->threads ||
      (p->threads > 32 && p->threads % 32 != 0) || p->split < 1 ||
      p->grid_x < 1)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: reduction block %dx%d, %d threads, grid "
                        "%lldx%d",
                        p->block_x, p->block_y, p->threads,
                        (long long)p->grid_x, p->split);
  if (p->reduced[last] != inner)
    return fz_error_set(
        err, FZ_ERR_INTERNAL, "lower: %s reduction whose innermost axis is %s",
        inner ? "an inner" : "an outer", p->reduced[last] ? "reduced" : "kept");
  if (p->extents[last] % p->vector != 0)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: innermost extent %lld is not a multiple of "
                        "%d lanes",
                        (long long)p->extents[last], p->vector);
  return FZ_OK;
}

static fz_status check_plan(const fz_plan *p, fz_error *err) {
  if (!p)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "lower: no plan");
  bool transpose = p->kind == FZ_PLAN_TRANSPOSE;
  if (p->kind != FZ_PLAN_POINTWISE && !is_reduction(p) && !is_persistent(p) &&
      !transpose)
    return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                        "lower: plan kind %d is not lowered yet", (int)p->kind);
  if (!p->kernel_name || !p->kernel_name[0])
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: plan has no kernel name");
  if (p->rank < 1 || p->rank > FZ_MAX_RANK)
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: plan rank %d", p->rank);
  if (p->vector < 1 || p->vector > FZ_LOWER_MAX_LANES || p->unroll < 1 ||
      p->unroll > FZ_PLAN_MAX_UNROLL || p->threads < 1 || p->threads > 1024)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: launch shape vector %d unroll %d threads %d",
                        p->vector, p->unroll, p->threads);
  if (p->num_accesses < 1 || (p->num_nodes > 0 && !p->nodes) || !p->accesses)
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: plan touches no memory");
  fz_status st;
  if (is_reduction(p) && (st = check_reduction(p, err)))
    return st;
  for (int i = 0; i < p->num_accesses; i++)
    if (!(transpose && p->tiled && p->tiled[i]) && /* vector along B */
        (st = check_access(p, i, err)))
      return st;
  for (int i = 0; i < p->num_nodes; i++)
    if ((st = check_node(p, i, err))) {
      fz_error_locate(err, fz_value_loc(p->nodes[i].value));
      return st;
    }
  if (transpose)
    return fz_check_transpose(p, err);
  return is_persistent(p) ? fz_check_persistent(p, err) : FZ_OK;
}

/* ---- entry point --------------------------------------------------------- */

static fz_status verify(LLVMModuleRef m, fz_error *err) {
  char *msg = NULL;
  LLVMBool broken = LLVMVerifyModule(m, LLVMReturnStatusAction, &msg);
  fz_status st = FZ_OK;
  if (broken)
    st = fz_error_set(err, FZ_ERR_INTERNAL,
                      "lower: the kernel does not verify: %s",
                      msg ? msg : "(no message)");
  if (msg)
    LLVMDisposeMessage(msg);
  return st;
}

static bool emit_body(fz_kernel *k) {
  fz_emit *e = &k->e;
  LLVMBasicBlockRef entry =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "entry");
  LLVMPositionBuilderAtEnd(e->b, entry);
  fz_kernel_read_params(k);
  switch (e->plan->kind) {
  case FZ_PLAN_POINTWISE:
    return fz_emit_pointwise(k);
  case FZ_PLAN_INNER_REDUCTION:
    return fz_emit_inner_reduction(k);
  case FZ_PLAN_OUTER_REDUCTION:
    return fz_emit_outer_reduction(k);
  case FZ_PLAN_INNER_PERSISTENT:
  case FZ_PLAN_INNER_OUTER_PERSISTENT:
  case FZ_PLAN_OUTER_PERSISTENT:
    return fz_emit_persistent(k);
  case FZ_PLAN_TRANSPOSE:
    return fz_emit_transpose(k);
  default: /* check_plan refused it */
    fz_emit_fail(e, FZ_ERR_UNSUPPORTED, "plan kind %d", (int)e->plan->kind);
    return false;
  }
}

fz_status fz_lower_plan(const fz_plan *plan, LLVMContextRef ctx,
                        LLVMModuleRef *out, bool *uses_libdevice,
                        fz_error *err) {
  if (out)
    *out = NULL;
  if (uses_libdevice)
    *uses_libdevice = false;
  if (!out || !ctx)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "lower: no context or output");
  fz_status st = check_plan(plan, err);
  if (st)
    return st;

  fz_kernel k = {.e = {.plan = plan, .ctx = ctx, .err = err}};
  fz_emit *e = &k.e;
  fz_emit_init_types(e);
  e->mod = LLVMModuleCreateWithNameInContext(plan->kernel_name, ctx);
  LLVMSetTarget(e->mod, NVPTX_TRIPLE);
  LLVMSetDataLayout(e->mod, NVPTX_DATALAYOUT);
  e->b = LLVMCreateBuilderInContext(ctx);
  k.access = calloc((size_t)plan->num_accesses, sizeof *k.access);
  bool ok = k.access != NULL;
  if (!ok)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  ok = ok && fz_kernel_declare(&k) && emit_body(&k);
  free(k.access);
  LLVMDisposeBuilder(e->b);
  if (!ok || e->failed) {
    if (!e->failed)
      fz_error_set(err, FZ_ERR_INTERNAL, "lower: emission failed");
    LLVMDisposeModule(e->mod);
    return e->failed ? e->status : FZ_ERR_INTERNAL;
  }
  st = verify(e->mod, err);
  if (st) {
    LLVMDisposeModule(e->mod);
    return st;
  }
  *out = e->mod;
  if (uses_libdevice)
    *uses_libdevice = e->uses_libdevice;
  return FZ_OK;
}
