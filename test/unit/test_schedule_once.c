/* test_schedule_once.c - asking the scheduler table once gives what
 * asking each scheduler alone gives.
 *
 * fz_schedule_first shares work between the attempts on one problem: the
 * transpose plan is made from the pointwise plan built once for both, and
 * the maps found from a reference are found once for every scheduler that
 * starts from it (dag.h, fz_sched_memo). Neither may change an answer:
 * for every fusion of test/gpu and bench/fusions at a few sizes and for
 * 300 random fusions, the scheduler that accepts, its whole plan (printed
 * with sizes, strides and grid) and the reasons of those that decline
 * before it are those of calling each fz_<name>_try in table order on a
 * problem without a memo. Asked without reasons, as the executor asks
 * (a scheduler may then reach its verdict by a shorter way: the reduction
 * scheduler declines a normalization before building nodes), the table
 * gives the same scheduler and plan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing/random.h"
#include "test_util.h"

static const struct {
  const char *name;
  fz_scheduler_try try_plan;
} table[FZ_NUM_SCHEDULERS] = {
    {"transpose", fz_transpose_try}, {"pointwise", fz_pointwise_try},
    {"reduction", fz_reduction_try}, {"persistent", fz_persistent_try},
    {"multipass", fz_multipass_try},
};

static char *printed(const fz_plan *p) {
  fz_buf b = {0};
  fz_plan_print(p, &b);
  char *text = fz_buf_take(&b);
  ck_assert_ptr_nonnull(text);
  return text;
}

typedef struct tally {
  int problems, accepted, declined_some;
  int by[FZ_NUM_SCHEDULERS]; /* plans each scheduler made */
} tally;

static void check_problem(const char *what, const fz_problem *pb, tally *t) {
  fz_arena *arena = fz_arena_create();
  fz_reason why[FZ_NUM_SCHEDULERS];
  memset(why, 0, sizeof why);
  fz_plan *plan = NULL;
  const char *name = fz_schedule_first(pb, arena, &plan, why);
  ck_assert_msg(pb->memo == NULL, "%s: the caller's problem got a memo", what);
  int expected = -1;
  fz_plan *alone = NULL;
  for (int i = 0; i < FZ_NUM_SCHEDULERS && expected < 0; i++) {
    fz_reason w;
    fz_plan *p = NULL;
    if (table[i].try_plan(pb, arena, &p, &w)) {
      expected = i;
      alone = p;
      break;
    }
    t->declined_some++;
    ck_assert_msg(strcmp(w.text, why[i].text) == 0 &&
                      w.loc.line == why[i].loc.line &&
                      w.loc.col == why[i].loc.col,
                  "%s: %s declines with '%s' alone, '%s' in the table", what,
                  table[i].name, w.text, why[i].text);
  }
  t->problems++;
  if (expected < 0) {
    ck_assert_msg(name == NULL, "%s: %s accepts in the table only", what,
                  name);
    ck_assert_ptr_null(plan);
  } else {
    t->accepted++;
    t->by[expected]++;
    ck_assert_msg(name && strcmp(name, table[expected].name) == 0,
                  "%s: %s accepts alone, %s in the table", what,
                  table[expected].name, name ? name : "none");
    char *a = printed(alone), *b = printed(plan);
    ck_assert_msg(strcmp(a, b) == 0, "%s: alone\n%s\nin the table\n%s", what,
                  a, b);
    free(a);
    free(b);
  }
  /* asked without reasons (the executor's question, where schedulers
   * take shortcuts to their verdicts): the same answer */
  fz_plan *quiet = NULL;
  const char *quiet_name = fz_schedule_first(pb, arena, &quiet, NULL);
  const char *pick = fz_schedule_pick(pb);
  ck_assert_msg((quiet_name == NULL) == (expected < 0) &&
                    (pick == NULL) == (expected < 0),
                "%s: without reasons %s accepts", what,
                quiet_name ? quiet_name : "none");
  if (expected >= 0) {
    ck_assert_str_eq(quiet_name, table[expected].name);
    ck_assert_str_eq(pick, table[expected].name);
    char *a = printed(alone), *b = printed(quiet);
    ck_assert_msg(strcmp(a, b) == 0, "%s: alone\n%s\nwithout reasons\n%s",
                  what, a, b);
    free(a);
    free(b);
  }
  fz_arena_destroy(arena);
}

/* The problem of f at these symbols, tensors dense in their layouts. */
static void check_fusion(const char *what, const fz_fusion *f,
                         const int64_t *symbols, tally *t) {
  fz_tensor_desc in[64], out[64];
  if (f->num_inputs > 64 || f->num_outputs > 64)
    return;
  for (int i = 0; i < f->num_inputs; i++)
    test_dense_desc(f->inputs[i], symbols, &in[i]);
  for (int i = 0; i < f->num_outputs; i++)
    test_dense_desc(f->outputs[i], symbols, &out[i]);
  fz_problem pb = {.fusion = f, .inputs = in, .outputs = out,
                   .symbols = symbols, .device = fz_device_info_default(90)};
  check_problem(what, &pb, t);
}

static void check_file(const char *file, fz_fusion *f, void *ctx) {
  static const int64_t sizes[][2] = {{8, 8}, {1000, 700}, {37, 4100}, {4096, 96}};
  int64_t values[64];
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    if (f->num_symbols <= 64 &&
        test_bind_symbols(f, sizes[s][0], sizes[s][1], values))
      check_fusion(file, f, values, ctx);
}

START_TEST(table_once_answers_as_each_alone) {
  tally t = {0};
  test_each_fusion_file("test/gpu", check_file, &t);
  test_each_fusion_file("bench/fusions", check_file, &t);
  for (uint64_t seed = 1; seed <= 300; seed++) {
    fz_random_options o = {.allow_reductions = seed % 2 == 0};
    fz_fusion *f = fz_random_fusion(seed, &o);
    ck_assert_ptr_nonnull(f);
    int64_t values[64] = {0};
    char what[64];
    snprintf(what, sizeof what, "random fusion %llu",
             (unsigned long long)seed);
    if (f->num_symbols <= 64) {
      fz_random_bindings(f, seed, &o, values);
      check_fusion(what, f, values, &t);
    }
    fz_fusion_destroy(f);
  }
  /* acceptance by every scheduler and refusal both checked */
  ck_assert_int_gt(t.problems, 800);
  ck_assert_int_gt(t.accepted, 600);
  ck_assert_int_gt(t.problems - t.accepted, 20);
  ck_assert_int_gt(t.declined_some, 600);
  for (int i = 0; i < FZ_NUM_SCHEDULERS; i++)
    ck_assert_msg(t.by[i] > 0, "no plan of the %s scheduler", table[i].name);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("schedule_once");
  TCase *t = tcase_create("schedule_once");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, table_once_answers_as_each_alone);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return test_run_suite(make()); }
