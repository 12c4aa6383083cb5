/* run.h - one fusion on the GPU: random inputs in their declared layouts,
 * poisoned outputs, the executor, comparison with the interpreter, and
 * timing. fuse-run's file mode and --random mode both go through it. */
#ifndef FZ_FUSE_RUN_RUN_H
#define FZ_FUSE_RUN_RUN_H

#include "fz/ir.h"

typedef struct run_config {
  const char *file;    /* the fusion's file, for messages; NULL: none */
  int iters, warmup;   /* timing runs; iters 0: no timing */
  int64_t offset, pad; /* inputs shifted by offset elements, gaps of pad */
  bool print_plan, print_ptx;
  bool validate;       /* compare with the interpreter */
  double rtol, atol;   /* < 0: by dtype */
  /* --random: each element's tolerance also grows with its output's
   * largest reference value (see run.c), a fusion the executor reports
   * FZ_ERR_UNSUPPORTED for (no scheduler takes it, not even in segments)
   * is RUN_DECLINED instead of failed, and messages go to `log` instead
   * of stdout/stderr when it is not NULL. */
  bool scale_tolerance;
  bool check_schedule;
  fz_buf *log;
  /* --expect-layout: output expect_output[k] must be allocated (by
   * fz_executor_output_layout) densely in allocation order expect_order[k]
   * (outermost first), else the run fails. */
  int num_expect;
  int expect_output[8];
  int expect_rank[8];
  int expect_order[8][FZ_MAX_RANK];
} run_config;

enum { RUN_PASSED = 0, RUN_FAILED = 1, RUN_DECLINED = 3 };

/* An error (not a parse error, whose message is located already) as
 * fuse-run prints it: "FILE:LINE:COL: error: MESSAGE" when it points at an
 * op of `file`, else "fuse-run: MESSAGE". */
void run_error_text(const char *file, const fz_error *err, char *buf,
                    size_t size);

/* Runs f (verified; symbols bound, f->num_symbols values) on dev with
 * inputs drawn from `seed`. Prints what fuse-run prints for a file:
 * mismatches, one line per output, "fuse-run: FAILED (seed S)" or the
 * time and "fuse-run: PASSED". Returns RUN_*. */
int run_fusion(fz_device *dev, const fz_fusion *f, const int64_t *symbols,
               uint64_t seed, const run_config *c);

#endif
