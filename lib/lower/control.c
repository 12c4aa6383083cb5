/* control.c - the two shapes of control flow kernel bodies are built from.
 *
 * The counted loop (grid-stride loops over groups, tiles and rows, loops
 * over blocks' partials):
 *
 *   pre:   br head
 *   head:  iv = phi [start, pre], [iv + step, latch]
 *          br (iv + ahead < end) ? body : done
 *   body:  ... (the caller's code; its last block is the latch)
 *   done:
 *
 * The induction variable is named `name`, its blocks name.head, name.body
 * and name.done, so that tests can find a loop's body in the IR.
 *
 * if (cond) { ... } without an else: the then-block `name` falls into the
 * merge block name.end, where a phi joins a value computed inside with
 * the one it replaces.
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
