/* intrinsics.c - the calls lowering makes into LLVM and libdevice.
 *
 * Four kinds, behind one small interface so the rest of lib/lower never
 * spells an intrinsic ID: NVPTX special registers (thread and block
 * indices), NVPTX synchronisation (bar.sync, membar.gl, shfl.sync),
 * target-independent llvm.* intrinsics (llvm.maximum, llvm.fabs,
 * llvm.fptosi.sat...), looked up by name because the C API has no enum of
 * intrinsic IDs, and libdevice's __nv_* functions, declared here as
 * external and defined later when lib/nvptx links libdevice.10.bc.
 */
#include "emit.h"

#include <stdio.h>
#include <string.h>

LLVMValueRef fz_emit_intrinsic(fz_emit *e, const char *name,
                               LLVMTypeRef *overloads, int num_overloads,
                               LLVMValueRef *args, int num_args) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (id == 0)
    return fz_emit_fail(e, FZ_ERR_INTERNAL, "LLVM has no intrinsic %s", name);
  LLVMValueRef fn =
      LLVMGetIntrinsicDeclaration(e->mod, id, overloads, (size_t)num_overloads);
  LLVMTypeRef fty =
      LLVMIntrinsicGetType(e->ctx, id, overloads, (size_t)num_overloads);
  return LLVMBuildCall2(e->b, fty, fn, args, (unsigned)num_args, "");
}

LLVMValueRef fz_emit_intrinsic1(fz_emit *e, const char *name, LLVMValueRef a) {
  LLVMTypeRef t = LLVMTypeOf(a);
  return fz_emit_intrinsic(e, name, &t, 1, &a, 1);
}

LLVMValueRef fz_emit_intrinsic2(fz_emit *e, const char *name, LLVMValueRef a,
                                LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef args[2] = {a, b};
  return fz_emit_intrinsic(e, name, &t, 1, args, 2);
}

LLVMValueRef fz_emit_sreg(fz_emit *e, const char *name) {
  char full[64];
  snprintf(full, sizeof full, "llvm.nvvm.read.ptx.sreg.%s", name);
  return fz_emit_intrinsic(e, full, NULL, 0, NULL, 0);
}

LLVMValueRef fz_emit_libdevice(fz_emit *e, const char *base, LLVMValueRef *args,
                               int num_args) {
  LLVMTypeRef t = LLVMTypeOf(args[0]);
  if (t != e->t_f32 && t != e->t_f64)
    return fz_emit_fail(e, FZ_ERR_INTERNAL,
                        "libdevice %s called on a non-float value", base);
  char name[64];
  snprintf(name, sizeof name, "__nv_%s%s", base, t == e->t_f32 ? "f" : "");
  LLVMTypeRef params[3] = {t, t, t};
  LLVMTypeRef fty = LLVMFunctionType(t, params, (unsigned)num_args, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(e->mod, name);
  if (!fn) {
    fn = LLVMAddFunction(e->mod, name, fty);
    unsigned k = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(e->ctx, k, 0));
  }
  e->uses_libdevice = true;
  return LLVMBuildCall2(e->b, fty, fn, args, (unsigned)num_args, "");
}

/* ---- synchronisation ----------------------------------------------------- */

void fz_emit_barrier(fz_emit *e) {
  fz_emit_intrinsic(e, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

void fz_emit_fence_gpu(fz_emit *e) {
  fz_emit_intrinsic(e, "llvm.nvvm.membar.gl", NULL, 0, NULL, 0);
}

/* shfl.sync.bfly.b32 with c = 0x1f: the xor partner of every lane is in
 * its own warp, and offsets below a segment's width stay inside it. */
static LLVMValueRef shfl32(fz_emit *e, LLVMValueRef v, int offset,
                           unsigned mask) {
  bool f = LLVMTypeOf(v) == e->t_f32;
  LLVMValueRef args[4] = {LLVMConstInt(e->t_i32, mask, 0), v,
                          LLVMConstInt(e->t_i32, (unsigned long long)offset, 0),
                          LLVMConstInt(e->t_i32, 0x1f, 0)};
  return fz_emit_intrinsic(
      e, f ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32",
      NULL, 0, args, 4);
}

LLVMValueRef fz_emit_map_fields(fz_emit *e, LLVMValueRef v,
                                LLVMValueRef (*f)(fz_emit *, LLVMValueRef,
                                                  void *),
                                void *ctx) {
  unsigned n = LLVMCountStructElementTypes(LLVMTypeOf(v));
  for (unsigned i = 0; i < n && v; i++) {
    LLVMValueRef x = f(e, LLVMBuildExtractValue(e->b, v, i, ""), ctx);
    v = x ? LLVMBuildInsertValue(e->b, v, x, i, "") : NULL;
  }
  return v;
}

typedef struct bfly_args {
  int offset;
  unsigned mask;
} bfly_args;

static LLVMValueRef bfly_field(fz_emit *e, LLVMValueRef v, void *ctx) {
  const bfly_args *a = ctx;
  return fz_emit_shfl_bfly(e, v, a->offset, a->mask);
}

LLVMValueRef fz_emit_shfl_bfly(fz_emit *e, LLVMValueRef v, int offset,
                               unsigned mask) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) == LLVMStructTypeKind) {
    bfly_args a = {offset, mask};
    return fz_emit_map_fields(e, v, bfly_field, &a);
  }
  if (t == e->t_f32 || t == e->t_i32)
    return shfl32(e, v, offset, mask);
  if (LLVMGetTypeKind(t) == LLVMStructTypeKind) { /* a pair, by fields */
    LLVMValueRef r = LLVMGetUndef(t);
    for (unsigned f = 0; f < LLVMCountStructElementTypes(t) && r; f++) {
      LLVMValueRef x = fz_emit_shfl_bfly(
          e, LLVMBuildExtractValue(e->b, v, f, ""), offset, mask);
      r = x ? LLVMBuildInsertValue(e->b, r, x, f, "") : NULL;
    }
    return r;
  }
  if (t != e->t_f64 && t != e->t_i64)
    return fz_emit_fail(e, FZ_ERR_INTERNAL, "no shuffle for this type");
  LLVMBuilderRef b = e->b;
  LLVMValueRef bits = t == e->t_f64 ? LLVMBuildBitCast(b, v, e->t_i64, "") : v;
  LLVMValueRef lo = LLVMBuildTrunc(b, bits, e->t_i32, "");
  LLVMValueRef hi = LLVMBuildTrunc(
      b, LLVMBuildLShr(b, bits, LLVMConstInt(e->t_i64, 32, 0), ""), e->t_i32,
      "");
  lo = shfl32(e, lo, offset, mask);
  hi = shfl32(e, hi, offset, mask);
  if (!lo || !hi)
    return NULL;
  LLVMValueRef r =
      LLVMBuildOr(b, LLVMBuildZExt(b, lo, e->t_i64, ""),
                  LLVMBuildShl(b, LLVMBuildZExt(b, hi, e->t_i64, ""),
                               LLVMConstInt(e->t_i64, 32, 0), ""),
                  "");
  return t == e->t_f64 ? LLVMBuildBitCast(b, r, e->t_f64, "") : r;
}
