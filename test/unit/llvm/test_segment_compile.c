/* test_segment_compile.c - the executor's CPU half on segmented fusions:
 * everything a signature miss does short of the GPU.
 *
 * Each fusion goes the executor's way: a copy (fz_fusion_clone), the
 * "alloc-order" pass on it, a problem made up as fuse-run lays tensors out
 * (inputs dense in their declared layouts, stride 0 on broadcast axes;
 * outputs dense in the layout the executor gives them; 16-byte aligned;
 * an H200), fz_segment_fusion, then per segment its problem
 * (fz_segment_problem with fz_intermediate_desc), a plan from
 * fz_schedule, and PTX from fz_compile_plan (no disk cache), whose
 * kernel must take exactly the parameters the launcher passes; ptxas
 * assembles it where installed.
 *
 * The segments are also run on the host, in order, by the interpreter,
 * each reading and writing the buffers its fz_buffer_refs name (parent
 * inputs and outputs, intermediates dense in their descriptors) exactly
 * as the executor wires its launches; the parent outputs must come out
 * bitwise equal to interpreting the whole fusion. So a wrong ref, a
 * missing write or a segment that lowers badly fails here, on CI, before
 * the GPU machine sees it.
 *
 * The fusions are those of test/gpu/segment_*.fz: seed 004's einsum
 * backward, two reductions over different axes of one input, softmax
 * with rows too long for the persistent scheduler, an output also used
 * inside, outputs that are inputs, a scalar input, and a channels-last
 * pointwise fusion (one segment, whose output follows the input's
 * layout); then random fusions with reductions.
 */
#include "lower_util.h"

#include "codegen/codegen.h"
#include "sched/pass.h"
#include "sched/segment.h"
#include "testing/random.h"
#include "testing/splitmix.h"

enum { MAX_T = 16, NUM_RANDOM = 40 };

/* Kernels that call libdevice cannot be compiled without it: those
 * segments print a SKIP line instead of passing. */
static bool have_libdevice(void) {
  char path[4096];
  fz_error err = {0};
  return fz_libdevice_find(path, sizeof path, &err) == FZ_OK;
}

/* ---- the problem, as the executor sees it ---------------------------------
 */

typedef struct case_run {
  const char *what;
  fz_fusion *f; /* the executor's copy, alloc-order applied */
  int64_t symbols[32];
  fz_tensor_desc in[MAX_T], out[MAX_T];
  fz_problem pb;
  fz_segmentation *s;
  fz_tensor_desc *im; /* s->num_intermediates */
} case_run;

/* Dense in the value's layout (row-major when it has none); on inputs, a
 * broadcast axis is a stride-0 view as fuse-run passes it. */
static void dense(const fz_value *v, const int64_t *symbols, bool input,
                  fz_tensor_desc *d) {
  const fz_type *t = &v->type;
  *d = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank, .align = 16};
  int64_t stride = 1;
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->has_layout ? t->alloc_order[p] : p;
    d->sizes[axis] = fz_axis_size(&t->axes[axis], symbols);
    if (input && t->axes[axis].kind == FZ_AXIS_BROADCAST) {
      d->strides[axis] = 0;
      continue;
    }
    d->strides[axis] = stride;
    stride *= d->sizes[axis] > 1 ? d->sizes[axis] : 1;
  }
}

/* binds: "M=8,N=1000"; unbound symbols are 8. */
static void bind(case_run *c, const char *binds) {
  ck_assert_int_le(c->f->num_symbols, 32);
  for (int i = 0; i < c->f->num_symbols; i++)
    c->symbols[i] = 8;
  for (const char *p = binds; p && *p;) {
    char name[32];
    long long v;
    int used = 0;
    ck_assert_int_eq(sscanf(p, "%31[^=]=%lld%n", name, &v, &used), 2);
    int sym = fz_fusion_find_symbol(c->f, name);
    ck_assert_msg(sym >= 0, "no symbol %s", name);
    c->symbols[sym] = v;
    p += used;
    if (*p == ',')
      p++;
  }
}

/* Copy, alloc-order, problem, segmentation. FZ_OK or the segmenter's
 * status (FZ_ERR_UNSUPPORTED), with the case left ready to free. */
static fz_status segment(case_run *c, const fz_fusion *original,
                         const int64_t *symbols, const char *binds,
                         fz_error *err) {
  c->f = fz_fusion_clone(original, err);
  ck_assert_msg(c->f != NULL, "%s: clone: %s", c->what, err->message);
  ck_assert_msg(fz_pass_alloc_order(c->f, err) == FZ_OK, "%s: %s", c->what,
                err->message);
  if (symbols)
    memcpy(c->symbols, symbols, sizeof(int64_t) * (size_t)c->f->num_symbols);
  else
    bind(c, binds);
  ck_assert_int_le(c->f->num_inputs, MAX_T);
  ck_assert_int_le(c->f->num_outputs, MAX_T);
  for (int i = 0; i < c->f->num_inputs; i++)
    dense(c->f->inputs[i], c->symbols, true, &c->in[i]);
  for (int i = 0; i < c->f->num_outputs; i++)
    dense(c->f->outputs[i], c->symbols, false, &c->out[i]);
  c->pb = (fz_problem){.fusion = c->f,
                       .inputs = c->in,
                       .outputs = c->out,
                       .symbols = c->symbols,
                       .device = fz_device_info_default(90)};
  fz_status st = fz_segment_fusion(&c->pb, &c->s, err);
  if (st != FZ_OK)
    return st;
  c->im = calloc((size_t)c->s->num_intermediates + 1, sizeof *c->im);
  ck_assert_ptr_nonnull(c->im);
  for (int i = 0; i < c->s->num_intermediates; i++)
    fz_intermediate_desc(&c->s->intermediates[i], c->symbols, &c->im[i]);
  return FZ_OK;
}

static void case_free(case_run *c) {
  free(c->im);
  fz_segmentation_destroy(c->s);
  fz_fusion_destroy(c->f);
  *c = (case_run){0};
}

/* ---- wiring ----------------------------------------------------------------
 */

/* Every parent output is written by exactly one segment; every
 * intermediate by one segment and read only after it; descriptors agree
 * with the segment fusions' declarations. */
static void check_wiring(const case_run *c) {
  const fz_segmentation *s = c->s;
  int out_writes[MAX_T] = {0};
  int *im_writer = malloc(sizeof(int) * (size_t)(s->num_intermediates + 1));
  ck_assert_ptr_nonnull(im_writer);
  for (int i = 0; i < s->num_intermediates; i++)
    im_writer[i] = -1;
  for (int k = 0; k < s->num_segments; k++) {
    const fz_segment *seg = &s->segments[k];
    ck_assert_msg(fz_verify(seg->fusion, NULL) == FZ_OK,
                  "%s: segment %d does not verify", c->what, k);
    for (int i = 0; i < seg->fusion->num_inputs; i++) {
      fz_buffer_ref r = seg->inputs[i];
      if (r.kind == FZ_BUFFER_INTERMEDIATE) {
        ck_assert_int_lt(r.index, s->num_intermediates);
        ck_assert_msg(im_writer[r.index] >= 0 && im_writer[r.index] < k,
                      "%s: segment %d reads intermediate %d before it is "
                      "written",
                      c->what, k, r.index);
      } else if (r.kind == FZ_BUFFER_OUTPUT) {
        ck_assert_int_lt(r.index, c->f->num_outputs);
        ck_assert_msg(out_writes[r.index] == 1,
                      "%s: segment %d reads output %d before it is written",
                      c->what, k, r.index);
      } else {
        ck_assert_int_eq(r.kind, FZ_BUFFER_INPUT);
        ck_assert_int_lt(r.index, c->f->num_inputs);
      }
    }
    for (int j = 0; j < seg->fusion->num_outputs; j++) {
      fz_buffer_ref r = seg->outputs[j];
      ck_assert_int_ne(r.kind, FZ_BUFFER_INPUT);
      if (r.kind == FZ_BUFFER_OUTPUT) {
        ck_assert_int_lt(r.index, c->f->num_outputs);
        out_writes[r.index]++;
      } else {
        ck_assert_int_lt(r.index, s->num_intermediates);
        ck_assert_int_eq(im_writer[r.index], -1);
        im_writer[r.index] = k;
      }
    }
  }
  for (int j = 0; j < c->f->num_outputs; j++)
    ck_assert_msg(out_writes[j] == 1, "%s: output %d written %d times", c->what,
                  j, out_writes[j]);
  for (int i = 0; i < s->num_intermediates; i++)
    ck_assert_msg(im_writer[i] >= 0, "%s: intermediate %d never written",
                  c->what, i);
  free(im_writer);
}

/* ---- plans and PTX
 * ----------------------------------------------------------- */

static int count_params(const char *ptx, const char *kernel) {
  char head[256];
  snprintf(head, sizeof head, ".entry %s(", kernel);
  const char *at = strstr(ptx, head);
  ck_assert_msg(report(at != NULL, ptx), "no %s", head);
  const char *end = strchr(at, ')');
  ck_assert_ptr_nonnull(end);
  int n = 0;
  for (const char *p = strstr(at, ".param"); p && p < end;
       p = strstr(p + 6, ".param"))
    n++;
  return n;
}

/* Every segment: its scheduler's plan, PTX with as many parameters as the
 * launcher passes, assembled. Returns the number of segments compiled. */
static int compile_segments(const case_run *c) {
  bool libdevice = have_libdevice();
  int compiled = 0;
  for (int k = 0; k < c->s->num_segments; k++) {
    const fz_segment *seg = &c->s->segments[k];
    fz_arena *arena = fz_arena_create();
    fz_problem pb;
    fz_segment_problem(c->s, k, &c->pb, c->im, arena, &pb);
    ck_assert_ptr_eq(pb.fusion, seg->fusion);
    const char *pick = fz_schedule_pick(&pb);
    ck_assert_msg(pick && strcmp(pick, seg->scheduler) == 0,
                  "%s: segment %d was made for %s, but %s takes it", c->what, k,
                  seg->scheduler, pick ? pick : "no scheduler");
    fz_plan *plan = NULL;
    fz_error err = {0};
    ck_assert_msg(fz_schedule(&pb, arena, &plan, &err) == FZ_OK,
                  "%s: segment %d: %s", c->what, k, err.message);
    unsigned grid[3], block[3];
    fz_plan_launch_shape(plan, grid, block);
    ck_assert_uint_ge(block[0], 1);
    fz_compile_options opts = {.sm = 90, .opt_level = 3, .use_cache = false};
    fz_kernel_code code;
    fz_status st = fz_compile_plan(plan, &opts, &code, &err);
    if (st != FZ_OK && !libdevice) {
      printf("SKIP: %s segment %d: %s\n", c->what, k, err.message);
      fz_arena_destroy(arena);
      continue;
    }
    ck_assert_msg(st == FZ_OK, "%s: segment %d (%s): %s", c->what, k,
                  seg->scheduler, err.message);
    ck_assert_int_eq(count_params(code.ptx, plan->kernel_name),
                     fz_plan_num_params(plan));
    assemble(code.ptx);
    fz_kernel_code_free(&code);
    fz_arena_destroy(arena);
    compiled++;
  }
  return compiled;
}

/* ---- running the segments on the host ---------------------------------------
 */

static int64_t span_of(const fz_tensor_desc *d) {
  int64_t span = 1;
  for (int i = 0; i < d->rank; i++) {
    if (d->sizes[i] == 0)
      return 0;
    span += (d->sizes[i] - 1) * d->strides[i];
  }
  return span;
}

/* Host memory for a descriptor, poisoned with `poison`. */
static fz_host_tensor host_alloc(const fz_tensor_desc *d, int poison) {
  fz_host_tensor t = {.dtype = d->dtype, .rank = d->rank};
  memcpy(t.sizes, d->sizes, sizeof t.sizes);
  memcpy(t.strides, d->strides, sizeof t.strides);
  int64_t span = span_of(d);
  size_t bytes = (size_t)(span > 0 ? span : 1) * fz_dtype_size(d->dtype);
  t.data = malloc(bytes);
  ck_assert_ptr_nonnull(t.data);
  memset(t.data, poison, bytes);
  return t;
}

/* Never zero: floats in [1/8, 1) with a random sign, small integers. */
static void fill_random(fz_host_tensor *t, const fz_tensor_desc *d,
                        uint64_t seed) {
  int64_t span = span_of(d);
  size_t size = fz_dtype_size(d->dtype);
  for (int64_t k = 0; k < span; k++) {
    uint64_t r = fz_splitmix64(&seed);
    double sign = (r & 1) ? -1 : 1;
    double u = fz_round_to_dtype(
        sign * (0.125 + (double)(r >> 11) * 0x1p-53 * 0.875), d->dtype);
    int64_t i = (int64_t)sign * (int64_t)(1 + (r >> 8) % 7);
    char *p = (char *)t->data + (size_t)k * size;
    switch (d->dtype) {
    case FZ_F64:
      *(double *)p = u;
      break;
    case FZ_F32:
      *(float *)p = (float)u;
      break;
    case FZ_F16:
      *(uint16_t *)p = fz_f16_from_double(u);
      break;
    case FZ_BF16:
      *(uint16_t *)p = fz_bf16_from_double(u);
      break;
    case FZ_I64:
      *(int64_t *)p = i;
      break;
    case FZ_I32:
      *(int32_t *)p = (int32_t)i;
      break;
    case FZ_I8:
      *(int8_t *)p = (int8_t)i;
      break;
    case FZ_BOOL:
      *(uint8_t *)p = (uint8_t)(r >> 63);
      break;
    default:
      ck_abort_msg("bad dtype");
    }
  }
}

static fz_host_tensor *resolve(fz_buffer_ref r, fz_host_tensor *in,
                               fz_host_tensor *out, fz_host_tensor *im) {
  switch (r.kind) {
  case FZ_BUFFER_INPUT:
    return &in[r.index];
  case FZ_BUFFER_OUTPUT:
    return &out[r.index];
  case FZ_BUFFER_INTERMEDIATE:
    return &im[r.index];
  }
  ck_abort_msg("bad buffer kind");
  return NULL;
}

/* The segments in order on the host, then the whole fusion: the outputs
 * must be bitwise equal. */
static void run_on_host(const case_run *c, uint64_t seed) {
  const fz_fusion *f = c->f;
  const fz_segmentation *s = c->s;
  fz_host_tensor in[MAX_T], out[MAX_T], whole[MAX_T];
  fz_host_tensor *im = calloc((size_t)s->num_intermediates + 1, sizeof *im);
  ck_assert_ptr_nonnull(im);
  for (int i = 0; i < f->num_inputs; i++) {
    in[i] = host_alloc(&c->in[i], 0);
    fill_random(&in[i], &c->in[i], seed + (uint64_t)i * 7919);
  }
  for (int j = 0; j < f->num_outputs; j++) {
    out[j] = host_alloc(&c->out[j], 0xa5);
    whole[j] = host_alloc(&c->out[j], 0x5a);
  }
  for (int i = 0; i < s->num_intermediates; i++)
    im[i] = host_alloc(&c->im[i], 0xa5);
  fz_error err = {0};
  for (int k = 0; k < s->num_segments; k++) {
    const fz_segment *seg = &s->segments[k];
    fz_host_tensor sin[MAX_T], sout[MAX_T];
    ck_assert_int_le(seg->fusion->num_inputs, MAX_T);
    ck_assert_int_le(seg->fusion->num_outputs, MAX_T);
    for (int i = 0; i < seg->fusion->num_inputs; i++)
      sin[i] = *resolve(seg->inputs[i], in, out, im);
    for (int j = 0; j < seg->fusion->num_outputs; j++)
      sout[j] = *resolve(seg->outputs[j], in, out, im);
    ck_assert_msg(fz_interpret(seg->fusion, sin, seg->fusion->num_inputs, sout,
                               seg->fusion->num_outputs, &err) == FZ_OK,
                  "%s: segment %d: %s", c->what, k, err.message);
  }
  ck_assert_msg(
      fz_interpret(f, in, f->num_inputs, whole, f->num_outputs, &err) == FZ_OK,
      "%s: whole: %s", c->what, err.message);
  for (int j = 0; j < f->num_outputs; j++) {
    size_t bytes = (size_t)span_of(&c->out[j]) * fz_dtype_size(c->out[j].dtype);
    ck_assert_msg(memcmp(out[j].data, whole[j].data, bytes) == 0,
                  "%s: output %d of the segments differs from the whole "
                  "fusion's",
                  c->what, j);
  }
  for (int i = 0; i < f->num_inputs; i++)
    free(in[i].data);
  for (int j = 0; j < f->num_outputs; j++) {
    free(out[j].data);
    free(whole[j].data);
  }
  for (int i = 0; i < s->num_intermediates; i++)
    free(im[i].data);
  free(im);
}

/* ---- the cases
 * --------------------------------------------------------------- */

/* Segments `text` at `binds`, checks the count (segments < 0: at least
 * two), the wiring, the PTX of every segment and, when `host_binds` is
 * not NULL, the host run at those (smaller) sizes. */
static void check_case(const char *what, const char *text, const char *binds,
                       int segments, const char *host_binds) {
  fz_fusion *f = test_parse(text);
  case_run c = {.what = what};
  fz_error err = {0};
  ck_assert_msg(segment(&c, f, NULL, binds, &err) == FZ_OK, "%s: %s", what,
                err.message);
  if (segments >= 0)
    ck_assert_msg(c.s->num_segments == segments, "%s: %d segments, not %d",
                  what, c.s->num_segments, segments);
  else
    ck_assert_int_ge(c.s->num_segments, 2);
  check_wiring(&c);
  compile_segments(&c);
  if (host_binds) {
    case_free(&c);
    c.what = what;
    ck_assert(segment(&c, f, NULL, host_binds, &err) == FZ_OK);
    if (segments >= 0)
      ck_assert_int_eq(c.s->num_segments, segments);
    check_wiring(&c);
    run_on_host(&c, 11);
  }
  case_free(&c);
  fz_fusion_destroy(f);
}

static char *read_text(const char *path) {
  FILE *in = fopen(path, "rb");
  ck_assert_msg(in != NULL, "cannot open %s (set FZ_SOURCE_DIR)", path);
  fseek(in, 0, SEEK_END);
  long n = ftell(in);
  fseek(in, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(text);
  ck_assert_int_eq(fread(text, 1, (size_t)n, in), (size_t)n);
  text[n] = '\0';
  fclose(in);
  return text;
}

START_TEST(test_einsum_seed004) {
  char *text =
      read_text(test_source_path("examples/seed004_einsum_fusion_id33.fz"));
  check_case("einsum", text, "", -1, "");
  free(text);
}
END_TEST

START_TEST(test_two_reductions) {
  check_case("two reductions",
             "fusion @two_reductions(%x: f32[A, B, C]) {\n"
             "  %r = sum %x dims(0) : f32[B, C]\n"
             "  %c = amax %x dims(2) : f32[A, B]\n"
             "  return %r, %c\n"
             "}\n",
             "A=300,B=20,C=500", 2, "A=30,B=20,C=50");
}
END_TEST

static const char *SOFTMAX = "fusion @softmax_long(%x: f32[R, C]) {\n"
                             "  %m = amax %x dims(1) keepdim : f32[R, b1]\n"
                             "  %me = expand %m : f32[R, b1->C]\n"
                             "  %d = sub %x, %me : f32[R, C]\n"
                             "  %e = exp %d : f32[R, C]\n"
                             "  %s = sum %e dims(1) keepdim : f32[R, b1]\n"
                             "  %se = expand %s : f32[R, b1->C]\n"
                             "  %y = div %e, %se : f32[R, C]\n"
                             "  return %y\n"
                             "}\n";

START_TEST(test_softmax_long_rows) {
  /* the host run keeps rows of 2^20 (still too long for the persistent
   * scheduler), but only two of them */
  check_case("softmax", SOFTMAX, "R=64,C=1048576", 3, "R=2,C=1048576");
}
END_TEST

START_TEST(test_output_used_inside) {
  const char *text = "fusion @output_used_inside(%x: f32[A, B, C]) {\n"
                     "  %y = exp %x : f32[A, B, C]\n"
                     "  %r = sum %y dims(0) : f32[B, C]\n"
                     "  %c = sum %y dims(2) : f32[A, B]\n"
                     "  return %y, %r, %c\n"
                     "}\n";
  check_case("output used inside", text, "A=300,B=20,C=500", 2,
             "A=30,B=20,C=50");
  /* some segment reads the output another one wrote */
  fz_fusion *f = test_parse(text);
  case_run c = {.what = "output used inside"};
  fz_error err = {0};
  ck_assert(segment(&c, f, NULL, "A=30,B=20,C=50", &err) == FZ_OK);
  bool reads_output = false;
  for (int k = 0; k < c.s->num_segments; k++)
    for (int i = 0; i < c.s->segments[k].fusion->num_inputs; i++)
      reads_output |= c.s->segments[k].inputs[i].kind == FZ_BUFFER_OUTPUT;
  ck_assert(reads_output);
  case_free(&c);
  fz_fusion_destroy(f);
}
END_TEST

/* Found by fuse-run --random --reductions on the H200 (seed 1796013143):
 * in a square space an unrelated input is matched position by position,
 * and a row value (sum over in1's rows) met a column reduction (amax
 * through a permute); the persistent scheduler accepted the whole fusion
 * and lowering refused it ("node reads column node"). Now persistent
 * declines and the fusion splits; every segment must compile. */
START_TEST(test_row_meets_column) {
  check_case("row meets column",
             "fusion @row_meets_column(%in0: f32[N, 7], %in1: f32[N, 7] "
             "noncontig(1)) {\n"
             "  %0 = isnan %in0 : bool[N, 7]\n"
             "  %1 = full 0.5 : f32[b1, b1]\n"
             "  %2 = add %1, %0 : f32[N, 7]\n"
             "  %3 = permute %2 perm(1, 0) : f32[7, N]\n"
             "  %4 = sum %in1 dims(0) : f32[7]\n"
             "  %6 = sin %4 : f32[7]\n"
             "  %8 = amax %3 dims(1) : f32[7]\n"
             "  %9 = add %6, %8 : f32[7]\n"
             "  %13 = rsqrt %3 : f32[7, N]\n"
             "  return %9, %13\n"
             "}\n",
             "N=7", 2, "N=7");
}
END_TEST

START_TEST(test_passthrough) {
  check_case("passthrough",
             "fusion @passthrough(%x: f32[M, N], %w: f32[N]) {\n"
             "  %r = sum %x dims(1) : f32[M]\n"
             "  return %x, %r, %w\n"
             "}\n",
             "M=300,N=500", -1, "M=30,N=50");
}
END_TEST

START_TEST(test_scalar_input) {
  check_case("scalar input",
             "fusion @scalar_input(%x: f32[A, B, C], %a: f64) {\n"
             "  %y = mul %x, %a : f32[A, B, C]\n"
             "  %r = sum %y dims(0) : f32[B, C]\n"
             "  %c = sum %y dims(2) : f32[A, B]\n"
             "  return %r, %c\n"
             "}\n",
             "A=300,B=20,C=500", 2, "A=30,B=20,C=50");
}
END_TEST

START_TEST(test_channels_last_pointwise) {
  const char *text =
      "fusion @channels_last(%x: f32[N, C, H, W] layout(0, 2, 3, 1), "
      "%b: f32[b1, C, b1, b1]) {\n"
      "  %y = add %b, %x : f32[N, C, H, W]\n"
      "  %z = relu %y : f32[N, C, H, W]\n"
      "  return %z\n"
      "}\n";
  check_case("channels last", text, "N=8,C=64,H=14,W=14", 1,
             "N=2,C=16,H=5,W=7");
  fz_fusion *f = test_parse(text);
  case_run c = {.what = "channels last"};
  fz_error err = {0};
  ck_assert(segment(&c, f, NULL, "N=2,C=16,H=5,W=7", &err) == FZ_OK);
  /* scheduled whole: the one segment is the executor's fusion itself */
  ck_assert_ptr_eq(c.s->segments[0].fusion, c.f);
  /* the output is laid out as the input: C innermost */
  const fz_type *t = &c.f->outputs[0]->type;
  ck_assert(t->has_layout);
  int want[4] = {0, 2, 3, 1};
  ck_assert(memcmp(t->alloc_order, want, sizeof want) == 0);
  ck_assert_int_eq(c.out[0].strides[1], 1);
  ck_assert_int_eq(c.out[0].strides[3], 16);
  /* and the caller's fusion still has no layout on it */
  ck_assert(!f->outputs[0]->type.has_layout);
  case_free(&c);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(test_random_fusions) {
  int segmented = 0, declined = 0;
  for (uint64_t seed = 4100; seed < 4100 + NUM_RANDOM; seed++) {
    fz_random_options o = {
        .allow_reductions = true, .max_extent = 24, .max_elements = 8192};
    fz_fusion *f = fz_random_fusion(seed, &o);
    ck_assert_ptr_nonnull(f);
    int64_t symbols[64];
    ck_assert_int_le(f->num_symbols, 64);
    fz_random_bindings(f, seed, &o, symbols);
    char what[64];
    snprintf(what, sizeof what, "random seed %llu", (unsigned long long)seed);
    case_run c = {.what = what};
    fz_error err = {0};
    fz_status st = segment(&c, f, symbols, NULL, &err);
    if (st == FZ_ERR_UNSUPPORTED) {
      declined++;
    } else {
      char *text = fz_print(f);
      ck_assert_msg(st == FZ_OK, "%s: %s\n%s", what, err.message, text);
      free(text);
      segmented += c.s->num_segments > 1;
      check_wiring(&c);
      compile_segments(&c);
      run_on_host(&c, seed);
    }
    case_free(&c);
    fz_fusion_destroy(f);
  }
  printf("random fusions: %d segmented, %d unsupported, of %d\n", segmented,
         declined, NUM_RANDOM);
  ck_assert_int_ge(segmented, 1); /* the test must exercise segmentation */
  ck_assert_int_le(declined, NUM_RANDOM / 4);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("segment_compile");
  TCase *tc = tcase_create("segment_compile");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_einsum_seed004);
  tcase_add_test(tc, test_two_reductions);
  tcase_add_test(tc, test_softmax_long_rows);
  tcase_add_test(tc, test_output_used_inside);
  tcase_add_test(tc, test_row_meets_column);
  tcase_add_test(tc, test_passthrough);
  tcase_add_test(tc, test_scalar_input);
  tcase_add_test(tc, test_channels_last_pointwise);
  tcase_add_test(tc, test_random_fusions);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
