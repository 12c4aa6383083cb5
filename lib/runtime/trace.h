/* trace.h - the summary of a traced kernel's phase marks (trace.c;
 * fz_executor_last_trace in fz.h reads them back from a run). */
#ifndef FZ_RUNTIME_TRACE_H
#define FZ_RUNTIME_TRACE_H

#include "fz/fz.h"
#include "sched/plan.h"

/* Appends to out the summary of `words` (fz_trace's layout, plan.h) for
 * the first `blocks` blocks of a launch of `grid` blocks of `kernel`.
 * FZ_ERR_INTERNAL when no block recorded its start, or a mark precedes
 * every start (a record not from one launch). */
fz_status fz_trace_format(const uint64_t *words, int blocks, int grid,
                          const char *kernel, fz_buf *out, fz_error *err);

#endif
