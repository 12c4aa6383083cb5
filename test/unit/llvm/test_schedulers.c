/* test_schedulers.c - each scheduler's one entry point, fz_<name>_try,
 * and the table built on it (schedule.c).
 *
 * A try either returns a plan of its kind, allocated in the arena it was
 * given, with no reason, or declines: no plan, a reason, and the location
 * of the op the reason is about (none for reasons about the kind of
 * fusion). fz_schedule, fz_schedule_first, fz_schedule_pick and
 * fz_schedule_explain must all tell the same story, since fuse-opt's
 * --explain, the segmenter and the executor each ask a different one.
 */
#include <stdlib.h>
#include <string.h>

#include "schedule_util.h"

typedef struct trial {
  const char *name; /* the fusion */
  const char *text;
  const char *binds;
} trial;

/* Each fits one of the outcomes below; lines count from "fusion". */
static const trial trials[] = {
    {"transpose", /* a materialised transpose */
     "fusion @transpose(%x: f32[256, 128]) {\n"
     "  %y = permute %x perm(1, 0) : f32[128, 256]\n"
     "  return %y\n"
     "}\n",
     NULL},
    {"exp", /* a pointwise op in one layout */
     "fusion @exp(%x: f32[64, 256]) {\n"
     "  %y = exp %x : f32[64, 256]\n"
     "  return %y\n"
     "}\n",
     NULL},
    {"merging_reshape", /* planned from the second reference candidate */
     "fusion @merging_reshape(%x: f32[2, 8, 5]) {\n"
     "  %r = reshape %x : f32[16, 5]\n"
     "  %y = exp %r : f32[16, 5]\n"
     "  return %y\n"
     "}\n",
     NULL},
    {"row_sum",
     "fusion @row_sum(%x: f32[64, 256]) {\n"
     "  %s = sum %x dims(1) : f32[64]\n"
     "  return %s\n"
     "}\n",
     NULL},
    {"softmax",
     "fusion @softmax(%x: f32[N, M]) {\n"
     "  %m = amax %x dims(1) keepdim : f32[N, b1]\n"
     "  %me = expand %m : f32[N, b1->M]\n"
     "  %d = sub %x, %me : f32[N, M]\n"
     "  %e = exp %d : f32[N, M]\n"
     "  %s = sum %e dims(1) keepdim : f32[N, b1]\n"
     "  %se = expand %s : f32[N, b1->M]\n"
     "  %y = div %e, %se : f32[N, M]\n"
     "  return %y\n"
     "}\n",
     "N=64,M=1024"},
    {"permuted_output", /* %z is contiguous along %y's outer axis */
     "fusion @permuted_output(%x: f32[64, 64]) {\n"
     "  %y = neg %x : f32[64, 64]\n"
     "  %z = permute %y perm(1, 0) : f32[64, 64]\n"
     "  return %y, %z\n"
     "}\n",
     NULL},
    {"two_spaces", /* %c has more elements than %a can index */
     "fusion @two_spaces(%x: f32[4]) {\n"
     "  %a = neg %x : f32[4]\n"
     "  %b = broadcast %a dims(0) : f32[b1, 4]\n"
     "  %c = expand %b : f32[b1->8, 4]\n"
     "  return %a, %c\n"
     "}\n",
     NULL},
    {"row_and_column_sums", /* a column reduction beside a row one */
     "fusion @row_and_column_sums(%x: f32[64, 256]) {\n"
     "  %a = sum %x dims(1) : f32[64]\n"
     "  %b = sum %x dims(0) : f32[256]\n"
     "  return %a, %b\n"
     "}\n",
     NULL},
    {"different_rows", /* both reduce the innermost axis, not alike */
     "fusion @different_rows(%x: f32[4, 8, 16]) {\n"
     "  %a = sum %x dims(2) : f32[4, 8]\n"
     "  %b = sum %x dims(1, 2) : f32[4]\n"
     "  return %a, %b\n"
     "}\n",
     NULL},
};

static const trial *find_trial(const char *name) {
  for (size_t i = 0; i < sizeof trials / sizeof trials[0]; i++)
    if (strcmp(trials[i].name, name) == 0)
      return &trials[i];
  ck_abort_msg("no trial %s", name);
  return NULL;
}

static void set_up(scheduled *s, const trial *t) {
  describe_problem(s, test_parse(t->text), t->binds);
}

/* ---- each try accepts what it can ------------------------------------- */

typedef struct acceptance {
  fz_scheduler_try try_plan;
  const char *trial;
  fz_plan_kind kind;
} acceptance;

static const acceptance acceptances[] = {
    {fz_transpose_try, "transpose", FZ_PLAN_TRANSPOSE},
    {fz_pointwise_try, "exp", FZ_PLAN_POINTWISE},
    {fz_pointwise_try, "permuted_output", FZ_PLAN_POINTWISE},
    {fz_pointwise_try, "merging_reshape", FZ_PLAN_POINTWISE},
    {fz_reduction_try, "row_sum", FZ_PLAN_INNER_REDUCTION},
    {fz_persistent_try, "softmax", FZ_PLAN_INNER_PERSISTENT},
    {fz_persistent_try, "row_and_column_sums",
     FZ_PLAN_INNER_OUTER_PERSISTENT},
};

START_TEST(try_returns_a_plan_for_what_it_accepts) {
  const acceptance *a = &acceptances[_i];
  scheduled s;
  set_up(&s, find_trial(a->trial));
  fz_plan *plan = NULL;
  fz_reason why = {.text = "stale", .loc = {9, 9}};
  ck_assert_msg(a->try_plan(&s.pb, s.arena, &plan, &why), "%s declined: %s",
                a->trial, why.text);
  ck_assert_ptr_nonnull(plan);
  ck_assert_int_eq(plan->kind, a->kind);
  ck_assert_str_eq(why.text, "");
  ck_assert_int_eq(why.loc.line, 0);
  scheduled_free(&s);
}
END_TEST

/* ---- and declines the rest with a reason and its place ---------------- */

typedef struct refusal {
  fz_scheduler_try try_plan;
  const char *trial;
  const char *reason; /* part of it */
  int line, col;      /* 0, 0: about the fusion, not an op */
} refusal;

static const refusal refusals[] = {
    {fz_transpose_try, "exp", "the canonical space is one axis", 0, 0},
    {fz_transpose_try, "permuted_output",
     "output %z is not contiguous along the reference's innermost axis", 3,
     3},
    {fz_transpose_try, "row_sum", "%s is a reduction", 0, 0},
    {fz_pointwise_try, "row_sum", "%s is a reduction", 0, 0},
    {fz_pointwise_try, "two_spaces",
     "output %c is not in the reference's iteration space", 4, 3},
    {fz_reduction_try, "exp", "fusion has no reduction", 0, 0},
    {fz_reduction_try, "row_and_column_sums",
     "reduction %b reduces other axes than the first reduction", 3, 3},
    {fz_persistent_try, "exp", "fusion has no reduction", 0, 0},
    {fz_persistent_try, "row_sum", "a plain reduction", 0, 0},
    {fz_persistent_try, "different_rows",
     "row reductions reduce different axes (%b)", 3, 3},
};

START_TEST(try_declines_with_a_located_reason) {
  const refusal *r = &refusals[_i];
  scheduled s;
  set_up(&s, find_trial(r->trial));
  static fz_plan stale;
  fz_plan *plan = &stale; /* must be cleared */
  fz_reason why = {.loc = {9, 9}};
  ck_assert_msg(!r->try_plan(&s.pb, s.arena, &plan, &why), "%s accepted",
                r->trial);
  ck_assert_ptr_null(plan);
  ck_assert_msg(strstr(why.text, r->reason), "%s: reason '%s', want '%s'",
                r->trial, why.text, r->reason);
  ck_assert_msg(why.loc.line == r->line && why.loc.col == r->col,
                "%s: reason at %d:%d, want %d:%d", r->trial, why.loc.line,
                why.loc.col, r->line, r->col);
  /* no reason wanted: the same verdict */
  plan = NULL;
  ck_assert(!r->try_plan(&s.pb, s.arena, &plan, NULL));
  ck_assert_ptr_null(plan);
  scheduled_free(&s);
}
END_TEST

/* ---- the table: one story for every question -------------------------- */

/* The scheduler fz_schedule_explain says accepts first, or NULL; and
 * every rejection line before it must carry the reason in why[]. */
static char *explained_first(const fz_problem *pb, const fz_reason *why) {
  fz_buf b = {0};
  fz_schedule_explain(pb, &b);
  char *text = fz_buf_take(&b);
  ck_assert_ptr_nonnull(text);
  char *first = NULL;
  int i = 0;
  for (char *line = strtok(text, "\n"); line && !first;
       line = strtok(NULL, "\n"), i++) {
    char name[32], verdict[16];
    ck_assert_int_eq(sscanf(line, " %31s %15s", name, verdict), 2);
    if (strcmp(verdict, "accepts") == 0) {
      first = malloc(strlen(name) + 1);
      ck_assert_ptr_nonnull(first);
      strcpy(first, name);
    } else {
      const char *rest = strstr(line, "rejects: ");
      ck_assert_ptr_nonnull(rest);
      ck_assert_str_eq(rest + strlen("rejects: "), why[i].text);
    }
  }
  free(text);
  return first;
}

START_TEST(schedule_pick_first_and_explain_agree) {
  const trial *t = &trials[_i];
  scheduled s;
  set_up(&s, t);
  fz_reason why[FZ_NUM_SCHEDULERS];
  memset(why, 0, sizeof why);
  fz_plan *first_plan = NULL;
  const char *first = fz_schedule_first(&s.pb, s.arena, &first_plan, why);
  const char *pick = fz_schedule_pick(&s.pb);
  char *explained = explained_first(&s.pb, why);
  fz_plan *plan = NULL;
  fz_error err = {0};
  fz_status st = fz_schedule(&s.pb, s.arena, &plan, &err);
  if (first) {
    ck_assert_ptr_nonnull(first_plan);
    ck_assert_str_eq(pick, first);
    ck_assert_str_eq(explained, first);
    ck_assert_msg(st == FZ_OK, "%s: %s", t->name, err.message);
    ck_assert_str_eq(fz_plan_key(plan, s.arena),
                     fz_plan_key(first_plan, s.arena));
  } else {
    ck_assert_ptr_null(first_plan);
    ck_assert_ptr_null(pick);
    ck_assert_ptr_null(explained);
    ck_assert_int_eq(st, FZ_ERR_UNSUPPORTED);
    ck_assert_ptr_null(plan);
    char reasons[FZ_SCHEDULE_REASONS_CHARS];
    fz_schedule_reasons(why, reasons, sizeof reasons);
    ck_assert_msg(strstr(err.message, reasons), "%s: '%s' lacks '%s'",
                  t->name, err.message, reasons);
    fz_loc at = {0, 0};
    for (int i = 0; i < FZ_NUM_SCHEDULERS && at.line == 0; i++)
      at = why[i].loc;
    ck_assert_int_eq(err.line, at.line);
    ck_assert_int_eq(err.col, at.col);
  }
  free(explained);
  scheduled_free(&s);
}
END_TEST

/* What the table answers for the trials, so that the agreement above is
 * checked for acceptance and for refusal alike. */
START_TEST(table_answers) {
  static const struct {
    const char *trial, *scheduler;
  } answers[] = {
      {"transpose", "transpose"},
      {"exp", "pointwise"},
      {"row_sum", "reduction"},
      {"softmax", "persistent"},
      {"permuted_output", "pointwise"},
      {"merging_reshape", "pointwise"},
      {"two_spaces", NULL},
      {"row_and_column_sums", "persistent"},
      {"different_rows", NULL},
  };
  for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
    scheduled s;
    set_up(&s, find_trial(answers[i].trial));
    const char *pick = fz_schedule_pick(&s.pb);
    if (answers[i].scheduler)
      ck_assert_str_eq(pick, answers[i].scheduler);
    else
      ck_assert_msg(!pick, "%s: %s accepts", answers[i].trial, pick);
    scheduled_free(&s);
  }
}
END_TEST

/* The reasons in fz_schedule's error: "name: why; name: why" in table
 * order, the error located at the first reason about an op. */
START_TEST(error_lists_every_reason_at_the_first_located_one) {
  scheduled s;
  set_up(&s, find_trial("different_rows"));
  fz_plan *plan = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_schedule(&s.pb, s.arena, &plan, &err),
                   FZ_ERR_UNSUPPORTED);
  ck_assert_str_eq(err.message,
                   "no scheduler accepts fusion @different_rows (transpose: "
                   "%a is a reduction; pointwise: %a is a reduction; "
                   "reduction: reduction %b reduces other axes than the "
                   "first reduction; persistent: row reductions reduce "
                   "different axes (%b); multipass: the persistent "
                   "scheduler declines it, not for its row length)");
  ck_assert_int_eq(err.line, 3);
  ck_assert_int_eq(err.col, 3);
  scheduled_free(&s);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("schedulers");
  TCase *tc = tcase_create("try");
  tcase_add_loop_test(tc, try_returns_a_plan_for_what_it_accepts, 0,
                      (int)(sizeof acceptances / sizeof acceptances[0]));
  tcase_add_loop_test(tc, try_declines_with_a_located_reason, 0,
                      (int)(sizeof refusals / sizeof refusals[0]));
  suite_add_tcase(s, tc);
  TCase *table = tcase_create("table");
  tcase_add_loop_test(table, schedule_pick_first_and_explain_agree, 0,
                      (int)(sizeof trials / sizeof trials[0]));
  tcase_add_test(table, table_answers);
  tcase_add_test(table, error_lists_every_reason_at_the_first_located_one);
  suite_add_tcase(s, table);
  return s;
}

int main(void) { return test_run_suite(make()); }
