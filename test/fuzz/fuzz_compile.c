/* fuzz_compile.c - libFuzzer target for the compiler behind the parser.
 *
 * A fusion the parser accepts goes the way the executor takes it, minus
 * the GPU: the passes (canonicalize and cse when the input's hash says so,
 * alloc-order always, as fz_executor_create does), a made-up call
 * (problem), segmentation, a plan per segment, LLVM IR per plan and, for
 * one input in eight, the NVPTX O3 pipeline and PTX of the kernels that
 * need no libdevice. Any error a stage reports is a fine answer to bad
 * input; crashes, sanitizer reports, leaks and timeouts are the bugs this
 * looks for.
 *
 * The call is drawn from a hash of the input, so that every mutation also
 * varies what the schedulers see: symbol values (zero, small and large, so
 * that rows do and do not fit in registers), gaps after axes declared
 * noncontig, stride-0 or ordinary strides on size-1 input axes, base
 * pointer alignment and the target sm. Symbol values never make a tensor
 * larger than memory could hold (2^40 elements): when a draw would, the
 * symbols are drawn again from 1..8. Constant extents in the text may be
 * that large, and must be refused cleanly or compiled.
 *
 * With FZ_FUZZ_TRAP_INTERNAL set in the environment, FZ_ERR_INTERNAL and
 * FZ_ERR_LLVM (lowering made a module LLVM rejects) trap as well: those
 * are compiler bugs rather than answers to bad input. FZ_FUZZ_VERBOSE
 * prints the drawn call and each stage's error, so that a crash can be
 * repeated with fuse-opt (--pass, --bind, --arch).
 */
#include "fz/fz.h"
#include "fz/ir.h"
#include "lower/lower.h"
#include "nvptx/nvptx.h"
#include "sched/plan.h"
#include "sched/segment.h"
#include "testing/splitmix.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ELEMENTS ((int64_t)1 << 40)

static bool trap_internal, verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  trap_internal = getenv("FZ_FUZZ_TRAP_INTERNAL") != NULL;
  verbose = getenv("FZ_FUZZ_VERBOSE") != NULL;
  fz_nvptx_init();
  return 0;
}

/* ---- the made-up call, drawn from the input's hash ----------------------- */

typedef struct draw {
  uint64_t state;
} draw;

static draw draw_from(const uint8_t *data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (size_t i = 0; i < size; i++)
    h = (h ^ data[i]) * 0x100000001b3ull;
  return (draw){h};
}

static uint64_t next(draw *d) { return fz_splitmix64(&d->state); }

/* 0 too: a call may pass empty tensors, and a sum over an empty axis
 * still writes its output. */
static int64_t pick_extent(draw *d) {
  static const int64_t extents[] = {0,    1,    2,     3,     4,     5,
                                    7,    8,    16,    31,    32,    33,
                                    64,   127,  128,   257,   1000,  1024,
                                    2048, 4096, 8192,  16384, 65536, 1000003};
  return extents[next(d) % (sizeof extents / sizeof extents[0])];
}

static unsigned pick_align(draw *d, fz_dtype dtype) {
  unsigned align = 16, esize = (unsigned)fz_dtype_size(dtype);
  if (next(d) % 4 == 0)
    for (int halvings = (int)(next(d) % 5); halvings > 0 && align > esize;
         halvings--)
      align /= 2;
  return align;
}

static int pick_sm(draw *d) {
  static const int sms[] = {90, 90, 90, 80, 86, 89, 75, 70};
  return sms[next(d) % (sizeof sms / sizeof sms[0])];
}

static int64_t mul_saturated(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* In the value's layout (row-major when it has none), innermost first:
 * declared gaps after noncontig axes, stride 0 for an expanded input axis
 * (and, at random, for a size-1 input axis), as a caller's views have. */
static void describe(const fz_value *v, bool input, const int64_t *symbols,
                     draw *d, fz_tensor_desc *desc) {
  const fz_type *t = &v->type;
  *desc = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank,
                           .align = pick_align(d, t->dtype)};
  int64_t stride = 1;
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->has_layout ? t->alloc_order[p] : p;
    const fz_axis *ax = &t->axes[axis];
    int64_t size = fz_axis_size(ax, symbols);
    desc->sizes[axis] = size;
    if (t->has_layout && !t->contiguous[p] && stride < INT64_MAX - 3)
      stride += 1 + (int64_t)(next(d) % 3);
    bool zero = input && ((ax->kind == FZ_AXIS_BROADCAST && ax->expanded) ||
                          (size == 1 && next(d) % 2));
    desc->strides[axis] = zero ? 0 : stride;
    if (!zero)
      stride = mul_saturated(stride, size > 1 ? size : 1);
  }
}

/* Elements of v at these symbol values; MAX_ELEMENTS when more. */
static int64_t elements(const fz_value *v, const int64_t *symbols) {
  int64_t n = 1;
  for (int i = 0; i < v->type.rank; i++) {
    int64_t size = fz_axis_size(&v->type.axes[i], symbols);
    if (size < 0 || (size > 0 && n > MAX_ELEMENTS / size))
      return MAX_ELEMENTS;
    n *= size;
  }
  return n;
}

static bool fits(const fz_fusion *f, const int64_t *symbols) {
  for (int i = 0; i < f->num_inputs; i++)
    if (elements(f->inputs[i], symbols) >= MAX_ELEMENTS)
      return false;
  for (int k = 0; k < f->num_ops; k++)
    if (elements(f->ops[k]->result, symbols) >= MAX_ELEMENTS)
      return false;
  return true;
}

static bool empty(const fz_tensor_desc *descs, int n) {
  for (int i = 0; i < n; i++) {
    bool has_zero = false;
    for (int k = 0; k < descs[i].rank; k++)
      has_zero |= descs[i].sizes[k] == 0;
    if (!has_zero)
      return false;
  }
  return true;
}

/* ---- the stages ------------------------------------------------------------ */

static void check_status(fz_status st, const fz_error *err) {
  if (st != FZ_OK && verbose)
    fprintf(stderr, "fuzz_compile: %s\n", err->message);
  if (st == FZ_OK || !trap_internal)
    return;
  if (st == FZ_ERR_INTERNAL || st == FZ_ERR_LLVM) {
    fprintf(stderr, "compiler bug (%s): %s\n", fz_status_name(st),
            err->message);
    __builtin_trap();
  }
}

/* What the plans are compiled for. The NVPTX pipeline costs about ten
 * times lowering, so it runs for one input in eight. */
typedef struct target {
  int sm;
  bool ptx;
} target;

/* Lowering, and the NVPTX pipeline when the target says so, unless the
 * kernel calls libdevice (which this fuzzer must not need). */
static void compile(const fz_plan *plan, const target *t) {
  fz_error err = {0};
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef module = NULL;
  bool uses_libdevice = false;
  fz_status st = fz_lower_plan(plan, ctx, &module, &uses_libdevice, &err);
  check_status(st, &err);
  if (st == FZ_OK && t->ptx && !uses_libdevice) {
    fz_nvptx_options opts = {.sm = t->sm, .opt_level = 3};
    char *ptx = NULL;
    st = fz_nvptx_compile(module, &opts, &ptx, &err);
    check_status(st, &err);
    free(ptx);
  }
  if (module)
    LLVMDisposeModule(module);
  LLVMContextDispose(ctx);
}

/* What the launcher and the kernel cache read of a plan, then its code. */
static void use_plan(const fz_plan *plan, fz_arena *arena, const target *t) {
  fz_buf text = {0};
  fz_plan_print(plan, &text);
  free(fz_buf_take(&text));
  (void)fz_plan_key(plan, arena);
  unsigned grid[3], block[3];
  fz_plan_launch_shape(plan, grid, block);
  int64_t *scalars = fz_arena_alloc(
      arena, sizeof *scalars * (size_t)(fz_plan_num_params(plan) + 1));
  fz_plan_scalar_params(plan, scalars);
  compile(plan, t);
}

static void schedule_segments(const fz_problem *pb, fz_arena *arena,
                              const target *t) {
  fz_error err = {0};
  fz_segmentation *seg = NULL;
  fz_status st = fz_segment_fusion(pb, &seg, &err);
  check_status(st, &err);
  if (st != FZ_OK)
    return;
  fz_buf text = {0};
  fz_segmentation_print(seg, &text);
  free(fz_buf_take(&text));
  fz_tensor_desc *ims = fz_arena_alloc(
      arena, sizeof *ims * (size_t)(seg->num_intermediates + 1));
  for (int i = 0; i < seg->num_intermediates; i++)
    fz_intermediate_desc(&seg->intermediates[i], pb->symbols, &ims[i]);
  for (int k = 0; k < seg->num_segments; k++) {
    fz_problem spb;
    fz_segment_problem(seg, k, pb, ims, arena, &spb);
    if (empty(spb.outputs, spb.fusion->num_outputs))
      continue; /* the executor skips it: nothing to write */
    fz_plan *plan = NULL;
    st = fz_schedule(&spb, arena, &plan, &err);
    check_status(st, &err);
    if (st == FZ_OK)
      use_plan(plan, arena, t);
  }
  fz_segmentation_destroy(seg);
}

/* The drawn call as fuse-opt's options (strides and alignment aside). */
static void print_call(const fz_fusion *f, uint64_t passes,
                       const int64_t *symbols, const target *t) {
  fprintf(stderr, "fuzz_compile: --pass=%s%salloc-order --arch=sm_%d%s",
          passes & 1 ? "canonicalize," : "", passes & 2 ? "cse," : "", t->sm,
          f->num_symbols ? " --bind=" : "");
  for (int s = 0; s < f->num_symbols; s++)
    fprintf(stderr, "%s%s=%lld", s ? "," : "",
            f->symbols[s].name ? f->symbols[s].name : "?",
            (long long)symbols[s]);
  fprintf(stderr, "%s\n", t->ptx ? " (then PTX)" : "");
}

static void compile_fusion(fz_fusion *f, draw *d) {
  fz_error err = {0};
  uint64_t passes = next(d);
  const char *pipeline[] = {passes & 1 ? "canonicalize" : NULL,
                            passes & 2 ? "cse" : NULL, "alloc-order"};
  for (int i = 0; i < 3; i++) {
    if (!pipeline[i])
      continue;
    fz_status st = fz_run_pass(f, pipeline[i], &err);
    check_status(st, &err);
    if (st != FZ_OK)
      return;
  }
  fz_arena *arena = fz_arena_create();
  int64_t *symbols = fz_arena_alloc(
      arena, sizeof *symbols * (size_t)(f->num_symbols + 1));
  for (int s = 0; s < f->num_symbols; s++)
    symbols[s] = pick_extent(d);
  if (!fits(f, symbols))
    for (int s = 0; s < f->num_symbols; s++)
      symbols[s] = 1 + (int64_t)(next(d) % 8);
  /* The executor binds nothing whose sizes overflow (fz_check_sizes):
   * neither does the harness, whose later stages multiply unchecked. */
  if (fz_check_sizes(f, symbols, FZ_ERR_ARGUMENT, NULL) != FZ_OK) {
    fz_arena_destroy(arena);
    return;
  }
  fz_tensor_desc *in =
      fz_arena_alloc(arena, sizeof *in * (size_t)(f->num_inputs + 1));
  fz_tensor_desc *out =
      fz_arena_alloc(arena, sizeof *out * (size_t)(f->num_outputs + 1));
  for (int i = 0; i < f->num_inputs; i++)
    describe(f->inputs[i], true, symbols, d, &in[i]);
  for (int i = 0; i < f->num_outputs; i++)
    describe(f->outputs[i], false, symbols, d, &out[i]);
  target t = {.sm = pick_sm(d), .ptx = next(d) % 8 == 0};
  fz_problem pb = {.fusion = f, .inputs = in, .outputs = out,
                   .symbols = symbols,
                   .device = fz_device_info_default(t.sm)};
  if (verbose)
    print_call(f, passes, symbols, &t);
  /* every output empty: the executor neither segments nor schedules */
  if (!empty(out, f->num_outputs))
    schedule_segments(&pb, arena, &t);
  fz_arena_destroy(arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_fusion *f = NULL;
  fz_error err = {0};
  if (fz_parse("fuzz.fz", (const char *)data, size, &f, &err) != FZ_OK)
    return 0;
  if (fz_verify(f, &err) == FZ_OK) { /* fuzz_parse checks that it does */
    draw d = draw_from(data, size);
    compile_fusion(f, &d);
  }
  fz_fusion_destroy(f);
  return 0;
}
