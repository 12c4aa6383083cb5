/* trace.c - the phase marks of traced kernels (plan.h: trace_phases), read
 * back after a run and summarized.
 *
 * A traced kernel's module holds the global array fz_trace: two clocks
 * per block and mark (plan.h gives the layout). The summary lines the
 * blocks up by the global timer, from the first block's start, and gives
 * for each mark when the blocks reached it (min, median, max) and the
 * median span since the block's previous mark, in microseconds and in SM
 * cycles: the cycle counter is finer than the global timer, whose step
 * the summary also reports (the smallest difference it saw), so that a
 * reader knows how far to trust the microseconds.
 */
#include "runtime/trace.h"

#include "runtime/executor.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted in place); 0 for n == 0. */
static int64_t median(int64_t *v, int n) {
  if (n == 0)
    return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_i64);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t word(const uint64_t *w, int block, int mark, int clock) {
  return w[((size_t)block * FZ_TRACE_MARKS + (size_t)mark) * 2 + (size_t)clock];
}

/* The block's mark before `mark` that it recorded (FIRST_ROW is missing
 * in a block without rows), or -1. */
static int previous_mark(const uint64_t *w, int block, int mark) {
  for (int m = mark - 1; m >= 0; m--)
    if (word(w, block, m, 0))
      return m;
  return -1;
}

fz_status fz_trace_format(const uint64_t *words, int blocks, int grid,
                          const char *kernel, fz_buf *out, fz_error *err) {
  if (blocks < 1)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "a trace of no blocks");
  int64_t *v = malloc(sizeof *v * (size_t)blocks * 3);
  uint64_t *times = malloc(sizeof *times * (size_t)blocks * FZ_TRACE_MARKS);
  if (!v || !times) {
    free(v);
    free(times);
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  }
  int64_t *at = v, *span = v + blocks, *cycles = v + 2 * (size_t)blocks;
  uint64_t t0 = UINT64_MAX;
  int recorded = 0;
  for (int b = 0; b < blocks; b++)
    for (int m = 0; m < FZ_TRACE_MARKS; m++) {
      uint64_t t = word(words, b, m, 0);
      if (t) {
        times[recorded++] = t;
        if (m == FZ_TRACE_START && t < t0)
          t0 = t;
      }
    }
  fz_status st = FZ_OK;
  if (t0 == UINT64_MAX) {
    st = fz_error_set(err, FZ_ERR_INTERNAL,
                      "%s: no block recorded its start", kernel);
    goto done;
  }
  /* the timer's step: the smallest gap between two distinct readings */
  qsort(times, (size_t)recorded, sizeof *times, cmp_i64);
  uint64_t step = 0;
  for (int i = 1; i < recorded; i++) {
    uint64_t d = times[i] - times[i - 1];
    if (d && (!step || d < step))
      step = d;
  }
  fz_buf_printf(out,
                "trace %s: %d of %d blocks; us from the first block's "
                "start (global timer, step %" PRIu64 " ns seen); span: "
                "since the block's previous mark\n",
                kernel, blocks, grid, step);
  fz_buf_printf(out, "  %-13s %6s %9s %9s %9s %11s %13s\n", "mark", "blocks",
                "min", "median", "max", "span us", "span cycles");
  for (int m = 0; m < FZ_TRACE_MARKS; m++) {
    int n = 0, ns = 0;
    for (int b = 0; b < blocks; b++) {
      uint64_t t = word(words, b, m, 0);
      if (!t)
        continue;
      if (t < t0) { /* a stale or torn record: not from this launch */
        st = fz_error_set(err, FZ_ERR_INTERNAL,
                          "%s: block %d reached %s before any block started",
                          kernel, b, fz_trace_mark_name((fz_trace_mark)m));
        goto done;
      }
      at[n++] = (int64_t)(t - t0);
      int pm = previous_mark(words, b, m);
      if (pm >= 0) {
        span[ns] = (int64_t)(t - word(words, b, pm, 0));
        cycles[ns++] =
            (int64_t)(word(words, b, m, 1) - word(words, b, pm, 1));
      }
    }
    if (n == 0) {
      fz_buf_printf(out, "  %-13s %6d\n", fz_trace_mark_name((fz_trace_mark)m),
                    0);
      continue;
    }
    int64_t med_span = median(span, ns), med_cycles = median(cycles, ns);
    qsort(at, (size_t)n, sizeof *at, cmp_i64);
    fz_buf_printf(out, "  %-13s %6d %9.2f %9.2f %9.2f",
                  fz_trace_mark_name((fz_trace_mark)m), n, at[0] / 1e3,
                  (double)median(at, n) / 1e3, at[n - 1] / 1e3);
    if (ns)
      fz_buf_printf(out, " %11.2f %13" PRId64 "\n", (double)med_span / 1e3,
                    med_cycles);
    else
      fz_buf_printf(out, " %11s %13s\n", "-", "-");
  }
done:
  free(v);
  free(times);
  return st;
}

fz_status fz_executor_last_trace(fz_executor *ex, char **text,
                                 fz_error *err) {
  if (!text)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_last_trace: text is NULL");
  *text = NULL;
  if (!ex)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_last_trace: the executor is NULL");
  const signature_entry *e = ex->last;
  if (!e)
    return FZ_OK;
  fz_buf report = {0};
  fz_buf *out = &report;
  const fz_cuda *cu = ex->device->cu;
  fz_status st = FZ_OK;
  uint64_t *words = NULL; /* allocated, and the device waited for, once */
  for (int k = 0; k < e->num_launches && !st; k++) {
    const segment_launch *l = &e->launches[k];
    if (l->skip || !l->plan || !l->plan->trace_phases)
      continue;
    if (!words && (st = fz_device_synchronize(ex->device, err)))
      break;
    CUdeviceptr g = 0;
    size_t bytes = 0;
    size_t want = sizeof *words * FZ_TRACE_BLOCKS * FZ_TRACE_MARKS * 2;
    if ((st = FZ_CU(cu, err, cuModuleGetGlobal_v2, &g, &bytes,
                    l->kernel->module->handle, "fz_trace")))
      break;
    if (bytes != want) {
      st = fz_error_set(err, FZ_ERR_INTERNAL,
                        "kernel %s: fz_trace has %zu bytes, not %zu",
                        l->plan->kernel_name, bytes, want);
      break;
    }
    if (!words && !(words = malloc(want))) {
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    if ((st = FZ_CU(cu, err, cuMemcpyDtoH_v2, words, g, want)))
      break;
    int grid = (int)l->grid[0];
    int blocks = grid < FZ_TRACE_BLOCKS ? grid : FZ_TRACE_BLOCKS;
    st = fz_trace_format(words, blocks, grid, l->plan->kernel_name, out, err);
  }
  free(words);
  bool any = report.len > 0 || report.oom;
  char *s = fz_buf_take(&report);
  if (st || !any) {
    free(s);
    return st;
  }
  if (!s)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  *text = s;
  return FZ_OK;
}
