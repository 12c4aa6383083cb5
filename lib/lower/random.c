/* random.c - a RANDOM node's lanes: Philox4x32-10 on 32-bit integers and
 * the maps from its words to uniform and normal values, the same
 * arithmetic as lib/ir/philox.c (the definition; docs/format.md states
 * the contract), so that rand matches the interpreter bit for bit.
 *
 * One Philox call feeds G = fz_philox_per_call elements. When the lanes
 * are G-aligned runs of consecutive elements (the caller knows: see
 * fz_emit_random), each call is made once for its G lanes; otherwise every
 * lane makes its own call and picks its words.
 */
#include "emit.h"

#include <math.h>

static LLVMValueRef lo32(fz_emit *e, LLVMValueRef v64) {
  return LLVMBuildTrunc(e->b, v64, e->t_i32, "");
}

static LLVMValueRef hi32(fz_emit *e, LLVMValueRef v64) {
  return LLVMBuildTrunc(e->b, LLVMBuildLShr(e->b, v64, fz_emit_i64(e, 32), ""),
                        e->t_i32, "");
}

/* The 64-bit product of two 32-bit words, as (hi, lo): mul.hi.u32 and
 * mul.lo (a 64-bit multiply of the zero-extended words would be
 * emulated). */
static void mulhilo(fz_emit *e, uint32_t m, LLVMValueRef x, LLVMValueRef *hi,
                    LLVMValueRef *lo) {
  LLVMValueRef args[2] = {x, fz_emit_i32(e, m)};
  *hi = fz_emit_intrinsic(e, "llvm.nvvm.mulhi.ui", NULL, 0, args, 2);
  *lo = LLVMBuildMul(e->b, x, fz_emit_i32(e, m), "");
}

/* Philox4x32-10 on the counter (q, offset) and the key seed, all i64. */
static void philox(fz_emit *e, LLVMValueRef q, LLVMValueRef offset,
                   LLVMValueRef seed, LLVMValueRef out[4]) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef x[4] = {lo32(e, q), hi32(e, q), lo32(e, offset),
                       hi32(e, offset)};
  LLVMValueRef k0 = lo32(e, seed), k1 = hi32(e, seed);
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 = LLVMBuildAdd(b, k0, fz_emit_i32(e, 0x9E3779B9u), "");
      k1 = LLVMBuildAdd(b, k1, fz_emit_i32(e, 0xBB67AE85u), "");
    }
    LLVMValueRef hi0, lo0, hi1, lo1;
    mulhilo(e, 0xD2511F53u, x[0], &hi0, &lo0);
    mulhilo(e, 0xCD9E8D57u, x[2], &hi1, &lo1);
    LLVMValueRef y0 = LLVMBuildXor(b, LLVMBuildXor(b, hi1, x[1], ""), k0, "");
    LLVMValueRef y2 = LLVMBuildXor(b, LLVMBuildXor(b, hi0, x[3], ""), k1, "");
    x[0] = y0;
    x[1] = lo1;
    x[2] = y2;
    x[3] = lo0;
  }
  for (int i = 0; i < 4; i++)
    out[i] = x[i];
}

/* uitofp(bits) * 2^-scale in type t: exact (bits has at most as many
 * significant bits as t's significand). */
static LLVMValueRef scaled(fz_emit *e, LLVMValueRef bits, LLVMTypeRef t,
                           int scale) {
  return LLVMBuildFMul(e->b, LLVMBuildUIToFP(e->b, bits, t, ""),
                       LLVMConstReal(t, ldexp(1.0, -scale)), "");
}

/* The top 53 bits of hi:lo, as i64. */
static LLVMValueRef bits53(fz_emit *e, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef v = LLVMBuildOr(
      b, LLVMBuildShl(b, LLVMBuildZExt(b, hi, e->t_i64, ""), fz_emit_i64(e, 32), ""),
      LLVMBuildZExt(b, lo, e->t_i64, ""), "");
  return LLVMBuildLShr(b, v, fz_emit_i64(e, 11), "");
}

/* sqrt(-2 log u1) * cos(2 pi u2) in type t (f32 or f64). */
static LLVMValueRef box_muller(fz_emit *e, LLVMTypeRef t, LLVMValueRef u1,
                               LLVMValueRef u2) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef l = fz_emit_libdevice(e, "log", &u1, 1);
  if (!l)
    return NULL;
  LLVMValueRef r = fz_emit_intrinsic1(
      e, "llvm.sqrt", LLVMBuildFMul(b, LLVMConstReal(t, -2.0), l, ""));
  /* 2 pi rounded to t, as philox.c rounds it */
  double two_pi = t == e->t_f32 ? (double)(float)FZ_PHILOX_TWO_PI
                                : FZ_PHILOX_TWO_PI;
  LLVMValueRef theta = LLVMBuildFMul(b, LLVMConstReal(t, two_pi), u2, "");
  LLVMValueRef c = fz_emit_libdevice(e, "cos", &theta, 1);
  return r && c ? LLVMBuildFMul(b, r, c, "") : NULL;
}

/* The value made from the words at w (fz_philox_from_words), in the
 * register form of n->dtype. */
static LLVMValueRef from_words(fz_emit *e, const fz_plan_node *n,
                               const LLVMValueRef *w) {
  LLVMBuilderRef b = e->b;
  if (n->dtype == FZ_F64) {
    LLVMValueRef x = bits53(e, w[0], w[1]);
    if (n->code == FZ_OP_RAND)
      return scaled(e, x, e->t_f64, 53);
    LLVMValueRef u1 =
        scaled(e, LLVMBuildAdd(b, x, fz_emit_i64(e, 1), ""), e->t_f64, 53);
    LLVMValueRef u2 = scaled(e, bits53(e, w[2], w[3]), e->t_f64, 53);
    return box_muller(e, e->t_f64, u1, u2);
  }
  LLVMValueRef v;
  if (n->code == FZ_OP_RAND) {
    int bits = fz_philox_uniform_bits(n->dtype);
    v = scaled(e, LLVMBuildLShr(b, w[0], fz_emit_i32(e, (uint32_t)(32 - bits)), ""),
               e->t_f32, bits);
  } else {
    LLVMValueRef a = LLVMBuildLShr(b, w[0], fz_emit_i32(e, 8), "");
    LLVMValueRef u1 =
        scaled(e, LLVMBuildAdd(b, a, fz_emit_i32(e, 1), ""), e->t_f32, 24);
    LLVMValueRef u2 =
        scaled(e, LLVMBuildLShr(b, w[1], fz_emit_i32(e, 8), ""), e->t_f32, 24);
    v = box_muller(e, e->t_f32, u1, u2);
  }
  return v ? fz_emit_convert(e, v, FZ_F32, n->dtype) : NULL;
}

bool fz_emit_random(fz_emit *e, const fz_plan_node *n, LLVMValueRef seed,
                    LLVMValueRef offset, LLVMValueRef index, int64_t step,
                    bool aligned, int lanes, LLVMValueRef *out) {
  LLVMBuilderRef b = e->b;
  int per_call = fz_philox_per_call(n->code, n->dtype);
  int words = 4 / per_call;
  LLVMValueRef w[4];
  if (aligned) { /* lanes l .. l + G - 1 share call index / G + l / G */
    LLVMValueRef q0 = LLVMBuildUDiv(b, index, fz_emit_i64(e, (uint64_t)per_call), "");
    for (int l = 0; l < lanes; l++) {
      if (l % per_call == 0)
        philox(e,
               LLVMBuildAdd(b, q0, fz_emit_i64(e, (uint64_t)(l / per_call)), ""),
               offset, seed, w);
      if (!(out[l] = from_words(e, n, w + (l % per_call) * words)))
        return false;
    }
    return !e->failed;
  }
  for (int l = 0; l < lanes; l++) {
    LLVMValueRef il = index;
    if (l > 0)
      il = LLVMBuildAdd(b, index, fz_emit_i64(e, (uint64_t)(step * l)), "");
    LLVMValueRef q = LLVMBuildUDiv(b, il, fz_emit_i64(e, (uint64_t)per_call), "");
    LLVMValueRef j = LLVMBuildURem(b, il, fz_emit_i64(e, (uint64_t)per_call), "");
    philox(e, q, offset, seed, w);
    /* the words of element j: w[j * words + t], chosen without memory */
    LLVMValueRef mine[4];
    for (int t = 0; t < words; t++) {
      mine[t] = w[t];
      for (int g = 1; g < per_call; g++)
        mine[t] = LLVMBuildSelect(
            b, LLVMBuildICmp(b, LLVMIntEQ, j, fz_emit_i64(e, (uint64_t)g), ""),
            w[g * words + t], mine[t], "");
    }
    if (!(out[l] = from_words(e, n, mine)))
      return false;
  }
  return !e->failed;
}
