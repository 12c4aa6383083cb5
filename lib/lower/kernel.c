/* kernel.c - a pointwise plan -> one NVPTX kernel, as a script:
 *
 *   check the plan (lowering never trusts a malformed one to LLVM);
 *   declare the kernel with plan.h's parameters and NVPTX annotations;
 *   entry:  read the parameters, narrow them to 32 bits under index32,
 *           gid = ctaid.x * ntid.x + tid.x, grid stride = nctaid.x * ntid.x;
 *   loop:   for (base = gid; base < groups; base += stride * unroll)
 *             slot u handles group g_u = base + u * stride:
 *             1. every slot's index math and loads (an inactive slot,
 *                g_u >= groups, reads the last group instead, so loads
 *                never fault and need no branch),
 *             2. every slot's compute,
 *             3. every slot's stores, each slot but the first behind
 *                `if (g_u < groups)`.
 *
 * Loads before compute before stores keeps unroll * vector elements of
 * every input in flight per thread, which is what a memory-bound kernel
 * needs. Group g -> coordinates: the innermost axis holds ext/vector groups
 * per row, so c[inner] = (g % gpr) * vector and the rest of g is split over
 * the outer extents by div/mod (none for rank 1). An access's element
 * offset is offset + sum_k c[k] * stride[k]; lanes add lane * stride along
 * the innermost axis (or are one vector, or one splat: memory.c).
 *
 * Values live in a table indexed by (slot, node, lane). A node whose
 * operands are the same value in every lane (splats, literals) is computed
 * once per slot and shared by its lanes.
 */
#include "emit.h"
#include "lower/lower.h"

#include <llvm-c/Analysis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lanes per group at most: 16 bytes of i8 is the widest group a scheduler
 * asks for; a few times that leaves room without unbounded stack use. */
enum { FZ_LOWER_MAX_LANES = 64 };

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
    return FZ_OK;
  }
  case FZ_NODE_LITERAL:
  case FZ_NODE_IOTA:
    return FZ_OK;
  case FZ_NODE_REDUCE:
    return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                        "lower: node n%d: a reduction in a pointwise plan", i);
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
    return FZ_OK;
  }
  }
  return fz_error_set(err, FZ_ERR_INTERNAL, "lower: node n%d has no kind", i);
}

static fz_status check_plan(const fz_plan *p, fz_error *err) {
  if (!p)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "lower: no plan");
  if (p->kind != FZ_PLAN_POINTWISE)
    return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                        "lower: plan kind %d is not lowered yet", (int)p->kind);
  if (!p->kernel_name || !p->kernel_name[0])
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: plan has no kernel name");
  if (p->rank < 1 || p->rank > FZ_MAX_RANK)
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: plan rank %d", p->rank);
  if (p->vector < 1 || p->vector > FZ_LOWER_MAX_LANES || p->unroll < 1 ||
      p->unroll > 64 || p->threads < 1 || p->threads > 1024)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "lower: launch shape vector %d unroll %d threads %d",
                        p->vector, p->unroll, p->threads);
  if (p->num_accesses < 1 || (p->num_nodes > 0 && !p->nodes) || !p->accesses)
    return fz_error_set(err, FZ_ERR_INTERNAL, "lower: plan touches no memory");
  fz_status st;
  for (int i = 0; i < p->num_accesses; i++)
    if ((st = check_access(p, i, err)))
      return st;
  for (int i = 0; i < p->num_nodes; i++)
    if ((st = check_node(p, i, err)))
      return st;
  return FZ_OK;
}

/* ---- the kernel's state -------------------------------------------------- */

typedef struct access_params {
  LLVMValueRef ptr;
  LLVMValueRef stride[FZ_MAX_RANK]; /* index type */
  LLVMValueRef offset;
} access_params;

typedef struct kernel {
  fz_emit e;
  access_params *acc;                         /* per access */
  LLVMValueRef groups, ext[FZ_MAX_RANK], gpr; /* index type */
  LLVMValueRef *vals;                         /* [unroll][num_nodes][vector] */
  LLVMValueRef (*coord)[FZ_MAX_RANK];         /* [unroll][rank] */
  LLVMValueRef *active;                       /* [unroll] */
} kernel;

static LLVMValueRef *val_slot(kernel *k, int u, int node) {
  const fz_plan *p = k->e.plan;
  return &k->vals[((size_t)u * (size_t)p->num_nodes + (size_t)node) *
                  (size_t)p->vector];
}

static LLVMValueRef idx_const(kernel *k, int64_t v) {
  return LLVMConstInt(k->e.t_idx, (unsigned long long)v, 1);
}

static void set_name(LLVMValueRef v, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void set_name(LLVMValueRef v, const char *fmt, ...) {
  char name[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  LLVMSetValueName2(v, name, strlen(name));
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

/* Pointers (one per access), then groups, extents, and per access its
 * strides and offset: plan.h's order, which the launcher also follows. */
static bool declare_kernel(kernel *k) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  int n = p->num_accesses + 1 + p->rank + p->num_accesses * (p->rank + 1);
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
    params[i] = i < p->num_accesses ? e->t_ptr : e->t_i64;
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
  annotate(e, "kernel", 1);
  annotate(e, "maxntidx", p->threads);
  return true;
}

/* ---- entry: parameters and thread indexing ------------------------------- */

/* Parameter i, named, in the index type; NULL when the kernel never reads
 * it (no dead truncation). */
static LLVMValueRef index_param(kernel *k, int i, bool used, const char *fmt,
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

static void read_params(kernel *k) {
  const fz_plan *p = k->e.plan;
  int i = 0, inner = p->rank - 1;
  for (int a = 0; a < p->num_accesses; a++) {
    k->acc[a].ptr = LLVMGetParam(k->e.fn, (unsigned)i++);
    set_name(k->acc[a].ptr, "a%d", a);
  }
  k->groups = index_param(k, i++, true, "groups", 0, 0);
  for (int d = 0; d < p->rank; d++)
    k->ext[d] = index_param(k, i++, d > 0, "ext%d", d, 0);
  for (int a = 0; a < p->num_accesses; a++) {
    for (int d = 0; d < p->rank; d++) {
      /* an innermost stride of 0 or 1 is structure, not a parameter */
      int64_t s = p->accesses[a].strides[d];
      bool used = d < inner || (s != 0 && s != 1);
      k->acc[a].stride[d] = index_param(k, i++, used, "a%d.stride%d", a, d);
    }
    k->acc[a].offset = index_param(k, i++, true, "a%d.offset", a, 0);
  }
  if (p->rank > 1) {
    /* groups per row of the innermost axis */
    k->gpr =
        LLVMBuildUDiv(k->e.b, k->ext[inner], idx_const(k, p->vector), "gpr");
  }
}

static LLVMValueRef sreg(kernel *k, const char *name) {
  LLVMValueRef v = fz_emit_sreg(&k->e, name);
  return v ? LLVMBuildZExt(k->e.b, v, k->e.t_idx, "") : NULL;
}

/* ---- step 1: index math and loads ---------------------------------------- */

static void coordinates(kernel *k, int u, LLVMValueRef g) {
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = k->e.plan;
  LLVMValueRef *c = k->coord[u];
  int inner = p->rank - 1;
  LLVMValueRef vec = idx_const(k, p->vector);
  if (p->rank == 1) {
    c[0] = LLVMBuildNUWMul(b, g, vec, "");
    return;
  }
  c[inner] = LLVMBuildNUWMul(b, LLVMBuildURem(b, g, k->gpr, ""), vec, "");
  LLVMValueRef q = LLVMBuildUDiv(b, g, k->gpr, "");
  for (int d = inner - 1; d > 0; d--) {
    c[d] = LLVMBuildURem(b, q, k->ext[d], "");
    q = LLVMBuildUDiv(b, q, k->ext[d], "");
  }
  c[0] = q; /* g < groups, so no remainder is needed */
  for (int d = 0; d < p->rank; d++)
    set_name(c[d], "c%d.u%d", d, u);
}

/* Element offset of lane 0 of access a in slot u. The innermost term of a
 * vector access uses stride 1 and a splat's none: those strides are part
 * of the kernel's structure (fz_plan_key), the others are parameters. */
static LLVMValueRef access_offset(kernel *k, int u, int a) {
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = k->e.plan;
  const fz_plan_access *pa = &p->accesses[a];
  int inner = p->rank - 1;
  LLVMValueRef off = k->acc[a].offset;
  for (int d = 0; d < p->rank; d++) {
    LLVMValueRef term;
    if (d == inner && pa->strides[d] == 0)
      continue;
    if (d == inner && pa->strides[d] == 1)
      term = k->coord[u][d];
    else
      term = LLVMBuildNSWMul(b, k->coord[u][d], k->acc[a].stride[d], "");
    off = LLVMBuildNSWAdd(b, off, term, "");
  }
  set_name(off, "off.a%d.u%d", a, u);
  return off;
}

static LLVMValueRef inner_stride(kernel *k, int a) {
  const fz_plan *p = k->e.plan;
  int inner = p->rank - 1;
  if (p->accesses[a].strides[inner] == 1)
    return idx_const(k, 1);
  return k->acc[a].stride[inner];
}

/* sum_k coeff[k] * c[k] as i64, the iota index of lane 0 */
static LLVMValueRef iota_index(kernel *k, int u, const fz_plan_node *n) {
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = k->e.plan;
  LLVMValueRef sum = LLVMConstInt(k->e.t_i64, 0, 0);
  for (int d = 0; d < p->rank; d++) {
    if (n->coeff[d] == 0)
      continue;
    LLVMValueRef c = LLVMBuildZExt(b, k->coord[u][d], k->e.t_i64, "");
    sum = LLVMBuildAdd(
        b, sum,
        LLVMBuildMul(
            b, c, LLVMConstInt(k->e.t_i64, (unsigned long long)n->coeff[d], 1),
            ""),
        "");
  }
  return sum;
}

static bool emit_slot_loads(kernel *k, int u, LLVMValueRef base,
                            LLVMValueRef stride, LLVMValueRef **offs) {
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  LLVMValueRef g = base;
  if (u > 0) {
    LLVMValueRef ahead =
        u == 1 ? stride : LLVMBuildMul(b, stride, idx_const(k, u), "");
    g = LLVMBuildAdd(b, base, ahead, "");
    set_name(g, "g.u%d", u);
    k->active[u] = LLVMBuildICmp(b, LLVMIntULT, g, k->groups, "");
    set_name(k->active[u], "active.u%d", u);
    /* an inactive slot re-reads the last group: valid memory, no branch */
    LLVMValueRef last = LLVMBuildSub(b, k->groups, idx_const(k, 1), "");
    g = LLVMBuildSelect(b, k->active[u], g, last, "");
  }
  coordinates(k, u, g);
  for (int a = 0; a < p->num_accesses; a++)
    offs[u][a] = access_offset(k, u, a);
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_LOAD)
      continue;
    LLVMValueRef *out = val_slot(k, u, i);
    const fz_plan_access *a = &p->accesses[n->access];
    if (!fz_emit_load(e, a, k->acc[n->access].ptr, offs[u][n->access],
                      inner_stride(k, n->access), p->vector, out))
      return false;
    for (int l = 0; l < p->vector; l++)
      if (!(out[l] = fz_emit_convert(e, out[l], a->dtype, n->dtype)))
        return false;
  }
  return !e->failed;
}

/* ---- step 2: compute ----------------------------------------------------- */

static bool uniform_operands(kernel *k, int u, const fz_plan_node *n) {
  int lanes = k->e.plan->vector;
  for (int j = 0; j < n->num_operands; j++) {
    LLVMValueRef *v = val_slot(k, u, n->operands[j]);
    for (int l = 1; l < lanes; l++)
      if (v[l] != v[0])
        return false;
  }
  return true;
}

static bool emit_slot_compute(kernel *k, int u) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  int lanes = p->vector, inner = p->rank - 1;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    LLVMValueRef *out = val_slot(k, u, i);
    switch (n->kind) {
    case FZ_NODE_LOAD:
    case FZ_NODE_STORE:
      continue;
    case FZ_NODE_REDUCE: /* check_node refused it */
      return fz_emit_fail(e, FZ_ERR_INTERNAL, "node n%d reduces", i), false;
    case FZ_NODE_LITERAL:
      out[0] = fz_emit_literal(e, n);
      for (int l = 1; l < lanes; l++)
        out[l] = out[0];
      break;
    case FZ_NODE_IOTA: {
      LLVMValueRef index = iota_index(k, u, n);
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
      int distinct = uniform_operands(k, u, n) ? 1 : lanes;
      for (int l = 0; l < lanes; l++) {
        if (l >= distinct) {
          out[l] = out[0];
          continue;
        }
        LLVMValueRef args[3];
        for (int j = 0; j < n->num_operands; j++)
          args[j] = val_slot(k, u, n->operands[j])[l];
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
  }
  return true;
}

/* ---- step 3: stores ------------------------------------------------------ */

static bool emit_slot_stores(kernel *k, int u, LLVMValueRef *offs) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  LLVMBasicBlockRef next = NULL;
  if (u > 0) {
    char name[32];
    snprintf(name, sizeof name, "store.u%d", u);
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->ctx, e->fn, name);
    snprintf(name, sizeof name, "stored.u%d", u);
    next = LLVMAppendBasicBlockInContext(e->ctx, e->fn, name);
    LLVMBuildCondBr(e->b, k->active[u], then, next);
    LLVMPositionBuilderAtEnd(e->b, then);
  }
  LLVMValueRef lanes[FZ_LOWER_MAX_LANES];
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_STORE)
      continue;
    const fz_plan_access *a = &p->accesses[n->access];
    fz_dtype src = p->nodes[n->operands[0]].dtype;
    LLVMValueRef *v = val_slot(k, u, n->operands[0]);
    for (int l = 0; l < p->vector; l++)
      if (!(lanes[l] = fz_emit_convert(e, v[l], src, a->dtype)))
        return false;
    if (!fz_emit_store(e, a, k->acc[n->access].ptr, offs[n->access],
                       inner_stride(k, n->access), p->vector, lanes))
      return false;
  }
  if (next) {
    LLVMBuildBr(e->b, next);
    LLVMPositionBuilderAtEnd(e->b, next);
  }
  return !e->failed;
}

/* ---- the loop ------------------------------------------------------------ */

static bool emit_body(kernel *k) {
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  LLVMBasicBlockRef entry =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "entry");
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "loop");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "body");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "exit");

  LLVMPositionBuilderAtEnd(b, entry);
  read_params(k);
  LLVMValueRef tid = sreg(k, "tid.x"), ntid = sreg(k, "ntid.x"),
               ctaid = sreg(k, "ctaid.x"), nctaid = sreg(k, "nctaid.x");
  if (!tid || !ntid || !ctaid || !nctaid)
    return false;
  LLVMValueRef gid =
      LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, ctaid, ntid, ""), tid, "gid");
  LLVMValueRef stride = LLVMBuildNUWMul(b, nctaid, ntid, "grid_stride");
  LLVMValueRef step =
      p->unroll == 1
          ? stride
          : LLVMBuildNUWMul(b, stride, idx_const(k, p->unroll), "loop_step");
  LLVMBuildBr(b, head);

  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef base = LLVMBuildPhi(b, e->t_idx, "base");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, base, k->groups, ""), body,
                  exit);

  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef **offs = calloc((size_t)p->unroll, sizeof *offs);
  LLVMValueRef *offs_data =
      calloc((size_t)p->unroll * (size_t)p->num_accesses, sizeof *offs_data);
  bool ok = offs && offs_data;
  if (!ok)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int u = 0; ok && u < p->unroll; u++)
    offs[u] = offs_data + (size_t)u * (size_t)p->num_accesses;
  for (int u = 0; ok && u < p->unroll; u++)
    ok = emit_slot_loads(k, u, base, stride, offs);
  for (int u = 0; ok && u < p->unroll; u++)
    ok = emit_slot_compute(k, u);
  for (int u = 0; ok && u < p->unroll; u++)
    ok = emit_slot_stores(k, u, offs[u]);
  free(offs);
  free(offs_data);
  if (!ok)
    return false;
  LLVMValueRef next = LLVMBuildAdd(b, base, step, "base.next");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, head);
  LLVMValueRef in[2] = {gid, next};
  LLVMBasicBlockRef from[2] = {entry, latch};
  LLVMAddIncoming(base, in, from, 2);

  LLVMPositionBuilderAtEnd(b, exit);
  LLVMBuildRetVoid(b);
  return true;
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

  kernel k = {.e = {.plan = plan, .ctx = ctx, .err = err}};
  fz_emit *e = &k.e;
  init_types(e);
  e->mod = LLVMModuleCreateWithNameInContext(plan->kernel_name, ctx);
  LLVMSetTarget(e->mod, NVPTX_TRIPLE);
  LLVMSetDataLayout(e->mod, NVPTX_DATALAYOUT);
  e->b = LLVMCreateBuilderInContext(ctx);
  size_t nvals =
      (size_t)plan->unroll * (size_t)plan->num_nodes * (size_t)plan->vector;
  k.acc = calloc((size_t)plan->num_accesses, sizeof *k.acc);
  k.vals = calloc(nvals ? nvals : 1, sizeof *k.vals);
  k.coord = calloc((size_t)plan->unroll, sizeof *k.coord);
  k.active = calloc((size_t)plan->unroll, sizeof *k.active);
  bool ok = k.acc && k.vals && k.coord && k.active;
  if (!ok)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  ok = ok && declare_kernel(&k) && emit_body(&k);
  free(k.acc);
  free(k.vals);
  free(k.coord);
  free(k.active);
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
