/* persistent_held.c - an outer persistent kernel whose held rows live in
 * shared memory (plan->held_shared: batch norm with more rows a thread
 * than its registers hold; lib/sched/persistent_held.c says when).
 *
 * What persistent.c's body_held_shared does with the pieces here:
 *   load:   for each held row inside the space (a loop, the row index
 *           computed in each trip), cp.async of the thread's groups of
 *           every held input into the row's slots: every copy in flight
 *           at once, no register holds them; then the thread waits for
 *           its own copies. No block barrier: a thread reads only the
 *           slots it wrote;
 *   round:  the same loop again; each trip starts from the entry's
 *           values and the column results of the rounds before, reads
 *           its row's held inputs back from the slots and recomputes what
 *           the round needs (x - mean again in the last round, instead of
 *           keeping it), accumulates the column partials and stores.
 * Nothing is kept per held row between rounds but the slots, so the
 * registers hold one row at a time, whatever the number of rows.
 *
 * Layout (dynamic shared memory, 16-byte aligned): held access (plan
 * order) -> held row t -> group -> the block's threads -> this thread's V
 * lanes (V * element size bytes), as a prefetch buffer is laid out per
 * row: a warp's copies and reads cover whole bank rows.
 */
#include "persistent.h"

static size_t slot_bytes(const pers *s, int a) {
  return (size_t)s->V * fz_dtype_size(s->p->accesses[a].dtype);
}

/* The bytes of one held row of access a, and those before access a. */
static size_t row_bytes(const pers *s, int a) {
  return (size_t)s->G * (size_t)s->p->threads * slot_bytes(s, a);
}

static size_t access_base(const pers *s, int a) {
  size_t at = 0;
  for (int j = 0; j < a; j++)
    if (fz_plan_held_in_shared(s->p, j))
      at += (size_t)s->held * row_bytes(s, j);
  return at;
}

/* This thread's slot of access a, group g, held row t (index type). */
static LLVMValueRef slot(pers *s, int a, int g, LLVMValueRef t) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  size_t sb = slot_bytes(s, a);
  size_t fixed = access_base(s, a) + (size_t)g * (size_t)s->p->threads * sb;
  LLVMValueRef t32 =
      LLVMTypeOf(t) == e->t_i32 ? t : LLVMBuildTrunc(b, t, e->t_i32, "");
  LLVMValueRef off = LLVMBuildAdd(
      b, LLVMBuildMul(b, t32, fz_emit_i32(e, row_bytes(s, a)), ""),
      LLVMBuildAdd(b, fz_emit_i32(e, fixed),
                   LLVMBuildMul(b, s->bs.tid, fz_emit_i32(e, sb), ""), ""),
      "");
  return LLVMBuildInBoundsGEP2(b, e->t_i8, s->held_smem, &off, 1, "held.slot");
}

void fz_pers_held_declare(pers *s) {
  fz_emit *e = &s->k->e;
  /* the rows fill the SM's shared memory: one block an SM. Left to
   * itself, ptxas kept batch norm backward's 12 rows of dy and x
   * ([12544, 256]) to 64 registers and spilled 16 bytes; told, it took
   * 72 and spilled nothing. */
  fz_pers_blocks_an_sm(s, 1);
  LLVMTypeRef t = LLVMArrayType2(e->t_i8, 0);
  s->held_smem = LLVMAddGlobalInAddressSpace(e->mod, t, "fz_held", 3);
  LLVMSetLinkage(s->held_smem, LLVMExternalLinkage);
  LLVMSetAlignment(s->held_smem, 16);
}

bool fz_pers_held_copy(pers *s, LLVMValueRef t) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int A = p->num_accesses;
  for (int a = 0; a < A; a++) {
    if (!fz_plan_held_in_shared(p, a))
      continue;
    fz_dtype d = p->accesses[a].dtype;
    for (int g = 0; g < s->G; g++) {
      LLVMValueRef off = LLVMBuildNSWAdd(
          b, s->base[a], s->roff[(size_t)g * (size_t)A + (size_t)a], "");
      LLVMValueRef src = LLVMBuildInBoundsGEP2(b, fz_emit_mem_type(e, d),
                                               k->access[a].ptr, &off, 1, "");
      if (!fz_pers_copy_async(s, slot(s, a, g, t), src, slot_bytes(s, a)))
        return false;
    }
  }
  return !e->failed;
}

void fz_pers_held_wait(pers *s) {
  fz_emit_intrinsic(&s->k->e, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL,
                    0);
}

bool fz_pers_held_load(pers *s, int i, int g) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  const fz_plan *p = s->p;
  const fz_plan_node *n = &p->nodes[i];
  const fz_plan_access *a = &p->accesses[n->access];
  if (!s->held_t)
    return fz_emit_fail_at(e, i, FZ_ERR_INTERNAL,
                           "held row n%d read outside a row's trip", i),
           false;
  LLVMValueRef from = slot(s, n->access, g, s->held_t);
  LLVMValueRef *out = pers_full(s, g, i);
  if (!fz_emit_load(e, a, from, fz_kernel_idx(k, 0), fz_kernel_idx(k, 1), s->V,
                    out))
    return false;
  for (int l = 0; l < s->V; l++)
    if (!(out[l] = fz_emit_convert(e, out[l], a->dtype, n->dtype)))
      return false;
  return !e->failed;
}
