/* legalize.c - what LLVM 19's NVPTX back end cannot select on an older
 * architecture, rewritten right before code generation.
 *
 * llvm.maximum and llvm.minimum on bf16 (amax, amin, max, min, relu and
 * clamp of bf16 values) have an instruction only from sm_80 on
 * (max.NaN.bf16); on sm_70 and sm_75 instruction selection has no
 * expansion for them and aborts the process. There each such call
 * becomes the same intrinsic on f32 between conversions, which is exact:
 * every bf16 is an f32, and the result is one of the operands or NaN.
 * The optimiser narrows that f32 form straight back to bf16, so this runs
 * after it, on the module about to be emitted.
 */
#include "nvptx/nvptx.h"

#include "fz/ir.h"

#include <stdlib.h>

/* The first sm with bf16 max.NaN / min.NaN. */
#define BF16_MIN_MAX_SM 80

static bool is_bf16(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind)
    t = LLVMGetElementType(t);
  return LLVMGetTypeKind(t) == LLVMBFloatTypeKind;
}

/* The f32 type of t's shape (a scalar or a fixed vector). */
static LLVMTypeRef widened(LLVMTypeRef t) {
  LLVMTypeRef f32 = LLVMFloatTypeInContext(LLVMGetTypeContext(t));
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind
             ? LLVMVectorType(f32, LLVMGetVectorSize(t))
             : f32;
}

static void widen_call(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef call,
                       unsigned id) {
  LLVMTypeRef narrow = LLVMTypeOf(call);
  LLVMTypeRef wide = widened(narrow);
  LLVMPositionBuilderBefore(b, call);
  LLVMValueRef args[2] = {
      LLVMBuildFPExt(b, LLVMGetOperand(call, 0), wide, ""),
      LLVMBuildFPExt(b, LLVMGetOperand(call, 1), wide, "")};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(m, id, &wide, 1);
  LLVMTypeRef type =
      LLVMIntrinsicGetType(LLVMGetModuleContext(m), id, &wide, 1);
  LLVMValueRef r = LLVMBuildCall2(b, type, fn, args, 2, "");
  LLVMReplaceAllUsesWith(call, LLVMBuildFPTrunc(b, r, narrow, ""));
  LLVMInstructionEraseFromParent(call);
}

/* Every call of the declaration fn (an intrinsic: only called, never
 * taken as a value), collected first because rewriting edits the list. */
static void widen_calls_of(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef fn,
                           unsigned id) {
  int n = 0;
  for (LLVMUseRef u = LLVMGetFirstUse(fn); u; u = LLVMGetNextUse(u))
    n++;
  LLVMValueRef *calls = malloc(sizeof *calls * (size_t)(n + 1));
  FZ_CHECK(calls != NULL);
  n = 0;
  for (LLVMUseRef u = LLVMGetFirstUse(fn); u; u = LLVMGetNextUse(u))
    calls[n++] = LLVMGetUser(u);
  for (int i = 0; i < n; i++)
    widen_call(m, b, calls[i], id);
  free(calls);
}

void fz_nvptx_legalize(LLVMModuleRef m, int sm) {
  if (sm >= BF16_MIN_MAX_SM)
    return;
  unsigned max_id = LLVMLookupIntrinsicID("llvm.maximum", 12);
  unsigned min_id = LLVMLookupIntrinsicID("llvm.minimum", 12);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn;
       fn = LLVMGetNextFunction(fn)) {
    unsigned id = LLVMGetIntrinsicID(fn);
    if ((id == max_id || id == min_id) &&
        is_bf16(LLVMGetReturnType(LLVMGlobalGetValueType(fn))))
      widen_calls_of(m, b, fn, id);
  }
  LLVMDisposeBuilder(b);
}
