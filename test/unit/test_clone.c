/* test_clone.c - fz_fusion_clone: a copy that prints, verifies and
 * interprets exactly like the original, and shares nothing with it.
 *
 * Every examples/ file and 200 random fusions (fz_random_fusion, half with
 * reductions) are cloned; the clone must print the same text, verify, and
 * give bitwise the same outputs under the interpreter (random inputs in the
 * declared layouts). Builder-made fusions check what the text hides: value
 * ids and next_value_id (unnamed values are numbered by the printer, later
 * builder calls number from next_value_id), shared literals, op
 * attributes. Passes run on the clone must leave the original as it was,
 * and bad fusions are refused with an error, not copied half-way.
 */
#include "test_util.h"

#include "testing/random.h"
#include "testing/splitmix.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_TENSORS = 16, NUM_RANDOM = 200 };

/* Larger inputs are not interpreted (seed 004's PlayGround is 2.4 GB). */
#define MAX_INTERPRETED_ELEMENTS (1 << 23)

static fz_fusion *clone_ok(const fz_fusion *f) {
  fz_error err = {0};
  fz_fusion *c = fz_fusion_clone(f, &err);
  ck_assert_msg(c != NULL, "clone failed: %s", err.message);
  ck_assert_msg(fz_verify(c, &err) == FZ_OK, "clone does not verify: %s",
                err.message);
  return c;
}

static void assert_same_text(const fz_fusion *a, const fz_fusion *b,
                             const char *what) {
  char *x = fz_print(a), *y = fz_print(b);
  ck_assert_ptr_nonnull(x);
  ck_assert_ptr_nonnull(y);
  ck_assert_msg(strcmp(x, y) == 0,
                "%s: the clone prints\n%s\nbut the "
                "original\n%s",
                what, y, x);
  free(x);
  free(y);
}

/* ---- interpreting both ------------------------------------------------- */

typedef struct tensors {
  int count;
  fz_host_tensor t[MAX_TENSORS];
} tensors;

static void tensors_free(tensors *ts) {
  for (int i = 0; i < ts->count; i++)
    free(ts->t[i].data);
  ts->count = 0;
}

/* Never zero: floats in [1/8, 1) with a random sign, integers in 1..7 with
 * a random sign, bool either. */
static void random_element(uint64_t *s, fz_dtype d, void *out) {
  uint64_t r = fz_splitmix64(s);
  double sign = (r & 1) ? -1 : 1;
  double u = fz_round_to_dtype(
      sign * (0.125 + (double)(r >> 11) * 0x1p-53 * 0.875), d);
  int64_t k = (int64_t)sign * (int64_t)(1 + (r >> 8) % 7);
  switch (d) {
  case FZ_F64:
    *(double *)out = u;
    break;
  case FZ_F32:
    *(float *)out = (float)u;
    break;
  case FZ_F16:
    *(uint16_t *)out = fz_f16_from_double(u);
    break;
  case FZ_BF16:
    *(uint16_t *)out = fz_bf16_from_double(u);
    break;
  case FZ_I64:
    *(int64_t *)out = k;
    break;
  case FZ_I32:
    *(int32_t *)out = (int32_t)k;
    break;
  case FZ_I8:
    *(int8_t *)out = (int8_t)k;
    break;
  case FZ_BOOL:
    *(uint8_t *)out = (uint8_t)(r >> 63);
    break;
  default:
    ck_abort_msg("bad dtype %d", (int)d);
  }
}

/* Inputs in their declared layouts (stride 0 on broadcast axes), random.
 * Returns false when they would be too large to interpret. */
static bool make_inputs(const fz_fusion *f, const int64_t *symbols,
                        uint64_t seed, tensors *ts) {
  ck_assert_int_le(f->num_inputs, MAX_TENSORS);
  uint64_t state = seed;
  int64_t total = 0;
  ts->count = 0;
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
      t->strides[axis] = stride;
      span += (t->sizes[axis] - 1) * stride;
      stride *= t->sizes[axis] > 1 ? t->sizes[axis] : 1;
    }
    total += span;
    if (total > MAX_INTERPRETED_ELEMENTS)
      return false;
    size_t size = fz_dtype_size(type->dtype);
    t->data = malloc((size_t)span * size);
    ck_assert_ptr_nonnull(t->data);
    ts->count++;
    for (int64_t k = 0; k < span; k++)
      random_element(&state, type->dtype, (char *)t->data + k * (int64_t)size);
  }
  return true;
}

static void interpret(const fz_fusion *f, const tensors *in, tensors *out) {
  fz_error err = {0};
  fz_bindings b = {0};
  ck_assert_msg(fz_bind_inputs(f, in->t, in->count, &b, &err) == FZ_OK, "%s",
                err.message);
  ck_assert_int_le(f->num_outputs, MAX_TENSORS);
  out->count = f->num_outputs;
  for (int i = 0; i < f->num_outputs; i++) {
    fz_host_tensor *t = &out->t[i];
    *t = (fz_host_tensor){.dtype = f->outputs[i]->type.dtype,
                          .rank = f->outputs[i]->type.rank};
    ck_assert(fz_output_sizes(f, i, &b, t->sizes, &err) == FZ_OK);
    int64_t n = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
      t->strides[d] = n;
      n *= t->sizes[d];
    }
    size_t bytes = (size_t)(n > 0 ? n : 1) * fz_dtype_size(t->dtype);
    t->data = malloc(bytes);
    ck_assert_ptr_nonnull(t->data);
    memset(t->data, 0xa5 + i, bytes);
  }
  fz_bindings_free(&b);
  ck_assert_msg(fz_interpret(f, in->t, in->count, out->t, out->count, &err) ==
                    FZ_OK,
                "%s", err.message);
}

/* The original and its clone give bitwise the same outputs. Returns false
 * when the inputs were too large to try. */
static bool assert_same_outputs(const fz_fusion *f, const fz_fusion *c,
                                const int64_t *symbols, uint64_t seed,
                                const char *what) {
  tensors in = {0}, a = {0}, b = {0};
  if (!make_inputs(f, symbols, seed, &in)) {
    tensors_free(&in);
    return false;
  }
  interpret(f, &in, &a);
  interpret(c, &in, &b);
  ck_assert_int_eq(a.count, b.count);
  for (int i = 0; i < a.count; i++) {
    int64_t n = 1;
    for (int d = 0; d < a.t[i].rank; d++)
      n *= a.t[i].sizes[d];
    ck_assert_msg(memcmp(a.t[i].data, b.t[i].data,
                         (size_t)n * fz_dtype_size(a.t[i].dtype)) == 0,
                  "%s: output %d of the clone differs", what, i);
  }
  tensors_free(&in);
  tensors_free(&a);
  tensors_free(&b);
  return true;
}

/* ---- examples ------------------------------------------------------------ */

static char *read_file(const char *path, size_t *length) {
  FILE *in = fopen(path, "rb");
  ck_assert_msg(in != NULL, "cannot open %s", path);
  fseek(in, 0, SEEK_END);
  long n = ftell(in);
  fseek(in, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(text);
  ck_assert_int_eq(fread(text, 1, (size_t)n, in), (size_t)n);
  text[n] = '\0';
  fclose(in);
  *length = (size_t)n;
  return text;
}

/* Returns whether it was interpreted. */
static bool check_example(const char *path) {
  size_t length;
  char *text = read_file(path, &length);
  fz_fusion *f = NULL;
  fz_error err = {0};
  ck_assert_msg(fz_parse(path, text, length, &f, &err) == FZ_OK, "%s",
                err.message);
  free(text);
  fz_fusion *c = clone_ok(f);
  assert_same_text(f, c, path);
  int64_t symbols[64];
  ck_assert_int_le(f->num_symbols, 64);
  for (int i = 0; i < f->num_symbols; i++)
    symbols[i] = 5;
  bool ran = assert_same_outputs(f, c, symbols, 7, path);
  /* and after a pass on each, still the same */
  ck_assert(fz_run_pass(f, "alloc-order", &err) == FZ_OK);
  ck_assert(fz_run_pass(c, "alloc-order", &err) == FZ_OK);
  assert_same_text(f, c, path);
  fz_fusion_destroy(c);
  fz_fusion_destroy(f);
  return ran;
}

START_TEST(test_examples) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", test_source_path("examples"));
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s (set FZ_SOURCE_DIR)", dir);
  int seen = 0, ran = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n < 4 || strcmp(e->d_name + n - 3, ".fz") != 0)
      continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    ran += check_example(path);
    seen++;
  }
  closedir(d);
  ck_assert_int_ge(seen, 5);
  ck_assert_int_ge(ran, 2); /* the einsum and the permuted reshape */
}
END_TEST

/* ---- random fusions ------------------------------------------------------ */

START_TEST(test_random_fusions) {
  int interpreted = 0;
  for (uint64_t seed = 9000; seed < 9000 + NUM_RANDOM; seed++) {
    fz_random_options o = {.allow_reductions = seed % 2 == 1,
                           .max_extent = 16,
                           .max_elements = 4096};
    if (seed % 5 == 4)
      o.dtypes = (1u << FZ_NUM_DTYPES) - 1;
    fz_fusion *f = fz_random_fusion(seed, &o);
    ck_assert_ptr_nonnull(f);
    char what[64];
    snprintf(what, sizeof what, "random seed %llu", (unsigned long long)seed);
    fz_fusion *c = clone_ok(f);
    assert_same_text(f, c, what);
    ck_assert_int_eq(c->next_value_id, f->next_value_id);
    int64_t symbols[64];
    ck_assert_int_le(f->num_symbols, 64);
    fz_random_bindings(f, seed, &o, symbols);
    interpreted += assert_same_outputs(f, c, symbols, seed, what);
    fz_fusion_destroy(c);
    fz_fusion_destroy(f);
  }
  ck_assert_int_eq(interpreted, NUM_RANDOM);
}
END_TEST

/* ---- what the text does not show ----------------------------------------- */

/* x: f32[N, 4] column-major; unnamed results, one literal used twice, a
 * reduction with keepdim, a permute, a full, an iota and a declared
 * layout. */
static fz_fusion *build_unnamed(void) {
  fz_fusion *f = fz_fusion_create("built");
  fz_type t = {.dtype = FZ_F32, .rank = 2};
  t.axes[0] = (fz_axis){.kind = FZ_AXIS_ITER,
                        .extent = fz_symbol_extent(fz_fusion_symbol(f, "N"))};
  t.axes[1] = (fz_axis){.kind = FZ_AXIS_ITER, .extent = fz_const_extent(4)};
  t.has_layout = true;
  t.alloc_order[0] = 1;
  t.alloc_order[1] = 0;
  t.contiguous[0] = t.contiguous[1] = true;
  fz_value *x = fz_add_input(f, "x", &t);
  fz_value *half = fz_literal_float(f, 0.5);
  fz_error err = {0};
  fz_value *a = fz_binary(f, FZ_OP_MUL, x, half, &err);
  fz_value *b = fz_binary(f, FZ_OP_ADD, a, half, &err);
  int dims[1] = {1};
  fz_value *s = fz_reduce(f, FZ_OP_AMAX, b, 1, dims, true, &err);
  int perm[2] = {1, 0};
  fz_value *p = fz_permute(f, b, perm, &err);
  fz_type ft = {.dtype = FZ_I32, .rank = 1};
  ft.axes[0] = t.axes[1];
  fz_value *full = fz_full(f, &ft, (fz_scalar){.i = 3}, &err);
  fz_attrs ia = {.shape = &ft,
                 .iota_start = {.i = 2},
                 .iota_step = {.i = -1},
                 .has_iota_start = true,
                 .has_iota_step = true};
  fz_value *io = fz_build(f, FZ_OP_IOTA, 0, NULL, &ia, &err);
  fz_value *fi = fz_binary(f, FZ_OP_MUL, full, io, &err);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_nonnull(fi);
  int order[2] = {1, 0};
  ck_assert(fz_value_set_layout(p, order, NULL, &err) == FZ_OK);
  ck_assert(fz_add_output(f, s, &err) == FZ_OK);
  ck_assert(fz_add_output(f, p, &err) == FZ_OK);
  ck_assert(fz_add_output(f, fi, &err) == FZ_OK);
  ck_assert(fz_add_output(f, x, &err) == FZ_OK);
  return f;
}

START_TEST(test_ids_literals_and_attributes) {
  fz_fusion *f = build_unnamed();
  fz_fusion *c = clone_ok(f);
  assert_same_text(f, c, "built");
  ck_assert_int_eq(c->next_value_id, f->next_value_id);
  ck_assert_int_eq(c->num_ops, f->num_ops);
  for (int i = 0; i < f->num_ops; i++) {
    const fz_op *a = f->ops[i], *b = c->ops[i];
    ck_assert_ptr_ne(a, b);
    ck_assert_int_eq(a->code, b->code);
    ck_assert_int_eq(a->result->id, b->result->id);
    ck_assert_ptr_eq(b->result->def, b);
    ck_assert(memcmp(a->dims, b->dims, sizeof a->dims) == 0);
    ck_assert(memcmp(a->perm, b->perm, sizeof a->perm) == 0);
    ck_assert_int_eq(a->keepdim, b->keepdim);
    ck_assert(memcmp(&a->iota_start, &b->iota_start, sizeof a->iota_start) ==
              0);
    ck_assert(memcmp(&a->iota_step, &b->iota_step, sizeof a->iota_step) == 0);
    ck_assert(memcmp(&a->fill, &b->fill, sizeof a->fill) == 0);
    ck_assert(memcmp(&a->result->type, &b->result->type,
                     sizeof a->result->type) == 0);
    for (int k = 0; k < a->num_operands; k++) {
      ck_assert_ptr_ne(a->operands[k], b->operands[k]); /* nothing shared */
      ck_assert_int_eq(a->operands[k]->id, b->operands[k]->id);
    }
  }
  /* the literal used twice is one value in the clone too */
  ck_assert_ptr_eq(c->ops[0]->operands[1], c->ops[1]->operands[1]);
  ck_assert_ptr_eq(c->outputs[3], c->inputs[0]);
  ck_assert_str_eq(c->inputs[0]->name, "x");
  ck_assert_ptr_ne(c->inputs[0]->name, f->inputs[0]->name);
  ck_assert_ptr_ne(c->symbols, f->symbols);
  ck_assert_str_eq(c->symbols[0].name, "N");

  /* later builder calls number values the same way in both */
  fz_error err = {0};
  ck_assert_ptr_nonnull(fz_unary(f, FZ_OP_EXP, f->ops[0]->result, &err));
  ck_assert_ptr_nonnull(fz_unary(c, FZ_OP_EXP, c->ops[0]->result, &err));
  ck_assert(fz_add_output(f, f->ops[f->num_ops - 1]->result, &err) == FZ_OK);
  ck_assert(fz_add_output(c, c->ops[c->num_ops - 1]->result, &err) == FZ_OK);
  ck_assert_int_eq(fz_fusion_symbol(c, NULL), fz_fusion_symbol(f, NULL));
  assert_same_text(f, c, "built, then grown");

  int64_t n = 6;
  ck_assert(assert_same_outputs(f, c, &n, 3, "built"));
  fz_fusion_destroy(c);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(test_passes_on_clone_leave_original) {
  fz_fusion *f = test_parse("fusion @p(%x: f32[N, C] layout(1, 0)) {\n"
                            "  %a = exp %x : f32[N, C]\n"
                            "  %b = set %a : f32[N, C]\n"
                            "  %c = set %b : f32[N, C]\n"
                            "  %s = sum %c dims(1) : f32[N]\n"
                            "  return %c, %s\n"
                            "}\n");
  char *before = fz_print(f);
  fz_fusion *c = clone_ok(f);
  fz_error err = {0};
  ck_assert(fz_run_pass(c, "canonicalize", &err) == FZ_OK);
  ck_assert(fz_run_pass(c, "alloc-order", &err) == FZ_OK);
  ck_assert(fz_value_set_name(c, c->inputs[0], "y", &err) == FZ_OK);
  char *after = fz_print(f), *cloned = fz_print(c);
  ck_assert_str_eq(before, after);
  ck_assert_str_ne(before, cloned);
  ck_assert_ptr_nonnull(strstr(cloned, "layout(1, 0)\n  %s"));
  fz_fusion_destroy(f); /* the clone outlives its original */
  char *again = fz_print(c);
  ck_assert_str_eq(cloned, again);
  free(before);
  free(after);
  free(cloned);
  free(again);
  fz_fusion_destroy(c);
}
END_TEST

START_TEST(test_bad_fusions) {
  fz_error err = {0};
  ck_assert_ptr_null(fz_fusion_clone(NULL, &err));
  ck_assert_int_eq(err.status, FZ_ERR_ARGUMENT);
  ck_assert_ptr_null(fz_fusion_clone(NULL, NULL));

  /* an operand from another fusion */
  fz_fusion *f = test_parse("fusion @a(%x: f32[4]) {\n"
                            "  %y = exp %x : f32[4]\n"
                            "  return %y\n"
                            "}\n");
  fz_fusion *g = test_parse("fusion @b(%x: f32[4], %z: f32[4]) {\n"
                            "  %y = exp %x : f32[4]\n"
                            "  return %y\n"
                            "}\n");
  fz_value *keep = f->ops[0]->operands[0];
  f->ops[0]->operands[0] = g->inputs[1];
  err = (fz_error){0};
  ck_assert_ptr_null(fz_fusion_clone(f, &err));
  ck_assert_int_eq(err.status, FZ_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err.message, "operand 0 of op 0"));
  f->ops[0]->operands[0] = keep;

  /* an output that is no value of the fusion */
  fz_value *out = f->outputs[0];
  f->outputs[0] = g->ops[0]->result;
  err = (fz_error){0};
  ck_assert_ptr_null(fz_fusion_clone(f, &err));
  ck_assert_int_eq(err.status, FZ_ERR_INVALID);
  f->outputs[0] = out;

  /* two values with one id */
  int id = f->ops[0]->result->id;
  f->ops[0]->result->id = f->inputs[0]->id;
  err = (fz_error){0};
  ck_assert_ptr_null(fz_fusion_clone(f, &err));
  ck_assert_int_eq(err.status, FZ_ERR_INVALID);
  f->ops[0]->result->id = id;

  fz_fusion *c = clone_ok(f);
  assert_same_text(f, c, "repaired");
  fz_fusion_destroy(c);
  fz_fusion_destroy(f);
  fz_fusion_destroy(g);
}
END_TEST

START_TEST(test_empty_fusion) {
  fz_fusion *f = fz_fusion_create(NULL);
  fz_error err = {0};
  fz_fusion *c = fz_fusion_clone(f, &err);
  ck_assert_ptr_nonnull(c);
  ck_assert_str_eq(c->name, "fusion");
  ck_assert_int_eq(c->num_ops + c->num_inputs + c->num_outputs, 0);
  /* and it can grow */
  fz_type t = {.dtype = FZ_F32, .rank = 0};
  fz_type_set_row_major(&t);
  ck_assert_ptr_nonnull(fz_add_input(c, "s", &t));
  ck_assert_ptr_nonnull(fz_add_input(c, "u", &t));
  ck_assert_int_eq(c->num_inputs, 2);
  fz_fusion_destroy(c);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("clone");
  TCase *tc = tcase_create("clone");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_examples);
  tcase_add_test(tc, test_random_fusions);
  tcase_add_test(tc, test_ids_literals_and_attributes);
  tcase_add_test(tc, test_passes_on_clone_leave_original);
  tcase_add_test(tc, test_bad_fusions);
  tcase_add_test(tc, test_empty_fusion);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
