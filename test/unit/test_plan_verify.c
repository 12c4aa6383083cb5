/* test_plan_verify.c - fz_plan_verify: plans the schedulers build pass,
 * and each rule of plan.h broken on purpose (in a plan written by hand or
 * in a scheduled plan changed afterwards) is refused as an internal error
 * whose message names the node or access and the rule. */
#include <stdlib.h>
#include <string.h>

#include "llvm/schedule_util.h"
#include "test_fusions.h"

/* ---- plans by hand ------------------------------------------------------- */

static const int64_t EXTENTS[2] = {1024, 1024};
static const int64_t ROW_MAJOR[2] = {1024, 1};

typedef struct hand_plan {
  fz_plan p;
  fz_plan_access acc[3];
  fz_plan_node nodes[5];
} hand_plan;

/* out = a + b on [1024, 1024] f32, 4 lanes per group */
static void build_add(hand_plan *h) {
  memset(h, 0, sizeof *h);
  h->p = (fz_plan){.kind = FZ_PLAN_POINTWISE,
                   .kernel_name = "fz_test_kernel",
                   .rank = 2,
                   .vector = 4,
                   .unroll = 2,
                   .threads = 256,
                   .blocks = 132,
                   .index32 = true,
                   .num_accesses = 3,
                   .accesses = h->acc,
                   .num_nodes = 4,
                   .nodes = h->nodes};
  memcpy(h->p.extents, EXTENTS, sizeof EXTENTS);
  for (int i = 0; i < 3; i++) {
    h->acc[i] = (fz_plan_access){.is_output = i == 2,
                                 .io = i == 2 ? 0 : i,
                                 .dtype = FZ_F32,
                                 .vector = 4};
    memcpy(h->acc[i].strides, ROW_MAJOR, sizeof ROW_MAJOR);
  }
  h->nodes[0] = (fz_plan_node){.kind = FZ_NODE_LOAD, .dtype = FZ_F32};
  h->nodes[1] =
      (fz_plan_node){.kind = FZ_NODE_LOAD, .dtype = FZ_F32, .access = 1};
  h->nodes[2] = (fz_plan_node){.kind = FZ_NODE_OP,
                               .code = FZ_OP_ADD,
                               .dtype = FZ_F32,
                               .num_operands = 2,
                               .operands = {0, 1}};
  h->nodes[3] = (fz_plan_node){.kind = FZ_NODE_STORE,
                               .dtype = FZ_F32,
                               .num_operands = 1,
                               .operands = {2},
                               .access = 2};
}

/* The plan is refused as internal, with every needle in the message. */
static void refused(const fz_plan *p, const char *needle, const char *needle2) {
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(p, &err), FZ_ERR_INTERNAL);
  ck_assert_int_eq(err.status, FZ_ERR_INTERNAL);
  ck_assert_msg(strncmp(err.message, "plan: ", 6) == 0, "message: %s",
                err.message);
  ck_assert_msg(strstr(err.message, needle), "no \"%s\" in: %s", needle,
                err.message);
  ck_assert_msg(!needle2 || strstr(err.message, needle2), "no \"%s\" in: %s",
                needle2, err.message);
}

static void verifies(const fz_plan *p) {
  fz_error err = {0};
  ck_assert_msg(fz_plan_verify(p, &err) == FZ_OK, "%s", err.message);
}

START_TEST(hand_built_pointwise_verifies) {
  hand_plan h;
  build_add(&h);
  verifies(&h.p);
}
END_TEST

START_TEST(no_plan_is_an_argument_error) {
  fz_error err = {0};
  ck_assert_int_eq(fz_plan_verify(NULL, &err), FZ_ERR_ARGUMENT);
}
END_TEST

START_TEST(operand_out_of_range) {
  hand_plan h;
  build_add(&h);
  h.nodes[2].operands[1] = 7;
  refused(&h.p, "node n2: operand 1 (n7) is not an earlier value node", NULL);
}
END_TEST

START_TEST(operand_later_than_its_reader) {
  hand_plan h;
  build_add(&h);
  h.nodes[2].operands[0] = 2;
  refused(&h.p, "node n2: operand 0 (n2)", "not an earlier value node");
}
END_TEST

START_TEST(operand_is_a_store) {
  hand_plan h;
  build_add(&h);
  h.nodes[3].operands[0] = 2;
  h.p.num_nodes = 5;
  h.nodes[4] = h.nodes[3];
  h.nodes[4].operands[0] = 3; /* the store before it */
  refused(&h.p, "node n4: operand 0 (n3)", "not an earlier value node");
}
END_TEST

START_TEST(load_from_an_output_access) {
  hand_plan h;
  build_add(&h);
  h.nodes[1].access = 2;
  refused(&h.p, "node n1: load through a2, not an input access", NULL);
}
END_TEST

START_TEST(store_through_an_input_access) {
  hand_plan h;
  build_add(&h);
  h.nodes[3].access = 0;
  refused(&h.p, "node n3: store through a0, not an output access", NULL);
}
END_TEST

START_TEST(access_out_of_range) {
  hand_plan h;
  build_add(&h);
  h.nodes[0].access = 3;
  refused(&h.p, "node n0: load through a3", NULL);
}
END_TEST

START_TEST(reduce_node_in_a_pointwise_plan) {
  hand_plan h;
  build_add(&h);
  h.nodes[2] = (fz_plan_node){.kind = FZ_NODE_REDUCE,
                              .code = FZ_OP_SUM,
                              .dtype = FZ_F32,
                              .num_operands = 1,
                              .operands = {0}};
  refused(&h.p, "node n2: a reduction in a pointwise plan", NULL);
}
END_TEST

START_TEST(reduction_as_a_pointwise_op) {
  hand_plan h;
  build_add(&h);
  h.nodes[2].code = FZ_OP_SUM;
  h.nodes[2].num_operands = 1;
  refused(&h.p, "node n2: sum is not a pointwise op", NULL);
}
END_TEST

START_TEST(op_with_the_wrong_arity) {
  hand_plan h;
  build_add(&h);
  h.nodes[2].num_operands = 1;
  refused(&h.p, "node n2: add takes 2 operands, not 1", NULL);
}
END_TEST

START_TEST(store_without_its_operand) {
  hand_plan h;
  build_add(&h);
  h.nodes[3].num_operands = 0;
  refused(&h.p, "store n3 has 0 operands, not 1", NULL);
}
END_TEST

START_TEST(vector_along_a_strided_axis) {
  hand_plan h;
  build_add(&h);
  h.acc[0].strides[1] = 2;
  refused(&h.p, "access a0 is a vector of 4 but its innermost stride is 2",
          NULL);
}
END_TEST

START_TEST(access_vector_wider_than_the_plan) {
  hand_plan h;
  build_add(&h);
  h.acc[1].vector = 8;
  refused(&h.p, "access a1 has vector 8 in a plan of 4 lanes", NULL);
}
END_TEST

START_TEST(unknown_kind_and_bad_launch_shape) {
  hand_plan h;
  build_add(&h);
  h.p.kind = (fz_plan_kind)42;
  refused(&h.p, "unknown plan kind 42", NULL);
  build_add(&h);
  h.p.unroll = FZ_PLAN_MAX_UNROLL + 1;
  refused(&h.p, "launch shape vector 4 unroll 65", NULL);
  build_add(&h);
  h.p.rank = 0;
  refused(&h.p, "rank 0", NULL);
}
END_TEST

/* ---- scheduled plans, broken afterwards ---------------------------------- */

static const char *ROW_SUM = "fusion @rs(%x: f32[M, N]) {\n"
                             "  %s = sum %x dims(1) : f32[M]\n"
                             "  %m = mul %s, 0.25 : f32[M]\n"
                             "  return %m\n"
                             "}\n";

static const char *SOFTMAX = FZ_TEST_SOFTMAX("softmax", "f32");
static const char *SOFTMAX_BF16 = FZ_TEST_SOFTMAX("softmax", "bf16");

static const char *BATCH_NORM = "fusion @bn(%x: f32[M, C], %w: f32[C]) {\n"
                                "  %s = sum %x dims(0) keepdim : f32[b1, C]\n"
                                "  %m = mul %s, 1.220703125e-4 : f32[b1, C]\n"
                                "  %me = expand %m : f32[b1->M, C]\n"
                                "  %xc = sub %x, %me : f32[M, C]\n"
                                "  %sq = mul %xc, %xc : f32[M, C]\n"
                                "  %v = sum %sq dims(0) keepdim : f32[b1, C]\n"
                                "  %r = rsqrt %v : f32[b1, C]\n"
                                "  %re = expand %r : f32[b1->M, C]\n"
                                "  %xh = mul %xc, %re : f32[M, C]\n"
                                "  %wb = broadcast %w dims(0) : f32[b1, C]\n"
                                "  %we = expand %wb : f32[b1->M, C]\n"
                                "  %y = mul %xh, %we : f32[M, C]\n"
                                "  return %y, %m\n"
                                "}\n";

static const char *RMS_NORM = "fusion @rms(%x: f32[M, N], %w: f32[N]) {\n"
                              "  %sq = mul %x, %x : f32[M, N]\n"
                              "  %s = sum %sq dims(1) keepdim : f32[M, b1]\n"
                              "  %r = rsqrt %s : f32[M, b1]\n"
                              "  %re = expand %r : f32[M, b1->N]\n"
                              "  %xn = mul %x, %re : f32[M, N]\n"
                              "  %wb = broadcast %w dims(0) : f32[b1, N]\n"
                              "  %we = expand %wb : f32[b1->M, N]\n"
                              "  %y = mul %xn, %we : f32[M, N]\n"
                              "  return %y\n"
                              "}\n";

static const char *PERMUTE_2D = "fusion @t(%x: f32[M, N]) {\n"
                                "  %y = permute %x perm(1, 0) : f32[N, M]\n"
                                "  return %y\n"
                                "}\n";

static int find_node(const fz_plan *p, fz_node_kind kind, int nth) {
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == kind && nth-- == 0)
      return i;
  ck_abort_msg("no such node");
  return -1;
}

START_TEST(scheduled_plans_verify) {
  static const struct {
    const char **text, *binds;
    fz_plan_kind kind;
  } fusions[] = {{&ROW_SUM, "M=4096,N=4096", FZ_PLAN_INNER_REDUCTION},
                 {&SOFTMAX, "M=64,N=1000", FZ_PLAN_INNER_PERSISTENT},
                 {&BATCH_NORM, "M=8192,C=256", FZ_PLAN_OUTER_PERSISTENT},
                 {&PERMUTE_2D, "M=1000,N=777", FZ_PLAN_TRANSPOSE}};
  for (size_t i = 0; i < sizeof fusions / sizeof fusions[0]; i++) {
    scheduled s;
    fz_plan *p = schedule(&s, *fusions[i].text, fusions[i].binds);
    ck_assert_int_eq(p->kind, fusions[i].kind);
    verifies(p);
    scheduled_free(&s);
  }
}
END_TEST

START_TEST(pre_node_reading_a_post_node) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=1024");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_REDUCTION);
  int mul = find_node(p, FZ_NODE_OP, 0);
  p->nodes[mul].space = FZ_SPACE_FULL;
  char want[64];
  snprintf(want, sizeof want,
           "node n%d (full space) reads n%d of the other space", mul,
           p->nodes[mul].operands[0]);
  refused(p, want, NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(reduce_node_of_the_wrong_domain) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=1024");
  int r = find_node(p, FZ_NODE_REDUCE, 0);
  p->nodes[r].space = FZ_SPACE_FULL;
  char want[80];
  snprintf(want, sizeof want,
           "reduce n%d must turn a full-space value into a row value", r);
  refused(p, want, NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(reduction_whose_innermost_axis_is_kept) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=1024");
  p->kind = FZ_PLAN_OUTER_REDUCTION;
  refused(p, "an outer reduction whose innermost axis is reduced", NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(reduction_block_not_a_power_of_two) {
  scheduled s;
  fz_plan *p = schedule(&s, ROW_SUM, "M=4096,N=1024");
  p->block_x = 24;
  p->threads = 24 * p->block_y;
  refused(p, "reduction block 24x", NULL);
  scheduled_free(&s);
}
END_TEST

/* Softmax: the sum's round is 2 (it reads exp(x - max), ready in round
 * 1); made round 1, it would read a value of its own round. */
START_TEST(row_reduce_of_its_operands_phase) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  int sum = find_node(p, FZ_NODE_REDUCE, 1);
  ck_assert_int_eq(p->nodes[sum].phase, 2);
  p->nodes[sum].phase = 1;
  char want[64];
  snprintf(want, sizeof want, "row reduce n%d of phase 1 reads n%d of phase 1",
           sum, p->nodes[sum].operands[0]);
  refused(p, want, NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(node_reading_a_later_phase) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  int store = find_node(p, FZ_NODE_STORE, 0);
  ck_assert_int_eq(p->nodes[store].phase, 2);
  p->nodes[store].phase = 1;
  char want[64];
  snprintf(want, sizeof want, "node n%d of phase 1 reads n%d of phase 2", store,
           p->nodes[store].operands[0]);
  refused(p, want, NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(phase_beyond_the_plans_rounds) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  p->nodes[0].phase = p->phases + 1;
  refused(p, "node n0 has phase 3 of 2", NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(column_reduce_in_an_inner_plan) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  int max = find_node(p, FZ_NODE_REDUCE, 0);
  p->nodes[max].space = FZ_SPACE_COLUMN;
  char want[64];
  snprintf(want, sizeof want, "column reduce n%d in an inner plan", max);
  refused(p, want, NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(row_store_varying_along_the_row) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  int store = find_node(p, FZ_NODE_STORE, 0);
  p->nodes[store].space = FZ_SPACE_ROW;
  char want[64];
  snprintf(want, sizeof want, "row node n%d: a%d varies along a row", store,
           p->nodes[store].access);
  refused(p, want, NULL);
  scheduled_free(&s);
}
END_TEST

/* Softmax: x - max moved to the row space would be a row value computed
 * from x, which varies along the row. */
START_TEST(row_node_of_values_varying_along_the_row) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  int sub = find_node(p, FZ_NODE_OP, 0);
  ck_assert_int_eq(p->nodes[sub].code, FZ_OP_SUB);
  p->nodes[sub].space = FZ_SPACE_ROW;
  char want[80];
  snprintf(want, sizeof want,
           "row node n%d depends on values that vary along a row", sub);
  refused(p, want, NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(row_axes_that_are_not_the_reduced_axes) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX, "M=64,N=1000");
  ck_assert_int_eq(p->rank, 2);
  ck_assert(p->reduced[1] && p->row_axes[1]);
  ck_assert(!p->reduced[0] && !p->row_axes[0]);
  p->row_axes[0] = true;
  refused(p, "axis 0 is kept, and a row of an inner plan spans it", NULL);
  scheduled_free(&s);
}
END_TEST

/* An outer plan's rows span the kept axes; reduced[] still says what the
 * fusion reduces. */
START_TEST(outer_rows_span_the_kept_axes) {
  scheduled s;
  fz_plan *p = schedule(&s, BATCH_NORM, "M=8192,C=256");
  ck_assert_int_eq(p->rank, 2);
  ck_assert(p->reduced[0] && !p->reduced[1]);
  ck_assert(!p->row_axes[0] && p->row_axes[1]);
  ck_assert_int_eq(fz_plan_rows(p), 8192);
  ck_assert_int_eq(fz_plan_row_points(p), 256);
  ck_assert_int_eq(fz_plan_kept_points(p), 256);
  p->row_axes[0] = true;
  p->row_axes[1] = false;
  refused(p, "a persistent row must be innermost", NULL);
  scheduled_free(&s);
}
END_TEST

/* Rows held in shared memory (24 rows of 4 lanes a thread): an outer
 * plan's, whose held input moves in whole 16-byte cp.async pieces; not
 * an x read in pieces of one lane, nor a pointwise plan. */
START_TEST(rows_held_in_shared_memory) {
  scheduled s;
  fz_plan *p = schedule(&s, BATCH_NORM, "M=25088,C=256");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_PERSISTENT);
  ck_assert(p->held_shared);
  verifies(p);
  int x = p->nodes[find_node(p, FZ_NODE_LOAD, 0)].access;
  ck_assert(fz_plan_held_in_shared(p, x));
  p->accesses[x].vector = 1;
  refused(p, "rows held in shared memory on an outer plan",
          "whole 4-, 8- or 16-byte pieces");
  scheduled_free(&s);
  hand_plan h;
  build_add(&h);
  h.p.held_shared = true;
  refused(&h.p, "rows held in shared memory on a plan that is not persistent",
          NULL);
}
END_TEST

/* A weight row loaded before the last row combine: on an inner
 * persistent plan that reads one and reduces its rows, in neither a
 * multipass walk nor a cluster's rows. */
START_TEST(weights_loaded_early) {
  scheduled s;
  fz_plan *p = schedule(&s, RMS_NORM, "M=4096,N=1024");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  ck_assert(fz_plan_has_weight_row(p));
  p->weights_early = true;
  verifies(p);
  fz_plan saved = *p;
  p->multipass = true;
  refused(p, "weights loaded early by a plan that walks its rows in passes",
          NULL);
  *p = saved;
  p->cluster = 2;
  refused(p, "weights loaded early by a plan that shares rows across a "
             "cluster",
          NULL);
  *p = saved;
  p->phases = 0;
  refused(p, "weights loaded early by a plan that has no row reduction", NULL);
  scheduled_free(&s);
  p = schedule(&s, SOFTMAX, "M=64,N=1000");
  ck_assert(!fz_plan_has_weight_row(p));
  p->weights_early = true;
  refused(p, "weights loaded early by a plan that loads no weight row", NULL);
  scheduled_free(&s);
  p = schedule(&s, BATCH_NORM, "M=8192,C=256");
  p->weights_early = true;
  refused(p, "weights loaded early by a plan that is not an inner persistent",
          NULL);
  scheduled_free(&s);
}
END_TEST

/* bf16 rows loaded again after each row combine: a persistent plan of
 * rows that reads bf16 rows straight from memory, not a multipass walk. */
START_TEST(bf16_rows_loaded_again) {
  scheduled s;
  fz_plan *p = schedule(&s, SOFTMAX_BF16, "M=64,N=1000");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_PERSISTENT);
  ck_assert(fz_plan_has_refetchable_bf16(p));
  p->refetch_bf16 = true;
  verifies(p);
  p->multipass = true;
  refused(p, "bf16 inputs loaded again after row combines by a plan that "
             "walks its rows in passes",
          NULL);
  scheduled_free(&s);
  p = schedule(&s, SOFTMAX, "M=64,N=1000");
  ck_assert(!fz_plan_has_refetchable_bf16(p));
  p->refetch_bf16 = true;
  refused(p, "a plan that reads no bf16 input straight from memory", NULL);
  scheduled_free(&s);
  p = schedule(&s, BATCH_NORM, "M=8192,C=256");
  p->refetch_bf16 = true;
  refused(p, "bf16 inputs loaded again after row combines by a plan that "
             "holds its rows",
          NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(row_node_in_a_pointwise_plan) {
  hand_plan h;
  build_add(&h);
  h.nodes[2].space = FZ_SPACE_ROW;
  refused(&h.p, "node n2 is outside the full space of a pointwise plan", NULL);
}
END_TEST

/* Batch norm: the variance (a column reduction of round 2) reads x - mean
 * of round 1; a column reduction reads exactly the round before its own. */
START_TEST(column_reduce_in_its_operands_round) {
  scheduled s;
  fz_plan *p = schedule(&s, BATCH_NORM, "M=8192,C=256");
  ck_assert_int_eq(p->kind, FZ_PLAN_OUTER_PERSISTENT);
  int var = find_node(p, FZ_NODE_REDUCE, 1);
  int operand = p->nodes[var].operands[0];
  ck_assert_int_eq(p->nodes[var].phase, 2);
  ck_assert_int_eq(p->nodes[operand].phase, 1);
  p->nodes[var].phase = 1;
  char want[80];
  snprintf(want, sizeof want,
           "column reduce n%d of phase 1 reads n%d of phase 1", var, operand);
  refused(p, want, NULL);
  scheduled_free(&s);
}
END_TEST

/* Row sums used back in the row and a column sum: an inner-outer plan
 * whose column partials meet in clusters of 2 (sm_90). */
static const char *ROWS_AND_COLUMNS = FZ_TEST_ROWS_AND_COLUMNS("rc");

START_TEST(column_cluster_rules) {
  scheduled s;
  setenv("FZ_INNER_OUTER_CLUSTER", "2", 1); /* off by default */
  fz_plan *p = schedule(&s, ROWS_AND_COLUMNS, "M=4096,N=2048");
  unsetenv("FZ_INNER_OUTER_CLUSTER");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_OUTER_PERSISTENT);
  ck_assert_int_eq(p->column_cluster, 2);
  ck_assert_int_ge(p->column_chunk, 1);
  verifies(p);
  fz_plan saved = *p;
  p->column_cluster = 3;
  refused(p, "column partials combined in clusters of 3 blocks", NULL);
  *p = saved;
  p->column_cluster = 16;
  refused(p, "clusters of 16 blocks", NULL);
  *p = saved;
  p->grid_x = 263;
  refused(p, "grid 263", NULL);
  *p = saved;
  p->cooperative = false;
  refused(p, "not cooperative", NULL);
  *p = saved;
  p->cluster = 2;
  refused(p, "row cluster 2", NULL);
  *p = saved;
  p->block_x = 16;
  p->block_y = p->threads / 16;
  refused(p, "block 16x", NULL);
  *p = saved;
  p->column_chunk = p->persistent + 1;
  refused(p, "column exchange chunks", NULL);
  *p = saved;
  p->column_chunk = 0;
  refused(p, "column exchange chunks of 0 groups", NULL);
  *p = saved;
  scheduled_free(&s);
  /* on another kind of plan */
  p = schedule(&s, SOFTMAX, "M=64,N=1000");
  p->column_cluster = 2;
  p->column_chunk = 1;
  refused(p, "on a non-inner-outer plan", NULL);
  scheduled_free(&s);
}
END_TEST

/* Phase marks: placed in the inner-outer kernel's phases only. */
START_TEST(phases_traced) {
  scheduled s;
  setenv("FZ_TRACE", "phases", 1); /* off by default */
  fz_plan *p = schedule(&s, ROWS_AND_COLUMNS, "M=4096,N=2048");
  unsetenv("FZ_TRACE");
  ck_assert_int_eq(p->kind, FZ_PLAN_INNER_OUTER_PERSISTENT);
  ck_assert(p->trace_phases);
  verifies(p);
  scheduled_free(&s);
  p = schedule(&s, ROWS_AND_COLUMNS, "M=4096,N=2048");
  ck_assert_int_eq(p->column_parts, 1);
  p->column_parts = 3;
  refused(p, "3 warps a column group in the final pass (1, 2 or 4)", NULL);
  scheduled_free(&s);
  p = schedule(&s, SOFTMAX, "M=64,N=1000");
  ck_assert(!p->trace_phases);
  p->trace_phases = true;
  refused(p, "phases traced by a plan that is not an inner-outer one", NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(tiled_output) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  ck_assert_int_eq(p->kind, FZ_PLAN_TRANSPOSE);
  ((bool *)p->tiled)[1] = true;
  refused(p, "tiled access a1 must be an input", NULL);
  scheduled_free(&s);
}
END_TEST

START_TEST(transpose_without_tiles) {
  scheduled s;
  fz_plan *p = schedule(&s, PERMUTE_2D, "M=1000,N=777");
  ((bool *)p->tiled)[0] = false;
  refused(p, "a transpose plan without tiled accesses", NULL);
  scheduled_free(&s);
}
END_TEST

/* A RANDOM node draws rand or randn in a float dtype from two i64 nodes. */
START_TEST(random_node_rules) {
  static const char *text = "fusion @r(%seed: i64, %x: f32[M, N]) {\n"
                            "  %u = rand %seed, 3 : f32[M, N]\n"
                            "  %y = mul %x, %u : f32[M, N]\n"
                            "  %s = sum %y dims(1) : f32[M]\n"
                            "  return %s\n"
                            "}\n";
  scheduled s;
  fz_plan *p = schedule(&s, text, "M=64,N=1000");
  verifies(p);
  int r = find_node(p, FZ_NODE_RANDOM, 0);
  ck_assert_int_ge(r, 0);
  fz_plan_node kept = p->nodes[r];
  p->nodes[r].code = FZ_OP_ADD;
  refused(p, "is not rand or randn", NULL);
  p->nodes[r] = kept;
  p->nodes[r].dtype = FZ_I32;
  refused(p, "is not a float with 2 operands", NULL);
  p->nodes[r] = kept;
  p->nodes[kept.operands[1]].dtype = FZ_I32;
  refused(p, "operand 1", "is not an i64");
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("plan_verify");
  TCase *hand = tcase_create("by_hand");
  tcase_add_test(hand, hand_built_pointwise_verifies);
  tcase_add_test(hand, no_plan_is_an_argument_error);
  tcase_add_test(hand, operand_out_of_range);
  tcase_add_test(hand, operand_later_than_its_reader);
  tcase_add_test(hand, operand_is_a_store);
  tcase_add_test(hand, load_from_an_output_access);
  tcase_add_test(hand, store_through_an_input_access);
  tcase_add_test(hand, access_out_of_range);
  tcase_add_test(hand, reduce_node_in_a_pointwise_plan);
  tcase_add_test(hand, reduction_as_a_pointwise_op);
  tcase_add_test(hand, op_with_the_wrong_arity);
  tcase_add_test(hand, store_without_its_operand);
  tcase_add_test(hand, vector_along_a_strided_axis);
  tcase_add_test(hand, access_vector_wider_than_the_plan);
  tcase_add_test(hand, unknown_kind_and_bad_launch_shape);
  tcase_add_test(hand, row_node_in_a_pointwise_plan);
  suite_add_tcase(s, hand);

  TCase *sched = tcase_create("scheduled");
  tcase_add_test(sched, scheduled_plans_verify);
  tcase_add_test(sched, pre_node_reading_a_post_node);
  tcase_add_test(sched, reduce_node_of_the_wrong_domain);
  tcase_add_test(sched, reduction_whose_innermost_axis_is_kept);
  tcase_add_test(sched, reduction_block_not_a_power_of_two);
  tcase_add_test(sched, row_reduce_of_its_operands_phase);
  tcase_add_test(sched, node_reading_a_later_phase);
  tcase_add_test(sched, phase_beyond_the_plans_rounds);
  tcase_add_test(sched, column_reduce_in_an_inner_plan);
  tcase_add_test(sched, row_store_varying_along_the_row);
  tcase_add_test(sched, row_node_of_values_varying_along_the_row);
  tcase_add_test(sched, row_axes_that_are_not_the_reduced_axes);
  tcase_add_test(sched, outer_rows_span_the_kept_axes);
  tcase_add_test(sched, rows_held_in_shared_memory);
  tcase_add_test(sched, weights_loaded_early);
  tcase_add_test(sched, bf16_rows_loaded_again);
  tcase_add_test(sched, column_reduce_in_its_operands_round);
  tcase_add_test(sched, column_cluster_rules);
  tcase_add_test(sched, phases_traced);
  tcase_add_test(sched, tiled_output);
  tcase_add_test(sched, transpose_without_tiles);
  tcase_add_test(sched, random_node_rules);
  suite_add_tcase(s, sched);
  return s;
}

int main(void) { return test_run_suite(make()); }
