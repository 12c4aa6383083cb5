/* persistent_common.c - what the persistent skeleton's files share
 * (persistent.c, persistent_columns.c, persistent_prefetch.c): allocas in
 * the entry block, and the offset bases of a row.
 */
#include "persistent.h"

LLVMValueRef fz_pers_entry_alloca(pers *s, LLVMTypeRef t, const char *name) {
  fz_emit *e = &s->k->e;
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(e->fn);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(e->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(b, first);
  else
    LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef a = LLVMBuildAlloca(b, t, name);
  LLVMDisposeBuilder(b);
  return a;
}

static void row_coords(pers *s, LLVMValueRef row, LLVMValueRef *coord) {
  fz_kernel *k = s->k;
  LLVMValueRef per_row = s->nk > 0 ? k->ext[s->kaxes[s->nk - 1]] : NULL;
  for (int d = 0; d < s->p->rank; d++)
    coord[d] = fz_kernel_idx(k, 0);
  fz_kernel_decompose(k, row, s->kaxes, s->nk, 1, per_row, coord);
}

void fz_pers_row_bases(pers *s, LLVMValueRef row, LLVMValueRef *base) {
  LLVMValueRef coord[FZ_MAX_RANK];
  row_coords(s, row, coord);
  for (int a = 0; a < s->p->num_accesses; a++)
    base[a] =
        fz_kernel_offset(s->k, a, s->k->access[a].offset, coord, s->kmask);
}
