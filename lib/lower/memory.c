/* memory.c - what a dtype looks like in memory and in registers, how one
 * becomes another, and the three shapes of a global access.
 *
 * Register forms are chosen so that the GPU computes what the interpreter
 * computes: f16 and bf16 live in float registers (PTX has little 16-bit
 * arithmetic below sm_90, and float holds every f16/bf16 exactly), bool is
 * i1 so that selects and branches need no compare. Conversions follow the
 * interpreter rule by rule; where LLVM's own lowering would round twice
 * (i32/i64 -> bf16 goes through f32 on sm_80) the value goes through f64
 * first, which holds every i32 exactly, and i64 is rounded to odd on its
 * way into f64 so that the final rounding is still the only one.
 *
 * Accesses: a vector access is one <w x T> load or store per 16 bytes (the
 * widest global instruction); 1-byte types, and 2-byte types in chunks
 * under 16 bytes, move as i32 words, because the NVPTX backend splits
 * <16 x i8> into byte loads and O3 turns <4 x bfloat> into two loads. A
 * splat is one scalar load per group; anything else a scalar per lane.
 */
#include "emit.h"

#include <math.h>

fz_access_shape fz_access_shape_of(const fz_plan *plan,
                                   const fz_plan_access *a) {
  int64_t inner = a->strides[plan->rank - 1];
  if (inner == 0)
    return FZ_ACCESS_SPLAT;
  if (a->vector > 1)
    return FZ_ACCESS_VECTOR;
  return FZ_ACCESS_STRIDED;
}

LLVMTypeRef fz_emit_reg_type(fz_emit *e, fz_dtype d) {
  switch (d) {
  case FZ_F64:
    return e->t_f64;
  case FZ_F32:
  case FZ_F16:
  case FZ_BF16:
    return e->t_f32;
  case FZ_I64:
    return e->t_i64;
  case FZ_I32:
    return e->t_i32;
  case FZ_I8:
    return e->t_i8;
  default:
    return e->t_i1;
  }
}

LLVMTypeRef fz_emit_mem_type(fz_emit *e, fz_dtype d) {
  switch (d) {
  case FZ_F16:
    return e->t_half;
  case FZ_BF16:
    return e->t_bf16;
  case FZ_BOOL:
    return e->t_i8;
  default:
    return fz_emit_reg_type(e, d);
  }
}

/* ---- conversions --------------------------------------------------------- */

static bool is_half(fz_dtype d) { return d == FZ_F16 || d == FZ_BF16; }

static LLVMTypeRef half_type(fz_emit *e, fz_dtype d) {
  return d == FZ_F16 ? e->t_half : e->t_bf16;
}

/* The nearest f16/bf16 to a float or double value, back in a float
 * register: one rounding, from whatever precision v has. */
static LLVMValueRef round_to_half(fz_emit *e, LLVMValueRef v, fz_dtype d) {
  LLVMValueRef h = LLVMBuildFPTrunc(e->b, v, half_type(e, d), "");
  return LLVMBuildFPExt(e->b, h, e->t_f32, "");
}

/* |x| rounded to 53 bits toward zero with the lost bits ORed into the last
 * one ("round to odd"): a later rounding to at most 51 bits is then the
 * same as rounding x directly. */
static double round_to_odd_const(int64_t x) {
  uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
  int s = 0;
  while ((u >> s) >= (UINT64_C(1) << 53))
    s++;
  uint64_t kept = u >> s;
  if (s && (u & ((UINT64_C(1) << s) - 1)))
    kept |= 1;
  double m = ldexp((double)kept, s);
  return x < 0 ? -m : m;
}

static LLVMValueRef i64_to_double_odd(fz_emit *e, LLVMValueRef v) {
  if (LLVMIsAConstantInt(v))
    return LLVMConstReal(e->t_f64,
                         round_to_odd_const(LLVMConstIntGetSExtValue(v)));
  LLVMValueRef d = fz_emit_intrinsic(e, "llvm.nvvm.ll2d.rz", NULL, 0, &v, 1);
  if (!d)
    return NULL;
  LLVMTypeRef sat[2] = {e->t_i64, e->t_f64};
  LLVMValueRef back = fz_emit_intrinsic(e, "llvm.fptosi.sat", sat, 2, &d, 1);
  if (!back)
    return NULL;
  LLVMValueRef inexact = LLVMBuildICmp(e->b, LLVMIntNE, back, v, "");
  LLVMValueRef bits = LLVMBuildBitCast(e->b, d, e->t_i64, "");
  bits =
      LLVMBuildOr(e->b, bits, LLVMBuildZExt(e->b, inexact, e->t_i64, ""), "");
  return LLVMBuildBitCast(e->b, bits, e->t_f64, "");
}

static LLVMValueRef int_to_float(fz_emit *e, LLVMValueRef v, fz_dtype from,
                                 fz_dtype to) {
  if (to == FZ_F64 || to == FZ_F32)
    return LLVMBuildSIToFP(e->b, v, fz_emit_reg_type(e, to), "");
  /* f16/bf16: i8 is exact in float and in both formats */
  if (from == FZ_I8)
    return LLVMBuildSIToFP(e->b, v, e->t_f32, "");
  LLVMValueRef d = from == FZ_I64 ? i64_to_double_odd(e, v)
                                  : LLVMBuildSIToFP(e->b, v, e->t_f64, "");
  return d ? round_to_half(e, d, to) : NULL;
}

static LLVMValueRef float_to_float(fz_emit *e, LLVMValueRef v, fz_dtype from,
                                   fz_dtype to) {
  if (to == FZ_F64)
    return from == FZ_F64 ? v : LLVMBuildFPExt(e->b, v, e->t_f64, "");
  if (is_half(to))
    return round_to_half(e, v, to);
  /* to f32: f16 and bf16 values are already f32 values */
  return from == FZ_F64 ? LLVMBuildFPTrunc(e->b, v, e->t_f32, "") : v;
}

LLVMValueRef fz_emit_convert(fz_emit *e, LLVMValueRef v, fz_dtype from,
                             fz_dtype to) {
  if (!v)
    return NULL;
  if (from == to)
    return v;
  LLVMTypeRef rt = fz_emit_reg_type(e, to);
  if (from == FZ_BOOL) {
    if (fz_dtype_is_float(to))
      return LLVMBuildUIToFP(e->b, v, rt, "");
    return LLVMBuildZExt(e->b, v, rt, "");
  }
  if (fz_dtype_is_integer(from)) {
    if (to == FZ_BOOL)
      return LLVMBuildICmp(e->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)),
                           "");
    if (fz_dtype_is_integer(to))
      return LLVMBuildIntCast2(e->b, v, rt, 1, "");
    return int_to_float(e, v, from, to);
  }
  /* from a float dtype */
  if (to == FZ_BOOL)
    return LLVMBuildFCmp(e->b, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)),
                         "");
  if (fz_dtype_is_integer(to)) {
    LLVMTypeRef sat[2] = {rt, LLVMTypeOf(v)};
    return fz_emit_intrinsic(e, "llvm.fptosi.sat", sat, 2, &v, 1);
  }
  return float_to_float(e, v, from, to);
}

LLVMValueRef fz_emit_scalar_const(fz_emit *e, fz_dtype d, fz_scalar s) {
  if (fz_dtype_is_float(d))
    return fz_emit_convert(e, LLVMConstReal(e->t_f64, s.f), FZ_F64, d);
  if (d == FZ_BOOL)
    return LLVMConstInt(e->t_i1, s.i != 0, 0);
  return fz_emit_convert(e, LLVMConstInt(e->t_i64, (unsigned long long)s.i, 1),
                         FZ_I64, d);
}

/* ---- memory <-> register ------------------------------------------------- */

static LLVMValueRef from_memory(fz_emit *e, LLVMValueRef v, fz_dtype d) {
  if (d == FZ_BF16 && e->bf16_by_bits) {
    LLVMValueRef bits = LLVMBuildBitCast(e->b, v, LLVMInt16TypeInContext(e->ctx), "");
    bits = LLVMBuildZExt(e->b, bits, e->t_i32, "");
    bits = LLVMBuildShl(e->b, bits, LLVMConstInt(e->t_i32, 16, 0), "");
    return LLVMBuildBitCast(e->b, bits, e->t_f32, "");
  }
  if (is_half(d))
    return LLVMBuildFPExt(e->b, v, e->t_f32, "");
  if (d == FZ_BOOL)
    return LLVMBuildICmp(e->b, LLVMIntNE, v, LLVMConstNull(e->t_i8), "");
  return v;
}

/* The register already holds a value of dtype d, so the truncation of a
 * f16/bf16 is exact. */
static LLVMValueRef to_memory(fz_emit *e, LLVMValueRef v, fz_dtype d) {
  if (is_half(d))
    return LLVMBuildFPTrunc(e->b, v, half_type(e, d), "");
  if (d == FZ_BOOL)
    return LLVMBuildZExt(e->b, v, e->t_i8, "");
  return v;
}

static LLVMValueRef element_ptr(fz_emit *e, fz_dtype d, LLVMValueRef ptr,
                                LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(e->b, fz_emit_mem_type(e, d), ptr, &off, 1, "");
}

static LLVMValueRef lane_offset(fz_emit *e, LLVMValueRef off,
                                LLVMValueRef stride, int lane) {
  if (lane == 0)
    return off;
  LLVMValueRef l = LLVMConstInt(e->t_idx, (unsigned long long)lane, 0);
  return LLVMBuildNSWAdd(e->b, off, LLVMBuildNSWMul(e->b, l, stride, ""), "");
}

/* Lanes per vector instruction. */
static int chunk_lanes(const fz_plan_access *a) {
  int size = (int)fz_dtype_size(a->dtype);
  int w = a->vector;
  return w * size > 16 ? 16 / size : w;
}

/* A chunk of 1- or 2-byte elements of 4 to 16 bytes moves as i32 words
 * (<n x i32>, or i32), lane i in bits [i*bits, (i+1)*bits) of its word,
 * little-endian as the GPU is. The lanes are cut out with shifts rather
 * than a bitcast, which InstCombine would fold back into a <4 x bfloat>
 * load that O3 then scalarizes and the backend rebuilds as two loads. */
static int chunk_words(fz_dtype d, int w) {
  int size = (int)fz_dtype_size(d), bytes = w * size;
  /* 16 bytes of f16/bf16 survive as <8 x half>, which also lets LLVM use
   * f16x2 arithmetic; narrower chunks are what gets split */
  if (size == 2 && bytes == 16)
    return 0;
  return size < 4 && bytes >= 4 ? bytes / 4 : 0;
}

static LLVMTypeRef chunk_type(fz_emit *e, fz_dtype d, int w) {
  int words = chunk_words(d, w);
  if (words)
    return words == 1 ? e->t_i32 : LLVMVectorType(e->t_i32, (unsigned)words);
  return LLVMVectorType(fz_emit_mem_type(e, d), (unsigned)w);
}

static LLVMValueRef lane_index(fz_emit *e, int i) {
  return LLVMConstInt(e->t_i32, (unsigned long long)i, 0);
}

/* Lane i of a loaded chunk, in memory form. */
static LLVMValueRef chunk_get(fz_emit *e, LLVMValueRef chunk, fz_dtype d, int w,
                              int i) {
  int words = chunk_words(d, w);
  if (!words)
    return LLVMBuildExtractElement(e->b, chunk, lane_index(e, i), "");
  int bits = 8 * (int)fz_dtype_size(d), per_word = 32 / bits;
  LLVMValueRef word =
      words == 1 ? chunk
                 : LLVMBuildExtractElement(e->b, chunk,
                                           lane_index(e, i / per_word), "");
  int shift = (i % per_word) * bits;
  if (shift)
    word = LLVMBuildLShr(
        e->b, word, LLVMConstInt(e->t_i32, (unsigned long long)shift, 0), "");
  LLVMValueRef v = LLVMBuildTrunc(
      e->b, word, LLVMIntTypeInContext(e->ctx, (unsigned)bits), "");
  if (is_half(d))
    v = LLVMBuildBitCast(e->b, v, half_type(e, d), "");
  return v;
}

/* A chunk from lanes vals[0..w) in memory form. */
static LLVMValueRef chunk_pack(fz_emit *e, const LLVMValueRef *vals, fz_dtype d,
                               int w) {
  int words = chunk_words(d, w);
  LLVMTypeRef ct = chunk_type(e, d, w);
  if (!words) {
    LLVMValueRef v = LLVMGetPoison(ct);
    for (int i = 0; i < w; i++)
      v = LLVMBuildInsertElement(e->b, v, vals[i], lane_index(e, i), "");
    return v;
  }
  int bits = 8 * (int)fz_dtype_size(d), per_word = 32 / bits;
  LLVMTypeRef it = LLVMIntTypeInContext(e->ctx, (unsigned)bits);
  LLVMValueRef v = words == 1 ? NULL : LLVMGetPoison(ct);
  for (int k = 0; k < words; k++) {
    LLVMValueRef word = NULL;
    for (int i = 0; i < per_word; i++) {
      LLVMValueRef x = vals[k * per_word + i];
      if (is_half(d))
        x = LLVMBuildBitCast(e->b, x, it, "");
      x = LLVMBuildZExt(e->b, x, e->t_i32, "");
      if (i)
        x = LLVMBuildShl(
            e->b, x, LLVMConstInt(e->t_i32, (unsigned long long)(i * bits), 0),
            "");
      word = word ? LLVMBuildOr(e->b, word, x, "") : x;
    }
    if (words == 1)
      return word;
    v = LLVMBuildInsertElement(e->b, v, word, lane_index(e, k), "");
  }
  return v;
}

static bool check_lanes(fz_emit *e, const fz_plan_access *a, int lanes) {
  if (a->vector < 1 || a->vector > lanes || lanes % a->vector != 0) {
    fz_emit_fail(e, FZ_ERR_INTERNAL,
                 "access vector %d does not divide the plan's %d lanes",
                 a->vector, lanes);
    return false;
  }
  return true;
}

static LLVMValueRef scalar_load(fz_emit *e, fz_dtype d, LLVMValueRef ptr,
                                LLVMValueRef off) {
  LLVMValueRef p = element_ptr(e, d, ptr, off);
  LLVMValueRef v = LLVMBuildLoad2(e->b, fz_emit_mem_type(e, d), p, "");
  LLVMSetAlignment(v, (unsigned)fz_dtype_size(d));
  return from_memory(e, v, d);
}

static void scalar_store(fz_emit *e, fz_dtype d, LLVMValueRef ptr,
                         LLVMValueRef off, LLVMValueRef v) {
  LLVMValueRef p = element_ptr(e, d, ptr, off);
  LLVMValueRef s = LLVMBuildStore(e->b, to_memory(e, v, d), p);
  LLVMSetAlignment(s, (unsigned)fz_dtype_size(d));
}

/* A window of a resize op: each lane's offset clamped into the tensor
 * (plan.h), loaded on its own. Offsets are signed here: a lane left of
 * the window has a negative one. */
static void clamped_load(fz_emit *e, const fz_plan_access *a, LLVMValueRef ptr,
                         LLVMValueRef off, LLVMValueRef inner_stride,
                         int lanes, LLVMValueRef *out) {
  LLVMValueRef zero = LLVMConstInt(e->t_idx, 0, 0);
  LLVMValueRef last =
      LLVMConstInt(e->t_idx, (unsigned long long)(a->clamp - 1), 0);
  for (int l = 0; l < lanes; l++) {
    LLVMValueRef o = inner_stride ? lane_offset(e, off, inner_stride, l) : off;
    o = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, o, zero, ""),
                        zero, o, "");
    o = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSGT, o, last, ""),
                        last, o, "");
    out[l] = scalar_load(e, a->dtype, ptr, o);
  }
}

bool fz_emit_load(fz_emit *e, const fz_plan_access *a, LLVMValueRef ptr,
                  LLVMValueRef off, LLVMValueRef inner_stride, int lanes,
                  LLVMValueRef *out) {
  fz_dtype d = a->dtype;
  if (a->clamp > 0) {
    clamped_load(e, a, ptr, off, inner_stride, lanes, out);
    return true;
  }
  switch (fz_access_shape_of(e->plan, a)) {
  case FZ_ACCESS_SPLAT: {
    LLVMValueRef v = scalar_load(e, d, ptr, off);
    for (int l = 0; l < lanes; l++)
      out[l] = v;
    return true;
  }
  case FZ_ACCESS_STRIDED:
    for (int l = 0; l < lanes; l++)
      out[l] = scalar_load(e, d, ptr, lane_offset(e, off, inner_stride, l));
    return true;
  case FZ_ACCESS_VECTOR:
    break;
  }
  if (!check_lanes(e, a, lanes))
    return false;
  int w = chunk_lanes(a);
  LLVMTypeRef ct = chunk_type(e, d, w);
  LLVMValueRef one = LLVMConstInt(e->t_idx, 1, 0);
  for (int j = 0; j < lanes; j += w) {
    LLVMValueRef p = element_ptr(e, d, ptr, lane_offset(e, off, one, j));
    LLVMValueRef v = LLVMBuildLoad2(e->b, ct, p, "");
    LLVMSetAlignment(v, (unsigned)w * (unsigned)fz_dtype_size(d));
    for (int i = 0; i < w; i++)
      out[j + i] = from_memory(e, chunk_get(e, v, d, w, i), d);
  }
  return true;
}

bool fz_emit_store(fz_emit *e, const fz_plan_access *a, LLVMValueRef ptr,
                   LLVMValueRef off, LLVMValueRef inner_stride, int lanes,
                   const LLVMValueRef *vals) {
  fz_dtype d = a->dtype;
  switch (fz_access_shape_of(e->plan, a)) {
  case FZ_ACCESS_SPLAT:
    /* every lane names the same element: the last one wins, as in a
     * sequential loop */
    scalar_store(e, d, ptr, off, vals[lanes - 1]);
    return true;
  case FZ_ACCESS_STRIDED:
    for (int l = 0; l < lanes; l++)
      scalar_store(e, d, ptr, lane_offset(e, off, inner_stride, l), vals[l]);
    return true;
  case FZ_ACCESS_VECTOR:
    break;
  }
  if (!check_lanes(e, a, lanes))
    return false;
  int w = chunk_lanes(a);
  LLVMValueRef one = LLVMConstInt(e->t_idx, 1, 0);
  LLVMValueRef mem[16];
  for (int j = 0; j < lanes; j += w) {
    for (int i = 0; i < w; i++)
      mem[i] = to_memory(e, vals[j + i], d);
    LLVMValueRef v = chunk_pack(e, mem, d, w);
    LLVMValueRef p = element_ptr(e, d, ptr, lane_offset(e, off, one, j));
    LLVMValueRef s = LLVMBuildStore(e->b, v, p);
    LLVMSetAlignment(s, (unsigned)w * (unsigned)fz_dtype_size(d));
  }
  return true;
}
