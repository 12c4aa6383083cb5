/* schedule.c - the scheduler table, and choosing a scheduler for a fusion
 * and one problem. Each scheduler is asked in turn through its one entry
 * point (fz_<name>_try, plan.h); the first that accepts has built the
 * plan, which fz_plan_verify checks (plan_verify.c), and when none does,
 * the error lists every reason and points at
 * the op the first reason about one names. Reasons about the kind of
 * fusion ("%s is a reduction" from the pointwise and transpose schedulers,
 * "fusion has no reduction" from the reduction and persistent ones) point
 * at no op: only an op a scheduler fails on is a
 * place to look. Segmentation (segment.c) splits a fusion no scheduler
 * takes whole.
 *
 * Every attempt runs in a scratch arena: a declined attempt's memory is
 * freed at once (fz_schedule_first empties one arena for the next
 * attempt), and the accepted plan joins the caller's arena
 * (fz_arena_absorb) without being built a second time.
 */
#include "sched/plan.h"

#include <stdio.h>

typedef struct scheduler {
  const char *name;
  fz_scheduler_try try_plan;
} scheduler;

/* Transpose before pointwise: it takes only pointwise fusions that change
 * layout, which pointwise would run with strided reads. */
static const scheduler schedulers[] = {
    /* fz_schedule_first asks these two together (pointwise_pair) */
    {"transpose", fz_transpose_try},
    {"pointwise", fz_pointwise_try},
    {"reduction", fz_reduction_try},
    {"persistent", fz_persistent_try},
    /* only what persistent declines for its row length */
    {"multipass", fz_multipass_try},
};
_Static_assert(sizeof schedulers / sizeof schedulers[0] == FZ_NUM_SCHEDULERS,
               "FZ_NUM_SCHEDULERS counts the table");

/* Scheduler i's attempt in a scratch arena; an accepted plan is moved
 * into `keep` (NULL: freed). */
static bool attempt(int i, const fz_problem *problem, fz_arena *keep,
                    fz_plan **out, fz_reason *why) {
  fz_arena *scratch = fz_arena_create();
  fz_plan *plan = NULL;
  bool ok = schedulers[i].try_plan(problem, scratch, &plan, why);
  if (ok && keep) {
    fz_arena_absorb(keep, scratch);
    *out = plan;
  } else {
    fz_arena_destroy(scratch);
  }
  return ok;
}

/* The same in *scratch, which a declined attempt leaves empty for the
 * next (its memory stays with it instead of going back to malloc) and an
 * accepted one hands to `keep` (then *scratch is NULL). */
static bool attempt_in(int i, const fz_problem *problem, fz_arena **scratch,
                       fz_arena *keep, fz_plan **out, fz_reason *why) {
  fz_plan *plan = NULL;
  bool ok = schedulers[i].try_plan(problem, *scratch, &plan, why);
  if (ok && keep) {
    fz_arena_absorb(keep, *scratch);
    *scratch = NULL;
    *out = plan;
  } else {
    fz_arena_reset(*scratch);
  }
  return ok;
}

/* The first two schedulers of the table, transpose and pointwise: the
 * transpose scheduler starts from the pointwise plan (transpose.c), so
 * asking it builds the plan the pointwise scheduler builds next when it
 * declines. Here that plan is built once, and the transpose plan made
 * from it in the same scratch arena (its nodes are the pointwise plan's;
 * a declined transpose plan is a few hundred bytes left beside the
 * pointwise plan); verdicts and reasons are those of asking the two in
 * turn. Returns the index of the one that accepts, or -1. */
static int pointwise_pair(const fz_problem *problem, fz_arena **scratch_in,
                          fz_arena *keep, fz_plan **out, fz_reason *why) {
  fz_arena *scratch = *scratch_in;
  fz_plan *pw = NULL, *tp = NULL;
  fz_reason pw_why;
  bool pw_ok = fz_pointwise_try(problem, scratch, &pw, why ? &pw_why : NULL);
  if (why)
    why[0] = pw_why; /* the transpose scheduler's, when pointwise declines */
  int first = -1;
  if (pw_ok && fz_transpose_from_pointwise(problem, pw, scratch, &tp,
                                           why ? &why[0] : NULL))
    first = 0;
  else if (pw_ok)
    first = 1;
  if (why && first != 0)
    why[1] = pw_why;
  if (first < 0 || !keep) {
    fz_arena_reset(scratch);
    return first;
  }
  fz_arena_absorb(keep, scratch);
  *scratch_in = NULL;
  *out = first == 0 ? tp : pw;
  return first;
}

/* The attempts share a memo (dag.h): the maps one scheduler finds from a
 * reference, the next finds there (a normalization's maps were found by
 * the reduction scheduler before the persistent one builds its plan). */
const char *fz_schedule_first(const fz_problem *problem, fz_arena *arena,
                              fz_plan **out,
                              fz_reason why[FZ_NUM_SCHEDULERS]) {
  _Static_assert(FZ_NUM_SCHEDULERS > 2, "transpose, pointwise, ...");
  fz_problem shared = *problem;
  if (!shared.memo)
    fz_sched_memo_begin(&shared.memo);
  /* one scratch arena, emptied after each declined attempt */
  fz_arena *scratch = fz_arena_create();
  int first = pointwise_pair(&shared, &scratch, arena, out, why);
  for (int i = 2; i < FZ_NUM_SCHEDULERS && first < 0; i++)
    if (attempt_in(i, &shared, &scratch, arena, out, why ? &why[i] : NULL))
      first = i;
  fz_arena_destroy(scratch);
  if (!problem->memo)
    fz_sched_memo_end(shared.memo);
  return first < 0 ? NULL : schedulers[first].name;
}

void fz_schedule_reasons(const fz_reason why[FZ_NUM_SCHEDULERS], char *out,
                         size_t n) {
  size_t used = 0;
  if (n)
    out[0] = 0;
  for (int i = 0; i < FZ_NUM_SCHEDULERS && used < n; i++) {
    int w = snprintf(out + used, n - used, "%s%s: %s", i ? "; " : "",
                     schedulers[i].name, why[i].text);
    used = w < 0 ? n : used + (size_t)w;
  }
}

fz_status fz_schedule(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_error *err) {
  fz_reason why[FZ_NUM_SCHEDULERS];
  *out = NULL;
  const char *name = fz_schedule_first(problem, arena, out, why);
  if (name) {
    /* A plan that breaks plan.h's rules is the scheduler's bug: an
     * internal error here rather than a kernel lowering would refuse or
     * miscompile. */
    fz_error bad = {0};
    if (fz_plan_verify(*out, &bad) == FZ_OK)
      return FZ_OK;
    *out = NULL;
    return fz_error_at(err, fz_error_loc(&bad), FZ_ERR_INTERNAL,
                       "the %s scheduler built an invalid plan for @%s: %s",
                       name, problem->fusion->name, bad.message);
  }
  char reasons[FZ_SCHEDULE_REASONS_CHARS];
  fz_schedule_reasons(why, reasons, sizeof reasons);
  fz_loc at = {0, 0};
  for (int i = 0; i < FZ_NUM_SCHEDULERS && at.line == 0; i++)
    at = why[i].loc;
  return fz_error_at(err, at, FZ_ERR_UNSUPPORTED,
                     "no scheduler accepts fusion @%s (%s)",
                     problem->fusion->name, reasons);
}

void fz_schedule_explain(const fz_problem *problem, fz_buf *out) {
  for (int i = 0; i < FZ_NUM_SCHEDULERS; i++) {
    fz_reason why;
    bool ok = attempt(i, problem, NULL, NULL, &why);
    fz_buf_printf(out, "  %-11s %s%s%s\n", schedulers[i].name,
                  ok ? "accepts" : "rejects", ok ? "" : ": ", ok ? "" : why.text);
  }
}

const char *fz_schedule_pick(const fz_problem *problem) {
  return fz_schedule_first(problem, NULL, NULL, NULL);
}
