/* gather.c - a GATHER node: each lane reads its gathered access at the
 * lane's coordinates with the gathered axis's coordinate taken from the
 * lane's index value (plan.h, fz_plan_access).
 *
 * An index outside [0, extent) (a negative one too: the compare is
 * unsigned) must not read outside the tensor and must not pass silently:
 * the lane reads at index 0 instead, and the first such lane of the
 * launch records its access's site and the index in the error word (a
 * compare-and-swap from 0 of word 0, then the index in word 1), which the
 * executor reads after the launch (lib/runtime). The branch is taken only
 * by bad lanes, so a correct index costs a compare and a select.
 */
#include "emit.h"

/* if (!in_range) { if (cas(word[0], 0, site) == 0) word[1] = index; } */
static void record_bad_index(fz_kernel *k, int a, LLVMValueRef in_range,
                             LLVMValueRef index) {
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  fz_if bad;
  fz_if_begin(e, &bad, LLVMBuildNot(b, in_range, ""), "gather.bad");
  LLVMValueRef zero = LLVMConstInt(e->t_i64, 0, 0);
  LLVMValueRef cas = LLVMBuildAtomicCmpXchg(
      b, k->error_word, zero, k->access[a].gather_site,
      LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef won = LLVMBuildExtractValue(b, cas, 1, "gather.first");
  fz_if first;
  fz_if_begin(e, &first, won, "gather.record");
  LLVMValueRef one = LLVMConstInt(e->t_i64, 1, 0);
  LLVMValueRef slot = LLVMBuildGEP2(b, e->t_i64, k->error_word, &one, 1, "");
  LLVMBuildStore(b, index, slot);
  fz_if_end(e, &first);
  fz_if_end(e, &bad);
}

bool fz_kernel_gather_node(fz_kernel *k, int i, LLVMValueRef *table,
                           const LLVMValueRef *c, int lanes) {
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  const fz_plan_node *n = &p->nodes[i];
  int a = n->access, inner = p->rank - 1;
  const fz_plan_access *pa = &p->accesses[a];
  const fz_plan_node *in = &p->nodes[n->operands[0]];
  LLVMValueRef *index = fz_slot_val(p, table, n->operands[0]);
  LLVMValueRef *out = fz_slot_val(p, table, i);
  unsigned all = (1u << p->rank) - 1;
  LLVMValueRef base =
      fz_kernel_offset(k, a, k->access[a].offset, c, all);
  LLVMValueRef step = fz_kernel_inner_stride(k, a);
  for (int l = 0; l < lanes; l++) {
    LLVMValueRef x = index[l];
    if (in->dtype != FZ_I64)
      x = LLVMBuildSExt(b, x, e->t_i64, "");
    LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, x,
                                    k->access[a].gather_extent, "gather.ok");
    record_bad_index(k, a, ok, x);
    LLVMValueRef safe =
        LLVMBuildSelect(b, ok, x, LLVMConstInt(e->t_i64, 0, 0), "");
    if (e->t_idx != e->t_i64)
      safe = LLVMBuildTrunc(b, safe, e->t_idx, "");
    LLVMValueRef off = base;
    if (l > 0 && pa->strides[inner] != 0)
      off = LLVMBuildNSWAdd(
          b, off, LLVMBuildNSWMul(b, step, fz_kernel_idx(k, l), ""), "");
    off = LLVMBuildNSWAdd(
        b, off, LLVMBuildNSWMul(b, safe, k->access[a].gather_stride, ""), "");
    LLVMValueRef v;
    if (!fz_emit_load(e, pa, k->access[a].ptr, off, step, 1, &v))
      return false;
    if (!(out[l] = fz_emit_convert(e, v, pa->dtype, n->dtype)))
      return false;
  }
  return !e->failed;
}
