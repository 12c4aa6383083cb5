/* kernel.c - the kernel every skeleton fills, and the index math its
 * body is built from:
 *
 *   declare the kernel with plan.h's parameters and NVPTX annotations;
 *   read the parameters in the entry block, narrowed to 32 bits under
 *   index32;
 *   an index decomposed into coordinates (div/mod over runtime extents,
 *   the innermost axis counted in groups of `vector` lanes), and
 *   coordinates into an access's element offset (offset + sum_k c[k] *
 *   stride[k], with an innermost stride of 1 or 0 treated as structure).
 */
#include "emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------- */

LLVMValueRef fz_kernel_idx(fz_kernel *k, int64_t v) {
  return LLVMConstInt(k->e.t_idx, (unsigned long long)v, 1);
}

LLVMValueRef fz_kernel_sreg(fz_kernel *k, const char *name) {
  LLVMValueRef v = fz_emit_sreg(&k->e, name);
  return v ? LLVMBuildZExt(k->e.b, v, k->e.t_idx, "") : NULL;
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
  bool reduction =
      p->kind == FZ_PLAN_INNER_REDUCTION || p->kind == FZ_PLAN_OUTER_REDUCTION;
  return (reduction && p->split > 1) || fz_plan_has_grid_columns(p);
}

/* Pointers (one per access), then groups, extents, per access its
 * strides and offset, and the symbols' values: plan.h's order, which the
 * launcher also follows; a split reduction and an inner-outer persistent
 * plan add the workspace and counters pointers. */
bool fz_kernel_declare(fz_kernel *k) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  int scalars = fz_plan_num_scalar_params(p);
  int n = p->num_accesses + scalars + (has_workspace(p) ? 2 : 0) +
          (fz_plan_has_gather(p) ? 1 : 0);
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
void fz_kernel_read_params(fz_kernel *k) {
  const fz_plan *p = k->e.plan;
  int i = 0, inner = p->rank - 1;
  for (int a = 0; a < p->num_accesses; a++) {
    k->access[a].ptr = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->access[a].ptr, "a%d", a);
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
      k->access[a].stride[d] = index_param(k, i++, used, "a%d.stride%d", a, d);
    }
    k->access[a].offset = index_param(k, i++, true, "a%d.offset", a, 0);
  }
  /* a value the fusion computes with, not an index: always i64 */
  for (int s = 0; s < p->num_symbols; s++) {
    k->symbol[s] = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->symbol[s], "s%d", s);
  }
  for (int a = 0; a < p->num_accesses; a++) {
    if (!p->accesses[a].gathered)
      continue;
    k->access[a].gather_stride =
        index_param(k, i++, true, "a%d.gather_stride", a, 0);
    k->access[a].gather_extent = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->access[a].gather_extent, "a%d.gather_extent", a);
    k->access[a].gather_site = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->access[a].gather_site, "a%d.site", a);
  }
  if (has_workspace(p)) {
    k->workspace = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->workspace, "workspace");
    k->counters = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->counters, "counters");
  }
  if (fz_plan_has_gather(p)) {
    k->error_word = LLVMGetParam(k->e.fn, (unsigned)i++);
    fz_set_name(k->error_word, "error_word");
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
      term = LLVMBuildNSWMul(b, c[d], k->access[a].stride[d], "");
    off = LLVMBuildNSWAdd(b, off, term, "");
  }
  return off;
}

LLVMValueRef fz_kernel_inner_stride(fz_kernel *k, int a) {
  const fz_plan *p = k->e.plan;
  int inner = p->rank - 1;
  if (p->accesses[a].strides[inner] == 1)
    return fz_kernel_idx(k, 1);
  return k->access[a].stride[inner];
}
