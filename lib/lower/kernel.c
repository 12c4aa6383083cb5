/* kernel.c - what every kernel shares, whatever its skeleton:
 *
 *   check the plan (lowering never trusts a malformed one to LLVM);
 *   declare the kernel with plan.h's parameters and NVPTX annotations;
 *   read the parameters in the entry block, narrowed to 32 bits under
 *   index32;
 *   hand the body to the plan kind's skeleton (pointwise.c, reduction.c,
 *   persistent.c, transpose.c);
 *   verify the module.
 *
 * and the pieces the skeletons are built from: an index decomposed into
 * coordinates (div/mod over runtime extents, the innermost axis counted
 * in groups of `vector` lanes), coordinates into an access's element
 * offset (offset + sum_k c[k] * stride[k], with an innermost stride of 1
 * or 0 treated as structure), and one node of a slot evaluated over its
 * lanes. A slot's values live in a table indexed by (node, lane); a node
 * whose operands are the same value in every lane (splats, literals) is
 * computed once and shared by its lanes.
 */
#include "emit.h"
#include "lower/lower.h"

#include <llvm-c/Analysis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVPTX's layout for 64-bit pointers (as the target machine reports it). */
static const char *NVPTX_TRIPLE = "nvptx64-nvidia-cuda";
static const char *NVPTX_DATALAYOUT =
    "e-i64:64-i128:128-v16:16-v32:32-n16:32:64";

LLVMValueRef fz_emit_fail(fz_emit *e, fz_status status, const char *fmt, ...) {
  if (!e->failed) {
    e->failed = true;
    char msg[sizeof e->err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    e->status = status;
    fz_error_set(e->err, status, "lower: %s", msg);
  }
  return NULL;
}

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
    if ((st = check_node(p, i, err)))
      return st;
  if (transpose)
    return fz_check_transpose(p, err);
  return is_persistent(p) ? fz_check_persistent(p, err) : FZ_OK;
}

/* ---- small helpers ------------------------------------------------------- */

LLVMValueRef fz_kernel_idx(fz_kernel *k, int64_t v) {
  return LLVMConstInt(k->e.t_idx, (unsigned long long)v, 1);
}

void fz_set_name(LLVMValueRef v, const char *fmt, ...) {
  char name[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  LLVMSetValueName2(v, name, strlen(name));
}

LLVMValueRef fz_kernel_sreg(fz_kernel *k, const char *name) {
  LLVMValueRef v = fz_emit_sreg(&k->e, name);
  return v ? LLVMBuildZExt(k->e.b, v, k->e.t_idx, "") : NULL;
}

void fz_if_begin(fz_emit *e, fz_if *f, LLVMValueRef cond, const char *name) {
  char label[64];
  f->from = LLVMGetInsertBlock(e->b);
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->ctx, e->fn, name);
  snprintf(label, sizeof label, "%s.end", name);
  f->merge = LLVMAppendBasicBlockInContext(e->ctx, e->fn, label);
  LLVMBuildCondBr(e->b, cond, then, f->merge);
  LLVMPositionBuilderAtEnd(e->b, then);
}

void fz_if_end(fz_emit *e, fz_if *f) {
  f->then_end = LLVMGetInsertBlock(e->b);
  LLVMBuildBr(e->b, f->merge);
  LLVMPositionBuilderAtEnd(e->b, f->merge);
}

LLVMValueRef fz_if_merge(fz_emit *e, const fz_if *f, LLVMValueRef then_val,
                         LLVMValueRef else_val) {
  if (then_val == else_val)
    return then_val;
  LLVMValueRef phi = LLVMBuildPhi(e->b, LLVMTypeOf(then_val), "");
  LLVMValueRef in[2] = {then_val, else_val};
  LLVMBasicBlockRef from[2] = {f->then_end, f->from};
  LLVMAddIncoming(phi, in, from, 2);
  return phi;
}

/* ---- declaration --------------------------------------------------------- */

static void add_attr(fz_emit *e, LLVMValueRef fn, unsigned index,
                     const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, index, LLVMCreateEnumAttribute(e->ctx, kind, 0));
}

static void annotate(fz_emit *e, const char *key, int value) {
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(e->fn),
                           LLVMMDStringInContext2(e->ctx, key, strlen(key)),
                           LLVMValueAsMetadata(LLVMConstInt(
                               e->t_i32, (unsigned long long)value, 0))};
  LLVMAddNamedMetadataOperand(
      e->mod, "nvvm.annotations",
      LLVMMetadataAsValue(e->ctx, LLVMMDNodeInContext2(e->ctx, md, 3)));
}

static bool has_workspace(const fz_plan *p) {
  return (is_reduction(p) && p->split > 1) || fz_plan_has_grid_columns(p);
}

/* Pointers (one per access), then groups, extents, and per access its
 * strides and offset: plan.h's order, which the launcher also follows;
 * a split reduction and an inner-outer persistent plan add the workspace
 * and counters pointers. */
static bool declare_kernel(fz_kernel *k) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  int scalars = 1 + p->rank + p->num_accesses * (p->rank + 1);
  int n = p->num_accesses + scalars + (has_workspace(p) ? 2 : 0);
  if (n != fz_plan_num_params(p)) {
    fz_emit_fail(e, FZ_ERR_INTERNAL,
                 "kernel has %d parameters but the launcher passes %d", n,
                 fz_plan_num_params(p));
    return false;
  }
  LLVMTypeRef *params = malloc(sizeof *params * (size_t)n);
  if (!params) {
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    return false;
  }
  for (int i = 0; i < n; i++)
    params[i] = i < p->num_accesses || i >= p->num_accesses + scalars
                    ? e->t_ptr
                    : e->t_i64;
  LLVMTypeRef fty = LLVMFunctionType(e->t_void, params, (unsigned)n, 0);
  free(params);
  e->fn = LLVMAddFunction(e->mod, p->kernel_name, fty);
  LLVMSetFunctionCallConv(e->fn, LLVMPTXKernelCallConv);
  add_attr(e, e->fn, LLVMAttributeFunctionIndex, "nounwind");
  for (int i = 0; i < p->num_accesses; i++) {
    /* noalias + readonly lets NVPTX use ld.global.nc for inputs */
    unsigned idx = (unsigned)i + 1;
    add_attr(e, e->fn, idx, "noalias");
    add_attr(e, e->fn, idx, "nocapture");
    add_attr(e, e->fn, idx,
             p->accesses[i].is_output ? "writeonly" : "readonly");
  }
  /* the workspace and counters get no noalias: other blocks write them
   * while this one runs */
  annotate(e, "kernel", 1);
  annotate(e, "maxntidx", p->threads);
  return true;
}

/* ---- entry: parameters --------------------------------------------------- */

/* Parameter i, named, in the index type; NULL when the kernel never reads
 * it (no dead truncation). */
static LLVMValueRef index_param(fz_kernel *k, int i, bool used, const char *fmt,
                                int a, int b) {
  LLVMValueRef v = LLVMGetParam(k->e.fn, (unsigned)i);
  char name[64];
  snprintf(name, sizeof name, fmt, a, b);
  LLVMSetValueName2(v, name, strlen(name));
  if (!used)
    return NULL;
  if (k->e.t_idx == k->e.t_i64)
    return v;
  return LLVMBuildTrunc(k->e.b, v, k->e.t_idx, "");
}

/* A pointwise kernel never reads the outermost extent (the quotient of
 * the decomposition needs none); a reduction multiplies extents to size
 * its spaces, and O3 drops what it does not use. */
static void read_params(fz_kernel *k) {
  const fz_plan *p = k->e.plan;
  int i = 0, inner = p->rank - 1;
  for (int a = 0; a < p->num_accesses; a++) {
    k->acc[a].ptr = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->acc[a].ptr, "a%d", a);
  }
  k->groups = index_param(k, i++, true, "groups", 0, 0);
  for (int d = 0; d < p->rank; d++)
    k->ext[d] = index_param(k, i++, d > 0 || p->kind != FZ_PLAN_POINTWISE,
                            "ext%d", d, 0);
  for (int a = 0; a < p->num_accesses; a++) {
    for (int d = 0; d < p->rank; d++) {
      /* an innermost stride of 0 or 1 is structure, not a parameter */
      int64_t s = p->accesses[a].strides[d];
      bool used = d < inner || (s != 0 && s != 1);
      k->acc[a].stride[d] = index_param(k, i++, used, "a%d.stride%d", a, d);
    }
    k->acc[a].offset = index_param(k, i++, true, "a%d.offset", a, 0);
  }
  if (has_workspace(p)) {
    k->workspace = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->workspace, "workspace");
    k->counters = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->counters, "counters");
  }
}

/* ---- index -> coordinates -> offsets ------------------------------------- */

void fz_kernel_decompose(fz_kernel *k, LLVMValueRef index, const int *axes,
                         int n, int vec, LLVMValueRef per_row,
                         LLVMValueRef *c) {
  LLVMBuilderRef b = k->e.b;
  if (n == 0)
    return;
  int last = axes[n - 1];
  LLVMValueRef v = fz_kernel_idx(k, vec);
  if (n == 1) {
    c[last] = vec == 1 ? index : LLVMBuildNUWMul(b, index, v, "");
    return;
  }
  LLVMValueRef r = LLVMBuildURem(b, index, per_row, "");
  c[last] = vec == 1 ? r : LLVMBuildNUWMul(b, r, v, "");
  LLVMValueRef q = LLVMBuildUDiv(b, index, per_row, "");
  for (int i = n - 2; i > 0; i--) {
    c[axes[i]] = LLVMBuildURem(b, q, k->ext[axes[i]], "");
    q = LLVMBuildUDiv(b, q, k->ext[axes[i]], "");
  }
  c[axes[0]] = q; /* the index lies inside the space: no remainder needed */
}

LLVMValueRef fz_kernel_offset(fz_kernel *k, int a, LLVMValueRef base,
                              const LLVMValueRef *c, unsigned axes) {
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = k->e.plan;
  const fz_plan_access *pa = &p->accesses[a];
  int inner = p->rank - 1;
  LLVMValueRef off = base;
  for (int d = 0; d < p->rank; d++) {
    LLVMValueRef term;
    if (!((axes >> d) & 1u) || (d == inner && pa->strides[d] == 0))
      continue;
    if (d == inner && pa->strides[d] == 1)
      term = c[d];
    else
      term = LLVMBuildNSWMul(b, c[d], k->acc[a].stride[d], "");
    off = LLVMBuildNSWAdd(b, off, term, "");
  }
  return off;
}

LLVMValueRef fz_kernel_inner_stride(fz_kernel *k, int a) {
  const fz_plan *p = k->e.plan;
  int inner = p->rank - 1;
  if (p->accesses[a].strides[inner] == 1)
    return fz_kernel_idx(k, 1);
  return k->acc[a].stride[inner];
}

/* ---- one node over a slot's lanes ---------------------------------------- */

bool fz_kernel_load_node(fz_kernel *k, int i, LLVMValueRef *table,
                         LLVMValueRef off, int lanes) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  const fz_plan_node *n = &p->nodes[i];
  const fz_plan_access *a = &p->accesses[n->access];
  LLVMValueRef *out = fz_slot_val(p, table, i);
  if (!fz_emit_load(e, a, k->acc[n->access].ptr, off,
                    fz_kernel_inner_stride(k, n->access), lanes, out))
    return false;
  for (int l = 0; l < lanes; l++)
    if (!(out[l] = fz_emit_convert(e, out[l], a->dtype, n->dtype)))
      return false;
  return !e->failed;
}

/* sum_k coeff[k] * c[k] as i64, the iota index of lane 0 */
static LLVMValueRef iota_index(fz_kernel *k, const LLVMValueRef *c,
                               const fz_plan_node *n) {
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = k->e.plan;
  LLVMValueRef sum = LLVMConstInt(k->e.t_i64, 0, 0);
  for (int d = 0; d < p->rank; d++) {
    if (n->coeff[d] == 0)
      continue;
    LLVMValueRef cd = LLVMBuildZExt(b, c[d], k->e.t_i64, "");
    sum = LLVMBuildAdd(
        b, sum,
        LLVMBuildMul(
            b, cd, LLVMConstInt(k->e.t_i64, (unsigned long long)n->coeff[d], 1),
            ""),
        "");
  }
  return sum;
}

static bool uniform_operands(const fz_plan *p, LLVMValueRef *table,
                             const fz_plan_node *n, int lanes) {
  for (int j = 0; j < n->num_operands; j++) {
    LLVMValueRef *v = fz_slot_val(p, table, n->operands[j]);
    for (int l = 1; l < lanes; l++)
      if (v[l] != v[0])
        return false;
  }
  return true;
}

bool fz_kernel_value_node(fz_kernel *k, int i, LLVMValueRef *table,
                          const LLVMValueRef *c, int lanes) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  const fz_plan_node *n = &p->nodes[i];
  int inner = p->rank - 1;
  LLVMValueRef *out = fz_slot_val(p, table, i);
  switch (n->kind) {
  case FZ_NODE_LOAD:
  case FZ_NODE_STORE:
  case FZ_NODE_REDUCE: /* the skeletons handle these */
    return fz_emit_fail(e, FZ_ERR_INTERNAL, "node n%d is not a value node", i),
           false;
  case FZ_NODE_LITERAL:
    out[0] = fz_emit_literal(e, n);
    for (int l = 1; l < lanes; l++)
      out[l] = out[0];
    break;
  case FZ_NODE_IOTA: {
    LLVMValueRef index = iota_index(k, c, n);
    for (int l = 0; l < lanes; l++) {
      LLVMValueRef il = index;
      if (l > 0 && n->coeff[inner] == 0) {
        out[l] = out[0];
        continue;
      }
      if (l > 0)
        il = LLVMBuildAdd(
            e->b, index,
            LLVMConstInt(e->t_i64, (unsigned long long)(n->coeff[inner] * l),
                         1),
            "");
      out[l] = fz_emit_iota(e, n, il);
    }
    break;
  }
  case FZ_NODE_OP: {
    int distinct = uniform_operands(p, table, n, lanes) ? 1 : lanes;
    for (int l = 0; l < lanes; l++) {
      if (l >= distinct) {
        out[l] = out[0];
        continue;
      }
      LLVMValueRef args[3];
      for (int j = 0; j < n->num_operands; j++)
        args[j] = fz_slot_val(p, table, n->operands[j])[l];
      out[l] = fz_emit_op_node(e, n, args);
      if (!out[l])
        break;
    }
    break;
  }
  }
  if (e->failed || !out[0])
    return fz_emit_fail(e, FZ_ERR_INTERNAL, "node n%d produced no value", i),
           false;
  return true;
}

bool fz_kernel_store_node(fz_kernel *k, int i, LLVMValueRef *table,
                          LLVMValueRef off, int lanes) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  const fz_plan_node *n = &p->nodes[i];
  const fz_plan_access *a = &p->accesses[n->access];
  fz_dtype src = p->nodes[n->operands[0]].dtype;
  LLVMValueRef *v = fz_slot_val(p, table, n->operands[0]);
  LLVMValueRef vals[FZ_LOWER_MAX_LANES];
  for (int l = 0; l < lanes; l++)
    if (!(vals[l] = fz_emit_convert(e, v[l], src, a->dtype)))
      return false;
  return fz_emit_store(e, a, k->acc[n->access].ptr, off,
                       fz_kernel_inner_stride(k, n->access), lanes, vals) &&
         !e->failed;
}

/* ---- entry point --------------------------------------------------------- */

static void init_types(fz_emit *e) {
  LLVMContextRef c = e->ctx;
  e->t_void = LLVMVoidTypeInContext(c);
  e->t_i1 = LLVMInt1TypeInContext(c);
  e->t_i8 = LLVMInt8TypeInContext(c);
  e->t_i32 = LLVMInt32TypeInContext(c);
  e->t_i64 = LLVMInt64TypeInContext(c);
  e->t_half = LLVMHalfTypeInContext(c);
  e->t_bf16 = LLVMBFloatTypeInContext(c);
  e->t_f32 = LLVMFloatTypeInContext(c);
  e->t_f64 = LLVMDoubleTypeInContext(c);
  e->t_ptr = LLVMPointerTypeInContext(c, 1);
  e->t_sptr = LLVMPointerTypeInContext(c, 3);
  e->t_idx = e->plan->index32 ? e->t_i32 : e->t_i64;
}

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
  read_params(k);
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
  init_types(e);
  e->mod = LLVMModuleCreateWithNameInContext(plan->kernel_name, ctx);
  LLVMSetTarget(e->mod, NVPTX_TRIPLE);
  LLVMSetDataLayout(e->mod, NVPTX_DATALAYOUT);
  e->b = LLVMCreateBuilderInContext(ctx);
  k.acc = calloc((size_t)plan->num_accesses, sizeof *k.acc);
  bool ok = k.acc != NULL;
  if (!ok)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  ok = ok && declare_kernel(&k) && emit_body(&k);
  free(k.acc);
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
