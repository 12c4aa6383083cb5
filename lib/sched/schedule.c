/* schedule.c - choose a scheduler for a fusion and one problem. Each
 * scheduler is asked in turn; the first that accepts builds the plan, and
 * when none does, the error lists every reason and points at the op the
 * first reason about one names. Reasons about the kind of fusion ("%s is
 * a reduction" from the pointwise and transpose schedulers, "fusion has no
 * reduction" from the reduction and persistent ones) point at no op: only
 * an op a scheduler fails on is a place to look.
 * Segmentation (segment.c) splits a fusion no scheduler takes whole.
 */
#include "sched/plan.h"

#include <stdio.h>

typedef struct scheduler {
  const char *name;
  bool (*can_schedule)(const fz_problem *, fz_reason *);
  fz_status (*schedule)(const fz_problem *, fz_arena *, fz_plan **,
                        fz_error *);
} scheduler;

/* Transpose before pointwise: it takes only pointwise fusions that change
 * layout, which pointwise would run with strided reads. */
static const scheduler schedulers[] = {
    {"transpose", fz_transpose_can_schedule, fz_transpose_schedule},
    {"pointwise", fz_pointwise_can_schedule, fz_pointwise_schedule},
    {"reduction", fz_reduction_can_schedule, fz_reduction_schedule},
    {"persistent", fz_persistent_can_schedule, fz_persistent_schedule},
};

fz_status fz_schedule(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_error *err) {
  char reasons[768] = "";
  size_t used = 0;
  fz_loc at = {0, 0};
  for (size_t i = 0; i < sizeof schedulers / sizeof schedulers[0]; i++) {
    fz_reason why = {0};
    if (schedulers[i].can_schedule(problem, &why))
      return schedulers[i].schedule(problem, arena, out, err);
    int n = snprintf(reasons + used, sizeof reasons - used, "%s%s: %s",
                     used ? "; " : "", schedulers[i].name, why.text);
    if (n > 0 && (size_t)n < sizeof reasons - used)
      used += (size_t)n;
    if (at.line == 0)
      at = why.loc;
  }
  return fz_error_at(err, at, FZ_ERR_UNSUPPORTED,
                     "no scheduler accepts fusion @%s (%s)",
                     problem->fusion->name, reasons);
}

void fz_schedule_explain(const fz_problem *problem, fz_buf *out) {
  for (size_t i = 0; i < sizeof schedulers / sizeof schedulers[0]; i++) {
    fz_reason why = {0};
    bool ok = schedulers[i].can_schedule(problem, &why);
    fz_buf_printf(out, "  %-11s %s%s%s\n", schedulers[i].name,
                  ok ? "accepts" : "rejects", ok ? "" : ": ", why.text);
  }
}

const char *fz_schedule_pick(const fz_problem *problem) {
  for (size_t i = 0; i < sizeof schedulers / sizeof schedulers[0]; i++) {
    fz_reason why = {0};
    if (schedulers[i].can_schedule(problem, &why))
      return schedulers[i].name;
  }
  return NULL;
}
