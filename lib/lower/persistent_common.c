/* persistent_common.c - what the persistent skeleton's files share
 * (persistent.c, persistent_columns.c, persistent_prefetch.c,
 * persistent_held.c, persistent_cluster.c, persistent_column_cluster.c):
 * allocas in the entry block, the offset bases of a row, the trap of a
 * launch the kernel was not built for, the cp.async copy of a thread's
 * group, the blocks an SM keeps, told to ptxas, and column partials moved
 * V lanes at a time.
 */
#include "persistent.h"

#include <stdio.h>
#include <string.h>

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

bool fz_pers_trap_if(pers *s, LLVMValueRef bad, const char *name) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  char label[64];
  snprintf(label, sizeof label, "bad.%s", name);
  LLVMBasicBlockRef trap = LLVMAppendBasicBlockInContext(e->ctx, e->fn, label);
  snprintf(label, sizeof label, "%s.ok", name);
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(e->ctx, e->fn, label);
  LLVMBuildCondBr(b, bad, trap, ok);
  LLVMPositionBuilderAtEnd(b, trap);
  fz_emit_intrinsic(e, "llvm.trap", NULL, 0, NULL, 0);
  LLVMBuildUnreachable(b);
  LLVMPositionBuilderAtEnd(b, ok);
  return !e->failed;
}

bool fz_pers_copy_async(pers *s, LLVMValueRef dst, LLVMValueRef src,
                        size_t bytes) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  int piece = bytes >= 16 ? 16 : (int)bytes;
  char name[48];
  snprintf(name, sizeof name, "llvm.nvvm.cp.async.%s.shared.global.%d",
           piece == 16 ? "cg" : "ca", piece);
  for (size_t at = 0; at < bytes; at += (size_t)piece) {
    LLVMValueRef step = fz_emit_i32(e, at);
    LLVMValueRef args[2] = {
        at ? LLVMBuildInBoundsGEP2(b, e->t_i8, dst, &step, 1, "") : dst,
        at ? LLVMBuildInBoundsGEP2(b, e->t_i8, src, &step, 1, "") : src};
    if (!fz_emit_intrinsic(e, name, NULL, 0, args, 2))
      return false;
  }
  return !e->failed;
}

void fz_pers_blocks_an_sm(pers *s, int n) {
  fz_emit *e = &s->k->e;
  const char *key = "minctasm";
  LLVMMetadataRef md[3] = {
      LLVMValueAsMetadata(e->fn),
      LLVMMDStringInContext2(e->ctx, key, strlen(key)),
      LLVMValueAsMetadata(LLVMConstInt(e->t_i32, (unsigned long long)n, 0))};
  LLVMAddNamedMetadataOperand(
      e->mod, "nvvm.annotations",
      LLVMMetadataAsValue(e->ctx, LLVMMDNodeInContext2(e->ctx, md, 3)));
}

fz_dtype fz_pers_col_acc(const pers *s, int j) {
  return fz_reduce_acc_dtype(s->p->nodes[s->colnode[j]].dtype);
}

/* Lanes per vector instruction for `size`-byte elements. */
static int chunk_of(int lanes, size_t size) {
  int c = (int)(16 / size);
  return c < lanes ? c : lanes;
}

void fz_pers_store_lanes(fz_emit *e, LLVMTypeRef t, size_t size,
                         LLVMValueRef at, const LLVMValueRef *v, int n) {
  int c = chunk_of(n, size);
  for (int l0 = 0; l0 < n; l0 += c) {
    LLVMValueRef off = fz_emit_i64(e, l0);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(e->b, t, at, &off, 1, "");
    LLVMValueRef x = v[l0];
    if (c > 1) {
      x = LLVMGetPoison(LLVMVectorType(t, (unsigned)c));
      for (int i = 0; i < c; i++)
        x = LLVMBuildInsertElement(e->b, x, v[l0 + i], fz_emit_i32(e, (unsigned)i),
                                   "");
    }
    LLVMSetAlignment(LLVMBuildStore(e->b, x, p), (unsigned)(c * (int)size));
  }
}

void fz_pers_load_lanes(fz_emit *e, LLVMTypeRef t, size_t size,
                        LLVMValueRef at, LLVMValueRef *v, int n) {
  int c = chunk_of(n, size);
  for (int l0 = 0; l0 < n; l0 += c) {
    LLVMValueRef off = fz_emit_i64(e, l0);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(e->b, t, at, &off, 1, "");
    LLVMTypeRef vt = c > 1 ? LLVMVectorType(t, (unsigned)c) : t;
    LLVMValueRef x = LLVMBuildLoad2(e->b, vt, p, "");
    LLVMSetAlignment(x, (unsigned)(c * (int)size));
    for (int i = 0; i < c; i++)
      v[l0 + i] =
          c > 1 ? LLVMBuildExtractElement(e->b, x, fz_emit_i32(e, (unsigned)i), "")
                : x;
  }
}
