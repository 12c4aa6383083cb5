/* test_segment.c - segmentation (lib/sched/segment.c) against the
 * interpreter.
 *
 * A segmentation is checked by running it: each segment's fusion is
 * interpreted in order on host buffers laid out as the executor would lay
 * them out (parent inputs and outputs from the problem's descriptors,
 * intermediates from fz_intermediate_desc), and every parent output must
 * equal, bit for bit, what the interpreter computes for the whole fusion.
 * Outputs and intermediates are poisoned first, differently in the two
 * runs, so an element no segment writes cannot compare equal.
 *
 * Segmentation depends on sizes, so a case may be segmented for large
 * extents (a row too long for the persistent scheduler) and run for small
 * ones: segments are fusions over the same symbols and are valid for any
 * binding.
 *
 * Besides running, each segmentation is checked for what the executor
 * relies on: each segment verifies, keeps the parent's symbols, is
 * scheduled by fz_schedule on its own problem, every parent output is
 * written exactly once, and every intermediate is written before it is
 * read.
 */
#include "test_util.h"

#include "sched/segment.h"
#include "testing/random.h"
#include "testing/splitmix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffers ------------------------------------------------------------ */

/* The layout fuse-opt makes up (tools/fuse-opt/stages.c): declared or
 * row-major, a one-element gap after a non-contiguous axis, stride 0 on
 * broadcast axes of inputs. */
static void layout_desc(const fz_value *v, const int64_t *symbols,
                        fz_tensor_desc *d) {
  const fz_type *t = &v->type;
  *d = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank, .align = 16};
  int64_t stride = 1;
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->has_layout ? t->alloc_order[p] : p;
    const fz_axis *ax = &t->axes[axis];
    d->sizes[axis] = fz_axis_size(ax, symbols);
    if (t->has_layout && !t->contiguous[p])
      stride += 1;
    if (ax->kind == FZ_AXIS_BROADCAST && v->kind == FZ_VALUE_INPUT) {
      d->strides[axis] = 0;
      continue;
    }
    d->strides[axis] = stride;
    stride *= d->sizes[axis] > 1 ? d->sizes[axis] : 1;
  }
}

static int64_t span_of(const fz_tensor_desc *d) {
  int64_t span = 1;
  for (int i = 0; i < d->rank; i++)
    if (d->sizes[i] > 0)
      span += (d->sizes[i] - 1) * d->strides[i];
  return span;
}

typedef struct buffer {
  fz_host_tensor t;
  size_t bytes;
} buffer;

static buffer make_buffer(const fz_tensor_desc *d, unsigned char poison) {
  buffer b = {.t = {.dtype = d->dtype, .rank = d->rank}};
  memcpy(b.t.sizes, d->sizes, sizeof b.t.sizes);
  memcpy(b.t.strides, d->strides, sizeof b.t.strides);
  b.bytes = (size_t)span_of(d) * fz_dtype_size(d->dtype);
  b.t.data = malloc(b.bytes);
  ck_assert_ptr_nonnull(b.t.data);
  memset(b.t.data, poison, b.bytes);
  return b;
}

/* Floats in [-1, 1), integers in [-8, 8), never 0 (bool either). */
static void fill_random(buffer *b, uint64_t seed) {
  size_t size = fz_dtype_size(b->t.dtype);
  for (size_t k = 0; k < b->bytes / size; k++) {
    char *out = (char *)b->t.data + k * size;
    for (;;) {
      uint64_t r = fz_splitmix64(&seed);
      double u = fz_round_to_dtype((double)(r >> 11) * 0x1p-52 - 1, b->t.dtype);
      int64_t i = (int64_t)(r % 16) - 8;
      if (b->t.dtype != FZ_BOOL && (fz_dtype_is_float(b->t.dtype) ? u == 0 : i == 0))
        continue;
      switch (b->t.dtype) {
      case FZ_F64: *(double *)out = u; break;
      case FZ_F32: *(float *)out = (float)u; break;
      case FZ_F16: *(uint16_t *)out = fz_f16_from_double(u); break;
      case FZ_BF16: *(uint16_t *)out = fz_bf16_from_double(u); break;
      case FZ_I64: *(int64_t *)out = i; break;
      case FZ_I32: *(int32_t *)out = (int32_t)i; break;
      case FZ_I8: *(int8_t *)out = (int8_t)i; break;
      case FZ_BOOL: *(uint8_t *)out = (uint8_t)(r >> 63); break;
      default: ck_abort_msg("bad dtype");
      }
      break;
    }
  }
}

static void free_buffers(buffer *b, int n) {
  for (int i = 0; i < n; i++)
    free(b[i].t.data);
  free(b);
}

/* ---- checking a segmentation ------------------------------------------- */

typedef struct outcome {
  fz_status status;
  char message[1024];
  int segments;
  bool owned; /* the first segment is not the parent */
  char *printed; /* fz_segmentation_print */
} outcome;

/* The structure the executor relies on, and each segment's plan. */
static void check_structure(const fz_segmentation *s, const fz_problem *pb,
                            const char *what) {
  const fz_fusion *f = pb->fusion;
  int *written = calloc((size_t)f->num_outputs + 1, sizeof *written);
  bool *made = calloc((size_t)s->num_intermediates + 1, sizeof *made);
  fz_tensor_desc *ims =
      calloc((size_t)s->num_intermediates + 1, sizeof *ims);
  ck_assert(written && made && ims);
  for (int i = 0; i < s->num_intermediates; i++) {
    ck_assert_msg(s->intermediates[i].type.has_layout ||
                      s->intermediates[i].type.rank == 0,
                  "%s: intermediate %d has no layout", what, i);
    fz_intermediate_desc(&s->intermediates[i], pb->symbols, &ims[i]);
  }
  fz_arena *arena = fz_arena_create();
  for (int k = 0; k < s->num_segments; k++) {
    const fz_segment *seg = &s->segments[k];
    fz_error err = {0};
    ck_assert_msg(fz_verify(seg->fusion, &err) == FZ_OK, "%s: segment %d: %s",
                  what, k, err.message);
    ck_assert_int_eq(seg->fusion->num_symbols, f->num_symbols);
    for (int i = 0; i < f->num_symbols; i++)
      ck_assert(seg->fusion->symbols[i].name == f->symbols[i].name ||
                strcmp(seg->fusion->symbols[i].name, f->symbols[i].name) == 0);
    ck_assert_ptr_nonnull(seg->scheduler);
    for (int i = 0; i < seg->fusion->num_inputs; i++) {
      fz_buffer_ref r = seg->inputs[i];
      if (r.kind == FZ_BUFFER_INPUT)
        ck_assert(r.index >= 0 && r.index < f->num_inputs);
      else if (r.kind == FZ_BUFFER_OUTPUT)
        ck_assert_msg(r.index >= 0 && r.index < f->num_outputs &&
                          written[r.index] == 1,
                      "%s: segment %d reads output %d before it is written",
                      what, k, r.index);
      else
        ck_assert_msg(r.index >= 0 && r.index < s->num_intermediates &&
                          made[r.index],
                      "%s: segment %d reads intermediate %d before it is "
                      "written",
                      what, k, r.index);
    }
    for (int i = 0; i < seg->fusion->num_outputs; i++) {
      fz_buffer_ref r = seg->outputs[i];
      ck_assert_msg(r.kind != FZ_BUFFER_INPUT, "%s: segment %d writes an input",
                    what, k);
      if (r.kind == FZ_BUFFER_OUTPUT) {
        ck_assert(r.index >= 0 && r.index < f->num_outputs);
        written[r.index]++;
      } else {
        ck_assert(r.index >= 0 && r.index < s->num_intermediates);
        ck_assert_msg(!made[r.index], "%s: intermediate %d written twice",
                      what, r.index);
        made[r.index] = true;
      }
    }
    fz_problem sub;
    fz_segment_problem(s, k, pb, ims, arena, &sub);
    fz_plan *plan = NULL;
    ck_assert_msg(fz_schedule(&sub, arena, &plan, &err) == FZ_OK,
                  "%s: segment %d does not schedule: %s", what, k,
                  err.message);
    ck_assert_str_eq(fz_schedule_pick(&sub), seg->scheduler);
  }
  for (int j = 0; j < f->num_outputs; j++)
    ck_assert_msg(written[j] == 1, "%s: output %d written %d times", what, j,
                  written[j]);
  for (int i = 0; i < s->num_intermediates; i++)
    ck_assert_msg(made[i], "%s: intermediate %d never written", what, i);
  fz_arena_destroy(arena);
  free(written);
  free(made);
  free(ims);
}

/* Interprets the segments in order with symbols `run` and compares every
 * parent output with the whole fusion's. */
static void check_values(const fz_segmentation *s, const fz_fusion *f,
                         const int64_t *run, uint64_t seed, const char *what) {
  int ni = f->num_inputs, no = f->num_outputs, nm = s->num_intermediates;
  buffer *in = calloc((size_t)ni + 1, sizeof *in);
  buffer *whole = calloc((size_t)no + 1, sizeof *whole);
  buffer *parts = calloc((size_t)no + 1, sizeof *parts);
  buffer *ims = calloc((size_t)nm + 1, sizeof *ims);
  fz_host_tensor *tin = calloc((size_t)ni + 1, sizeof *tin);
  fz_host_tensor *tout = calloc((size_t)no + 1, sizeof *tout);
  ck_assert(in && whole && parts && ims && tin && tout);
  for (int i = 0; i < ni; i++) {
    fz_tensor_desc d;
    layout_desc(f->inputs[i], run, &d);
    in[i] = make_buffer(&d, 0);
    fill_random(&in[i], seed * 31 + (uint64_t)i);
    tin[i] = in[i].t;
  }
  for (int j = 0; j < no; j++) {
    fz_tensor_desc d;
    layout_desc(f->outputs[j], run, &d);
    whole[j] = make_buffer(&d, 0xa5);
    parts[j] = make_buffer(&d, 0x5a);
    tout[j] = whole[j].t;
  }
  fz_error err = {0};
  ck_assert_msg(fz_interpret(f, tin, ni, tout, no, &err) == FZ_OK,
                "%s: interpret whole: %s", what, err.message);
  for (int i = 0; i < nm; i++) {
    fz_tensor_desc d;
    fz_intermediate_desc(&s->intermediates[i], run, &d);
    ims[i] = make_buffer(&d, 0x3c);
  }
  for (int k = 0; k < s->num_segments; k++) {
    const fz_segment *seg = &s->segments[k];
    const fz_fusion *g = seg->fusion;
    fz_host_tensor *a = calloc((size_t)g->num_inputs + 1, sizeof *a);
    fz_host_tensor *b = calloc((size_t)g->num_outputs + 1, sizeof *b);
    ck_assert(a && b);
    for (int i = 0; i < g->num_inputs; i++) {
      fz_buffer_ref r = seg->inputs[i];
      a[i] = r.kind == FZ_BUFFER_INPUT    ? in[r.index].t
             : r.kind == FZ_BUFFER_OUTPUT ? parts[r.index].t
                                          : ims[r.index].t;
    }
    for (int i = 0; i < g->num_outputs; i++) {
      fz_buffer_ref r = seg->outputs[i];
      b[i] = r.kind == FZ_BUFFER_OUTPUT ? parts[r.index].t : ims[r.index].t;
    }
    ck_assert_msg(fz_interpret(g, a, g->num_inputs, b, g->num_outputs,
                               &err) == FZ_OK,
                  "%s: interpret segment %d: %s", what, k, err.message);
    free(a);
    free(b);
  }
  for (int j = 0; j < no; j++)
    ck_assert_msg(memcmp(whole[j].t.data, parts[j].t.data, whole[j].bytes) == 0,
                  "%s: output %d differs from the whole fusion's", what, j);
  free_buffers(in, ni);
  free_buffers(whole, no);
  free_buffers(parts, no);
  free_buffers(ims, nm);
  free(tin);
  free(tout);
}

/* Segments f for symbols `seg` and checks it by running with `run`. */
static outcome segment_and_check(const fz_fusion *f, const int64_t *seg,
                                 const int64_t *run, uint64_t seed,
                                 const char *what) {
  outcome o = {0};
  int ni = f->num_inputs, no = f->num_outputs;
  fz_tensor_desc *din = calloc((size_t)ni + 1, sizeof *din);
  fz_tensor_desc *dout = calloc((size_t)no + 1, sizeof *dout);
  ck_assert(din && dout);
  for (int i = 0; i < ni; i++)
    layout_desc(f->inputs[i], seg, &din[i]);
  for (int j = 0; j < no; j++)
    layout_desc(f->outputs[j], seg, &dout[j]);
  fz_problem pb = {.fusion = f, .inputs = din, .outputs = dout,
                   .symbols = seg, .device = fz_device_info_default(90)};
  fz_segmentation *s = NULL;
  fz_error err = {0};
  o.status = fz_segment_fusion(&pb, &s, &err);
  if (o.status != FZ_OK) {
    ck_assert_ptr_null(s);
    snprintf(o.message, sizeof o.message, "%s", err.message);
  } else {
    ck_assert_ptr_eq(s->parent, f);
    o.segments = s->num_segments;
    o.owned = s->segments[0].owned;
    /* The parent itself exactly when one scheduler takes it whole; a
     * single owned segment is the parent with copies added or dead ops
     * dropped. */
    if (!s->segments[0].owned) {
      ck_assert_int_eq(s->num_segments, 1);
      ck_assert_ptr_eq(s->segments[0].fusion, f);
      ck_assert_ptr_null(s->notes);
      ck_assert_int_eq(s->num_intermediates, 0);
      ck_assert_ptr_nonnull(fz_schedule_pick(&pb));
    } else {
      ck_assert_msg(fz_schedule_pick(&pb) == NULL,
                    "%s: segmented a fusion a scheduler takes whole", what);
      for (int k = 0; k < s->num_segments; k++)
        ck_assert(s->segments[k].owned);
    }
    check_structure(s, &pb, what);
    check_values(s, f, run, seed, what);
    fz_buf b = {0};
    fz_segmentation_print(s, &b);
    o.printed = fz_buf_take(&b);
    ck_assert_ptr_nonnull(o.printed);
  }
  fz_segmentation_destroy(s);
  free(din);
  free(dout);
  return o;
}

/* ---- random fusions ---------------------------------------------------- */

enum { NUM_SEEDS = 400 };

/* TEST_SEGMENT_SEEDS=N tries N seeds instead (for soak runs). */
START_TEST(test_random_fusions) {
  int multi = 0, single = 0, unsupported = 0, most = 0;
  const char *env = getenv("TEST_SEGMENT_SEEDS");
  int num_seeds = env && atoi(env) > 0 ? atoi(env) : NUM_SEEDS;
  for (uint64_t seed = 1; seed <= (uint64_t)num_seeds; seed++) {
    fz_random_options o = {.allow_reductions = true, .max_extent = 24,
                           .max_elements = 16384};
    if (seed % 5 == 4)
      o.dtypes = (1u << FZ_NUM_DTYPES) - 1;
    fz_fusion *f = fz_random_fusion(seed, &o);
    ck_assert_ptr_nonnull(f);
    int64_t symbols[32] = {0};
    ck_assert_int_le(f->num_symbols, 32);
    fz_random_bindings(f, seed, &o, symbols);
    char what[64];
    snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
    outcome r = segment_and_check(f, symbols, symbols, seed, what);
    if (r.status == FZ_OK) {
      if (r.segments == 1 && r.owned && getenv("TEST_SEGMENT_VERBOSE"))
        printf("%s: one segment, not the parent\n", what);
      multi += r.segments > 1;
      single += r.segments == 1;
      most = r.segments > most ? r.segments : most;
    } else {
      /* Only an op no scheduler takes even alone may stop segmentation. */
      ck_assert_msg(r.status == FZ_ERR_UNSUPPORTED &&
                        strstr(r.message, "even as a segment of its own"),
                    "%s: %s: %s", what, fz_status_name(r.status), r.message);
      unsupported++;
      if (getenv("TEST_SEGMENT_VERBOSE"))
        printf("%s: %s\n", what, r.message);
    }
    free(r.printed);
    fz_fusion_destroy(f);
  }
  printf("test_segment: %d random fusions: %d whole, %d segmented (up to %d "
         "segments), %d unsupported\n",
         num_seeds, single, multi, most, unsupported);
  ck_assert_int_gt(multi, num_seeds / 20);
  ck_assert_int_gt(single, 0);
  ck_assert_int_le(unsupported, num_seeds / 20);
}
END_TEST

/* ---- targeted cases ---------------------------------------------------- */

static const char softmax_text[] =
    "fusion @softmax(%x: f32[N, M]) {\n"
    "  %m = amax %x dims(1) keepdim : f32[N, b1]\n"
    "  %me = expand %m : f32[N, b1->M]\n"
    "  %d = sub %x, %me : f32[N, M]\n"
    "  %e = exp %d : f32[N, M]\n"
    "  %s = sum %e dims(1) keepdim : f32[N, b1]\n"
    "  %se = expand %s : f32[N, b1->M]\n"
    "  %y = div %e, %se : f32[N, M]\n"
    "  return %y\n"
    "}\n";

/* Rows of 2^20 floats do not fit in registers: the persistent scheduler
 * declines, and the softmax splits at its reductions. */
START_TEST(test_softmax_long_rows) {
  fz_fusion *f = test_parse(softmax_text);
  int64_t big[2] = {64, 1 << 20}, small[2] = {8, 40};
  outcome r = segment_and_check(f, big, small, 7, "softmax");
  ck_assert_msg(r.status == FZ_OK, "%s", r.message);
  ck_assert_int_eq(r.segments, 3);
  ck_assert_ptr_nonnull(strstr(r.printed, "segments @softmax: 3\n"));
  ck_assert_ptr_nonnull(strstr(r.printed, "  segment 0: 1 ops, scheduler reduction\n"));
  ck_assert_ptr_nonnull(strstr(r.printed, "    out %m (intermediate 0)\n"));
  ck_assert_ptr_nonnull(strstr(r.printed, "  segment 2: 2 ops, scheduler pointwise\n"));
  ck_assert_ptr_nonnull(strstr(r.printed, "    out %y (output 0)\n"));
  /* the notes say why the last two were not merged */
  ck_assert_ptr_nonnull(
      strstr(r.printed, "  rejected: merge {%me %d %e %s} + {%se %y}: "));
  ck_assert_ptr_nonnull(strstr(r.printed, "persistent: "));
  free(r.printed);

  /* Rows that fit: one persistent segment, the parent itself. */
  int64_t fits[2] = {64, 1024};
  r = segment_and_check(f, fits, small, 8, "softmax short rows");
  ck_assert_int_eq(r.status, FZ_OK);
  ck_assert_int_eq(r.segments, 1);
  ck_assert_ptr_nonnull(strstr(r.printed, "scheduler persistent"));
  free(r.printed);
  fz_fusion_destroy(f);
}
END_TEST

/* Outputs used by later segments are read back from the output buffer;
 * an input returned as it is and an output returned twice get copies. */
START_TEST(test_outputs_used_inside_and_copies) {
  fz_fusion *f = test_parse(
      "fusion @softmax(%x: f32[N, M]) {\n"
      "  %m = amax %x dims(1) keepdim : f32[N, b1]\n"
      "  %me = expand %m : f32[N, b1->M]\n"
      "  %d = sub %x, %me : f32[N, M]\n"
      "  %e = exp %d : f32[N, M]\n"
      "  %s = sum %e dims(1) keepdim : f32[N, b1]\n"
      "  %se = expand %s : f32[N, b1->M]\n"
      "  %y = div %e, %se : f32[N, M]\n"
      "  return %y, %m, %x, %e, %m\n"
      "}\n");
  int64_t big[2] = {64, 1 << 20}, small[2] = {5, 33};
  outcome r = segment_and_check(f, big, small, 9, "outputs");
  ck_assert_msg(r.status == FZ_OK, "%s", r.message);
  ck_assert_int_ge(r.segments, 3);
  ck_assert_ptr_nonnull(strstr(r.printed, "%m (output 1)"));
  ck_assert_ptr_nonnull(strstr(r.printed, "%x.copy2 (output 2)"));
  ck_assert_ptr_nonnull(strstr(r.printed, "%m.copy4 (output 4)"));
  /* %e is an output, so no intermediate carries it */
  ck_assert_ptr_null(strstr(r.printed, "%e (intermediate"));
  free(r.printed);
  fz_fusion_destroy(f);
}
END_TEST

/* Two reductions over different axes of one input: one segment when the
 * inner-outer persistent scheduler takes it, two when rows are too long;
 * with a scalar input, a rank-0 output read back by a later segment, and
 * an input returned as an output. */
START_TEST(test_two_reductions_scalars) {
  fz_fusion *f = test_parse(
      "fusion @two(%x: f32[N, M], %k: f32) {\n"
      "  %a = sum %x dims(0) : f32[M]\n"
      "  %b = sum %x dims(1) : f32[N]\n"
      "  %t = sum %x dims(0, 1) : f32\n"
      "  %c = mul %b, %k : f32[N]\n"
      "  %u = mul %c, %t : f32[N]\n"
      "  return %a, %u, %t, %x\n"
      "}\n");
  int64_t big[2] = {64, 1 << 20}, small[2] = {6, 10};
  outcome r = segment_and_check(f, big, small, 11, "two");
  ck_assert_msg(r.status == FZ_OK, "%s", r.message);
  ck_assert_int_ge(r.segments, 2);
  ck_assert_ptr_nonnull(strstr(r.printed, "%t (output 2)"));
  ck_assert_ptr_nonnull(strstr(r.printed, "%k"));
  free(r.printed);

  fz_fusion *g = test_parse(
      "fusion @two_small(%x: f32[N, M]) {\n"
      "  %a = sum %x dims(0) : f32[M]\n"
      "  %b = sum %x dims(1) : f32[N]\n"
      "  return %a, %b\n"
      "}\n");
  int64_t rows[2] = {64, 1 << 20};
  r = segment_and_check(g, rows, small, 12, "two_small");
  ck_assert_int_eq(r.status, FZ_OK);
  ck_assert_int_eq(r.segments, 2);
  ck_assert_ptr_nonnull(strstr(r.printed, "(siblings)"));
  free(r.printed);
  fz_fusion_destroy(f);
  fz_fusion_destroy(g);
}
END_TEST

/* Symbol reads in a segment of their own (a rank-0 output keeps them out
 * of the reduction's): the segment takes an input that binds the symbols
 * it reads, so that it runs like any fusion, and every segment computes
 * with the run's sizes. */
START_TEST(test_symbol_reads) {
  fz_fusion *f = test_parse("fusion @sizes(%x: f32[N, K]) {\n"
                            "  %s = sum %x dims(1) : f32[N]\n"
                            "  %k = symbol K : i64\n"
                            "  %kf = cast %k : f32\n"
                            "  %m = div %s, %kf : f32[N]\n"
                            "  %n = symbol N : i64\n"
                            "  %y = mul %x, %n : f32[N, K]\n"
                            "  %c = mul %n, %k : i64\n"
                            "  return %m, %y, %c\n"
                            "}\n");
  int64_t big[2] = {1000, 300}, small[2] = {7, 5};
  outcome r = segment_and_check(f, big, small, 13, "sizes");
  ck_assert_msg(r.status == FZ_OK, "%s", r.message);
  ck_assert_int_eq(r.segments, 2);
  ck_assert_msg(strstr(r.printed, "ops %k %kf %n %c\n    in %x\n"), "%s",
                r.printed);
  free(r.printed);
  fz_fusion_destroy(f);
}
END_TEST

/* A var's correction travels with it into its segment (a batch norm's
 * var_mean over the rows is a reduction kernel of its own). */
START_TEST(test_var_correction_in_a_segment) {
  fz_fusion *f = test_parse(
      "fusion @bn(%x: f32[M, N]) {\n"
      "  %v = var %x dims(0) keepdim correction(1.5) : f32[b1, N]\n"
      "  %m = mean %x dims(0) keepdim : f32[b1, N]\n"
      "  %me = expand %m : f32[b1->M, N]\n"
      "  %xc = sub %x, %me : f32[M, N]\n"
      "  %ve = add %v, 1.0e-5 : f32[b1, N]\n"
      "  %r = rsqrt %ve : f32[b1, N]\n"
      "  %re = expand %r : f32[b1->M, N]\n"
      "  %y = mul %xc, %re : f32[M, N]\n"
      "  return %y, %v\n"
      "}\n");
  int64_t big[2] = {4096, 64}, small[2] = {9, 5};
  outcome r = segment_and_check(f, big, small, 13, "bn");
  ck_assert_msg(r.status == FZ_OK, "%s", r.message);
  ck_assert_int_eq(r.segments, 2);
  free(r.printed);
  fz_fusion_destroy(f);
}
END_TEST

static char *read_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  ck_assert_msg(fp != NULL, "cannot open %s", path);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(text);
  ck_assert_int_eq(fread(text, 1, (size_t)n, fp), (size_t)n);
  text[n] = 0;
  fclose(fp);
  return text;
}

/* Seed 004's einsum backward: no scheduler takes it whole; its segments
 * compute what it does. */
START_TEST(test_einsum_example) {
  char *text = read_file(test_source_path("examples/seed004_einsum_fusion_id33.fz"));
  fz_fusion *f = test_parse(text);
  free(text);
  int64_t none[1] = {0};
  outcome r = segment_and_check(f, none, none, 13, "einsum");
  ck_assert_msg(r.status == FZ_OK, "%s", r.message);
  ck_assert_int_gt(r.segments, 1);
  ck_assert_ptr_nonnull(strstr(r.printed, "segments @nvfuser_fusion_id33: "));
  ck_assert_ptr_nonnull(strstr(r.printed, "(output 0)"));
  ck_assert_ptr_nonnull(strstr(r.printed, "(output 1)"));
  ck_assert_ptr_nonnull(strstr(r.printed, "(output 2)"));
  free(r.printed);
  fz_fusion_destroy(f);
}
END_TEST

/* An op no scheduler takes even alone (a reshape regrouping the axes of
 * a column-major tensor) is an error naming it; bad
 * arguments are errors, not crashes. */
START_TEST(test_errors) {
  fz_fusion *f = test_parse(
      "fusion @bad(%x: f32[6, 4] layout(1, 0)) {\n"
      "  %r = reshape %x : f32[4, 6]\n"
      "  %s = sum %r dims(1) : f32[4]\n"
      "  return %s\n"
      "}\n");
  int64_t none[1] = {0};
  outcome r = segment_and_check(f, none, none, 1, "bad");
  ck_assert_int_eq(r.status, FZ_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(r.message, "%r (reshape)"));
  ck_assert_ptr_nonnull(strstr(r.message, "pointwise: "));
  fz_fusion_destroy(f);

  fz_segmentation *s = (fz_segmentation *)1;
  fz_error err = {0};
  ck_assert_int_eq(fz_segment_fusion(NULL, &s, &err), FZ_ERR_ARGUMENT);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(fz_segment_fusion(NULL, NULL, NULL), FZ_ERR_ARGUMENT);
  fz_segmentation_destroy(NULL);
}
END_TEST

/* ---- fusions past the greedy search (segment_pack.c) ------------------- */

/* `steps` normalizations, alternately of the rows and the columns of x,
 * and after every 50th step its square as an output: over 512 ops, so the
 * fusion is cut into runs of consecutive ops. */
static fz_fusion *normalizations(int steps) {
  fz_buf b = {0};
  fz_buf_puts(&b, "fusion @norms(%v0: f32[N, M]) {\n");
  for (int i = 0; i < steps; i++) {
    int axis = i % 2, other = 1 - axis;
    const char *kept = axis ? "N" : "M";
    fz_buf_printf(&b, "  %%s%d = sum %%v%d dims(%d) : f32[%s]\n", i, i, axis,
                  kept);
    fz_buf_printf(&b, "  %%b%d = broadcast %%s%d dims(%d) : f32[%s]\n", i, i,
                  axis, axis ? "N, b1" : "b1, M");
    fz_buf_printf(&b, "  %%e%d = expand %%b%d : f32[%s]\n", i, i,
                  axis ? "N, b1->M" : "b1->N, M");
    fz_buf_printf(&b, "  %%v%d = sub %%v%d, %%e%d : f32[N, M]\n", i + 1, i, i);
    if ((i + 1) % 50 == 0)
      fz_buf_printf(&b, "  %%q%d = mul %%v%d, %%v%d : f32[N, M]\n", i + 1,
                    i + 1, i + 1);
    (void)other;
  }
  fz_buf_printf(&b, "  return %%v%d", steps);
  for (int i = 50; i <= steps; i += 50)
    fz_buf_printf(&b, ", %%q%d", i);
  fz_buf_puts(&b, "\n}\n");
  char *text = fz_buf_take(&b);
  ck_assert_ptr_nonnull(text);
  fz_fusion *f = test_parse(text);
  free(text);
  return f;
}

/* Rows too long for one kernel: runs of ops split at the reductions, and
 * running them computes the fusion. */
START_TEST(test_runs_of_normalizations) {
  fz_fusion *f = normalizations(150);
  ck_assert_int_gt(f->num_ops, 512);
  int64_t big[2] = {64, 1 << 20}, small[2] = {5, 9};
  outcome r = segment_and_check(f, big, small, 21, "norms");
  ck_assert_msg(r.status == FZ_OK, "%s", r.message);
  ck_assert_int_gt(r.segments, 1);
  ck_assert_ptr_nonnull(strstr(
      r.printed, "  rejected: greedy merging: 603 ops are more than it "
                 "searches (512); runs of consecutive ops instead\n"));
  ck_assert_ptr_nonnull(strstr(r.printed, "  rejected: run from %s0 through "));
  free(r.printed);
  fz_fusion_destroy(f);
}
END_TEST

/* Past the greedy search too, outputs that need a copy of their own (an
 * input returned, an output returned twice) get one, named apart from
 * every value. */
START_TEST(test_runs_with_copies) {
  fz_buf b = {0};
  fz_buf_puts(&b, "fusion @copies(%x: f32[N], %x.copy0: f32[N]) {\n");
  for (int i = 0; i < 600; i++)
    fz_buf_printf(&b, "  %%o%d = mul %%x, %d.0 : f32[N]\n", i, i + 1);
  fz_buf_puts(&b, "  return %x");
  for (int i = 0; i < 600; i++)
    fz_buf_printf(&b, ", %%o%d", i);
  fz_buf_puts(&b, ", %o7, %x.copy0\n}\n");
  char *text = fz_buf_take(&b);
  ck_assert_ptr_nonnull(text);
  fz_fusion *f = test_parse(text);
  free(text);
  int64_t n[1] = {6};
  outcome r = segment_and_check(f, n, n, 22, "copies");
  ck_assert_msg(r.status == FZ_OK, "%s", r.message);
  ck_assert_int_eq(r.segments, 4);
  ck_assert_ptr_nonnull(strstr(r.printed, "%x.copy1 (output 0)"));
  ck_assert_ptr_nonnull(strstr(r.printed, "%o7.copy601 (output 601)"));
  ck_assert_ptr_nonnull(strstr(r.printed, "%x.copy0.copy602 (output 602)"));
  free(r.printed);
  fz_fusion_destroy(f);
}
END_TEST

/* An op no run containing it is accepted for is an error naming it. */
START_TEST(test_runs_unsupported) {
  fz_buf b = {0};
  fz_buf_puts(&b, "fusion @bad(%x: f32[6, 4] layout(1, 0), %y: f32[N]) {\n"
                  "  %c0 = neg %y : f32[N]\n");
  for (int i = 1; i < 520; i++)
    fz_buf_printf(&b, "  %%c%d = neg %%c%d : f32[N]\n", i, i - 1);
  fz_buf_puts(&b, "  %r = reshape %x : f32[4, 6]\n"
                  "  %s = sum %r dims(1) : f32[4]\n"
                  "  return %c519, %s\n}\n");
  char *text = fz_buf_take(&b);
  ck_assert_ptr_nonnull(text);
  fz_fusion *f = test_parse(text);
  free(text);
  int64_t n[1] = {8};
  outcome r = segment_and_check(f, n, n, 23, "bad runs");
  ck_assert_int_eq(r.status, FZ_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(
      r.message, "no scheduler accepts %r (reshape), alone or with the 1 ops "
                 "after it (transpose: "));
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("segment");
  TCase *t = tcase_create("segment");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, test_softmax_long_rows);
  tcase_add_test(t, test_outputs_used_inside_and_copies);
  tcase_add_test(t, test_two_reductions_scalars);
  tcase_add_test(t, test_symbol_reads);
  tcase_add_test(t, test_var_correction_in_a_segment);
  tcase_add_test(t, test_einsum_example);
  tcase_add_test(t, test_errors);
  tcase_add_test(t, test_random_fusions);
  tcase_add_test(t, test_runs_of_normalizations);
  tcase_add_test(t, test_runs_with_copies);
  tcase_add_test(t, test_runs_unsupported);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return test_run_suite(make()); }
