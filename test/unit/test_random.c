/* test_random.c - randomized testing on the CPU: fusions from
 * fz_random_fusion through the parser, the printer, the passes, the
 * interpreter and the schedulers.
 *
 * For NUM_SEEDS fixed seeds (odd ones with reductions, every fifth with
 * every dtype):
 *  - the fusion verifies, and print -> parse -> print gives the same text;
 *  - canonicalize, cse, alloc-order, and all three in a row, each leave a
 *    fusion that verifies and whose outputs fz_interpret computes bitwise
 *    identically (random inputs in the declared layouts, never zero);
 *  - fz_schedule plans it or declines with a reason, before and after
 *    canonicalize, for a problem made up as fuse-opt --emit=sched does.
 * A failure names the seed and prints the fusion. So does a crash (FZ_DIE,
 * a sanitizer report), from an abort handler or the sanitizers' death
 * callback. TEST_RANDOM_SEED=S runs that one seed alone; TEST_RANDOM_BASE=S
 * runs the 300 seeds from S.
 *
 * Two more tests keep the generator honest: it is deterministic, and over
 * the seeds it produces every opcode, dtype and kind of layout, so that it
 * cannot quietly stop testing something.
 */
#include "test_util.h"

#include "sched/plan.h"
#include "testing/random.h"
#include "testing/splitmix.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NUM_SEEDS = 300, MAX_TENSORS = 16 };

/* The first seed: fixed, or TEST_RANDOM_BASE to try 300 others. */
static uint64_t base_seed(void) {
  const char *s = getenv("TEST_RANDOM_BASE");
  return s && *s ? strtoull(s, NULL, 0) : 20240601;
}

/* Small sizes keep 300 seeds to seconds, sanitizers and all. */
static fz_random_options options_for(uint64_t seed) {
  fz_random_options o = {.allow_reductions = seed % 2 == 1,
                         .max_extent = 24,
                         .max_elements = 16384};
  if (seed % 5 == 4)
    o.dtypes = (1u << FZ_NUM_DTYPES) - 1;
  return o;
}

/* ---- reporting --------------------------------------------------------- */

static uint64_t current_seed;
static char *current_text; /* the fusion being tested, for reports */
static char crash_note[96];

static void set_current(uint64_t seed, char *text) {
  current_seed = seed;
  current_text = text;
  snprintf(crash_note, sizeof crash_note,
           "\ntest_random: crashed at seed %llu, fusion:\n",
           (unsigned long long)seed);
}

static void write_crash_report(void) {
  if (!current_text)
    return;
  ssize_t ignored = write(2, crash_note, strlen(crash_note));
  ignored = write(2, current_text, strlen(current_text));
  (void)ignored;
}

static void on_fatal_signal(int sig) {
  write_crash_report();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Defined when a sanitizer runtime is linked in. */
extern void __sanitizer_set_death_callback(void (*callback)(void))
    __attribute__((weak));

static void fail_seed(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void fail_seed(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "test_random: seed %llu: %s\nfusion:\n%s\n",
          (unsigned long long)current_seed, msg,
          current_text ? current_text : "(none)");
  ck_abort_msg("seed %llu: %s", (unsigned long long)current_seed, msg);
  abort(); /* not reached */
}

/* ---- host tensors ------------------------------------------------------ */

typedef struct tensors {
  int count;
  fz_host_tensor t[MAX_TENSORS];
} tensors;

static void tensors_free(tensors *ts) {
  for (int i = 0; i < ts->count; i++)
    free(ts->t[i].data);
  ts->count = 0;
}

/* Floats in [-1, 1) rounded to the dtype, integers in [-8, 8); never 0
 * (bool is either). */
static void random_element(uint64_t *s, fz_dtype d, void *out) {
  for (;;) {
    uint64_t r = fz_splitmix64(s);
    double u = fz_round_to_dtype((double)(r >> 11) * 0x1p-52 - 1, d);
    int64_t k = (int64_t)(r % 16) - 8;
    if (d == FZ_BOOL) {
      *(uint8_t *)out = (uint8_t)(r >> 63);
      return;
    }
    if (fz_dtype_is_float(d) ? u == 0 : k == 0)
      continue;
    switch (d) {
    case FZ_F64: *(double *)out = u; return;
    case FZ_F32: *(float *)out = (float)u; return;
    case FZ_F16: *(uint16_t *)out = fz_f16_from_double(u); return;
    case FZ_BF16: *(uint16_t *)out = fz_bf16_from_double(u); return;
    case FZ_I64: *(int64_t *)out = k; return;
    case FZ_I32: *(int32_t *)out = (int32_t)k; return;
    case FZ_I8: *(int8_t *)out = (int8_t)k; return;
    default: fail_seed("bad dtype %d", (int)d);
    }
  }
}

/* Inputs in their declared layouts (a one-element gap after each step of
 * a non-contiguous axis, stride 0 on broadcast axes), filled at random. */
static void make_inputs(const fz_fusion *f, const int64_t *symbols,
                        uint64_t seed, tensors *ts) {
  if (f->num_inputs > MAX_TENSORS)
    fail_seed("%d inputs", f->num_inputs);
  uint64_t state = seed;
  ts->count = f->num_inputs;
  for (int i = 0; i < f->num_inputs; i++) {
    const fz_type *type = &f->inputs[i]->type;
    fz_host_tensor *t = &ts->t[i];
    *t = (fz_host_tensor){.dtype = type->dtype, .rank = type->rank};
    int64_t stride = 1, span = 1;
    for (int p = type->rank - 1; p >= 0; p--) {
      int axis = type->alloc_order[p];
      const fz_axis *a = &type->axes[axis];
      t->sizes[axis] = fz_axis_size(a, symbols);
      if (a->kind == FZ_AXIS_BROADCAST) {
        t->strides[axis] = 0;
        continue;
      }
      if (!type->contiguous[p])
        stride += 1;
      t->strides[axis] = stride;
      span += (t->sizes[axis] - 1) * stride;
      stride *= t->sizes[axis] > 1 ? t->sizes[axis] : 1;
    }
    size_t size = fz_dtype_size(type->dtype);
    t->data = malloc((size_t)span * size);
    ck_assert_ptr_nonnull(t->data);
    for (int64_t k = 0; k < span; k++)
      random_element(&state, type->dtype, (char *)t->data + k * (int64_t)size);
  }
}

static int64_t numel(const fz_host_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    n *= t->sizes[d];
  return n;
}

/* Dense row-major outputs, poisoned, then interpreted. Each run poisons
 * with other bytes, so an element left unwritten cannot compare equal. */
static void interpret(const fz_fusion *f, const tensors *in, tensors *out,
                      const char *what) {
  static unsigned char poison = 0xa5;
  poison += 0x3d;
  fz_error err = {0};
  fz_bindings b = {0};
  if (fz_bind_inputs(f, in->t, in->count, &b, &err) != FZ_OK)
    fail_seed("%s: bind: %s", what, err.message);
  if (f->num_outputs > MAX_TENSORS)
    fail_seed("%d outputs", f->num_outputs);
  out->count = f->num_outputs;
  for (int i = 0; i < f->num_outputs; i++) {
    fz_host_tensor *t = &out->t[i];
    *t = (fz_host_tensor){.dtype = f->outputs[i]->type.dtype,
                          .rank = f->outputs[i]->type.rank};
    if (fz_output_sizes(f, i, &b, t->sizes, &err) != FZ_OK)
      fail_seed("%s: output sizes: %s", what, err.message);
    int64_t n = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
      t->strides[d] = n;
      n *= t->sizes[d];
    }
    size_t bytes = (size_t)(n > 0 ? n : 1) * fz_dtype_size(t->dtype);
    t->data = malloc(bytes);
    ck_assert_ptr_nonnull(t->data);
    memset(t->data, poison, bytes);
  }
  fz_bindings_free(&b);
  if (fz_interpret(f, in->t, in->count, out->t, out->count, &err) != FZ_OK)
    fail_seed("%s: interpret: %s", what, err.message);
}

static void assert_same(const tensors *a, const tensors *b, const char *what) {
  if (a->count != b->count)
    fail_seed("%s: %d outputs became %d", what, a->count, b->count);
  for (int i = 0; i < a->count; i++) {
    const fz_host_tensor *x = &a->t[i], *y = &b->t[i];
    if (x->dtype != y->dtype || x->rank != y->rank ||
        memcmp(x->sizes, y->sizes, sizeof x->sizes[0] * (size_t)x->rank))
      fail_seed("%s: output %d changed its type", what, i);
    size_t bytes = (size_t)numel(x) * fz_dtype_size(x->dtype);
    if (memcmp(x->data, y->data, bytes) != 0)
      fail_seed("%s: output %d differs from the original fusion's", what, i);
  }
}

/* ---- steps ----------------------------------------------------------- */

static fz_fusion *parse(const char *text, const char *what) {
  fz_fusion *f = NULL;
  fz_error err = {0};
  if (fz_parse("random.fz", text, strlen(text), &f, &err) != FZ_OK)
    fail_seed("%s: parse: %s", what, err.message);
  return f;
}

typedef struct stats {
  int fusions, pointwise, inner, outer, persistent, declined;
} stats;

static stats totals;

/* A made-up call: the inputs as laid out above, outputs dense in their
 * declared (else row-major) layout, 16-byte aligned, an H200. */
static void schedule(const fz_fusion *f, const tensors *in, bool count,
                     const char *what) {
  fz_error err = {0};
  fz_bindings b = {0};
  if (fz_bind_inputs(f, in->t, in->count, &b, &err) != FZ_OK)
    fail_seed("%s: bind: %s", what, err.message);
  fz_tensor_desc din[MAX_TENSORS], dout[MAX_TENSORS];
  for (int i = 0; i < in->count; i++) {
    din[i] = (fz_tensor_desc){.dtype = in->t[i].dtype, .rank = in->t[i].rank,
                              .align = 16};
    memcpy(din[i].sizes, in->t[i].sizes, sizeof din[i].sizes);
    memcpy(din[i].strides, in->t[i].strides, sizeof din[i].strides);
  }
  for (int i = 0; i < f->num_outputs; i++) {
    const fz_type *t = &f->outputs[i]->type;
    fz_tensor_desc *d = &dout[i];
    *d = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank, .align = 16};
    if (fz_output_sizes(f, i, &b, d->sizes, &err) != FZ_OK)
      fail_seed("%s: output sizes: %s", what, err.message);
    fz_type_dense_strides(t, d->sizes, d->strides);
  }
  fz_problem problem = {.fusion = f, .inputs = din, .outputs = dout,
                        .symbols = b.values,
                        .device = fz_device_info_default(90)};
  fz_arena *arena = fz_arena_create();
  fz_plan *plan = NULL;
  fz_status st = fz_schedule(&problem, arena, &plan, &err);
  if (st == FZ_OK && !plan)
    fail_seed("%s: fz_schedule succeeded without a plan", what);
  if (st != FZ_OK && (st != FZ_ERR_UNSUPPORTED || !err.message[0]))
    fail_seed("%s: fz_schedule: %s: %s", what, fz_status_name(st), err.message);
  if (count) {
    totals.declined += st != FZ_OK;
    totals.pointwise += st == FZ_OK && plan->kind == FZ_PLAN_POINTWISE;
    totals.inner += st == FZ_OK && plan->kind == FZ_PLAN_INNER_REDUCTION;
    totals.outer += st == FZ_OK && plan->kind == FZ_PLAN_OUTER_REDUCTION;
    totals.persistent += st == FZ_OK && plan->kind != FZ_PLAN_POINTWISE &&
                         plan->kind != FZ_PLAN_INNER_REDUCTION &&
                         plan->kind != FZ_PLAN_OUTER_REDUCTION;
  }
  fz_arena_destroy(arena);
  fz_bindings_free(&b);
}

static const char *const pipelines[][4] = {
    {"canonicalize"},
    {"cse"},
    {"alloc-order"},
    {"canonicalize", "alloc-order", "cse"},
};

static void check_seed(uint64_t seed) {
  fz_random_options o = options_for(seed);
  fz_fusion *f = fz_random_fusion(seed, &o);
  ck_assert_ptr_nonnull(f);
  char *text = fz_print(f);
  ck_assert_ptr_nonnull(text);
  set_current(seed, text);
  fz_error err = {0};
  if (fz_verify(f, &err) != FZ_OK)
    fail_seed("the generated fusion does not verify: %s", err.message);

  fz_fusion *copy = parse(text, "round trip");
  char *again = fz_print(copy);
  ck_assert_ptr_nonnull(again);
  if (strcmp(text, again) != 0) {
    fprintf(stderr, "printed again:\n%s\n", again);
    fail_seed("print -> parse -> print changed the text");
  }
  free(again);
  fz_fusion_destroy(copy);

  int64_t symbols[FZ_MAX_RANK * 2] = {0};
  if (f->num_symbols > FZ_MAX_RANK * 2)
    fail_seed("%d symbols", f->num_symbols);
  fz_random_bindings(f, seed, &o, symbols);
  tensors in = {0}, before = {0};
  make_inputs(f, symbols, seed, &in);
  interpret(f, &in, &before, "original");
  schedule(f, &in, false, "original");

  for (size_t p = 0; p < sizeof pipelines / sizeof pipelines[0]; p++) {
    char what[128] = "";
    fz_fusion *g = parse(text, "pipeline");
    for (int k = 0; k < 4 && pipelines[p][k]; k++) {
      snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s",
               k ? " + " : "", pipelines[p][k]);
      if (fz_run_pass(g, pipelines[p][k], &err) != FZ_OK)
        fail_seed("%s: %s", what, err.message);
      if (fz_verify(g, &err) != FZ_OK) {
        char *t = fz_print(g);
        fprintf(stderr, "after %s:\n%s\n", what, t ? t : "");
        free(t);
        fail_seed("%s leaves an invalid fusion: %s", what, err.message);
      }
    }
    tensors after = {0};
    interpret(g, &in, &after, what);
    assert_same(&before, &after, what);
    if (p == 0)
      schedule(g, &in, true, "after canonicalize");
    tensors_free(&after);
    fz_fusion_destroy(g);
  }
  totals.fusions++;
  tensors_free(&in);
  tensors_free(&before);
  set_current(0, NULL);
  free(text);
  fz_fusion_destroy(f);
}

/* ---- tests ------------------------------------------------------------ */

static bool single_seed(uint64_t *seed) {
  const char *s = getenv("TEST_RANDOM_SEED");
  if (!s || !*s)
    return false;
  *seed = strtoull(s, NULL, 0);
  return true;
}

START_TEST(test_seed) {
  uint64_t seed;
  if (single_seed(&seed)) {
    if (_i == 0)
      check_seed(seed);
    return;
  }
  check_seed(base_seed() + (uint64_t)_i);
}
END_TEST

/* The schedulers took a fair share, of every kind: otherwise GPU runs of
 * random fusions would test little. */
START_TEST(test_schedulers_took_some) {
  uint64_t seed;
  if (single_seed(&seed))
    return;
  printf("test_random: %d fusions after canonicalize: %d pointwise, %d inner "
         "and %d outer reductions, %d persistent, %d declined\n",
         totals.fusions, totals.pointwise, totals.inner, totals.outer,
         totals.persistent, totals.declined);
  ck_assert_int_eq(totals.fusions, NUM_SEEDS);
  ck_assert_int_ge(totals.pointwise, NUM_SEEDS / 5);
  ck_assert_int_ge(totals.inner + totals.outer, NUM_SEEDS / 20);
}
END_TEST

START_TEST(test_deterministic) {
  for (uint64_t seed = 1; seed < 40; seed += 3) {
    fz_random_options o = options_for(seed);
    fz_fusion *a = fz_random_fusion(seed, &o), *b = fz_random_fusion(seed, &o);
    char *ta = fz_print(a), *tb = fz_print(b);
    ck_assert_str_eq(ta, tb);
    int64_t va[16] = {0}, vb[16] = {0};
    fz_random_bindings(a, seed, &o, va);
    fz_random_bindings(b, seed, &o, vb);
    ck_assert_mem_eq(va, vb, sizeof va);
    for (int s = 0; s < a->num_symbols; s++)
      ck_assert(va[s] >= 1 && va[s] <= o.max_extent);
    fz_fusion *c = fz_random_fusion(seed + 1, &o);
    char *tc = fz_print(c);
    ck_assert_str_ne(ta, tc);
    free(ta);
    free(tb);
    free(tc);
    fz_fusion_destroy(a);
    fz_fusion_destroy(b);
    fz_fusion_destroy(c);
  }
}
END_TEST

static bool is_identity(const int *order, int rank) {
  for (int k = 0; k < rank; k++)
    if (order[k] != k)
      return false;
  return true;
}

START_TEST(test_coverage) {
  /* dtypes: of inputs and of cast results */
  int opcodes[FZ_NUM_OPCODES] = {0}, dtypes[FZ_NUM_DTYPES] = {0};
  int permuted = 0, noncontig = 0, b1 = 0, expanded = 0, declared = 0,
      keepdim = 0, dropdim = 0, outputs[4] = {0}, ranks[5] = {0};
  for (int i = 0; i < NUM_SEEDS; i++) {
    uint64_t seed = base_seed() + (uint64_t)i;
    fz_random_options o = options_for(seed);
    fz_fusion *f = fz_random_fusion(seed, &o);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(f->num_inputs, 1);
    ck_assert_int_le(f->num_inputs, 3);
    ck_assert_int_ge(f->num_outputs, 1);
    ck_assert_int_le(f->num_outputs, 3);
    outputs[f->num_outputs]++;
    for (int k = 0; k < f->num_inputs; k++) {
      const fz_type *t = &f->inputs[k]->type;
      ck_assert_int_ge(t->rank, 1);
      ck_assert_int_le(t->rank, 4);
      ranks[t->rank]++;
      dtypes[t->dtype]++;
      permuted += !is_identity(t->alloc_order, t->rank);
      for (int a = 0; a < t->rank; a++) {
        noncontig += !t->contiguous[a];
        b1 += t->axes[a].kind == FZ_AXIS_BROADCAST && !t->axes[a].expanded;
        expanded += t->axes[a].expanded;
      }
    }
    for (int k = 0; k < f->num_ops; k++) {
      const fz_op *op = f->ops[k];
      opcodes[op->code]++;
      if (op->code == FZ_OP_CAST)
        dtypes[op->result->type.dtype]++;
      if (fz_op_table[op->code].kind == FZ_KIND_REDUCTION) {
        keepdim += op->keepdim;
        dropdim += !op->keepdim;
      }
    }
    for (int k = 0; k < f->num_outputs; k++)
      declared += f->outputs[k]->type.has_layout;
    fz_fusion_destroy(f);
  }
  for (int c = 0; c < FZ_NUM_OPCODES; c++)
    ck_assert_msg(opcodes[c] > 0, "no random fusion uses %s",
                  fz_op_table[c].name);
  for (int d = 0; d < FZ_NUM_DTYPES; d++)
    ck_assert_msg(dtypes[d] > 0, "no random input or cast is %s",
                  fz_dtype_name((fz_dtype)d));
  for (int r = 1; r <= 4; r++)
    ck_assert_msg(ranks[r] > 0, "no random input has rank %d", r);
  for (int n = 1; n <= 3; n++)
    ck_assert_msg(outputs[n] > 0, "no random fusion has %d outputs", n);
  ck_assert_int_gt(permuted, 0);
  ck_assert_int_gt(noncontig, 0);
  ck_assert_int_gt(b1, 0);
  ck_assert_int_gt(expanded, 0);
  ck_assert_int_gt(declared, 0);
  ck_assert_int_gt(keepdim, 0);
  ck_assert_int_gt(dropdim, 0);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("random");
  TCase *tc = tcase_create("random");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_deterministic);
  tcase_add_test(tc, test_coverage);
  tcase_add_loop_test(tc, test_seed, 0, NUM_SEEDS);
  tcase_add_test(tc, test_schedulers_took_some);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (__sanitizer_set_death_callback) {
    __sanitizer_set_death_callback(write_crash_report);
  } else {
    signal(SIGSEGV, on_fatal_signal);
    signal(SIGBUS, on_fatal_signal);
  }
  signal(SIGABRT, on_fatal_signal);
  return test_run_suite(make());
}
