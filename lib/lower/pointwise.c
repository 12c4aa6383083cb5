/* pointwise.c - a pointwise plan's kernel body, as a script:
 *
 *   entry:  gid = ctaid.x * ntid.x + tid.x, grid stride = nctaid.x * ntid.x;
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
 * the outer extents by div/mod (none for rank 1); kernel.c turns
 * coordinates into offsets, slot.c evaluates the nodes.
 */
#include "emit.h"
#include "skeleton.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct pointwise {
  fz_kernel *k;
  LLVMValueRef gpr;                   /* groups per row of the innermost axis */
  LLVMValueRef *vals;                 /* [unroll][num_nodes][vector] */
  LLVMValueRef (*coord)[FZ_MAX_RANK]; /* [unroll][rank] */
  LLVMValueRef *active;               /* [unroll] */
  LLVMValueRef *offs;                 /* [unroll][num_accesses] */
} pointwise;

static LLVMValueRef *slot_table(pointwise *pw, int u) {
  const fz_plan *p = pw->k->e.plan;
  return pw->vals + (size_t)u * (size_t)p->num_nodes * (size_t)p->vector;
}

static LLVMValueRef *slot_offs(pointwise *pw, int u) {
  return pw->offs + (size_t)u * (size_t)pw->k->e.plan->num_accesses;
}

/* ---- step 1: index math and loads ---------------------------------------- */

static bool emit_slot_loads(pointwise *pw, int u, LLVMValueRef base,
                            LLVMValueRef stride) {
  fz_kernel *k = pw->k;
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = k->e.plan;
  LLVMValueRef g = base;
  if (u > 0) {
    LLVMValueRef ahead =
        u == 1 ? stride : LLVMBuildMul(b, stride, fz_kernel_idx(k, u), "");
    g = LLVMBuildAdd(b, base, ahead, "");
    fz_set_name(g, "g.u%d", u);
    pw->active[u] = LLVMBuildICmp(b, LLVMIntULT, g, k->groups, "");
    fz_set_name(pw->active[u], "active.u%d", u);
    /* an inactive slot re-reads the last group: valid memory, no branch */
    LLVMValueRef last = LLVMBuildSub(b, k->groups, fz_kernel_idx(k, 1), "");
    g = LLVMBuildSelect(b, pw->active[u], g, last, "");
  }
  int axes[FZ_MAX_RANK];
  for (int d = 0; d < p->rank; d++)
    axes[d] = d;
  LLVMValueRef *c = pw->coord[u];
  fz_kernel_decompose(k, g, axes, p->rank, p->vector, pw->gpr, c);
  for (int d = 0; d < p->rank; d++)
    fz_set_name(c[d], "c%d.u%d", d, u);
  LLVMValueRef *offs = slot_offs(pw, u);
  unsigned all = (1u << p->rank) - 1;
  for (int a = 0; a < p->num_accesses; a++) {
    offs[a] = fz_kernel_offset(k, a, k->access[a].offset, c, all);
    fz_set_name(offs[a], "off.a%d.u%d", a, u);
  }
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_LOAD &&
        !fz_kernel_load_node(k, i, slot_table(pw, u), offs[p->nodes[i].access],
                             p->vector))
      return false;
  return !k->e.failed;
}

/* ---- step 2: compute ----------------------------------------------------- */

static bool emit_slot_compute(pointwise *pw, int u) {
  const fz_plan *p = pw->k->e.plan;
  for (int i = 0; i < p->num_nodes; i++) {
    fz_node_kind kind = p->nodes[i].kind;
    if (kind == FZ_NODE_LOAD || kind == FZ_NODE_STORE)
      continue;
    if (!fz_kernel_value_node(pw->k, i, slot_table(pw, u), pw->coord[u],
                              p->vector))
      return false;
  }
  return true;
}

/* ---- step 3: stores ------------------------------------------------------ */

static bool emit_slot_stores(pointwise *pw, int u) {
  fz_emit *e = &pw->k->e;
  const fz_plan *p = e->plan;
  LLVMBasicBlockRef next = NULL;
  if (u > 0) {
    char name[32];
    snprintf(name, sizeof name, "store.u%d", u);
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->ctx, e->fn, name);
    snprintf(name, sizeof name, "stored.u%d", u);
    next = LLVMAppendBasicBlockInContext(e->ctx, e->fn, name);
    LLVMBuildCondBr(e->b, pw->active[u], then, next);
    LLVMPositionBuilderAtEnd(e->b, then);
  }
  LLVMValueRef *offs = slot_offs(pw, u);
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_STORE &&
        !fz_kernel_store_node(pw->k, i, slot_table(pw, u),
                              offs[p->nodes[i].access], p->vector))
      return false;
  if (next) {
    LLVMBuildBr(e->b, next);
    LLVMPositionBuilderAtEnd(e->b, next);
  }
  return !e->failed;
}

/* ---- the loop ------------------------------------------------------------ */

static bool emit_loop(pointwise *pw) {
  fz_kernel *k = pw->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;

  if (p->rank > 1) {
    pw->gpr = LLVMBuildUDiv(b, k->ext[p->rank - 1], fz_kernel_idx(k, p->vector),
                            "gpr");
  }
  LLVMValueRef tid = fz_kernel_sreg(k, "tid.x"),
               ntid = fz_kernel_sreg(k, "ntid.x"),
               ctaid = fz_kernel_sreg(k, "ctaid.x"),
               nctaid = fz_kernel_sreg(k, "nctaid.x");
  if (!tid || !ntid || !ctaid || !nctaid)
    return false;
  LLVMValueRef gid =
      LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, ctaid, ntid, ""), tid, "gid");
  LLVMValueRef stride = LLVMBuildNUWMul(b, nctaid, ntid, "grid_stride");
  LLVMValueRef step =
      p->unroll == 1 ? stride
                     : LLVMBuildNUWMul(b, stride, fz_kernel_idx(k, p->unroll),
                                       "loop_step");
  fz_loop loop;
  LLVMValueRef base =
      fz_emit_loop_begin(e, &loop, gid, NULL, k->groups, "base");
  bool ok = true;
  for (int u = 0; ok && u < p->unroll; u++)
    ok = emit_slot_loads(pw, u, base, stride);
  for (int u = 0; ok && u < p->unroll; u++)
    ok = emit_slot_compute(pw, u);
  for (int u = 0; ok && u < p->unroll; u++)
    ok = emit_slot_stores(pw, u);
  if (!ok)
    return false;
  fz_emit_loop_end(e, &loop, step);
  LLVMBuildRetVoid(b);
  return true;
}

bool fz_emit_pointwise(fz_kernel *k) {
  const fz_plan *p = k->e.plan;
  size_t u = (size_t)p->unroll;
  size_t nvals = u * (size_t)p->num_nodes * (size_t)p->vector;
  pointwise pw = {.k = k};
  pw.vals = calloc(nvals ? nvals : 1, sizeof *pw.vals);
  pw.coord = calloc(u, sizeof *pw.coord);
  pw.active = calloc(u, sizeof *pw.active);
  pw.offs = calloc(u * (size_t)p->num_accesses, sizeof *pw.offs);
  bool ok = pw.vals && pw.coord && pw.active && pw.offs;
  if (!ok)
    fz_emit_fail(&k->e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  ok = ok && emit_loop(&pw);
  free(pw.vals);
  free(pw.coord);
  free(pw.active);
  free(pw.offs);
  return ok;
}
