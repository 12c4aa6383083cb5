/* latency.c - how long fz takes to get a new kernel running (JIT latency)
 * and what each launch of a compiled one costs the host.
 *
 *   latency [--reps R] [--calls N] [--seed000 FILE]
 *
 * Cold: for each workload (a pointwise chain, a row sum, seed 000's layer
 * norm backward), R times: parse the text, canonicalize, make a fresh
 * executor and run it once (schedule, lower to LLVM IR, O3, PTX,
 * cuModuleLoadData, launch), then synchronize. The PTX disk cache is
 * switched off (FZ_CACHE_DIR=off, set here) and every executor is new, so
 * each measurement compiles from scratch; the median is reported. The
 * same path is then taken apart stage by stage through the internal calls
 * the executor makes (parse, schedule, lower, O3, PTX emission, module
 * load), also medians, so that a slow total says which stage is slow. The
 * very first compile of the process (LLVM's target set-up, libdevice read
 * from disk) is reported on its own line and kept out of the medians.
 *
 * Warm: one executor, compiled once, run on tensors of 1024 elements with
 * the same shapes and buffers every call, on a stream of its own. Host time
 * per call is measured in batches smaller than the driver's launch queue,
 * with a synchronize between batches that is not timed: otherwise, once
 * the queue is full, each call would wait for the GPU and the figure would
 * be the kernels' time, not the host's. "with sync" is the wall time of N
 * back-to-back calls and one final synchronize, divided by N. An empty
 * kernel launched straight through cuLaunchKernel (fz_module_launch) gives
 * the driver's own floor for comparison.
 *
 * It uses lib/'s internal headers (plan, lowering, NVPTX, runtime) for the
 * stage split, as the tools do. Linked to the static libfz it times
 * lowering, O3 and PTX emission apart; linked to libfz.so (FZ_TOOLS_SHARED,
 * FZ_LATENCY_SHARED defined), where LLVM's C API is inside the library and
 * hidden, it times the three as one stage (fz_compile_plan, without the
 * disk cache).
 *
 * Without a GPU the host stages (everything but the module load) are still
 * measured and printed, then it exits 77 (skipped).
 */
#include "fz/fz.h"
#include "fz/ir.h"
#ifndef FZ_LATENCY_SHARED
#include "lower/lower.h"
#include "nvptx/nvptx.h"
#endif
#include "codegen/codegen.h"
#include "runtime/cuda.h"
#include "sched/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_SKIP = 77 };
enum { MAX_REPS = 1000, MAX_TENSORS = 16, BATCH = 250 };

/* ---- workloads ----------------------------------------------------------- */

typedef struct workload {
  const char *name;
  const char *text; /* NULL: read from `path` */
  const char *path;
  const char *sizes; /* SYM=N,... for the fusion's symbols */
} workload;

static const char POINTWISE[] =
    "fusion @pointwise(%x: f32[N], %y: f32[N]) {\n"
    "  %a = mul %x, 2.0 : f32[N]\n"
    "  %b = add %a, %y : f32[N]\n"
    "  %g = gelu %b : f32[N]\n"
    "  %t = tanh %g : f32[N]\n"
    "  return %t\n"
    "}\n";

static const char ROW_SUM[] = "fusion @row_sum(%x: f32[M, N]) {\n"
                              "  %s = sum %x dims(1) : f32[M]\n"
                              "  return %s\n"
                              "}\n";

static const char AXPB[] = "fusion @axpb(%x: f32[N]) {\n"
                           "  %a = mul %x, 2.0 : f32[N]\n"
                           "  %b = add %a, 1.0 : f32[N]\n"
                           "  return %b\n"
                           "}\n";

/* ---- small helpers ------------------------------------------------------- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  if (n <= 0)
    return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf)
    buf[n] = 0;
  fclose(f);
  return buf;
}

/* The value of symbol `name` in "A=1,B=2"; -1 when absent. */
static int64_t size_of(const char *sizes, const char *name) {
  size_t len = strlen(name);
  for (const char *p = sizes; p && *p;) {
    if (strncmp(p, name, len) == 0 && p[len] == '=')
      return strtoll(p + len + 1, NULL, 10);
    p = strchr(p, ',');
    if (p)
      p++;
  }
  return -1;
}

static unsigned alignment_of(uint64_t ptr) {
  unsigned a = 16;
  while (a > 1 && ptr % a)
    a /= 2;
  return a;
}

static void describe(fz_tensor_desc *d, const fz_device_tensor *t) {
  /* Without a GPU there is no pointer: the allocator's 256 bytes. */
  *d = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank,
                        .align = t->data ? alignment_of(t->data) : 16};
  memcpy(d->sizes, t->sizes, sizeof d->sizes);
  memcpy(d->strides, t->strides, sizeof d->strides);
}

static size_t tensor_bytes(const fz_device_tensor *t) {
  size_t n = 1;
  for (int k = 0; k < t->rank; k++)
    n *= (size_t)t->sizes[k];
  return n * fz_dtype_size(t->dtype);
}

static void row_major(fz_device_tensor *t) {
  int64_t stride = 1;
  for (int k = t->rank - 1; k >= 0; k--) {
    t->strides[k] = stride;
    stride *= t->sizes[k] > 1 ? t->sizes[k] : 1;
  }
}

/* ---- one workload's tensors ---------------------------------------------- */

typedef struct bound {
  fz_fusion *fusion; /* canonicalized, kept for the run */
  int num_in, num_out;
  fz_device_tensor in[MAX_TENSORS], out[MAX_TENSORS];
  fz_bindings symbols;
} bound;

static fz_status parse(const char *name, const char *text, fz_fusion **out,
                       fz_error *err) {
  fz_status st = fz_parse(name, text, strlen(text), out, err);
  if (st == FZ_OK && (st = fz_run_pass(*out, "canonicalize", err)) != FZ_OK) {
    fz_fusion_destroy(*out);
    *out = NULL;
  }
  return st;
}

/* Parses the workload, sizes its inputs from its symbol table (row-major,
 * dense) and, with a device, allocates and zeroes them and the outputs in
 * the layout the executor asks for. */
static fz_status bind_workload(const workload *w, const char *text,
                               fz_device *dev, bound *b, fz_error *err) {
  memset(b, 0, sizeof *b);
  fz_status st = parse(w->name, text, &b->fusion, err);
  if (st != FZ_OK)
    return st;
  b->num_in = fz_fusion_num_inputs(b->fusion);
  b->num_out = fz_fusion_num_outputs(b->fusion);
  if (b->num_in > MAX_TENSORS || b->num_out > MAX_TENSORS)
    return fz_error_set(err, FZ_ERR_UNSUPPORTED, "too many tensors");
  fz_host_tensor host[MAX_TENSORS];
  for (int i = 0; i < b->num_in; i++) {
    fz_value *v = fz_fusion_input(b->fusion, i);
    fz_device_tensor *t = &b->in[i];
    t->dtype = fz_value_dtype(v);
    t->rank = fz_value_rank(v);
    for (int k = 0; k < t->rank; k++) {
      int64_t extent;
      const char *sym;
      bool bcast;
      if ((st = fz_value_axis(b->fusion, v, k, &extent, &sym, &bcast, err)))
        return st;
      if (extent == FZ_EXTENT_SYMBOL) {
        extent = sym ? size_of(w->sizes, sym) : -1;
        if (extent < 0)
          return fz_error_set(err, FZ_ERR_ARGUMENT,
                              "%s: no size for input %d axis %d", w->name, i,
                              k);
      }
      t->sizes[k] = extent;
    }
    row_major(t);
    host[i] = (fz_host_tensor){.dtype = t->dtype, .rank = t->rank};
    memcpy(host[i].sizes, t->sizes, sizeof t->sizes);
    memcpy(host[i].strides, t->strides, sizeof t->strides);
  }
  if ((st = fz_bind_inputs(b->fusion, host, b->num_in, &b->symbols, err)))
    return st;
  fz_executor *ex = NULL;
  if (dev && (st = fz_executor_create(b->fusion, dev, &ex, err)))
    return st;
  for (int i = 0; i < b->num_out && st == FZ_OK; i++) {
    fz_device_tensor *t = &b->out[i];
    if (ex) {
      st = fz_executor_output_layout(ex, b->in, b->num_in, i, t, err);
    } else {
      fz_value *v = fz_fusion_output(b->fusion, i);
      *t = (fz_device_tensor){.dtype = fz_value_dtype(v),
                              .rank = fz_value_rank(v)};
      st = fz_output_sizes(b->fusion, i, &b->symbols, t->sizes, err);
      row_major(t);
    }
  }
  fz_executor_destroy(ex);
  for (int i = 0; dev && i < b->num_in + b->num_out && st == FZ_OK; i++) {
    fz_device_tensor *t = i < b->num_in ? &b->in[i] : &b->out[i - b->num_in];
    size_t bytes = tensor_bytes(t);
    st = fz_device_memory_alloc(dev, bytes ? bytes : 1, &t->data, err);
    if (st == FZ_OK)
      st = fz_device_memset8(dev, t->data, 0, bytes ? bytes : 1, err);
  }
  return st;
}

static void unbind(fz_device *dev, bound *b) {
  for (int i = 0; dev && i < b->num_in; i++)
    fz_device_memory_free(dev, b->in[i].data, NULL);
  for (int i = 0; dev && i < b->num_out; i++)
    fz_device_memory_free(dev, b->out[i].data, NULL);
  fz_bindings_free(&b->symbols);
  fz_fusion_destroy(b->fusion);
}

/* ---- cold: the whole path, and the path stage by stage ------------------- */

/* Parse to first launch, synchronized: what a framework waits for the
 * first time it meets a fusion. */
static fz_status cold_total(const workload *w, const char *text,
                            fz_device *dev, CUstream stream, bound *b,
                            double *seconds, fz_error *err) {
  double t0 = now_s();
  fz_fusion *f = NULL;
  fz_executor *ex = NULL;
  fz_status st = parse(w->name, text, &f, err);
  if (st == FZ_OK)
    st = fz_executor_create(f, dev, &ex, err);
  if (st == FZ_OK)
    st = fz_executor_run(ex, b->in, b->num_in, b->out, b->num_out, stream,
                         err);
  if (st == FZ_OK)
    st = fz_device_stream_synchronize(dev, stream, err);
  *seconds = now_s() - t0;
  fz_executor_destroy(ex);
  fz_fusion_destroy(f);
  return st;
}

#ifdef FZ_LATENCY_SHARED
enum { ST_PARSE, ST_SCHEDULE, ST_COMPILE, ST_LOAD, NUM_STAGES };
static const char *const STAGE_NAMES[NUM_STAGES] = {
    "parse+canon", "schedule", "lower+O3+PTX", "load"};
#else
enum { ST_PARSE, ST_SCHEDULE, ST_LOWER, ST_OPT, ST_PTX, ST_LOAD, NUM_STAGES };
static const char *const STAGE_NAMES[NUM_STAGES] = {
    "parse+canon", "schedule", "lower", "O3", "PTX", "load"};
#endif

/* One pass through the stages the executor runs for a new signature,
 * each timed: parse and canonicalize, fz_schedule, fz_lower_plan,
 * fz_nvptx_optimize, fz_nvptx_emit (or the last three as fz_compile_plan),
 * fz_module_load (with a device). */
static fz_status cold_stages(const workload *w, const char *text,
                             fz_device *dev, const bound *b,
                             double t[NUM_STAGES], fz_error *err) {
  fz_fusion *f = NULL;
  fz_arena *arena = NULL;
#ifdef FZ_LATENCY_SHARED
  fz_kernel_code code = {0};
#else
  LLVMContextRef ctx = NULL;
  LLVMModuleRef module = NULL;
#endif
  char *ptx = NULL;
  fz_module *mod = NULL;
  for (int s = 0; s < NUM_STAGES; s++)
    t[s] = 0;

  double t0 = now_s();
  fz_status st = parse(w->name, text, &f, err);
  t[ST_PARSE] = now_s() - t0;
  if (st != FZ_OK)
    goto done;

  fz_tensor_desc in[MAX_TENSORS], out[MAX_TENSORS];
  for (int i = 0; i < b->num_in; i++)
    describe(&in[i], &b->in[i]);
  for (int i = 0; i < b->num_out; i++)
    describe(&out[i], &b->out[i]);
  fz_device_info info = fz_device_info_default(90);
  if (dev) {
    const fz_device_props *p = fz_device_get_props(dev);
    info = (fz_device_info){.sm = p->sm,
                            .num_sms = p->sm_count,
                            .max_threads_per_block = p->max_threads_per_block,
                            .max_shared_per_block = p->max_shared_per_block,
                            .l2_bytes = p->l2_bytes};
  }
  fz_problem problem = {.fusion = f, .inputs = in, .outputs = out,
                        .symbols = b->symbols.values, .device = info};
  fz_plan *plan = NULL;
  arena = fz_arena_create();
  t0 = now_s();
  st = fz_schedule(&problem, arena, &plan, err);
  t[ST_SCHEDULE] = now_s() - t0;
  if (st != FZ_OK)
    goto done;

  /* As the executor compiles: sm_90 at most, O3, libdevice when called. */
#ifdef FZ_LATENCY_SHARED
  fz_compile_options opts = fz_codegen_options(info.sm);
  opts.use_cache = false;
  t0 = now_s();
  st = fz_compile_plan(plan, &opts, &code, err);
  t[ST_COMPILE] = now_s() - t0;
  ptx = code.ptx;
#else
  fz_nvptx_init();
  fz_compile_options co = fz_codegen_options(info.sm);
  fz_nvptx_options nv = {.sm = co.sm, .opt_level = co.opt_level};
  ctx = LLVMContextCreate();
  t0 = now_s();
  st = fz_lower_plan(plan, ctx, &module, &nv.link_libdevice, err);
  t[ST_LOWER] = now_s() - t0;
  if (st != FZ_OK)
    goto done;
  t0 = now_s();
  st = fz_nvptx_optimize(module, &nv, err);
  t[ST_OPT] = now_s() - t0;
  if (st != FZ_OK)
    goto done;
  t0 = now_s();
  st = fz_nvptx_emit(module, &nv, &ptx, err);
  t[ST_PTX] = now_s() - t0;
#endif
  if (st != FZ_OK || !dev)
    goto done;
  t0 = now_s();
  st = fz_module_load(dev, ptx, plan->kernel_name, &mod, err);
  t[ST_LOAD] = now_s() - t0;

done:
  fz_module_unload(mod);
#ifdef FZ_LATENCY_SHARED
  fz_kernel_code_free(&code);
#else
  free(ptx);
  if (module)
    LLVMDisposeModule(module);
  if (ctx)
    LLVMContextDispose(ctx);
#endif
  fz_arena_destroy(arena);
  fz_fusion_destroy(f);
  return st;
}

static int run_cold(const workload *ws, int num_ws, fz_device *dev,
                    CUstream stream, int reps, const char *seed000) {
  fz_error err = {0};
  printf("\n## Cold compile (FZ_CACHE_DIR=off, fresh executor each time, "
         "median of %d)\n\n",
         reps);
  printf("| kernel | total ms |");
  for (int s = 0; s < NUM_STAGES; s++)
    printf(" %s |", STAGE_NAMES[s]);
  printf("\n|---|---|");
  for (int s = 0; s < NUM_STAGES; s++)
    printf("---|");
  printf("\n");
  int rc = 0;
  bool first = true;
  for (int wi = 0; wi < num_ws; wi++) {
    const workload *w = &ws[wi];
    char *owned = NULL;
    const char *text = w->text;
    if (!text) {
      const char *path = seed000 ? seed000 : w->path;
      text = owned = read_file(path);
      if (!text) {
        fprintf(stderr, "latency: cannot read %s (pass --seed000 FILE)\n",
                path);
        rc = EXIT_FAIL;
        continue;
      }
    }
    bound b;
    double stage[NUM_STAGES][MAX_REPS], total[MAX_REPS];
    double one[NUM_STAGES] = {0};
    fz_status st = bind_workload(w, text, dev, &b, &err);
    if (st == FZ_OK && first) {
      /* The process's first compile pays for LLVM's set-up and reading
       * libdevice: reported once, then out of the medians. */
      double s = 0;
      if (dev)
        st = cold_total(w, text, dev, stream, &b, &s, &err);
      else {
        double t0 = now_s();
        st = cold_stages(w, text, NULL, &b, one, &err);
        s = now_s() - t0;
      }
      if (st == FZ_OK) {
        printf("| (first compile in the process: %s) | %.1f |", w->name,
               1e3 * s);
        for (int k = 0; k < NUM_STAGES; k++)
          printf(" |");
        printf("\n");
      }
      first = false;
    }
    for (int r = 0; r < reps && st == FZ_OK; r++) {
      total[r] = 0;
      if (dev)
        st = cold_total(w, text, dev, stream, &b, &total[r], &err);
      if (st == FZ_OK)
        st = cold_stages(w, text, dev, &b, one, &err);
      for (int s = 0; s < NUM_STAGES; s++)
        stage[s][r] = one[s];
    }
    if (st != FZ_OK) {
      fprintf(stderr, "latency: %s: %s: %s\n", w->name,
              fz_status_name(err.status), err.message);
      rc = EXIT_FAIL;
    } else {
      printf("| %s |", w->name);
      if (dev)
        printf(" %.1f |", 1e3 * median(total, reps));
      else
        printf(" (no GPU) |");
      for (int s = 0; s < NUM_STAGES; s++) {
        if (s == ST_LOAD && !dev)
          printf(" — |");
        else
          printf(" %.2f |", 1e3 * median(stage[s], reps));
      }
      printf("\n");
    }
    unbind(dev, &b);
    free(owned);
  }
  printf("\nAll ms. Stage columns: medians of a separate pass through the "
         "same calls\nthe executor makes; total also includes executor "
         "set-up, the launch and\na synchronize.\n");
  return rc;
}

/* ---- warm: host cost of a launch ----------------------------------------- */

static const char EMPTY_PTX[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry fz_latency_empty(.param .u64 p)\n"
    "{\n"
    "  ret;\n"
    "}\n";

typedef struct warm_result {
  double host_us, sync_us;
} warm_result;

/* calls launches: host time of the calls alone (synchronized between
 * batches, untimed) and wall time of calls back-to-back plus one sync. */
static fz_status time_launches(fz_status (*launch)(void *, fz_error *),
                               void *arg, fz_device *dev, CUstream stream,
                               int calls, warm_result *out, fz_error *err) {
  fz_status st = FZ_OK;
  for (int i = 0; i < 100 && st == FZ_OK; i++)
    st = launch(arg, err);
  if (st == FZ_OK)
    st = fz_device_stream_synchronize(dev, stream, err);
  double host = 0;
  for (int done = 0; done < calls && st == FZ_OK;) {
    int n = calls - done < BATCH ? calls - done : BATCH;
    double t0 = now_s();
    for (int i = 0; i < n && st == FZ_OK; i++)
      st = launch(arg, err);
    host += now_s() - t0;
    done += n;
    if (st == FZ_OK)
      st = fz_device_stream_synchronize(dev, stream, err);
  }
  double t0 = now_s();
  for (int i = 0; i < calls && st == FZ_OK; i++)
    st = launch(arg, err);
  if (st == FZ_OK)
    st = fz_device_stream_synchronize(dev, stream, err);
  out->host_us = 1e6 * host / calls;
  out->sync_us = 1e6 * (now_s() - t0) / calls;
  return st;
}

typedef struct exec_launch {
  fz_executor *ex;
  bound *b;
  CUstream stream;
} exec_launch;

static fz_status launch_executor(void *arg, fz_error *err) {
  exec_launch *l = arg;
  return fz_executor_run(l->ex, l->b->in, l->b->num_in, l->b->out,
                         l->b->num_out, l->stream, err);
}

typedef struct raw_launch {
  fz_module *mod;
  CUstream stream;
  uint64_t ptr;
} raw_launch;

static fz_status launch_raw(void *arg, fz_error *err) {
  raw_launch *l = arg;
  const unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  void *params[1] = {&l->ptr};
  return fz_module_launch(l->mod, grid, block, 0, l->stream, params, false,
                          err);
}

static int run_warm(fz_device *dev, CUstream stream, int calls) {
  fz_error err = {0};
  int rc = 0;
  printf("\n## Warm host overhead per launch (%d calls, 1024 elements, "
         "cached executor)\n\n",
         calls);
  printf("| launch | host us/call | with sync us/call |\n|---|---|---|\n");
  const workload warm[] = {
      {"fz: x*2+1, f32[1024]", AXPB, NULL, "N=1024"},
      {"fz: row sum f32[32,32]", ROW_SUM, NULL, "M=32,N=32"},
  };
  for (size_t i = 0; i < sizeof warm / sizeof warm[0]; i++) {
    bound b;
    fz_executor *ex = NULL;
    warm_result r;
    fz_status st = bind_workload(&warm[i], warm[i].text, dev, &b, &err);
    if (st == FZ_OK)
      st = fz_executor_create(b.fusion, dev, &ex, &err);
    exec_launch l = {ex, &b, stream};
    if (st == FZ_OK)
      st = time_launches(launch_executor, &l, dev, stream, calls, &r, &err);
    if (st == FZ_OK)
      printf("| %s | %.2f | %.2f |\n", warm[i].name, r.host_us, r.sync_us);
    else {
      fprintf(stderr, "latency: %s: %s\n", warm[i].name, err.message);
      rc = EXIT_FAIL;
    }
    fz_executor_destroy(ex);
    unbind(dev, &b);
  }
  /* The driver's floor: an empty kernel straight through cuLaunchKernel. */
  fz_module *mod = NULL;
  warm_result r;
  raw_launch l = {NULL, stream, 0};
  fz_status st = fz_module_load(dev, EMPTY_PTX, "fz_latency_empty", &mod,
                                &err);
  l.mod = mod;
  if (st == FZ_OK)
    st = time_launches(launch_raw, &l, dev, stream, calls, &r, &err);
  if (st == FZ_OK)
    printf("| cuLaunchKernel, empty kernel (floor) | %.2f | %.2f |\n",
           r.host_us, r.sync_us);
  else {
    fprintf(stderr, "latency: empty kernel: %s\n", err.message);
    rc = EXIT_FAIL;
  }
  fz_module_unload(mod);
  printf("\nhost: the calls alone, timed in batches of %d with an untimed "
         "synchronize\nbetween batches (so the launch queue never fills); "
         "with sync: %d calls\nback-to-back and one synchronize, per call.\n",
         BATCH, calls);
  return rc;
}

/* ---- main ---------------------------------------------------------------- */

#ifndef FZ_LATENCY_SEED000
#define FZ_LATENCY_SEED000 "examples/layer_norm_backward_seed000.fz"
#endif

int main(int argc, char **argv) {
  int reps = 10, calls = 10000;
  const char *seed000 = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
      calls = atoi(argv[++i]);
    else if (strcmp(argv[i], "--seed000") == 0 && i + 1 < argc)
      seed000 = argv[++i];
    else {
      fprintf(stderr, "usage: latency [--reps R] [--calls N] "
                      "[--seed000 FILE]\n");
      return EXIT_USAGE;
    }
  }
  if (reps < 1 || reps > MAX_REPS || calls < 1) {
    fprintf(stderr, "latency: --reps 1..%d, --calls >= 1\n", MAX_REPS);
    return EXIT_USAGE;
  }
  /* Every compile from scratch: no PTX from earlier runs. */
  setenv("FZ_CACHE_DIR", "off", 1);

  /* Relative to the repository root (where the bench is run from), else
   * the source tree this binary was built from. */
  const char *seed_path = "examples/layer_norm_backward_seed000.fz";
  FILE *probe = fopen(seed_path, "r");
  if (probe)
    fclose(probe);
  else
    seed_path = FZ_LATENCY_SEED000;
  const workload ws[] = {
      {"pointwise: tanh(gelu(x*2+y)) f32[1<<20]", POINTWISE, NULL,
       "N=1048576"},
      {"reduction: row sum f32[2048,8192]", ROW_SUM, NULL, "M=2048,N=8192"},
      {"seed 000 layer norm backward f32[2048,8192]", NULL, seed_path, ""},
  };
  int num_ws = (int)(sizeof ws / sizeof ws[0]);

  fz_error err = {0};
  fz_device *dev = NULL;
  fz_status st = fz_device_open(0, &dev, &err);
  if (st != FZ_OK && st != FZ_ERR_NO_DEVICE) {
    fprintf(stderr, "latency: %s\n", err.message);
    return EXIT_FAIL;
  }
  if (!dev) {
    printf("latency: fz %s, no GPU (%s): host stages only\n", fz_version(),
           err.message);
    int rc = run_cold(ws, num_ws, NULL, NULL, reps, seed000);
    if (rc)
      return rc;
    printf("SKIPPED: no GPU\n");
    return EXIT_SKIP;
  }
  const fz_device_props *p = fz_device_get_props(dev);
  printf("latency: fz %s on %s (sm_%d, driver %d)\n", fz_version(), p->name,
         p->sm, p->driver_version);
  CUstream stream = NULL;
  int rc = EXIT_FAIL;
  if (fz_stream_create(dev, &stream, &err) == FZ_OK) {
    int a = run_cold(ws, num_ws, dev, stream, reps, seed000);
    int b = run_warm(dev, stream, calls);
    rc = a ? a : b;
  } else {
    fprintf(stderr, "latency: %s\n", err.message);
  }
  fz_stream_destroy(dev, stream, NULL);
  fz_device_close(dev);
  return rc;
}
