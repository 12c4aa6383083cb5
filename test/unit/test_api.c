/* test_api.c - the handle API of lib/ir/api.c (fz.h's "building fusions
 * through handles"): inputs from extent codes, ops by keyword, targets from
 * sizes, accessors. Every error test also checks that the failed call left
 * the fusion as it was (inputs, ops, symbols), as the header promises. */
#include "test_util.h"
#include "type_spec.h"

#include <math.h>

typedef struct snapshot {
  int inputs, ops, symbols, next_id;
} snapshot;

static snapshot snap(const fz_fusion *f) {
  return (snapshot){f->num_inputs, f->num_ops, f->num_symbols,
                    f->next_value_id};
}

#define ck_assert_unchanged(f, s)                                              \
  do {                                                                         \
    snapshot now_ = snap(f);                                                   \
    ck_assert_int_eq(now_.inputs, (s).inputs);                                 \
    ck_assert_int_eq(now_.ops, (s).ops);                                       \
    ck_assert_int_eq(now_.symbols, (s).symbols);                               \
    ck_assert_int_eq(now_.next_id, (s).next_id);                               \
  } while (0)

static const int64_t SYM = FZ_EXTENT_SYMBOL, BC = FZ_EXTENT_BROADCAST;

static fz_value *ok(fz_value *v, const fz_error *err) {
  ck_assert_msg(v != NULL, "call failed: %s", err->message);
  return v;
}

/* x: f32[N, K], named symbols. */
static fz_value *input_nk(fz_fusion *f, const char *name) {
  fz_error err = {0};
  const int64_t e[2] = {SYM, SYM};
  const char *s[2] = {"N", "K"};
  return ok(fz_fusion_add_tensor(f, name, FZ_F32, 2, e, s, NULL, NULL, &err),
            &err);
}

/* ---- inputs ---- */

START_TEST(tensor_inputs_from_extent_codes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  const int64_t e[4] = {SYM, 128, BC, SYM};
  const char *s[4] = {"N", NULL, NULL, NULL};
  fz_value *x =
      ok(fz_fusion_add_tensor(f, "x", FZ_BF16, 4, e, s, NULL, NULL, &err), &err);
  ck_assert_type(f, x, "bf16[N, 128, b1, ?]");
  ck_assert_int_eq(x->kind, FZ_VALUE_INPUT);
  ck_assert_str_eq(x->name, "x");
  ck_assert(x->type.has_layout);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(x->type.alloc_order[i], i);
    ck_assert(x->type.contiguous[i]);
  }
  /* The same name is the same symbol; NULL names are fresh each time. */
  const int64_t e2[2] = {SYM, SYM};
  fz_value *y =
      ok(fz_fusion_add_tensor(f, NULL, FZ_F32, 2, e2, s, NULL, NULL, &err), &err);
  ck_assert_int_eq(y->type.axes[0].extent.symbol, x->type.axes[0].extent.symbol);
  ck_assert_int_ne(y->type.axes[1].extent.symbol, x->type.axes[3].extent.symbol);
  ck_assert_ptr_null(y->name);
  ck_assert_int_eq(f->num_symbols, 3);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(tensor_input_layout_and_contiguity) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  const int64_t e[3] = {4, 5, 6};
  const int order[3] = {2, 0, 1};
  const bool contig[3] = {true, false, true};
  fz_value *x = ok(fz_fusion_add_tensor(f, "x", FZ_F32, 3, e, NULL, order,
                                        contig, &err),
                   &err);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(x->type.alloc_order[i], order[i]);
    ck_assert_int_eq(x->type.contiguous[i], contig[i]);
  }
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(scalar_inputs) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  fz_value *a = ok(fz_fusion_add_scalar(f, "eps", FZ_F64, &err), &err);
  ck_assert_type(f, a, "f64");
  ck_assert_int_eq(f->num_inputs, 1);
  fz_fusion_destroy(f);
}
END_TEST

static void expect_input_error(fz_fusion *f, const char *name, fz_dtype dtype,
                               int rank, const int64_t *e, const char *const *s,
                               const int *order, const char *needle) {
  snapshot before = snap(f);
  fz_error err = {0};
  ck_assert_ptr_null(
      fz_fusion_add_tensor(f, name, dtype, rank, e, s, order, NULL, &err));
  ck_assert_err(err, needle);
  ck_assert_unchanged(f, before);
}

START_TEST(input_errors_change_nothing) {
  fz_fusion *f = fz_fusion_create("t");
  input_nk(f, "x");
  const int64_t e[2] = {SYM, SYM};
  const char *fresh[2] = {"M", "P"};
  const char *bad[2] = {"M", "9lives"};
  const char *b1[2] = {"M", "b1"};
  const int64_t neg[2] = {SYM, -7};
  const int not_perm[2] = {0, 0};
  /* Each would create symbol M before failing on the second axis. */
  expect_input_error(f, "y", FZ_F32, 2, e, bad, NULL, "9lives");
  expect_input_error(f, "y", FZ_F32, 2, e, b1, NULL, "b1");
  expect_input_error(f, "y", FZ_F32, 2, neg, fresh, NULL, "-7");
  expect_input_error(f, "y", FZ_F32, 2, e, fresh, not_perm, "input %y");
  expect_input_error(f, "x", FZ_F32, 2, e, fresh, NULL, "taken");
  expect_input_error(f, "y z", FZ_F32, 2, e, fresh, NULL, "y z");
  expect_input_error(f, "y", (fz_dtype)42, 2, e, fresh, NULL, "dtype 42");
  expect_input_error(f, "y", FZ_F32, FZ_MAX_RANK + 1, e, fresh, NULL, "rank");
  expect_input_error(f, "y", FZ_F32, 0, e, fresh, NULL, "fz_fusion_add_scalar");
  ck_assert_int_eq(fz_fusion_find_symbol(f, "M"), -1);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- ops by keyword ---- */

START_TEST(pointwise_by_keyword) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = input_nk(f, "x");
  fz_error err = {0};
  fz_value *e = ok(fz_build_pointwise(f, "exp", 1, &x, &err), &err);
  ck_assert_int_eq(e->def->code, FZ_OP_EXP);
  fz_value *two = fz_literal_float(f, 2.0);
  fz_value *m = ok(fz_build_pointwise(f, "mul", 2,
                                      (fz_value *const[]){e, two}, &err),
                   &err);
  ck_assert_int_eq(m->def->code, FZ_OP_MUL);
  ck_assert_type(f, m, "f32[N, K]");
  fz_value *c = ok(fz_build_pointwise(f, "gt", 2,
                                      (fz_value *const[]){x, m}, &err),
                   &err);
  fz_value *w = ok(fz_build_pointwise(f, "where", 3,
                                      (fz_value *const[]){c, x, two}, &err),
                   &err);
  ck_assert_type(f, w, "f32[N, K]");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(pointwise_errors_change_nothing) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = input_nk(f, "x");
  snapshot before = snap(f);
  fz_error err = {0};
  ck_assert_ptr_null(fz_build_pointwise(f, "exq", 1, &x, &err));
  ck_assert_err(err, "unknown op \"exq\"");
  ck_assert_ptr_null(fz_build_pointwise(f, "sum", 1, &x, &err));
  ck_assert_err(err, "sum is not a pointwise op");
  ck_assert_ptr_null(fz_build_pointwise(f, "cast", 1, &x, &err));
  ck_assert_err(err, "cast is not a pointwise op");
  ck_assert_ptr_null(fz_build_pointwise(f, "add", 1, &x, &err));
  ck_assert_err(err, "add: takes 2 operands");
  ck_assert_unchanged(f, before);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reduction_dims_in_any_order_and_negative) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  const int64_t e[3] = {2, 3, 4};
  fz_value *x =
      ok(fz_fusion_add_tensor(f, "x", FZ_F32, 3, e, NULL, NULL, NULL, &err), &err);
  const int dims[2] = {-1, 0};
  fz_value *s = ok(fz_build_reduction(f, "amax", x, 2, dims, false, &err), &err);
  ck_assert_int_eq(s->def->code, FZ_OP_AMAX);
  ck_assert_int_eq(s->def->num_dims, 2);
  ck_assert_int_eq(s->def->dims[0], 0);
  ck_assert_int_eq(s->def->dims[1], 2);
  ck_assert_type(f, s, "f32[3]");
  const int one[1] = {-2};
  fz_value *k = ok(fz_build_reduction(f, "sum", x, 1, one, true, &err), &err);
  ck_assert_type(f, k, "f32[2, b1, 4]");

  snapshot before = snap(f);
  const int twice[2] = {1, -2};
  ck_assert_ptr_null(fz_build_reduction(f, "sum", x, 2, twice, false, &err));
  ck_assert_err(err, "sum: dims name axis 1 twice");
  const int out[1] = {3};
  ck_assert_ptr_null(fz_build_reduction(f, "sum", x, 1, out, false, &err));
  ck_assert_err(err, "out of range");
  ck_assert_ptr_null(fz_build_reduction(f, "add", x, 1, one, false, &err));
  ck_assert_err(err, "add is not a reduction");
  ck_assert_unchanged(f, before);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- targets from sizes ---- */

START_TEST(expand_from_sizes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = input_nk(f, "x");
  fz_error err = {0};
  const int64_t e[3] = {BC, SYM, BC};
  const char *s[3] = {NULL, "K", NULL};
  fz_value *b =
      ok(fz_fusion_add_tensor(f, "b", FZ_F32, 3, e, s, NULL, NULL, &err), &err);
  /* b1 -> symbol, kept (unnamed symbol), b1 -> constant. */
  const int64_t t[3] = {SYM, SYM, 16};
  const char *ts_[3] = {"N", NULL, NULL};
  fz_value *y = ok(fz_build_expand(f, b, t, ts_, &err), &err);
  ck_assert_type(f, y, "f32[b1->N, K, b1->16]");
  /* A b1 given 1 or FZ_EXTENT_BROADCAST stays b1. */
  const int64_t t2[3] = {1, SYM, BC};
  const char *s2[3] = {NULL, "K", NULL};
  ck_assert_type(f, ok(fz_build_expand(f, b, t2, s2, &err), &err),
                 "f32[b1, K, b1]");

  snapshot before = snap(f);
  const char *unknown[3] = {"Q", NULL, NULL};
  ck_assert_ptr_null(fz_build_expand(f, b, t, unknown, &err));
  ck_assert_err(err, "symbol Q");
  const int64_t grow[2] = {SYM, 8};
  const char *gs[2] = {"N", NULL};
  ck_assert_ptr_null(fz_build_expand(f, x, grow, gs, &err));
  ck_assert_err(err, "only b1 axes can be expanded");
  ck_assert_unchanged(f, before);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(reshape_from_sizes) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  const int64_t e[2] = {SYM, 24};
  const char *s[2] = {"N", NULL};
  fz_value *x =
      ok(fz_fusion_add_tensor(f, "x", FZ_F16, 2, e, s, NULL, NULL, &err), &err);
  const int64_t t[4] = {4, BC, SYM, 6};
  const char *ts_[4] = {NULL, NULL, "N", NULL};
  fz_value *r = ok(fz_build_reshape(f, x, 4, t, ts_, &err), &err);
  ck_assert_type(f, r, "f16[4, b1, N, 6]");

  snapshot before = snap(f);
  const int64_t bad[2] = {SYM, 24};
  const char *anon[2] = {NULL, NULL};
  ck_assert_ptr_null(fz_build_reshape(f, x, 2, bad, anon, &err));
  ck_assert_err(err, "only inputs introduce new symbols");
  const int64_t wrong[2] = {SYM, 25};
  ck_assert_ptr_null(fz_build_reshape(f, x, 2, wrong, s, &err));
  ck_assert_err(err, "cannot prove the element counts equal");
  ck_assert_unchanged(f, before);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(symbol_reads_by_name) {
  fz_fusion *f = fz_fusion_create("t");
  input_nk(f, "x");
  fz_error err = {0};
  fz_value *k = ok(fz_build_symbol(f, "K", &err), &err);
  ck_assert_type(f, k, "i64");
  ck_assert_int_eq(k->def->code, FZ_OP_SYMBOL);
  ck_assert_int_eq(k->def->symbol, fz_fusion_find_symbol(f, "K"));

  /* Only symbols an input names, and only named ones, can be read. */
  int anonymous = fz_fusion_symbol(f, NULL);
  snapshot before = snap(f);
  ck_assert_ptr_null(fz_build_symbol(f, "Z", &err));
  ck_assert_err(err, "symbol: \"Z\" is not a symbol of @t");
  ck_assert_ptr_null(fz_build_symbol(f, NULL, &err));
  ck_assert_int_eq(err.status, FZ_ERR_INVALID);
  ck_assert_ptr_null(fz_read_symbol(f, anonymous, &err));
  ck_assert_err(err, "is anonymous");
  ck_assert_ptr_null(fz_read_symbol(f, 99, &err));
  ck_assert_err(err, "symbol 99 is not a symbol of the fusion");
  ck_assert_unchanged(f, before);
  ck_assert_ptr_null(fz_build_symbol(NULL, "K", &err));
  ck_assert_int_eq(err.status, FZ_ERR_ARGUMENT);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(full_and_iota_from_sizes) {
  fz_fusion *f = fz_fusion_create("t");
  input_nk(f, "x");
  fz_error err = {0};
  const int64_t e[2] = {SYM, 3};
  const char *s[2] = {"K", NULL};
  fz_value *a = ok(fz_build_full(f, FZ_F32, 2, e, s, 0.5, &err), &err);
  ck_assert_type(f, a, "f32[K, 3]");
  ck_assert(a->def->fill.f == 0.5);
  fz_value *i = ok(fz_build_full(f, FZ_I32, 0, NULL, NULL, -4, &err), &err);
  ck_assert_int_eq(i->def->fill.i, -4);
  fz_value *b = ok(fz_build_full(f, FZ_BOOL, 1, e + 1, NULL, 2, &err), &err);
  ck_assert_int_eq(b->def->fill.i, 1);
  fz_value *io = ok(fz_build_iota(f, FZ_I64, SYM, "N", 3, -2, &err), &err);
  ck_assert_type(f, io, "i64[N]");
  ck_assert_int_eq(io->def->iota_start.i, 3);
  ck_assert_int_eq(io->def->iota_step.i, -2);
  fz_value *fo = ok(fz_build_iota(f, FZ_F32, 10, NULL, 0.5, 0.25, &err), &err);
  ck_assert(fo->def->iota_start.f == 0.5 && fo->def->iota_step.f == 0.25);

  snapshot before = snap(f);
  ck_assert_ptr_null(fz_build_full(f, FZ_I64, 1, e + 1, NULL, 1.5, &err));
  ck_assert_err(err, "not an integer");
  ck_assert_ptr_null(fz_build_iota(f, FZ_I32, 4, NULL, 0, 0.5, &err));
  ck_assert_err(err, "step 0.5");
  ck_assert_ptr_null(fz_build_iota(f, FZ_BOOL, 4, NULL, 0, 1, &err));
  ck_assert_err(err, "bool");
  ck_assert_ptr_null(fz_build_iota(f, FZ_I64, SYM, "Z", 0, 1, &err));
  ck_assert_err(err, "symbol Z");
  ck_assert_unchanged(f, before);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- reading ---- */

START_TEST(reading_the_interface) {
  fz_fusion *f = fz_fusion_create("api");
  fz_value *x = input_nk(f, "x");
  fz_error err = {0};
  const int64_t e[2] = {BC, SYM};
  const char *s[2] = {NULL, "K"};
  fz_value *b =
      ok(fz_fusion_add_tensor(f, NULL, FZ_I8, 2, e, s, NULL, NULL, &err), &err);
  const int64_t t[2] = {SYM, SYM};
  const char *ts_[2] = {"N", NULL};
  fz_value *eb = ok(fz_build_expand(f, b, t, ts_, &err), &err);
  fz_value *y = ok(fz_build_pointwise(f, "add", 2,
                                      (fz_value *const[]){x, eb}, &err),
                   &err);
  ck_assert_int_eq(fz_add_output(f, y, &err), FZ_OK);

  ck_assert_str_eq(fz_fusion_name(f), "api");
  ck_assert_int_eq(fz_fusion_num_inputs(f), 2);
  ck_assert_int_eq(fz_fusion_num_outputs(f), 1);
  ck_assert_ptr_eq(fz_fusion_input(f, 1), b);
  ck_assert_ptr_null(fz_fusion_input(f, 2));
  ck_assert_ptr_null(fz_fusion_input(f, -1));
  ck_assert_ptr_eq(fz_fusion_output(f, 0), y);
  ck_assert_ptr_null(fz_fusion_output(f, 1));
  ck_assert_int_eq(fz_value_dtype(b), FZ_I8);
  ck_assert_int_eq(fz_value_dtype(y), FZ_F32);
  ck_assert_int_eq(fz_value_rank(y), 2);
  ck_assert_str_eq(fz_value_name(x), "x");
  ck_assert_ptr_null(fz_value_name(b));

  int64_t extent = 0;
  const char *sym = "junk";
  bool bc = true;
  ck_assert_int_eq(fz_value_axis(f, x, 1, &extent, &sym, &bc, &err), FZ_OK);
  ck_assert_int_eq(extent, FZ_EXTENT_SYMBOL);
  ck_assert_str_eq(sym, "K");
  ck_assert(!bc);
  ck_assert_int_eq(fz_value_axis(f, b, 0, &extent, &sym, &bc, &err), FZ_OK);
  ck_assert_int_eq(extent, 1);
  ck_assert_ptr_null(sym);
  ck_assert(bc);
  /* An expanded axis reports its expanded size. */
  ck_assert_int_eq(fz_value_axis(f, eb, 0, &extent, &sym, &bc, &err), FZ_OK);
  ck_assert_int_eq(extent, FZ_EXTENT_SYMBOL);
  ck_assert_str_eq(sym, "N");
  ck_assert(bc);
  ck_assert_int_eq(fz_value_axis(f, y, 0, NULL, NULL, NULL, &err), FZ_OK);
  ck_assert_int_eq(fz_value_axis(f, y, 2, &extent, &sym, &bc, &err),
                   FZ_ERR_ARGUMENT);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(naming_values) {
  fz_fusion *f = fz_fusion_create("t");
  fz_value *x = input_nk(f, "x");
  fz_error err = {0};
  fz_value *e = ok(fz_build_pointwise(f, "exp", 1, &x, &err), &err);
  ck_assert_int_eq(fz_value_set_name(f, e, "e.1", &err), FZ_OK);
  ck_assert_str_eq(fz_value_name(e), "e.1");
  ck_assert_int_eq(fz_value_set_name(f, e, "x", &err), FZ_ERR_INVALID);
  ck_assert_err(err, "%x is taken");
  ck_assert_int_eq(fz_value_set_name(f, e, "a b", &err), FZ_ERR_INVALID);
  ck_assert_str_eq(fz_value_name(e), "e.1");
  ck_assert_int_eq(fz_value_set_name(f, e, "e.1", &err), FZ_OK); /* its own */
  fz_value *lit = fz_literal_int(f, 3);
  ck_assert_int_eq(fz_value_set_name(f, lit, "three", &err), FZ_ERR_INVALID);
  ck_assert_int_eq(fz_value_set_name(f, e, NULL, &err), FZ_OK);
  ck_assert_ptr_null(fz_value_name(e));
  fz_fusion_destroy(f);
}
END_TEST

/* What the handle calls build is ordinary IR: it prints in the text
 * format and parses back to the same text. */
START_TEST(built_fusion_round_trips_through_text) {
  fz_fusion *f = fz_fusion_create("embed");
  fz_value *x = input_nk(f, "x");
  fz_error err = {0};
  const int64_t e[1] = {SYM};
  const char *s[1] = {"K"};
  fz_value *b =
      ok(fz_fusion_add_tensor(f, "b", FZ_F32, 1, e, s, NULL, NULL, &err), &err);
  const int row[1] = {0};
  fz_value *bb = ok(fz_broadcast(f, b, 1, row, &err), &err);
  fz_value *y = ok(fz_build_pointwise(f, "add", 2,
                                      (fz_value *const[]){x, bb}, &err),
                   &err);
  fz_value *g = ok(fz_build_pointwise(f, "gelu", 1, &y, &err), &err);
  const int last[1] = {-1};
  fz_value *r = ok(fz_build_reduction(f, "sum", g, 1, last, false, &err), &err);
  ck_assert_int_eq(fz_value_set_name(f, g, "y", &err), FZ_OK);
  ck_assert_int_eq(fz_add_output(f, g, &err), FZ_OK);
  ck_assert_int_eq(fz_add_output(f, r, &err), FZ_OK);
  ck_assert_int_eq(fz_verify(f, &err), FZ_OK);
  char *text = fz_print(f);
  ck_assert_str_eq(text, "fusion @embed(%x: f32[N, K], %b: f32[K]) {\n"
                         "  %0 = broadcast %b dims(0) : f32[b1, K]\n"
                         "  %1 = add %x, %0 : f32[N, K]\n"
                         "  %y = gelu %1 : f32[N, K]\n"
                         "  %2 = sum %y dims(1) : f32[N]\n"
                         "  return %y, %2\n"
                         "}\n");
  fz_fusion *back = test_parse(text);
  char *again = fz_print(back);
  ck_assert_str_eq(again, text);
  free(again);
  free(text);
  fz_fusion_destroy(back);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- values of another fusion ---- */

#define ck_assert_foreign(err)                                                 \
  do {                                                                         \
    ck_assert_int_eq((err).status, FZ_ERR_ARGUMENT);                           \
    ck_assert_msg(strstr((err).message, "belongs to another fusion"),          \
                  "message: %s", (err).message);                               \
  } while (0)

START_TEST(values_of_another_fusion_are_refused) {
  fz_fusion *a = fz_fusion_create("a"), *b = fz_fusion_create("b");
  fz_error err = {0};
  fz_value *x = input_nk(a, "x");
  fz_value *y = input_nk(b, "y");
  snapshot before = snap(b);
  ck_assert_ptr_null(fz_build_pointwise(b, "exp", 1, &x, &err));
  ck_assert_foreign(err);
  ck_assert_ptr_null(
      fz_build_pointwise(b, "add", 2, (fz_value *const[]){y, x}, &err));
  ck_assert_foreign(err);
  const int last[1] = {-1};
  ck_assert_ptr_null(fz_build_reduction(b, "sum", x, 1, last, false, &err));
  ck_assert_foreign(err);
  const int64_t keep[2] = {SYM, SYM};
  ck_assert_ptr_null(fz_build_expand(b, x, keep, NULL, &err));
  ck_assert_foreign(err);
  const int64_t nk[2] = {SYM, SYM};
  const char *names[2] = {"N", "K"};
  ck_assert_ptr_null(fz_build_reshape(b, x, 2, nk, names, &err));
  ck_assert_foreign(err);
  ck_assert_int_eq(fz_add_output(b, x, &err), FZ_ERR_ARGUMENT);
  ck_assert_int_eq(fz_value_set_name(b, x, "z", &err), FZ_ERR_ARGUMENT);
  ck_assert_str_eq(x->name, "x");
  ck_assert_int_eq(fz_value_axis(b, x, 0, NULL, NULL, NULL, &err),
                   FZ_ERR_ARGUMENT);
  ck_assert_unchanged(b, before);
  ck_assert_int_eq(b->num_outputs, 0);

  /* b holds nothing of a: once a is gone, b still prints and verifies
   * (under ASan, without reading freed memory). */
  fz_fusion_destroy(a);
  fz_value *e = ok(fz_build_pointwise(b, "exp", 1, &y, &err), &err);
  ck_assert_int_eq(fz_add_output(b, e, &err), FZ_OK);
  char *text = fz_print(b);
  ck_assert_ptr_nonnull(text);
  free(text);
  ck_assert_int_eq(fz_verify(b, &err), FZ_OK);
  fz_fusion_destroy(b);
}
END_TEST

START_TEST(null_fusion_is_an_argument_error) {
  fz_fusion *a = fz_fusion_create("a");
  fz_error err = {0};
  fz_value *x = input_nk(a, "x");
  ck_assert_ptr_null(fz_build_pointwise(NULL, "exp", 1, &x, &err));
  ck_assert_int_eq(err.status, FZ_ERR_ARGUMENT);
  const int64_t e[1] = {4};
  ck_assert_ptr_null(fz_build_expand(NULL, x, e, NULL, &err));
  ck_assert_int_eq(err.status, FZ_ERR_ARGUMENT);
  ck_assert_ptr_null(fz_build_reshape(NULL, x, 1, e, NULL, &err));
  ck_assert_int_eq(err.status, FZ_ERR_ARGUMENT);
  const int d[1] = {0};
  ck_assert_ptr_null(fz_build_reduction(NULL, "sum", x, 1, d, false, &err));
  ck_assert_int_eq(err.status, FZ_ERR_ARGUMENT);
  fz_fusion_destroy(a);
}
END_TEST

/* ---- sizes and values out of range ---- */

START_TEST(input_extents_must_fit_int64) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  snapshot before = snap(f);
  const int64_t e[3] = {INT64_C(1) << 62, SYM, 4};
  const char *s[3] = {NULL, "N", NULL};
  ck_assert_ptr_null(
      fz_fusion_add_tensor(f, "x", FZ_F32, 3, e, s, NULL, NULL, &err));
  ck_assert_err(err, "input %x: extent product 4611686018427387904 x 4 "
                     "overflows int64");
  ck_assert_unchanged(f, before); /* symbol N was not created */
  const int64_t bytes[1] = {INT64_C(1) << 61};
  ck_assert_ptr_null(
      fz_fusion_add_tensor(f, NULL, FZ_F64, 1, bytes, NULL, NULL, NULL, &err));
  ck_assert_err(err, "2305843009213693952 elements x 8 bytes overflows int64");
  ck_assert_unchanged(f, before);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(fill_values_follow_pytorch_ranges) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  const int64_t e[1] = {4};
  snapshot before = snap(f);
  ck_assert_ptr_null(fz_build_full(f, FZ_I8, 1, e, NULL, 300, &err));
  ck_assert_err(err, "full: fill value 300 is out of range of i8 [-128, 127]");
  ck_assert_ptr_null(fz_build_full(f, FZ_I32, 1, e, NULL, 1e300, &err));
  ck_assert_err(err, "full: fill value 1e+300 is out of range of i32");
  ck_assert_ptr_null(fz_build_full(f, FZ_I64, 1, e, NULL, 0x1p63, &err));
  ck_assert_err(err, "is out of range of i64");
  ck_assert_ptr_null(fz_build_full(f, FZ_I64, 1, e, NULL, NAN, &err));
  ck_assert_err(err, "nan is not an integer");
  ck_assert_ptr_null(fz_build_iota(f, FZ_I8, 4, NULL, 200, 1, &err));
  ck_assert_err(err, "iota: start 200 is out of range of i8");
  ck_assert_unchanged(f, before);
  /* The most negative i64 is exact in a double, and fits. */
  fz_value *m = ok(fz_build_full(f, FZ_I64, 1, e, NULL, -0x1p63, &err), &err);
  ck_assert(m->def->fill.i == INT64_MIN);
  /* A float dtype takes any number; 1e300 is inf once rounded to f32. */
  fz_value *v = ok(fz_build_full(f, FZ_F32, 1, e, NULL, 1e300, &err), &err);
  ck_assert_int_eq(fz_add_output(f, v, &err), FZ_OK);
  float out[4] = {0};
  fz_host_tensor t = {.dtype = FZ_F32, .rank = 1, .sizes = {4},
                      .strides = {1}, .data = out};
  ck_assert_int_eq(fz_interpret(f, NULL, 0, &t, 1, &err), FZ_OK);
  ck_assert(isinf(out[0]) && out[0] > 0);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- labels ---- */

static char *printed_label(const fz_value *v, const int *numbers) {
  fz_buf b = {0};
  fz_print_value_label(&b, v, numbers);
  return fz_buf_take(&b);
}

START_TEST(labels_name_values_as_the_printer_does) {
  fz_fusion *f = fz_fusion_create("t");
  fz_error err = {0};
  const int64_t e[2] = {4, 8};
  fz_value *x =
      ok(fz_fusion_add_tensor(f, "x", FZ_F32, 2, e, NULL, NULL, NULL, &err),
         &err);
  fz_value *y =
      ok(fz_fusion_add_tensor(f, NULL, FZ_F32, 2, e, NULL, NULL, NULL, &err),
         &err);
  fz_value *n = ok(fz_unary(f, FZ_OP_NEG, y, &err), &err);
  char buf[16];
  ck_assert_str_eq(fz_value_label(x, buf, sizeof buf), "%x");
  snprintf(buf, sizeof buf, "%%%d", n->id);
  char want[16];
  ck_assert_str_eq(fz_value_label(n, want, sizeof want), buf);
  ck_assert_str_eq(fz_value_label(x, buf, 2), "%"); /* truncated, ended */
  ck_assert_str_eq(fz_value_label(x, buf, 1), "");
  fz_value *w = ok(fz_fusion_add_tensor(f, "weight", FZ_F32, 2, e, NULL, NULL,
                                        NULL, &err),
                   &err);
  ck_assert_str_eq(fz_value_label(w, buf, 5), "%wei"); /* as snprintf */
  ck_assert_str_eq(fz_value_label(w, buf, 8), "%weight");
  /* Numbered: the names fz_print gives, found in its text. */
  int *numbers = fz_print_value_numbers(f);
  ck_assert_ptr_nonnull(numbers);
  ck_assert_int_eq(fz_add_output(f, n, &err), FZ_OK);
  char *text = fz_print(f);
  const fz_value *values[3] = {x, y, n};
  for (int i = 0; i < 3; i++) {
    char *label = printed_label(values[i], numbers);
    ck_assert_msg(strstr(text, label), "%s not in\n%s", label, text);
    free(label);
  }
  char *label = printed_label(n, NULL); /* no numbers: the id */
  snprintf(buf, sizeof buf, "%%%d", n->id);
  ck_assert_str_eq(label, buf);
  free(label);
  free(text);
  free(numbers);
  fz_fusion_destroy(f);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("api");
  TCase *tc = tcase_create("api");
  tcase_add_test(tc, tensor_inputs_from_extent_codes);
  tcase_add_test(tc, tensor_input_layout_and_contiguity);
  tcase_add_test(tc, scalar_inputs);
  tcase_add_test(tc, input_errors_change_nothing);
  tcase_add_test(tc, pointwise_by_keyword);
  tcase_add_test(tc, pointwise_errors_change_nothing);
  tcase_add_test(tc, reduction_dims_in_any_order_and_negative);
  tcase_add_test(tc, expand_from_sizes);
  tcase_add_test(tc, reshape_from_sizes);
  tcase_add_test(tc, full_and_iota_from_sizes);
  tcase_add_test(tc, symbol_reads_by_name);
  tcase_add_test(tc, reading_the_interface);
  tcase_add_test(tc, naming_values);
  tcase_add_test(tc, built_fusion_round_trips_through_text);
  tcase_add_test(tc, values_of_another_fusion_are_refused);
  tcase_add_test(tc, null_fusion_is_an_argument_error);
  tcase_add_test(tc, input_extents_must_fit_int64);
  tcase_add_test(tc, fill_values_follow_pytorch_ranges);
  tcase_add_test(tc, labels_name_values_as_the_printer_does);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
