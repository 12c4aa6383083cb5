/* miss_cpu.c - the host work of a signature miss, without a GPU: what an
 * executor does for a call whose sizes it has not seen, up to (not
 * including) compiling a kernel, stage by stage, and how many distinct
 * kernels (plan keys) a sweep of sizes needs.
 *
 *   miss_cpu [--reps R]
 *
 * For each sweep (the layer norm of the Python front end over 40 shapes,
 * rows 1000 + 37 i by 500 + 113 i columns; softmax over 100 row lengths
 * 128 + 40 i of 4096 rows; f32, contiguous, 16-byte aligned, as
 * bench/dynamic.py calls them), each shape is taken through the stages
 * of fz_executor_prepare R times and the median of each stage is printed,
 * summed over the sweep's shapes and divided by their number:
 *   segment   fz_segment_fusion_planned (which asks the schedulers of
 *             every candidate segment, and keeps the plan of a fusion
 *             scheduled whole);
 *   schedule  fz_segment_problem + fz_schedule per segment (plan verify
 *             included), as the executor runs it: only for segments of a
 *             fusion not scheduled whole;
 *   verify    fz_plan_verify again, alone, to show its share;
 *   key       fz_plan_identify per plan (the binary plan key the
 *             executor's kernel cache compares: what finds an existing
 *             kernel);
 *   params    fz_plan_scalar_params and the launch shape;
 *   print     fz_plan_print (the signature's plan text: the executor
 *             prints it only when asked, fz_executor_last_plan).
 * "miss" is the total of the stages the executor runs on every miss
 * (segment, schedule, key, params): the host time of a miss that finds
 * its kernel, before any driver call. Then the whole call, through
 * fz_executor_run on a driver that does nothing (a fake function table:
 * no GPU, every driver call returns at once), median per shape:
 *   run miss  a call whose signature is new but whose kernels exist (the
 *             executor keeps one signature, and the shapes alternate):
 *             checks, binding, the miss and the launch;
 *   run hit   a call with the signature of the call before.
 * The last column counts distinct plan keys over the sweep: the kernels
 * an executor compiles for it (compiled once each, before the timing).
 */
#include "fz/fz.h"
#include "fz/ir.h"
#include "runtime/cuda.h"
#include "sched/plan.h"
#include "sched/segment.h"
/* the executor tests' fake driver (test/unit/llvm) */
#include "fake_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char layer_norm[] =
    "fusion @layer_norm(%x: f32[N, K], %w: f32[K], %b: f32[K]) {\n"
    "  %s = sum %x dims(1) keepdim : f32[N, b1]\n"
    "  %k = symbol K : i64\n"
    "  %kf = cast %k : f32\n"
    "  %m = div %s, %kf : f32[N, b1]\n"
    "  %me = expand %m : f32[N, b1->K]\n"
    "  %d = sub %x, %me : f32[N, K]\n"
    "  %q = mul %d, %d : f32[N, K]\n"
    "  %v = sum %q dims(1) keepdim : f32[N, b1]\n"
    "  %vm = div %v, %kf : f32[N, b1]\n"
    "  %ve = add %vm, 1.0e-5 : f32[N, b1]\n"
    "  %r = rsqrt %ve : f32[N, b1]\n"
    "  %re = expand %r : f32[N, b1->K]\n"
    "  %y = mul %d, %re : f32[N, K]\n"
    "  %wb = broadcast %w dims(0) : f32[b1, K]\n"
    "  %we = expand %wb : f32[b1->N, K]\n"
    "  %yw = mul %y, %we : f32[N, K]\n"
    "  %bb = broadcast %b dims(0) : f32[b1, K]\n"
    "  %be = expand %bb : f32[b1->N, K]\n"
    "  %o = add %yw, %be : f32[N, K]\n"
    "  return %o\n"
    "}\n";

static const char softmax[] =
    "fusion @softmax(%x: f32[N, K]) {\n"
    "  %a = amax %x dims(1) keepdim : f32[N, b1]\n"
    "  %ae = expand %a : f32[N, b1->K]\n"
    "  %d = sub %x, %ae : f32[N, K]\n"
    "  %e = exp %d : f32[N, K]\n"
    "  %s = sum %e dims(1) keepdim : f32[N, b1]\n"
    "  %se = expand %s : f32[N, b1->K]\n"
    "  %o = div %e, %se : f32[N, K]\n"
    "  return %o\n"
    "}\n";

enum { STAGES = 6, MAX_SHAPES = 100, RUNS = 2 };
static const char *const stage_names[STAGES] = {
    "segment", "schedule", "verify", "key", "params", "print"};

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* An H200 as the driver would describe it, behind a driver that does
 * nothing (fake_cuda.h): every call returns at once. */
static fz_device *fake_device(void) {
  static fz_cuda cu;
  static fz_device d;
  fake_cuda_init(&cu);
  d = fake_cuda_device(&cu);
  return &d;
}

/* Every value of the fusion laid out row-major and contiguous. */
static void describe(const fz_value *v, const int64_t *symbols,
                     fz_tensor_desc *d) {
  *d = (fz_tensor_desc){.dtype = v->type.dtype, .rank = v->type.rank,
                        .align = 16};
  int64_t stride = 1;
  for (int a = v->type.rank - 1; a >= 0; a--) {
    d->sizes[a] = fz_axis_size(&v->type.axes[a], symbols);
    d->strides[a] = stride;
    stride *= d->sizes[a] > 1 ? d->sizes[a] : 1;
  }
}

/* One miss, timed per stage into t[STAGES] (microseconds); the plan key
 * of every launch is added to keys (distinct ones only). */
static void one_miss(const fz_fusion *f, const int64_t *symbols, double *t,
                     fz_plan_id *keys, int *num_keys, fz_arena *keep) {
  fz_tensor_desc in[8], out[8];
  for (int i = 0; i < f->num_inputs; i++)
    describe(f->inputs[i], symbols, &in[i]);
  for (int i = 0; i < f->num_outputs; i++)
    describe(f->outputs[i], symbols, &out[i]);
  fz_problem pb = {.fusion = f, .inputs = in, .outputs = out,
                   .symbols = symbols, .device = fz_device_info_default(90)};
  fz_error err = {0};
  fz_arena *arena = fz_arena_create();
  memset(t, 0, sizeof(double) * STAGES);
  double t0 = now_us();
  fz_segmentation *seg = NULL;
  fz_plan *whole = NULL;
  if (fz_segment_fusion_planned(&pb, arena, &seg, &whole, &err) != FZ_OK) {
    fprintf(stderr, "miss_cpu: %s\n", err.message);
    exit(1);
  }
  t[0] = now_us() - t0;
  fz_tensor_desc ims[16];
  for (int i = 0; i < seg->num_intermediates && i < 16; i++)
    fz_intermediate_desc(&seg->intermediates[i], symbols, &ims[i]);
  fz_buf text = {0};
  for (int k = 0; k < seg->num_segments; k++) {
    double s0 = now_us();
    fz_problem sp;
    fz_segment_problem(seg, k, &pb, ims, arena, &sp);
    fz_plan *plan = seg->num_segments == 1 ? whole : NULL;
    if (!plan && fz_schedule(&sp, arena, &plan, &err) != FZ_OK) {
      fprintf(stderr, "miss_cpu: %s\n", err.message);
      exit(1);
    }
    double s1 = now_us();
    (void)fz_plan_verify(plan, &err);
    double s2 = now_us();
    fz_plan_id key = fz_plan_identify(plan, arena);
    double s3 = now_us();
    int64_t scalars[FZ_MAX_PARAMS];
    fz_plan_scalar_params(plan, scalars);
    unsigned grid[3], block[3];
    fz_plan_launch_shape(plan, grid, block);
    double s4 = now_us();
    fz_plan_print(plan, &text);
    double s5 = now_us();
    t[1] += s1 - s0;
    t[2] += s2 - s1;
    t[3] += s3 - s2;
    t[4] += s4 - s3;
    t[5] += s5 - s4;
    bool seen = false;
    for (int i = 0; i < *num_keys && !seen; i++)
      seen = fz_plan_id_equal(&keys[i], &key);
    if (!seen) {
      unsigned char *bytes = fz_arena_alloc(keep, key.len);
      memcpy(bytes, key.bytes, key.len);
      key.bytes = bytes;
      keys[(*num_keys)++] = key;
    }
  }
  free(fz_buf_take(&text));
  fz_segmentation_destroy(seg);
  fz_arena_destroy(arena);
}

/* Device tensors for fusion value v at these symbols: contiguous at a
 * made-up 256-byte aligned address (nothing is read or written). */
static void device_tensor(const fz_value *v, const int64_t *symbols,
                          uint64_t address, fz_device_tensor *t) {
  fz_tensor_desc d;
  describe(v, symbols, &d);
  *t = (fz_device_tensor){.dtype = d.dtype, .rank = d.rank, .data = address};
  memcpy(t->sizes, d.sizes, sizeof t->sizes);
  memcpy(t->strides, d.strides, sizeof t->strides);
}

static void symbols_of(const fz_fusion *f, const int64_t *shape,
                       int64_t *symbols) {
  for (int i = 0; i < f->num_symbols; i++)
    symbols[i] = strcmp(f->symbols[i].name, "N") == 0 ? shape[0] : shape[1];
}

static double run_once(fz_executor *ex, const fz_fusion *f,
                       const int64_t *symbols) {
  fz_device_tensor in[8], out[8];
  for (int i = 0; i < f->num_inputs; i++)
    device_tensor(f->inputs[i], symbols, 0x10000000u * (uint64_t)(i + 1),
                  &in[i]);
  for (int i = 0; i < f->num_outputs; i++)
    device_tensor(f->outputs[i], symbols, 0x900000000u + 0x10000000u * i,
                  &out[i]);
  fz_error err = {0};
  double t0 = now_us();
  if (fz_executor_run(ex, in, f->num_inputs, out, f->num_outputs, NULL,
                      &err) != FZ_OK) {
    fprintf(stderr, "miss_cpu: %s\n", err.message);
    exit(1);
  }
  return now_us() - t0;
}

/* fz_executor_run on the fake driver: per shape, the median of `reps`
 * misses (one signature kept, the shapes taken in turn, so each call
 * misses and finds its kernels) and of `reps` hits; the sums over the
 * shapes in t[0] (miss) and t[1] (hit). */
static void time_runs(const fz_fusion *f, int num_shapes,
                      const int64_t (*shapes)[2], int reps, double *t) {
  setenv("FZ_CACHE_DIR", "off", 1);
  fz_executor *ex = NULL;
  fz_error err = {0};
  if (fz_executor_create(f, fake_device(), &ex, &err) != FZ_OK ||
      fz_executor_set_signature_limit(ex, 1, &err) != FZ_OK) {
    fprintf(stderr, "miss_cpu: %s\n", err.message);
    exit(1);
  }
  int64_t symbols[4] = {0};
  /* compiles every kernel (the first call's exact plan aside, plans
   * share kernels by size class once sizes vary: a second pass) */
  for (int pass = 0; pass < 2; pass++)
    for (int s = 0; s < num_shapes; s++) {
      symbols_of(f, shapes[s], symbols);
      run_once(ex, f, symbols);
    }
  double *miss = malloc(sizeof(double) * (size_t)num_shapes * (size_t)reps);
  double *hit = malloc(sizeof(double) * (size_t)reps);
  fz_executor_stats before, after;
  fz_executor_get_stats(ex, &before);
  for (int r = 0; r < reps; r++)
    for (int s = 0; s < num_shapes; s++) {
      symbols_of(f, shapes[s], symbols);
      miss[s * reps + r] = run_once(ex, f, symbols);
    }
  fz_executor_get_stats(ex, &after);
  if (after.signature_misses - before.signature_misses !=
          (int64_t)num_shapes * reps ||
      after.kernels_compiled != before.kernels_compiled) {
    fprintf(stderr, "miss_cpu: the timed calls did not all miss, or "
                    "compiled\n");
    exit(1);
  }
  t[0] = t[1] = 0;
  for (int s = 0; s < num_shapes; s++) {
    qsort(miss + s * reps, (size_t)reps, sizeof(double), cmp_double);
    t[0] += miss[s * reps + reps / 2];
    symbols_of(f, shapes[s], symbols);
    run_once(ex, f, symbols);
    for (int r = 0; r < reps; r++)
      hit[r] = run_once(ex, f, symbols);
    qsort(hit, (size_t)reps, sizeof(double), cmp_double);
    t[1] += hit[reps / 2];
  }
  free(miss);
  free(hit);
  fz_executor_destroy(ex);
}

static void sweep(const char *name, const char *text, int num_shapes,
                  const int64_t (*shapes)[2], int reps) {
  fz_fusion *f = NULL;
  fz_error err = {0};
  if (fz_parse(name, text, strlen(text), &f, &err) != FZ_OK) {
    fprintf(stderr, "miss_cpu: %s\n", err.message);
    exit(1);
  }
  fz_arena *keep = fz_arena_create();
  fz_plan_id keys[4 * MAX_SHAPES];
  int num_keys = 0;
  double total[STAGES] = {0}, miss_total = 0;
  double *samples = malloc(sizeof(double) * (size_t)reps * STAGES);
  double *miss = malloc(sizeof(double) * (size_t)reps);
  for (int s = 0; s < num_shapes; s++) {
    int64_t symbols[4] = {0};
    symbols_of(f, shapes[s], symbols);
    for (int r = 0; r < reps; r++) {
      double t[STAGES];
      one_miss(f, symbols, t, keys, &num_keys, keep);
      miss[r] = 0;
      for (int k = 0; k < STAGES; k++) {
        samples[k * reps + r] = t[k];
        if (k != 2 && k != 5)
          miss[r] += t[k];
      }
    }
    for (int k = 0; k < STAGES; k++) {
      qsort(samples + k * reps, (size_t)reps, sizeof(double), cmp_double);
      total[k] += samples[k * reps + reps / 2];
    }
    qsort(miss, (size_t)reps, sizeof(double), cmp_double);
    miss_total += miss[reps / 2];
  }
  double runs[RUNS];
  time_runs(f, num_shapes, shapes, reps, runs);
  printf("| %s | %d |", name, num_shapes);
  for (int k = 0; k < STAGES; k++)
    printf(" %.1f |", total[k] / num_shapes);
  printf(" %.1f |", miss_total / num_shapes);
  for (int k = 0; k < RUNS; k++)
    printf(" %.1f |", runs[k] / num_shapes);
  printf(" %d |\n", num_keys);
  free(samples);
  free(miss);
  fz_arena_destroy(keep);
  fz_fusion_destroy(f);
}

int main(int argc, char **argv) {
  int reps = 21;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: miss_cpu [--reps R]\n");
      return 2;
    }
  }
  if (reps < 1)
    reps = 1;
  static int64_t ln[40][2], sm[100][2];
  for (int i = 0; i < 40; i++) {
    ln[i][0] = 1000 + 37 * i;
    ln[i][1] = 500 + 113 * i;
  }
  for (int i = 0; i < 100; i++) {
    sm[i][0] = 4096;
    sm[i][1] = 128 + 40 * i;
  }
  printf("host time of a signature miss, us per shape (median of %d)\n\n",
         reps);
  printf("| sweep | shapes |");
  for (int k = 0; k < STAGES; k++)
    printf(" %s |", stage_names[k]);
  printf(" miss | run miss | run hit | plan keys |\n|---|---|");
  for (int k = 0; k < STAGES + RUNS + 2; k++)
    printf("---|");
  printf("\n");
  sweep("layer_norm", layer_norm, 40, (const int64_t (*)[2])ln, reps);
  sweep("softmax", softmax, 100, (const int64_t (*)[2])sm, reps);
  return 0;
}
