/* test_scale.c - fusions far larger than any seed, built through the
 * builder: 100,000-op chains and 100,000 outputs go through canonicalize,
 * cse, alloc-order, scheduling, segmentation and the interpreter.
 *
 * What is checked is that each stage completes and is right, not how long
 * it takes: a walk that recursed once per op would overflow the stack
 * (ASan's larger frames reach it first), and a step quadratic in the
 * number of ops would keep the test from finishing within ctest's limit.
 * The interpreter runs on small extents (N = 4), and a chain is built so
 * that its result is known exactly.
 */
#include "test_util.h"

#include "sched/plan.h"
#include "sched/segment.h"

#include <stdlib.h>
#include <string.h>

enum { OPS = 100000, EXTENT = 4 };

/* ---- building ------------------------------------------------------------ */

static fz_type vector_type(fz_fusion *f, int rank) {
  fz_type t = {.dtype = FZ_F32, .rank = rank};
  const char *names[] = {"N", "M"};
  for (int i = 0; i < rank; i++)
    t.axes[i] = (fz_axis){.kind = FZ_AXIS_ITER,
                          .extent = fz_symbol_extent(
                              fz_fusion_symbol(f, names[i]))};
  fz_type_set_row_major(&t);
  return t;
}

/* check records every passing ck_assert; per op, only failures count */
static fz_value *ok(fz_value *v, const fz_error *err) {
  if (!v)
    ck_abort_msg("build failed: %s", err->message);
  return v;
}

/* A chain of `ops` ops on x whose value is x exactly, with work for every
 * pass: per step a neg (the value alternates sign), a set (canonicalize
 * folds it), two equal halvings (cse merges them) and their sum. */
static fz_fusion *value_chain(int ops) {
  fz_fusion *f = fz_fusion_create("chain");
  fz_type t = vector_type(f, 1);
  fz_value *v = fz_add_input(f, "x", &t);
  fz_error err = {0};
  int steps = 0;
  while (f->num_ops + 5 <= ops) {
    v = ok(fz_unary(f, FZ_OP_NEG, v, &err), &err);
    v = ok(fz_set(f, v, &err), &err);
    fz_value *a =
        ok(fz_binary(f, FZ_OP_MUL, v, fz_literal_float(f, 0.5), &err), &err);
    fz_value *b =
        ok(fz_binary(f, FZ_OP_MUL, v, fz_literal_float(f, 0.5), &err), &err);
    v = ok(fz_binary(f, FZ_OP_ADD, a, b, &err), &err);
    steps++;
  }
  if (steps % 2) /* an even number of negs: the result is x */
    v = ok(fz_unary(f, FZ_OP_NEG, v, &err), &err);
  ck_assert_int_eq(fz_add_output(f, v, &err), FZ_OK);
  return f;
}

/* `ops` permutes of a [N, M] tensor, swapping its axes each time. */
static fz_fusion *permute_chain(int ops) {
  fz_fusion *f = fz_fusion_create("permutes");
  fz_type t = vector_type(f, 2);
  fz_value *v = fz_add_input(f, "x", &t);
  fz_error err = {0};
  const int swap[2] = {1, 0};
  for (int i = 0; i < ops; i++)
    v = ok(fz_permute(f, v, swap, &err), &err);
  ck_assert_int_eq(fz_add_output(f, v, &err), FZ_OK);
  return f;
}

/* `outputs` outputs, output i being x * (i + 1). */
static fz_fusion *many_outputs(int outputs) {
  fz_fusion *f = fz_fusion_create("outputs");
  fz_type t = vector_type(f, 1);
  fz_value *x = fz_add_input(f, "x", &t);
  fz_error err = {0};
  for (int i = 0; i < outputs; i++) {
    fz_value *o = ok(fz_binary(f, FZ_OP_MUL, x,
                               fz_literal_float(f, (double)(i + 1)), &err),
                     &err);
    if (fz_add_output(f, o, &err) != FZ_OK)
      ck_abort_msg("output %d: %s", i, err.message);
  }
  return f;
}

/* ---- the problem and the interpreter ------------------------------------ */

typedef struct problem {
  int64_t symbols[2];
  fz_tensor_desc *in, *out;
  fz_problem pb;
} problem;

static void describe(const fz_value *v, const int64_t *symbols,
                     fz_tensor_desc *d) {
  *d = (fz_tensor_desc){.dtype = v->type.dtype, .rank = v->type.rank,
                        .align = 16};
  int64_t stride = 1;
  for (int a = v->type.rank - 1; a >= 0; a--) {
    d->sizes[a] = fz_axis_size(&v->type.axes[a], symbols);
    d->strides[a] = stride;
    stride *= d->sizes[a];
  }
}

static void problem_init(problem *p, const fz_fusion *f, int64_t extent) {
  p->symbols[0] = p->symbols[1] = extent;
  p->in = calloc((size_t)f->num_inputs, sizeof *p->in);
  p->out = calloc((size_t)f->num_outputs, sizeof *p->out);
  ck_assert(p->in && p->out);
  for (int i = 0; i < f->num_inputs; i++)
    describe(f->inputs[i], p->symbols, &p->in[i]);
  for (int i = 0; i < f->num_outputs; i++)
    describe(f->outputs[i], p->symbols, &p->out[i]);
  p->pb = (fz_problem){.fusion = f, .inputs = p->in, .outputs = p->out,
                       .symbols = p->symbols,
                       .device = fz_device_info_default(90)};
}

static void problem_free(problem *p) {
  free(p->in);
  free(p->out);
}

/* Runs f on x = 1, -2, 3, -4, ... (every dimension EXTENT); the outputs
 * are returned concatenated, each EXTENT^rank floats, row-major. */
static float *interpret(const fz_fusion *f, float *x) {
  int rank = f->inputs[0]->type.rank;
  int64_t n = rank == 1 ? EXTENT : EXTENT * EXTENT;
  for (int64_t i = 0; i < n; i++)
    x[i] = (float)((i % 2 ? -1 : 1) * (i + 1));
  fz_host_tensor in = {.dtype = FZ_F32, .rank = rank, .data = x};
  for (int a = 0; a < rank; a++) {
    in.sizes[a] = EXTENT;
    in.strides[a] = a == rank - 1 ? 1 : EXTENT;
  }
  float *data = calloc((size_t)(f->num_outputs * n), sizeof *data);
  fz_host_tensor *out = calloc((size_t)f->num_outputs, sizeof *out);
  ck_assert(data && out);
  for (int j = 0; j < f->num_outputs; j++) {
    out[j] = in;
    out[j].data = data + (size_t)j * (size_t)n;
  }
  fz_error err = {0};
  ck_assert_msg(fz_interpret(f, &in, 1, out, f->num_outputs, &err) == FZ_OK,
                "interpreting: %s", err.message);
  free(out);
  return data;
}

static void run_pass(fz_fusion *f, const char *name) {
  fz_error err = {0};
  ck_assert_msg(fz_run_pass(f, name, &err) == FZ_OK, "%s: %s", name,
                err.message);
}

/* The whole fusion scheduled by `scheduler`, and one segment of it. */
static void check_whole(const fz_fusion *f, const char *scheduler) {
  problem p;
  problem_init(&p, f, 1 << 20);
  fz_arena *arena = fz_arena_create();
  fz_plan *plan = NULL;
  fz_error err = {0};
  ck_assert_msg(fz_schedule(&p.pb, arena, &plan, &err) == FZ_OK,
                "scheduling: %s", err.message);
  ck_assert_str_eq(fz_schedule_pick(&p.pb), scheduler);
  ck_assert_int_ge(plan->num_nodes, 2);
  fz_buf b = {0};
  fz_plan_print(plan, &b);
  char *text = fz_buf_take(&b);
  ck_assert_ptr_nonnull(text);
  free(text);
  ck_assert_ptr_nonnull(fz_plan_key(plan, arena));
  fz_segmentation *s = NULL;
  ck_assert_int_eq(fz_segment_fusion(&p.pb, &s, &err), FZ_OK);
  ck_assert_int_eq(s->num_segments, 1);
  ck_assert(!s->segments[0].owned);
  fz_segmentation_destroy(s);
  fz_arena_destroy(arena);
  problem_free(&p);
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_chain_passes_schedule_and_interpret) {
  fz_fusion *f = value_chain(OPS);
  ck_assert_int_ge(f->num_ops, OPS - 5);
  fz_error err = {0};
  ck_assert_msg(fz_verify(f, &err) == FZ_OK, "%s", err.message);
  char *text = fz_print(f);
  ck_assert_ptr_nonnull(text);
  free(text);
  float x[EXTENT];
  float *before = interpret(f, x);
  ck_assert(memcmp(before, x, sizeof x) == 0); /* the chain is the identity */

  int ops = f->num_ops, steps = ops / 5;
  run_pass(f, "canonicalize");
  /* sets folded, each step's second halving merged into the first */
  ck_assert_int_eq(f->num_ops, ops - 2 * steps);
  run_pass(f, "cse");
  run_pass(f, "alloc-order");
  float *after = interpret(f, x);
  ck_assert(memcmp(after, before, sizeof x) == 0);
  check_whole(f, "pointwise");
  free(before);
  free(after);
  fz_fusion_destroy(f);
}
END_TEST

/* A chain with nothing to fold, scheduled and interpreted as built. */
START_TEST(test_exp_chain) {
  fz_fusion *f = fz_fusion_create("exps");
  fz_type t = vector_type(f, 1);
  fz_value *v = fz_add_input(f, "x", &t);
  fz_error err = {0};
  for (int i = 0; i < OPS; i++)
    v = ok(fz_unary(f, FZ_OP_EXP, v, &err), &err);
  ck_assert_int_eq(fz_add_output(f, v, &err), FZ_OK);
  check_whole(f, "pointwise");
  float x[EXTENT];
  float *y = interpret(f, x);
  for (int i = 0; i < EXTENT; i++) /* exp(exp(...)) overflows */
    ck_assert_msg(y[i] > 1e38f, "element %d is %g", i, (double)y[i]);
  free(y);
  run_pass(f, "cse");
  ck_assert_int_eq(f->num_ops, OPS);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(test_permute_chain) {
  fz_fusion *f = permute_chain(OPS);
  fz_error err = {0};
  ck_assert_msg(fz_verify(f, &err) == FZ_OK, "%s", err.message);
  check_whole(f, "pointwise");
  float x[EXTENT * EXTENT];
  float *y = interpret(f, x); /* an even number of swaps */
  ck_assert(memcmp(y, x, sizeof x) == 0);
  free(y);
  run_pass(f, "canonicalize"); /* composes every pair of permutes */
  ck_assert_int_eq(f->num_ops, 0);
  fz_fusion_destroy(f);
}
END_TEST

/* Outputs beyond what one kernel's parameters can address: no scheduler
 * takes the fusion whole, and each segment's kernel fits. */
static void check_outputs_split(int outputs) {
  fz_fusion *f = many_outputs(outputs);
  run_pass(f, "canonicalize");
  run_pass(f, "cse");
  run_pass(f, "alloc-order");
  ck_assert_int_eq(f->num_ops, outputs);
  problem p;
  problem_init(&p, f, 1 << 20);
  fz_arena *arena = fz_arena_create();
  fz_plan *plan = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_schedule(&p.pb, arena, &plan, &err),
                   FZ_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(err.message, "bytes of kernel parameters"), "%s",
                err.message);
  fz_segmentation *s = NULL;
  ck_assert_msg(fz_segment_fusion(&p.pb, &s, &err) == FZ_OK, "%s",
                err.message);
  /* 169 outputs and x: 170 accesses of 3 parameters, and 2 more */
  int per = (FZ_MAX_PARAMS - 2) / 3 - 1;
  ck_assert_int_eq(s->num_segments, (outputs + per - 1) / per);
  bool *written = calloc((size_t)outputs, sizeof *written);
  ck_assert_ptr_nonnull(written);
  for (int k = 0; k < s->num_segments; k++) {
    const fz_segment *seg = &s->segments[k];
    fz_problem sp;
    fz_segment_problem(s, k, &p.pb, NULL, arena, &sp);
    if (fz_schedule(&sp, arena, &plan, &err) != FZ_OK)
      ck_abort_msg("segment %d: %s", k, err.message);
    if (fz_plan_num_params(plan) > FZ_MAX_PARAMS)
      ck_abort_msg("segment %d: %d parameters", k, fz_plan_num_params(plan));
    for (int j = 0; j < seg->fusion->num_outputs; j++) {
      fz_buffer_ref r = seg->outputs[j];
      if (r.kind != FZ_BUFFER_OUTPUT || written[r.index])
        ck_abort_msg("segment %d output %d: not a parent output written once",
                     k, j);
      written[r.index] = true;
    }
  }
  for (int j = 0; j < outputs; j++)
    if (!written[j])
      ck_abort_msg("output %d is not written", j);
  free(written);
  fz_segmentation_destroy(s);
  float x[EXTENT];
  float *y = interpret(f, x);
  for (int j = 0; j < outputs; j++)
    for (int i = 0; i < EXTENT; i++)
      if (y[(size_t)j * EXTENT + (size_t)i] != x[i] * (float)(j + 1))
        ck_abort_msg("output %d element %d", j, i);
  free(y);
  fz_arena_destroy(arena);
  problem_free(&p);
  fz_fusion_destroy(f);
}

START_TEST(test_outputs_100000) { check_outputs_split(OPS); }
END_TEST

START_TEST(test_outputs_4000) { check_outputs_split(4000); }
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("scale");
  TCase *chains = tcase_create("chains");
  tcase_set_timeout(chains, 600);
  tcase_add_test(chains, test_chain_passes_schedule_and_interpret);
  tcase_add_test(chains, test_exp_chain);
  tcase_add_test(chains, test_permute_chain);
  suite_add_tcase(s, chains);
  TCase *outputs = tcase_create("outputs");
  tcase_set_timeout(outputs, 600);
  tcase_add_test(outputs, test_outputs_100000);
  tcase_add_test(outputs, test_outputs_4000);
  suite_add_tcase(s, outputs);
  return s;
}

int main(void) { return test_run_suite(make()); }
