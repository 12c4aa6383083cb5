/* loop.c - the one counted loop every kernel body uses (grid-stride loops
 * over groups, tiles and rows, loops over blocks' partials):
 *
 *   pre:   br head
 *   head:  iv = phi [start, pre], [iv + step, latch]
 *          br (iv + ahead < end) ? body : done
 *   body:  ... (the caller's code; its last block is the latch)
 *   done:
 *
 * The induction variable is named `name`, its blocks name.head, name.body
 * and name.done, so that tests can find a loop's body in the IR.
 */
#include "emit.h"

#include <stdio.h>

LLVMValueRef fz_emit_loop_begin(fz_emit *e, fz_loop *l, LLVMValueRef start,
                                LLVMValueRef ahead, LLVMValueRef end,
                                const char *name) {
  LLVMBuilderRef b = e->b;
  char label[64];
  l->pre = LLVMGetInsertBlock(b);
  l->start = start;
  snprintf(label, sizeof label, "%s.head", name);
  l->head = LLVMAppendBasicBlockInContext(e->ctx, e->fn, label);
  snprintf(label, sizeof label, "%s.body", name);
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->ctx, e->fn, label);
  snprintf(label, sizeof label, "%s.done", name);
  l->exit = LLVMAppendBasicBlockInContext(e->ctx, e->fn, label);
  LLVMBuildBr(b, l->head);
  LLVMPositionBuilderAtEnd(b, l->head);
  l->iv = LLVMBuildPhi(b, LLVMTypeOf(start), name);
  LLVMValueRef at = ahead ? LLVMBuildAdd(b, l->iv, ahead, "") : l->iv;
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, at, end, ""), body, l->exit);
  LLVMPositionBuilderAtEnd(b, body);
  return l->iv;
}

void fz_emit_loop_end(fz_emit *e, fz_loop *l, LLVMValueRef step) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef next = LLVMBuildAdd(b, l->iv, step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, l->head);
  LLVMValueRef in[2] = {l->start, next};
  LLVMBasicBlockRef from[2] = {l->pre, latch};
  LLVMAddIncoming(l->iv, in, from, 2);
  LLVMPositionBuilderAtEnd(b, l->exit);
}
