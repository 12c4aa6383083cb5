/* test_lower_transpose.c - lib/lower: transpose plans to LLVM IR and PTX.
 *
 * The plans come from the scheduler on small fusions (every tensor dense
 * in its declared layout, 16-byte aligned, an H200), sometimes edited to
 * force a situation (64-bit indexing) or broken on purpose (the checks).
 * Each test checks the skeleton its situation needs: one static shared
 * tile per tiled input, two barriers per tile, vector loads along the
 * tiled inputs' rows only where the plan allows them, vector stores along
 * the outputs', predicated stores at the edges, the outer axes decomposed
 * from the tile index; and that the PTX assembles with ptxas -arch=sm_90
 * (a SKIP line where ptxas is missing). Whether the kernels compute the
 * right values is for the GPU tests (test/gpu/transpose_*.fz).
 */
#include "lower_util.h"

#include "sched/plan.h"

#include "schedule_util.h"

/* Lowers, checks the parameter count against the launcher's, compiles to
 * PTX and assembles it; the caller frees both. */
static char *lower_to_ptx(const fz_plan *p, lowered *l) {
  *l = lower_ok(p);
  LLVMValueRef fn = LLVMGetNamedFunction(l->mod, p->kernel_name);
  ck_assert_ptr_nonnull(fn);
  ck_assert_int_eq((int)LLVMCountParams(fn), fz_plan_num_params(p));
  char *ptx = to_ptx(l);
  ck_assert_ptr_nonnull(ptx);
  assemble(ptx);
  return ptx;
}

static int num_tiled(const fz_plan *p) {
  int n = 0;
  for (int i = 0; i < p->num_accesses; i++)
    n += p->tiled[i];
  return n;
}

static const char *PERMUTE_2D = "fusion @t(%x: f32[M, N]) {\n"
                                "  %y = permute %x perm(1, 0) : f32[N, M]\n"
                                "  return %y\n"
                                "}\n";

START_TEST(square_f32_tiles_with_vectors_both_ways) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=8192,N=8192");
  ck_assert_int_eq(p->kind, FZ_PLAN_TRANSPOSE);
  ck_assert_int_eq(p->tile_a, 64);
  ck_assert_int_eq(p->tile_b, 64);
  ck_assert_int_eq(p->threads, 256);
  ck_assert_int_eq(p->vector, 4);
  ck_assert_int_eq(p->tile_axis, 0);
  ck_assert_int_eq(num_tiled(p), 1);
  ck_assert_int_eq(fz_plan_num_tiles(p), 128 * 128);
  int64_t scalars[64];
  fz_plan_scalar_params(p, scalars);
  ck_assert_int_eq(scalars[0], 128 * 128); /* the group count is tiles */
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  /* one tile of 64 rows padded to 65 elements */
  ck_assert_has(l.ir, "addrspace(3) global [4160 x float]");
  ck_assert_count(l.ir, "call void @llvm.nvvm.barrier0()", 2);
  ck_assert_has(ptx, "ld.global.nc.v4.f32");
  ck_assert_has(ptx, "st.shared.f32");
  ck_assert_has(ptx, "ld.shared.f32");
  ck_assert_has(ptx, "st.global.v4.f32");
  ck_assert_has(ptx, "bar.sync");
  /* 64 * 64 / 256 = 16 elements each way per thread: 4 vectors */
  ck_assert_count(ptx, "ld.global.nc.v4.f32", 4);
  ck_assert_count(ptx, "st.global.v4.f32", 4);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(odd_sizes_read_scalar_and_predicate_stores) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  ck_assert_int_eq(p->kind, FZ_PLAN_TRANSPOSE);
  ck_assert_int_eq(p->accesses[0].vector, 1); /* rows of 777 */
  ck_assert_int_eq(p->vector, 4);             /* rows of 1000 */
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert(!has(ptx, "ld.global.nc.v4"));
  ck_assert_count(ptx, "ld.global.nc.f32", 16);
  ck_assert_has(ptx, "st.global.v4.f32");
  /* loads are clamped inside the tensor, stores are behind a branch */
  ck_assert_has(l.ir, "store.u0:");
  ck_assert_has(l.ir, "store.u3:");
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(bf16_rank3_moves_16_byte_words) {
  scheduled s;
  fz_plan *p = schedule(&s,
                        "fusion @t(%x: bf16[B, M, N]) {\n"
                        "  %y = permute %x perm(0, 2, 1) : bf16[B, N, M]\n"
                        "  return %y\n"
                        "}\n",
                        "B=3,M=96,N=200");
  ck_assert_int_eq(p->kind, FZ_PLAN_TRANSPOSE);
  ck_assert_int_eq(p->rank, 3);
  ck_assert_int_eq(p->tile_axis, 1);
  ck_assert_int_eq(p->vector, 8);
  ck_assert_int_eq(p->accesses[0].vector, 8);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  /* bf16 tiles hold f32 (4-byte banks) */
  ck_assert_has(l.ir, "addrspace(3) global [4160 x float]");
  ck_assert_has(ptx, "ld.global.nc.v4.u32");
  ck_assert_has(ptx, "st.global.v4.b32");
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(rank4_decomposes_two_outer_axes) {
  scheduled s;
  fz_plan *p =
      schedule(&s,
               "fusion @t(%x: f32[A, B, M, N]) {\n"
               "  %y = permute %x perm(1, 0, 3, 2) : f32[B, A, N, M]\n"
               "  return %y\n"
               "}\n",
               "A=3,B=5,M=64,N=96");
  ck_assert_int_eq(p->kind, FZ_PLAN_TRANSPOSE);
  ck_assert_int_eq(p->rank, 4);
  ck_assert_int_eq(p->tile_axis, 2);
  ck_assert_int_eq(fz_plan_num_tiles(p), 3 * 5 * 1 * 2);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  /* tile -> A tile, B tile, then the outer index over one more extent */
  ck_assert_has(l.ir, "%outer = udiv");
  ck_assert_has(l.ir, "urem i32 %outer, ");
  ck_assert_has(l.ir, "udiv i32 %outer, ");
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* Two tiled inputs of different dtypes, a bool one, a direct bf16 one and
 * two outputs: one tile per tiled input, each of its own element type. */
START_TEST(several_tiled_inputs_and_outputs) {
  scheduled s;
  fz_plan *p = schedule(
      &s,
      "fusion @t(%x: f32[M, N] layout(1, 0), %y: bf16[M, N],\n"
      "          %k: bool[M, N] layout(1, 0), %d: f64[M, N] layout(1, 0)) {\n"
      "  %a = add %x, %y : f32[M, N]\n"
      "  %e = where %k, %a, %d : f64[M, N]\n"
      "  %f = cast %e : bf16[M, N]\n"
      "  return %e, %f\n"
      "}\n",
      "M=96,N=200");
  ck_assert_int_eq(p->kind, FZ_PLAN_TRANSPOSE);
  ck_assert_int_eq(num_tiled(p), 3);
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_count(l.ir, "addrspace(3) global", 3);
  ck_assert_has(l.ir, "x double]"); /* the f64 tile keeps 8 bytes */
  ck_assert_has(l.ir, "x i32]");    /* bool widened to 4 bytes */
  ck_assert_has(l.ir, "x float]");
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(index64_loops_over_i64_tiles) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  p->index32 = false;
  lowered l;
  char *ptx = lower_to_ptx(p, &l);
  ck_assert_has(l.ir, "icmp ult i64 %t, %groups");
  ck_assert(!has(l.ir, "trunc i64 %groups"));
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

START_TEST(key_names_the_tiles) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  const char *key = fz_plan_key(p, s.arena);
  ck_assert_msg(has(key, "transpose") && has(key, "tile=64x64 axis=0") &&
                    has(key, "a0 r f32 vec=1 tiled"),
                "key: %s", key);
  scheduled_free(&s);
}
END_TEST

/* ---- malformed plans --------------------------------------------------- */

static void expect(fz_plan *p, fz_status status, const char *needle) {
  char msg[1024];
  ck_assert_int_eq(lower_status(p, msg, sizeof msg), status);
  ck_assert_msg(has(msg, needle), "message: %s", msg);
}

START_TEST(tile_not_a_power_of_two_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  p->tile_a = 48;
  expect(p, FZ_ERR_INTERNAL, "transpose tile 48x64");
  scheduled_free(&s);
}
END_TEST

START_TEST(tiled_output_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  bool *tiled = (bool *)p->tiled;
  tiled[1] = true;
  expect(p, FZ_ERR_INTERNAL, "tiled access a1 must be an input");
  scheduled_free(&s);
}
END_TEST

START_TEST(no_tiled_access_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  bool *tiled = (bool *)p->tiled;
  tiled[0] = false;
  expect(p, FZ_ERR_INTERNAL, "without tiled accesses");
  scheduled_free(&s);
}
END_TEST

START_TEST(tiles_beyond_static_shared_memory_are_unsupported) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  p->tile_a = p->tile_b = 128; /* 128 x 129 x 4 bytes */
  p->threads = 1024;
  expect(p, FZ_ERR_UNSUPPORTED, "exceed static shared memory");
  scheduled_free(&s);
}
END_TEST

START_TEST(vector_not_dividing_the_extent_is_internal) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=776");
  ck_assert_int_eq(p->accesses[0].vector, 4);
  p->extents[0] = 777; /* B no longer a multiple of the load vector */
  expect(p, FZ_ERR_INTERNAL, "tiled access a0: 4 lanes");
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("lower_transpose");
  TCase *ok = tcase_create("kernels");
  tcase_set_timeout(ok, 120);
  tcase_add_test(ok, square_f32_tiles_with_vectors_both_ways);
  tcase_add_test(ok, odd_sizes_read_scalar_and_predicate_stores);
  tcase_add_test(ok, bf16_rank3_moves_16_byte_words);
  tcase_add_test(ok, rank4_decomposes_two_outer_axes);
  tcase_add_test(ok, several_tiled_inputs_and_outputs);
  tcase_add_test(ok, index64_loops_over_i64_tiles);
  tcase_add_test(ok, key_names_the_tiles);
  suite_add_tcase(s, ok);

  TCase *bad = tcase_create("malformed");
  tcase_add_test(bad, tile_not_a_power_of_two_is_internal);
  tcase_add_test(bad, tiled_output_is_internal);
  tcase_add_test(bad, no_tiled_access_is_internal);
  tcase_add_test(bad, tiles_beyond_static_shared_memory_are_unsupported);
  tcase_add_test(bad, vector_not_dividing_the_extent_is_internal);
  suite_add_tcase(s, bad);
  return s;
}

int main(void) { return test_run_suite(make()); }
