/* test_lower.c - lib/lower: hand-built kernel plans to LLVM IR and PTX.
 *
 * The plans are written out by hand (no scheduler), one per situation the
 * lowering must get right: vector accesses, a bf16 input widened to f32, a
 * splat, a strided scalar access, every unary op, casts, every binary and
 * ternary op per dtype, and malformed plans. Each test checks that the
 * module verifies and that the LLVM IR has the skeleton the situation asks
 * for; the PTX (with libdevice) is checked for its memory instructions and
 * assembled with ptxas -arch=sm_90. Parts that need libdevice or ptxas
 * print a SKIP line when those are missing; they never pass silently.
 */
#include "lower_util.h"

static const int64_t EXT_2D[2] = {1024, 1024};
static const int64_t ROW_MAJOR[2] = {1024, 1};
static const int64_t COL_MAJOR[2] = {1, 1024};
static const int64_t ROW_SPLAT[2] = {1, 0}; /* one value per row */
static const int64_t FLAT[1] = {1};

/* ---- the kernel's shape -------------------------------------------------- */

/* out = a + b on [1024, 1024] f32, 4 lanes per group, 2 groups per trip */
static void build_add(tplan *t) {
  tp_init(t, 2, EXT_2D, 4, 2);
  int a = tp_access(t, false, FZ_F32, ROW_MAJOR, 4);
  int b = tp_access(t, false, FZ_F32, ROW_MAJOR, 4);
  int o = tp_access(t, true, FZ_F32, ROW_MAJOR, 4);
  int x = tp_load(t, a), y = tp_load(t, b);
  tp_store(t, o, tp_op(t, FZ_OP_ADD, FZ_F32, 2, x, y, 0));
}

START_TEST(f32_add_is_vectorized_and_unrolled) {
  tplan t;
  build_add(&t);
  lowered l = lower_ok(&t.p);
  ck_assert(!l.uses_libdevice);
  /* two inputs in two slots; one output in two slots */
  ck_assert_count(l.ir, "load <4 x float>", 4);
  ck_assert_count(l.ir, "store <4 x float>", 2);
  ck_assert_has(l.ir, "align 16");
  ck_assert_has(l.ir, "fadd float");
  ck_assert_has(l.ir, "define ptx_kernel void @fz_test_kernel(");
  ck_assert_has(l.ir, "ptr addrspace(1) noalias nocapture readonly %a0");
  ck_assert_has(l.ir, "ptr addrspace(1) noalias nocapture writeonly %a2");
  ck_assert_has(l.ir, "!\"maxntidx\", i32 256");
  ck_assert_has(l.ir, "!\"kernel\", i32 1");
  LLVMValueRef fn = LLVMGetNamedFunction(l.mod, "fz_test_kernel");
  ck_assert_ptr_nonnull(fn);
  ck_assert_int_eq((int)LLVMCountParams(fn), fz_plan_num_params(&t.p));
  /* index32: every i64 size parameter is narrowed once */
  ck_assert_has(l.ir, "trunc i64 %groups to i32");
  /* the second slot's stores are predicated, the first's are not */
  ck_assert_has(l.ir, "store.u1:");
  ck_assert(!has(l.ir, "store.u0:"));

  char *ptx = to_ptx(&l);
  ck_assert_has(ptx, ".entry fz_test_kernel");
  ck_assert_has(ptx, ".maxntid 256");
  ck_assert_msg(report(has_v4_load(ptx), ptx), "no v4 f32 load");
  ck_assert_has(ptx, "st.global.v4.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

START_TEST(index64_keeps_64_bit_offsets) {
  tplan t;
  build_add(&t);
  t.p.index32 = false;
  lowered l = lower_ok(&t.p);
  ck_assert(!has(l.ir, "trunc i64 %groups"));
  ck_assert_has(l.ir, "icmp ult i64 %base, %groups");
  lowered_free(&l);
}
END_TEST

START_TEST(rank1_needs_no_division) {
  tplan t;
  int64_t n = 1 << 20;
  tp_init(&t, 1, &n, 4, 1);
  int a = tp_access(&t, false, FZ_F32, FLAT, 4);
  int o = tp_access(&t, true, FZ_F32, FLAT, 4);
  tp_store(&t, o, tp_op(&t, FZ_OP_NEG, FZ_F32, 1, tp_load(&t, a), 0, 0));
  lowered l = lower_ok(&t.p);
  ck_assert(!has(l.ir, "udiv"));
  ck_assert(!has(l.ir, "urem"));
  ck_assert_count(l.ir, "load <4 x float>", 1);
  lowered_free(&l);
}
END_TEST

START_TEST(bf16_input_widens_to_f32_output) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 1);
  int a = tp_access(&t, false, FZ_BF16, ROW_MAJOR, 4);
  int o = tp_access(&t, true, FZ_F32, ROW_MAJOR, 4);
  int x = tp_load(&t, a);
  tp_store(&t, o, tp_op(&t, FZ_OP_CAST, FZ_F32, 1, x, 0, 0));
  lowered l = lower_ok(&t.p);
  /* 4 bf16 lanes move as two words, cut apart into bfloats */
  ck_assert_has(l.ir, "load <2 x i32>, ptr addrspace(1) %");
  ck_assert_has(l.ir, "align 8");
  ck_assert_has(l.ir, "bitcast i16");
  ck_assert_has(l.ir, "fpext bfloat");
  ck_assert_count(l.ir, "store <4 x float>", 1);
  char *ptx = to_ptx(&l);
  ck_assert_msg(
      report(has(ptx, "ld.global.nc.v2.u32") || has(ptx, "ld.global.nc.v2.b32"),
             ptx),
      "no v2 word load");
  ck_assert_has(ptx, "st.global.v4.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

START_TEST(f16_ops_round_through_half) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 8, 1);
  int a = tp_access(&t, false, FZ_F16, ROW_MAJOR, 8);
  int o = tp_access(&t, true, FZ_F16, ROW_MAJOR, 8);
  int x = tp_load(&t, a);
  int y = tp_op(&t, FZ_OP_MUL, FZ_F16, 2, x, x, 0);
  tp_store(&t, o, tp_op(&t, FZ_OP_ADD, FZ_F16, 2, y, x, 0));
  lowered l = lower_ok(&t.p);
  /* 8 halves are one 16-byte vector */
  ck_assert_count(l.ir, "load <8 x half>", 1);
  ck_assert_has(l.ir, "align 16");
  /* each op's float result is rounded to half and widened back */
  ck_assert_has(l.ir, "fptrunc float");
  ck_assert_has(l.ir, "to half");
  char *ptx = to_ptx(&l);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

START_TEST(wide_vectors_split_into_16_byte_chunks) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 8, 1);
  int a = tp_access(&t, false, FZ_F32, ROW_MAJOR, 8);
  int o = tp_access(&t, true, FZ_F32, ROW_MAJOR, 8);
  tp_store(&t, o, tp_op(&t, FZ_OP_ABS, FZ_F32, 1, tp_load(&t, a), 0, 0));
  lowered l = lower_ok(&t.p);
  ck_assert_count(l.ir, "load <4 x float>", 2);
  ck_assert_count(l.ir, "store <4 x float>", 2);
  lowered_free(&l);
}
END_TEST

START_TEST(bytes_move_as_words) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 16, 1);
  int a = tp_access(&t, false, FZ_I8, ROW_MAJOR, 16);
  int b = tp_access(&t, false, FZ_BOOL, ROW_MAJOR, 16);
  int o = tp_access(&t, true, FZ_I8, ROW_MAJOR, 16);
  int x = tp_load(&t, a), c = tp_load(&t, b);
  int z = tp_op(&t, FZ_OP_NEG, FZ_I8, 1, x, 0, 0);
  tp_store(&t, o, tp_op(&t, FZ_OP_WHERE, FZ_I8, 3, c, x, z));
  lowered l = lower_ok(&t.p);
  ck_assert_count(l.ir, "load <4 x i32>", 2);
  ck_assert_count(l.ir, "store <4 x i32>", 1);
  char *ptx = to_ptx(&l);
  ck_assert_msg(
      report(has(ptx, "ld.global.nc.v4.u32") || has(ptx, "ld.global.nc.v4.b32"),
             ptx),
      "no v4 word load");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

START_TEST(splat_is_one_scalar_load_per_group) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 2);
  int a = tp_access(&t, false, FZ_F32, ROW_MAJOR, 4);
  int s = tp_access(&t, false, FZ_F32, ROW_SPLAT, 1);
  int o = tp_access(&t, true, FZ_F32, ROW_MAJOR, 4);
  int x = tp_load(&t, a), y = tp_load(&t, s);
  tp_store(&t, o, tp_op(&t, FZ_OP_MUL, FZ_F32, 2, x, y, 0));
  lowered l = lower_ok(&t.p);
  ck_assert_count(l.ir, "load <4 x float>", 2);
  ck_assert_count(l.ir, "load float,", 2); /* one per slot */
  /* the splat's offset has no innermost term: its stride parameter is
   * declared and never used */
  ck_assert_count(l.ir, "%a1.stride1", 1);
  char *ptx = to_ptx(&l);
  ck_assert_msg(report(has_v4_load(ptx), ptx), "no v4 f32 load");
  ck_assert_has(ptx, "ld.global.nc.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

START_TEST(strided_access_is_scalar_per_lane) {
  /* a column-major input copied into a row-major output */
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 2);
  int a = tp_access(&t, false, FZ_F32, COL_MAJOR, 1);
  int o = tp_access(&t, true, FZ_F32, ROW_MAJOR, 4);
  tp_store(&t, o, tp_load(&t, a));
  lowered l = lower_ok(&t.p);
  ck_assert_count(l.ir, "load float,", 8); /* 4 lanes x 2 slots */
  ck_assert_count(l.ir, "store <4 x float>", 2);
  ck_assert_has(l.ir, "%a0.stride1"); /* the lanes step by the parameter */
  char *ptx = to_ptx(&l);
  ck_assert_has(ptx, "ld.global.nc.f32");
  ck_assert_has(ptx, "st.global.v4.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

/* ---- ops ----------------------------------------------------------------- */

/* What the IR of each unary op on f32 (on i32 for the integer-only ones)
 * must contain. */
static const struct {
  fz_opcode code;
  const char *marker;
  bool libdevice;
} UNARY[] = {
    {FZ_OP_NEG, "fneg float", false},
    {FZ_OP_ABS, "@llvm.fabs.f32", false},
    {FZ_OP_EXP, "@__nv_expf", true},
    {FZ_OP_EXP2, "@__nv_exp2f", true},
    {FZ_OP_LOG, "@__nv_logf", true},
    {FZ_OP_LOG2, "@__nv_log2f", true},
    {FZ_OP_SQRT, "@llvm.sqrt.f32", false},
    {FZ_OP_RSQRT, "@llvm.sqrt.f64", false},
    {FZ_OP_RECIPROCAL, "fdiv float 1.000000e+00", false},
    {FZ_OP_SIN, "@__nv_sinf", true},
    {FZ_OP_COS, "@__nv_cosf", true},
    {FZ_OP_TANH, "@__nv_tanhf", true},
    {FZ_OP_SIGMOID, "@__nv_expf", true},
    {FZ_OP_ERF, "@__nv_erff", true},
    {FZ_OP_RELU, "@llvm.maximum.f32", false},
    {FZ_OP_GELU, "@__nv_erff", true},
    {FZ_OP_SILU, "@__nv_expf", true},
    {FZ_OP_FLOOR, "@llvm.floor.f32", false},
    {FZ_OP_CEIL, "@llvm.ceil.f32", false},
    {FZ_OP_ROUND, "@llvm.roundeven.f32", false},
    {FZ_OP_NOT, "fcmp une float", false},
    {FZ_OP_ISNAN, "fcmp uno float", false},
    {FZ_OP_LOG1P, "@__nv_log1pf", true},
    {FZ_OP_EXPM1, "@__nv_expm1f", true},
    {FZ_OP_TAN, "@__nv_tanf", true},
    {FZ_OP_ATAN, "@__nv_atanf", true},
    {FZ_OP_ASIN, "@__nv_asinf", true},
    {FZ_OP_ACOS, "@__nv_acosf", true},
    {FZ_OP_SINH, "@__nv_sinhf", true},
    {FZ_OP_COSH, "@__nv_coshf", true},
    {FZ_OP_ASINH, "@__nv_asinhf", true},
    {FZ_OP_ACOSH, "@__nv_acoshf", true},
    {FZ_OP_ATANH, "@__nv_atanhf", true},
    {FZ_OP_ERFC, "@__nv_erfcf", true},
    {FZ_OP_ERFINV, "@__nv_erfinvf", true},
    {FZ_OP_LGAMMA, "@__nv_lgammaf", true},
    {FZ_OP_TRUNC, "@llvm.trunc.f32", false},
    {FZ_OP_SIGN, "fcmp ogt float", false},
    {FZ_OP_FRAC, "@llvm.trunc.f32", false},
    {FZ_OP_ISINF, "fcmp oeq float", false},
    {FZ_OP_ISFINITE, "fcmp olt float", false},
    {FZ_OP_SIGNBIT, "bitcast float", false},
    {FZ_OP_BITWISE_NOT, "xor i32", false},
};
enum { NUM_UNARY = sizeof UNARY / sizeof UNARY[0] };

static bool on_i32(fz_opcode code) {
  return fz_op_table[code].flags & FZ_F_INT_ONLY;
}

START_TEST(every_unary_op_table_is_complete) {
  int n = 0;
  for (int c = 0; c < FZ_NUM_OPCODES; c++)
    n += fz_op_table[c].kind == FZ_KIND_UNARY;
  ck_assert_int_eq(n, NUM_UNARY);
}
END_TEST

START_TEST(unary_op_on_f32) {
  fz_opcode code = UNARY[_i].code;
  fz_dtype in = on_i32(code) ? FZ_I32 : FZ_F32;
  fz_dtype rd = fz_op_result_dtype(code, in);
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 2);
  int a = tp_access(&t, false, in, ROW_MAJOR, 4);
  int o = tp_access(&t, true, rd, ROW_MAJOR, 4);
  tp_store(&t, o, tp_op(&t, code, rd, 1, tp_load(&t, a), 0, 0));
  lowered l = lower_ok(&t.p);
  ck_assert_msg(report(has(l.ir, UNARY[_i].marker), l.ir), "%s: no '%s'",
                fz_op_table[code].name, UNARY[_i].marker);
  ck_assert_msg(l.uses_libdevice == UNARY[_i].libdevice,
                "%s: uses_libdevice is %d", fz_op_table[code].name,
                l.uses_libdevice);
  lowered_free(&l);
}
END_TEST

/* Every unary op of one input, each to its own output, compiled. */
START_TEST(all_unary_ops_assemble) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 2);
  int a = tp_access(&t, false, FZ_F32, ROW_MAJOR, 4);
  int x = tp_load(&t, a);
  for (int i = 0; i < NUM_UNARY; i++) {
    if (on_i32(UNARY[i].code))
      continue;
    fz_dtype rd = fz_op_result_dtype(UNARY[i].code, FZ_F32);
    int o = tp_access(&t, true, rd, ROW_MAJOR, 4);
    tp_store(&t, o, tp_op(&t, UNARY[i].code, rd, 1, x, 0, 0));
  }
  lowered l = lower_ok(&t.p);
  char *ptx = to_ptx(&l);
  if (ptx) {
    ck_assert_has(ptx, ".entry fz_test_kernel");
    ck_assert(!has(ptx, "__nv_")); /* libdevice linked and inlined */
    assemble(ptx);
  }
  free(ptx);
  lowered_free(&l);
}
END_TEST

START_TEST(cast_f32_to_i32_saturates) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 1);
  int a = tp_access(&t, false, FZ_F32, ROW_MAJOR, 4);
  int o = tp_access(&t, true, FZ_I32, ROW_MAJOR, 4);
  tp_store(&t, o, tp_op(&t, FZ_OP_CAST, FZ_I32, 1, tp_load(&t, a), 0, 0));
  lowered l = lower_ok(&t.p);
  ck_assert_has(l.ir, "@llvm.fptosi.sat.i32.f32");
  ck_assert_has(l.ir, "store <4 x i32>");
  char *ptx = to_ptx(&l);
  ck_assert_has(ptx, "cvt.rzi.s32.f32");
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

/* Casts between every pair of dtypes, one output each. */
START_TEST(every_cast_assembles) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 1, 1);
  int x[FZ_NUM_DTYPES];
  for (int d = 0; d < FZ_NUM_DTYPES; d++)
    x[d] = tp_load(&t, tp_access(&t, false, (fz_dtype)d, ROW_MAJOR, 1));
  for (int from = 0; from < FZ_NUM_DTYPES; from++)
    for (int to = 0; to < FZ_NUM_DTYPES; to++) {
      int o = tp_access(&t, true, (fz_dtype)to, ROW_MAJOR, 1);
      tp_store(&t, o, tp_op(&t, FZ_OP_CAST, (fz_dtype)to, 1, x[from], 0, 0));
    }
  lowered l = lower_ok(&t.p);
  /* i64 -> bf16 rounds to odd in f64 first, so only one rounding counts */
  ck_assert_has(l.ir, "@llvm.nvvm.ll2d.rz");
  ck_assert_has(l.ir, "fptrunc double");
  char *ptx = to_ptx(&l);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

/* Every binary and ternary op on one dtype (bool skips what PyTorch
 * rejects), with a literal operand converted to it, compiled. */
static const fz_dtype OP_DTYPES[] = {FZ_F32, FZ_F16, FZ_BF16, FZ_F64,
                                     FZ_I64, FZ_I32, FZ_I8,   FZ_BOOL};

START_TEST(binary_and_ternary_ops_assemble) {
  fz_dtype d = OP_DTYPES[_i];
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 2);
  int x = tp_load(&t, tp_access(&t, false, d, ROW_MAJOR, 4));
  int y = tp_load(&t, tp_access(&t, false, d, COL_MAJOR, 1));
  int c = tp_load(&t, tp_access(&t, false, FZ_BOOL, ROW_SPLAT, 1));
  int lit = tp_node(&t, (fz_plan_node){.kind = FZ_NODE_LITERAL,
                                       .dtype = FZ_I64,
                                       .literal = {.i = 3}});
  for (int code = 0; code < FZ_NUM_OPCODES; code++) {
    const fz_op_info *info = &fz_op_table[code];
    if (info->kind != FZ_KIND_BINARY && info->kind != FZ_KIND_TERNARY)
      continue;
    unsigned flags = info->flags;
    if ((d == FZ_BOOL && (code == FZ_OP_SUB || (flags & FZ_F_NO_BOOL))) ||
        (fz_dtype_is_float(d) && (flags & FZ_F_INT_ONLY)) ||
        (!fz_dtype_is_float(d) && (flags & FZ_F_FLOAT_ONLY)))
      continue;
    fz_dtype rd = fz_op_result_dtype((fz_opcode)code, d);
    int n;
    if (code == FZ_OP_WHERE)
      n = tp_op(&t, (fz_opcode)code, rd, 3, c, x, y);
    else if (info->arity == 3)
      n = tp_op(&t, (fz_opcode)code, rd, 3, x, y, x);
    else
      n = tp_op(&t, (fz_opcode)code, rd, 2, x, y, 0);
    tp_store(&t, tp_access(&t, true, rd, ROW_MAJOR, 4), n);
    if (info->arity == 2 && d != FZ_BOOL) {
      /* with an int literal: it converts to d before the op */
      n = tp_op(&t, (fz_opcode)code, rd, 2, x, lit, 0);
      tp_store(&t, tp_access(&t, true, rd, ROW_MAJOR, 4), n);
    }
  }
  lowered l = lower_ok(&t.p);
  char *ptx = to_ptx(&l);
  if (ptx)
    assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

START_TEST(integer_pow_and_mod_are_exact) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 1);
  int x = tp_load(&t, tp_access(&t, false, FZ_I32, ROW_MAJOR, 4));
  int y = tp_load(&t, tp_access(&t, false, FZ_I32, ROW_MAJOR, 4));
  tp_store(&t, tp_access(&t, true, FZ_I32, ROW_MAJOR, 4),
           tp_op(&t, FZ_OP_POW, FZ_I32, 2, x, y, 0));
  tp_store(&t, tp_access(&t, true, FZ_I32, ROW_MAJOR, 4),
           tp_op(&t, FZ_OP_MOD, FZ_I32, 2, x, y, 0));
  lowered l = lower_ok(&t.p);
  ck_assert(!l.uses_libdevice);
  ck_assert_has(l.ir, "pow.step"); /* square and multiply */
  ck_assert_has(l.ir, "srem i32");
  lowered_free(&l);
}
END_TEST

START_TEST(f16_comparison_runs_in_f32) {
  /* f16[N] < 0.1 compares in f32 (opmath) with the literal rounded to f32,
   * as the interpreter does, not to f16 */
  tplan t;
  int64_t n = 4096;
  tp_init(&t, 1, &n, 8, 1);
  int x = tp_load(&t, tp_access(&t, false, FZ_F16, FLAT, 8));
  int lit = tp_node(&t, (fz_plan_node){.kind = FZ_NODE_LITERAL,
                                       .dtype = FZ_F64,
                                       .literal = {.f = 0.1}});
  tp_store(&t, tp_access(&t, true, FZ_BOOL, FLAT, 8),
           tp_op(&t, FZ_OP_LT, FZ_BOOL, 2, x, lit, 0));
  lowered l = lower_ok(&t.p);
  ck_assert_has(l.ir, "fcmp olt float");
  ck_assert_has(l.ir, "0x3FB99999A0000000");   /* 0.1f */
  ck_assert(!has(l.ir, "0x3FB9980000000000")); /* 0.1 as f16 */
  lowered_free(&l);
}
END_TEST

/* An f16 result computed in f32 and rounded again is the f64 result
 * rounded once only when the operands are f16 values. */
static lowered lower_f16_mul(fz_plan_node other, fz_dtype other_access) {
  tplan t;
  int64_t n = 4096;
  tp_init(&t, 1, &n, 8, 1);
  int x = tp_load(&t, tp_access(&t, false, FZ_F16, FLAT, 8));
  int y = other.kind == FZ_NODE_LOAD
              ? tp_load(&t, tp_access(&t, false, other_access, FLAT, 8))
              : tp_node(&t, other);
  tp_store(&t, tp_access(&t, true, FZ_F16, FLAT, 8),
           tp_op(&t, FZ_OP_MUL, FZ_F16, 2, x, y, 0));
  return lower_ok(&t.p);
}

START_TEST(f16_ops_on_wider_operands_run_in_f64) {
  fz_plan_node load = {.kind = FZ_NODE_LOAD};
  fz_plan_node lit15 = {
      .kind = FZ_NODE_LITERAL, .dtype = FZ_F64, .literal = {.f = 1.5}};
  fz_plan_node lit33 = {
      .kind = FZ_NODE_LITERAL, .dtype = FZ_F64, .literal = {.f = 3.3}};
  lowered l = lower_f16_mul(load, FZ_F16); /* f16 * f16 */
  ck_assert_has(l.ir, "fmul float");
  ck_assert(!has(l.ir, "fmul double"));
  lowered_free(&l);
  l = lower_f16_mul(lit15, FZ_F16); /* 1.5 is an f16 value */
  ck_assert_has(l.ir, "fmul float");
  ck_assert(!has(l.ir, "fmul double"));
  lowered_free(&l);
  l = lower_f16_mul(lit33, FZ_F16); /* 3.3 rounded to f32 is not */
  ck_assert_has(l.ir, "fmul double");
  ck_assert_has(l.ir, "fptrunc double");
  lowered_free(&l);
  l = lower_f16_mul(load, FZ_I32); /* nor is every i32 */
  ck_assert_has(l.ir, "fmul double");
  lowered_free(&l);
}
END_TEST

START_TEST(iota_and_literal_nodes) {
  tplan t;
  tp_init(&t, 2, EXT_2D, 4, 1);
  int i = tp_node(&t, (fz_plan_node){.kind = FZ_NODE_IOTA,
                                     .dtype = FZ_F32,
                                     .literal = {.f = 0.5},
                                     .step = {.f = 2.0},
                                     .coeff = {1024, 1}});
  int f = tp_node(&t, (fz_plan_node){.kind = FZ_NODE_LITERAL,
                                     .dtype = FZ_F32,
                                     .literal = {.f = 1.0}});
  tp_store(&t, tp_access(&t, true, FZ_F32, ROW_MAJOR, 4),
           tp_op(&t, FZ_OP_ADD, FZ_F32, 2, i, f, 0));
  lowered l = lower_ok(&t.p);
  ck_assert_has(l.ir, "sitofp i64");
  ck_assert_has(l.ir, "store <4 x float>");
  char *ptx = to_ptx(&l);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
}
END_TEST

/* ---- malformed plans ----------------------------------------------------- */

START_TEST(reduction_op_node_is_internal_error) {
  tplan t;
  build_add(&t);
  t.nodes[2].code = FZ_OP_SUM;
  t.nodes[2].num_operands = 1;
  char msg[1024];
  ck_assert_int_eq(lower_status(&t.p, msg, sizeof msg), FZ_ERR_INTERNAL);
  ck_assert_msg(has(msg, "sum"), "message: %s", msg);
}
END_TEST

START_TEST(forward_operand_is_internal_error) {
  tplan t;
  build_add(&t);
  t.nodes[2].operands[1] = 3; /* the store */
  char msg[1024];
  ck_assert_int_eq(lower_status(&t.p, msg, sizeof msg), FZ_ERR_INTERNAL);
  ck_assert_msg(has(msg, "n2"), "message: %s", msg);
}
END_TEST

START_TEST(vector_on_a_strided_axis_is_internal_error) {
  tplan t;
  build_add(&t);
  t.acc[0].strides[1] = 2;
  char msg[1024];
  ck_assert_int_eq(lower_status(&t.p, msg, sizeof msg), FZ_ERR_INTERNAL);
  ck_assert_msg(has(msg, "a0"), "message: %s", msg);
}
END_TEST

START_TEST(store_through_an_input_is_internal_error) {
  tplan t;
  build_add(&t);
  t.nodes[3].access = 0;
  char msg[1024];
  ck_assert_int_eq(lower_status(&t.p, msg, sizeof msg), FZ_ERR_INTERNAL);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("lower");
  TCase *shape = tcase_create("shape");
  tcase_set_timeout(shape, 120);
  tcase_add_test(shape, f32_add_is_vectorized_and_unrolled);
  tcase_add_test(shape, index64_keeps_64_bit_offsets);
  tcase_add_test(shape, rank1_needs_no_division);
  tcase_add_test(shape, bf16_input_widens_to_f32_output);
  tcase_add_test(shape, f16_ops_round_through_half);
  tcase_add_test(shape, wide_vectors_split_into_16_byte_chunks);
  tcase_add_test(shape, bytes_move_as_words);
  tcase_add_test(shape, splat_is_one_scalar_load_per_group);
  tcase_add_test(shape, strided_access_is_scalar_per_lane);
  suite_add_tcase(s, shape);

  TCase *ops = tcase_create("ops");
  tcase_set_timeout(ops, 300);
  tcase_add_test(ops, every_unary_op_table_is_complete);
  tcase_add_loop_test(ops, unary_op_on_f32, 0, NUM_UNARY);
  tcase_add_test(ops, all_unary_ops_assemble);
  tcase_add_test(ops, cast_f32_to_i32_saturates);
  tcase_add_test(ops, every_cast_assembles);
  tcase_add_loop_test(ops, binary_and_ternary_ops_assemble, 0,
                      (int)(sizeof OP_DTYPES / sizeof OP_DTYPES[0]));
  tcase_add_test(ops, integer_pow_and_mod_are_exact);
  tcase_add_test(ops, f16_comparison_runs_in_f32);
  tcase_add_test(ops, f16_ops_on_wider_operands_run_in_f64);
  tcase_add_test(ops, iota_and_literal_nodes);
  suite_add_tcase(s, ops);

  TCase *bad = tcase_create("malformed");
  tcase_add_test(bad, reduction_op_node_is_internal_error);
  tcase_add_test(bad, forward_operand_is_internal_error);
  tcase_add_test(bad, vector_on_a_strided_axis_is_internal_error);
  tcase_add_test(bad, store_through_an_input_is_internal_error);
  suite_add_tcase(s, bad);
  return s;
}

int main(void) { return test_run_suite(make()); }
