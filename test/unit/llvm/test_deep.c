/* test_deep.c - lowering fusions that are long chains of ops.
 *
 * A chain of N ops is a walk N deep wherever a node is evaluated after the
 * nodes it reads: the scheduler's DAG, and the persistent kernels, which
 * evaluate row, full-space and column nodes on demand. These tests lower
 * chains far deeper than any seed without relying on the C stack: a
 * pointwise chain through LLVM's O3 and NVPTX into PTX, and a persistent
 * plan with a 100,000-op chain in its full space and chains in its row
 * and column spaces, lowered to LLVM IR.
 *
 * The PTX chain is short enough for a few seconds under ASan: beyond our
 * own linear lowering, LLVM's O3 and instruction selection take most of
 * the time (about 3 s for 1,000 exp ops and 50 s for 10,000 in a release
 * build, on one core).
 */
#include "lower_util.h"
#include "schedule_util.h"

enum { PTX_CHAIN = 3000, FULL_CHAIN = 100000, SIDE_CHAIN = 1000 };

/* check records every passing ck_assert; per op, only failures count */
static fz_value *ok(fz_value *v, const fz_error *err) {
  if (!v)
    ck_abort_msg("build failed: %s", err->message);
  return v;
}

static fz_type type_of(fz_fusion *f, int rank) {
  const char *names[] = {"M", "N"};
  fz_type t = {.dtype = FZ_F32, .rank = rank};
  for (int i = 0; i < rank; i++)
    t.axes[i] = (fz_axis){.kind = FZ_AXIS_ITER,
                          .extent = fz_symbol_extent(fz_fusion_symbol(
                              f, names[rank == 1 ? 1 : i]))};
  fz_type_set_row_major(&t);
  return t;
}

/* `ops` ops on v that O3 cannot fold away: halve, add one, alternately. */
static fz_value *chain(fz_fusion *f, fz_value *v, int ops) {
  fz_error err = {0};
  for (int i = 0; i < ops; i++)
    v = ok(fz_binary(f, i % 2 ? FZ_OP_ADD : FZ_OP_MUL, v,
                     fz_literal_float(f, i % 2 ? 1.0 : 0.5), &err),
           &err);
  return v;
}

START_TEST(test_pointwise_chain_to_ptx) {
  fz_fusion *f = fz_fusion_create("chain");
  fz_type t = type_of(f, 1);
  fz_error err = {0};
  fz_value *y = chain(f, fz_add_input(f, "x", &t), PTX_CHAIN);
  ck_assert_int_eq(fz_add_output(f, y, &err), FZ_OK);
  scheduled s;
  fz_plan *p = schedule_fusion(&s, f, "N=1048576");
  ck_assert_int_eq(p->kind, FZ_PLAN_POINTWISE);
  ck_assert_int_eq(p->num_nodes, 2 * PTX_CHAIN + 2);
  lowered l = lower_ok(p);
  char *ptx = to_ptx(&l);
  ck_assert_ptr_nonnull(ptx); /* no libdevice needed */
  ck_assert_has(ptx, ".entry fz_pointwise");
  /* every halving and every addition, in each lane of each group */
  int ops = count(ptx, "mul.rn.f32") + count(ptx, "add.rn.f32") +
            2 * count(ptx, "fma.rn.f32");
  ck_assert_int_ge(ops, PTX_CHAIN);
  assemble(ptx);
  free(ptx);
  lowered_free(&l);
  scheduled_free(&s);
}
END_TEST

/* Row sums of a chain, a chain on the sums used back in the rows, column
 * sums of the result and a chain on those: an inner-outer persistent plan
 * with a chain in each of its spaces (full, row, column). The full-space
 * one is long enough to overflow the stack of a recursive evaluation. */
START_TEST(test_persistent_chains_lower) {
  fz_fusion *f = fz_fusion_create("deep");
  fz_type t = type_of(f, 2);
  fz_error err = {0};
  fz_value *v = chain(f, fz_add_input(f, "x", &t), FULL_CHAIN);
  const int rows[] = {1}, cols[] = {0};
  fz_value *r = chain(f, ok(fz_reduce(f, FZ_OP_SUM, v, 1, rows, true, &err),
                            &err),
                      SIDE_CHAIN);
  fz_type wide = r->type; /* [M, b1->N] */
  wide.axes[1].expanded = true;
  wide.axes[1].expanded_to = v->type.axes[1].extent;
  fz_value *e = ok(fz_expand(f, r, &wide, &err), &err);
  fz_value *y = ok(fz_binary(f, FZ_OP_SUB, v, e, &err), &err);
  fz_value *c = chain(
      f, ok(fz_reduce(f, FZ_OP_SUM, y, 1, cols, false, &err), &err),
      SIDE_CHAIN);
  ck_assert_int_eq(fz_add_output(f, y, &err), FZ_OK);
  ck_assert_int_eq(fz_add_output(f, c, &err), FZ_OK);
  scheduled s;
  fz_plan *p = schedule_fusion(&s, f, "M=4096,N=64");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_OUTER_PERSISTENT);
  ck_assert_int_ge(p->num_nodes, FULL_CHAIN + 2 * SIDE_CHAIN);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  bool libdevice = false;
  fz_status st = fz_lower_plan(p, ctx, &mod, &libdevice, &err);
  ck_assert_msg(st == FZ_OK, "lowering failed: %s", err.message);
  ck_assert_ptr_nonnull(LLVMGetNamedFunction(mod, p->kernel_name));
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("deep");
  TCase *ptx = tcase_create("ptx");
  tcase_set_timeout(ptx, 600);
  tcase_add_test(ptx, test_pointwise_chain_to_ptx);
  suite_add_tcase(s, ptx);
  TCase *lower = tcase_create("lower");
  tcase_set_timeout(lower, 600);
  tcase_add_test(lower, test_persistent_chains_lower);
  suite_add_tcase(s, lower);
  return s;
}

int main(void) { return test_run_suite(make()); }
