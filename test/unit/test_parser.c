/* test_parser.c - the text format: what the parser builds (symbols, `?`,
 * broadcast axes, layouts, literals, scalars), its diagnostics (message and
 * line:col of each), and print/parse round trips. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* Parses text that must fail; checks the status and the diagnostic's first
 * line ("test.fz:L:C: error: ..."), and that no fusion is returned. */
static void expect_error_status(const char *text, fz_status status,
                                const char *first_line) {
  fz_fusion *f = (fz_fusion *)1;
  fz_error err = {0};
  fz_status st = fz_parse("test.fz", text, strlen(text), &f, &err);
  ck_assert_msg(st == status, "status %s, want %s; message: %s",
                fz_status_name(st), fz_status_name(status), err.message);
  ck_assert_int_eq(err.status, status);
  ck_assert_ptr_null(f);
  size_t n = strcspn(err.message, "\n");
  ck_assert_msg(
      strlen(first_line) == n && strncmp(err.message, first_line, n) == 0,
      "diagnostic:\n%s\nwant first line:\n%s", err.message, first_line);
}

static void expect_error(const char *text, const char *first_line) {
  expect_error_status(text, FZ_ERR_PARSE, first_line);
}

/* print(parse(text)) must be text itself. */
static void expect_round_trip(const char *text) {
  fz_fusion *f = test_parse(text);
  char *printed = fz_print(f);
  ck_assert_ptr_nonnull(printed);
  ck_assert_str_eq(printed, text);
  free(printed);
  fz_fusion_destroy(f);
}

static fz_value *find_value(fz_fusion *f, const char *name) {
  for (int i = 0; i < f->num_inputs; i++)
    if (f->inputs[i]->name && !strcmp(f->inputs[i]->name, name))
      return f->inputs[i];
  for (int i = 0; i < f->num_ops; i++)
    if (f->ops[i]->result->name && !strcmp(f->ops[i]->result->name, name))
      return f->ops[i]->result;
  ck_abort_msg("no value %%%s", name);
  return NULL;
}

/* ---- diagnostics ---- */

START_TEST(error_shows_line_and_caret) {
  const char *text = "fusion @f(%x: f32[4]) {\n"
                     "  %y = neg %x : f32[5]\n"
                     "  return %y\n"
                     "}\n";
  fz_fusion *f = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_parse("test.fz", text, strlen(text), &f, &err),
                   FZ_ERR_PARSE);
  ck_assert_str_eq(err.message,
                   "test.fz:2:17: error: declared type f32[5] does not match "
                   "inferred type f32[4]\n"
                   "  %y = neg %x : f32[5]\n"
                   "                ^");
}
END_TEST

START_TEST(caret_keeps_tabs_aligned) {
  const char *text = "fusion @f(%x: f32[4]) {\n"
                     "\t%y = neg %q : f32[4]\n"
                     "  return %y\n"
                     "}\n";
  fz_fusion *f = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_parse("t.fz", text, strlen(text), &f, &err),
                   FZ_ERR_PARSE);
  ck_assert_str_eq(err.message, "t.fz:2:11: error: use of undefined value "
                                "'%q'\n"
                                "\t%y = neg %q : f32[4]\n"
                                "\t         ^");
}
END_TEST

START_TEST(type_mismatches) {
  expect_error("fusion @f(%x: f32[64]) {\n  %y = neg %x : f32[128]\n"
               "  return %y\n}\n",
               "test.fz:2:17: error: declared type f32[128] does not match "
               "inferred type f32[64]");
  expect_error("fusion @f(%x: f32[N]) {\n  %y = neg %x : f16[N]\n"
               "  return %y\n}\n",
               "test.fz:2:17: error: declared type f16[N] does not match "
               "inferred type f32[N]");
  expect_error("fusion @f(%x: f32[N]) {\n  %y = neg %x : f32[M]\n"
               "  return %y\n}\n",
               "test.fz:2:17: error: declared type f32[M] does not match "
               "inferred type f32[N]");
  expect_error("fusion @f(%x: f32[N]) {\n  %y = neg %x : f32[N, 1]\n"
               "  return %y\n}\n",
               "test.fz:2:17: error: declared type f32[N, 1] does not match "
               "inferred type f32[N]");
  /* A broadcast axis is not an ordinary axis of extent 1, and expanded is
   * not unexpanded. */
  expect_error("fusion @f(%x: f32[N, b1]) {\n  %y = neg %x : f32[N, 1]\n"
               "  return %y\n}\n",
               "test.fz:2:17: error: declared type f32[N, 1] does not match "
               "inferred type f32[N, b1]");
  expect_error("fusion @f(%x: f32[b1->4]) {\n  %y = neg %x : f32[b1]\n"
               "  return %y\n}\n",
               "test.fz:2:17: error: declared type f32[b1] does not match "
               "inferred type f32[b1->4]");
  expect_error("fusion @f(%x: f32[b1->4]) {\n  %y = neg %x : f32[b1->5]\n"
               "  return %y\n}\n",
               "test.fz:2:17: error: declared type f32[b1->5] does not match "
               "inferred type f32[b1->4]");
}
END_TEST

START_TEST(names_and_keywords) {
  expect_error("fusion @f(%x: f32[4]) {\n  %x = neg %x : f32[4]\n"
               "  return %x\n}\n",
               "test.fz:2:3: error: redefinition of value '%x' (first "
               "defined at 1:11)");
  expect_error("fusion @f(%x: f32[4], %x: f32[4]) {\n  return %x\n}\n",
               "test.fz:1:23: error: redefinition of value '%x' (first "
               "defined at 1:11)");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = add %x, %z : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:16: error: use of undefined value '%z'");
  expect_error("fusion @f(%x: f32[4]) {\n  return %y\n}\n",
               "test.fz:2:10: error: use of undefined value '%y'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = frob %x : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:8: error: unknown op 'frob'");
  expect_error("fusion @f(%x: f33[4]) {\n  return %x\n}\n",
               "test.fz:1:15: error: unknown dtype 'f33'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = neg %x foo(1) : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:15: error: unknown attribute 'foo'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = neg %x keepdim : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:15: error: 'keepdim' is not an attribute of 'neg'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = sum %x dims(0) dims(0) : f32\n"
               "  return %y\n}\n",
               "test.fz:2:23: error: duplicate attribute 'dims'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = sum %x : f32\n"
               "  return %y\n}\n",
               "test.fz:2:8: error: 'sum' needs dims(...)");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = sum %x dims(0, 0) : f32\n"
               "  return %y\n}\n",
               "test.fz:2:23: error: axis 0 appears twice in dims");
}
END_TEST

START_TEST(misplaced_tokens) {
  expect_error("", "test.fz:1:1: error: expected 'fusion', got end of input");
  expect_error("fusion f() {}",
               "test.fz:1:8: error: expected the fusion's name ('@name'), "
               "got 'f'");
  expect_error("fusion @f(%x f32[4]) {\n  return %x\n}\n",
               "test.fz:1:14: error: expected ':' and the argument's type, "
               "got 'f32'");
  expect_error("fusion @f(%x: f32[4] %y: f32[4]) {\n  return %x\n}\n",
               "test.fz:1:22: error: expected ',' or ')', got '%y'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = neg %x f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:15: error: expected ':' and the result type, got "
               "'f32'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = neg %x\n  return %y\n}\n",
               "test.fz:3:3: error: expected ':' and the result type, got "
               "'return'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y neg %x : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:6: error: expected '=', got 'neg'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = neg : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:12: error: expected an operand (a %value or a "
               "literal), got ':'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = add %x : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:15: error: 'add' takes 2 operands; expected ',', "
               "got ':'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = neg %x, %x : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:14: error: too many operands: 'neg' takes 1");
  expect_error("fusion @f(%x: f32[4]) {\n  neg %x\n}\n",
               "test.fz:2:3: error: expected an op ('%name = ...') or "
               "'return', got 'neg'");
  expect_error("fusion @f(%x: f32[4]) {\n  return 3\n}\n",
               "test.fz:2:10: error: expected a value to return, got '3'");
  expect_error("fusion @f(%x: f32[4]) {\n  return\n}\n",
               "test.fz:3:1: error: expected a value to return, got '}'");
  expect_error("fusion @f(%x: f32[4]) {\n  return %x %x\n}\n",
               "test.fz:2:13: error: expected ',' or '}', got '%x'");
  expect_error("fusion @f(%x: f32[4]) {\n  return %x\n}\n}\n",
               "test.fz:4:1: error: expected end of input after the fusion, "
               "got '}'");
  /* Truncated input: the caret sits at the end. */
  expect_error("fusion @f(%x: f32[4]) {\n  return %x",
               "test.fz:2:12: error: expected ',' or '}', got end of input");
  expect_error("fusion @f(%x: f32[]) {\n  return %x\n}\n",
               "test.fz:1:19: error: empty extent list (a scalar type is "
               "written without brackets, as in 'f32')");
  expect_error("fusion @f(%x: f32[4,]) {\n  return %x\n}\n",
               "test.fz:1:21: error: expected an extent (an integer, a symbol "
               "or '?'), got ']'");
}
END_TEST

START_TEST(lexical_errors) {
  expect_error("fusion @f(%x: f32[4]) $",
               "test.fz:1:23: error: unexpected character '$'");
  expect_error("fusion @f(%x: f32[4]) {\n  return %\n}\n",
               "test.fz:2:10: error: expected a name after '%'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = add %x, 12abc : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:16: error: invalid number '12abc'");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = add %x, 1e999 : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:16: error: float literal is out of range (write "
               "inf for infinity)");
  expect_error("fusion @f(%x: f32[99999999999999999999]) {",
               "test.fz:1:19: error: integer literal is out of range of i64");
  const char nul[] = "fusion @f(%x: f32[4])\0{";
  fz_fusion *f = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_parse("test.fz", nul, sizeof nul - 1, &f, &err),
                   FZ_ERR_PARSE);
  ck_assert_ptr_null(f);
  ck_assert_msg(strncmp(err.message,
                        "test.fz:1:22: error: unexpected byte 0x00\n", 41) == 0,
                "%s", err.message);
}
END_TEST

START_TEST(integer_limits) {
  /* The most negative i64 is a valid literal; one less is not. */
  fz_fusion *f = test_parse("fusion @f(%x: i64[4]) {\n"
                            "  %y = add %x, -9223372036854775808 : i64[4]\n"
                            "  return %y\n}\n");
  ck_assert(find_value(f, "y")->def->operands[1]->literal.i == INT64_MIN);
  fz_fusion_destroy(f);
  expect_error("fusion @f(%x: i64[4]) {\n"
               "  %y = add %x, -9223372036854775809 : i64[4]\n"
               "  return %y\n}\n",
               "test.fz:2:16: error: integer literal is out of range of i64");
  expect_error("fusion @f(%x: i64[4]) {\n"
               "  %y = add %x, 9223372036854775808 : i64[4]\n"
               "  return %y\n}\n",
               "test.fz:2:16: error: integer literal is out of range of i64");
}
END_TEST

START_TEST(ranks_axes_and_layouts) {
  expect_error("fusion @f(%x: f32[1, 2, 3, 4, 5, 6, 7, 8, 9]) {\n"
               "  return %x\n}\n",
               "test.fz:1:43: error: rank exceeds the maximum of 8");
  expect_error("fusion @f(%x: f32[-1]) {\n  return %x\n}\n",
               "test.fz:1:19: error: extent must not be negative");
  expect_error("fusion @f(%x: f32[b1->b1]) {\n  return %x\n}\n",
               "test.fz:1:23: error: 'b1' (a broadcast axis) cannot be used "
               "here");
  expect_error("fusion @f(%x: f32[4, 4] layout(1)) {\n  return %x\n}\n",
               "test.fz:1:25: error: layout must list all 2 axes of the type, "
               "not 1");
  expect_error("fusion @f(%x: f32[4, 4] layout(1, 1)) {\n  return %x\n}\n",
               "test.fz:1:35: error: axis 1 appears twice in layout");
  expect_error("fusion @f(%x: f32[4, 4] layout(0, 2)) {\n  return %x\n}\n",
               "test.fz:1:35: error: axis 2 is out of range for a type of "
               "rank 2");
  expect_error("fusion @f(%x: f32[4, 4] noncontig(5)) {\n  return %x\n}\n",
               "test.fz:1:35: error: axis 5 is out of range for a type of "
               "rank 2");
  expect_error("fusion @f(%x: f32[4, 4] layout(0, 1) layout(0, 1)) {\n"
               "  return %x\n}\n",
               "test.fz:1:38: error: duplicate layout");
  expect_error("fusion @f(%x: f32[4, 4]) {\n"
               "  %y = sum %x dims(0, 1, 2, 3, 4, 5, 6, 7, 0) : f32\n"
               "  return %y\n}\n",
               "test.fz:2:44: error: too many axes in dims (at most 8)");
  expect_error("fusion @f(%x: f32[4, 4]) {\n"
               "  %y = sum %x dims(9) : f32\n  return %y\n}\n",
               "test.fz:2:20: error: axis 9 is out of range");
  expect_error("fusion @f(%x: f32[4, 5]) {\n"
               "  %y = permute %x perm(1) : f32[5, 4]\n  return %y\n}\n",
               "test.fz:2:19: error: perm must list all 2 axes of the "
               "operand, not 1");
  expect_error("fusion @f(%x: f32[4, 5]) {\n"
               "  %y = permute %x : f32[5, 4]\n  return %y\n}\n",
               "test.fz:2:8: error: 'permute' needs perm(...)");
}
END_TEST

START_TEST(generator_values) {
  expect_error("fusion @f() {\n  %y = full true : f32[4]\n  return %y\n}\n",
               "test.fz:2:13: error: the fill value of a f32 result must be a "
               "number");
  expect_error("fusion @f() {\n  %y = full 0.5 : i32[4]\n  return %y\n}\n",
               "test.fz:2:13: error: the fill value of a i32 result must be "
               "an integer");
  expect_error("fusion @f() {\n  %y = full 1 : bool[4]\n  return %y\n}\n",
               "test.fz:2:13: error: the fill value of a bool result must be "
               "true or false");
  expect_error("fusion @f() {\n  %y = full : f32[4]\n  return %y\n}\n",
               "test.fz:2:13: error: expected the fill value of 'full' (a "
               "literal), got ':'");
  expect_error("fusion @f() {\n  %y = iota start(0.5) : i64[4]\n"
               "  return %y\n}\n",
               "test.fz:2:19: error: start of a i64 result must be an "
               "integer");
}
END_TEST

START_TEST(builder_errors_are_invalid_at_the_op) {
  /* The message is the builder's; the location is the op's. */
  const char *text = "fusion @f(%x: f32[4], %w: f32[5]) {\n"
                     "  %y = add %x, %w : f32[4]\n"
                     "  return %y\n}\n";
  fz_fusion *f = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_parse("test.fz", text, strlen(text), &f, &err),
                   FZ_ERR_INVALID);
  ck_assert_ptr_null(f);
  ck_assert_msg(strncmp(err.message, "test.fz:2:3: error: add", 23) == 0, "%s",
                err.message);
  ck_assert_msg(strstr(err.message, "\n  %y = add %x, %w : f32[4]\n  ^") !=
                    NULL,
                "%s", err.message);
}
END_TEST

START_TEST(parse_at_numbers_lines_from_first_line) {
  const char *text = "\nfusion @f(%x: f32[4]) {\n  %y = neg %z : f32[4]\n"
                     "  return %y\n}\n";
  fz_fusion *f = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_parse_at("big.fz", 40, text, strlen(text), &f, &err),
                   FZ_ERR_PARSE);
  ck_assert_msg(strncmp(err.message,
                        "big.fz:42:12: error: use of undefined value '%z'",
                        48) == 0,
                "%s", err.message);
}
END_TEST

START_TEST(bad_arguments) {
  fz_error err = {0};
  ck_assert_int_eq(fz_parse("t", "x", 1, NULL, &err), FZ_ERR_ARGUMENT);
  fz_fusion *f = (fz_fusion *)1;
  ck_assert_int_eq(fz_parse("t", NULL, 4, &f, &err), FZ_ERR_ARGUMENT);
  ck_assert_ptr_null(f);
  /* A NULL error is allowed. */
  ck_assert_int_eq(fz_parse("t", "fusion", 6, &f, NULL), FZ_ERR_PARSE);
}
END_TEST

START_TEST(length_bounds_the_text) {
  /* Only `length` bytes are read: the rest must not be seen. */
  const char *text = "fusion @f(%x: f32[4]) {\n  return %x\n}\ngarbage";
  size_t length = strlen(text) - strlen("garbage");
  fz_fusion *f = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_parse("t", text, length, &f, &err), FZ_OK);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- what the parser builds ---- */

START_TEST(symbols_are_shared_by_name) {
  fz_fusion *f = test_parse("fusion @f(%x: f32[N, M], %y: f32[N]) {\n"
                            "  %s = sum %x dims(1) : f32[N]\n"
                            "  %a = add %s, %y : f32[N]\n"
                            "  return %a\n}\n");
  ck_assert_int_eq(f->num_symbols, 2);
  fz_value *x = find_value(f, "x"), *y = find_value(f, "y");
  fz_value *a = find_value(f, "a");
  ck_assert_int_eq(x->type.axes[0].extent.symbol,
                   fz_fusion_find_symbol(f, "N"));
  ck_assert_int_eq(x->type.axes[1].extent.symbol,
                   fz_fusion_find_symbol(f, "M"));
  ck_assert_int_eq(y->type.axes[0].extent.symbol,
                   x->type.axes[0].extent.symbol);
  ck_assert_int_eq(a->type.axes[0].extent.symbol,
                   x->type.axes[0].extent.symbol);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(question_mark_is_fresh_and_matches_anything) {
  fz_fusion *f = test_parse("fusion @f(%x: f32[?, 4], %y: f32[?]) {\n"
                            "  %a = neg %x : f32[?, ?]\n"
                            "  %b = neg %x : f32[?, 4]\n"
                            "  return %a, %b\n}\n");
  /* One anonymous symbol per `?` of an input; none for results. */
  ck_assert_int_eq(f->num_symbols, 2);
  fz_value *x = find_value(f, "x"), *y = find_value(f, "y");
  int sx = x->type.axes[0].extent.symbol, sy = y->type.axes[0].extent.symbol;
  ck_assert_int_ge(sx, 0);
  ck_assert_int_ge(sy, 0);
  ck_assert_int_ne(sx, sy);
  ck_assert_ptr_null(f->symbols[sx].name);
  ck_assert_ptr_null(f->symbols[sy].name);
  /* The inferred extents are kept. */
  fz_value *a = find_value(f, "a");
  ck_assert_int_eq(a->type.axes[0].extent.symbol, sx);
  ck_assert_int_eq(a->type.axes[1].extent.symbol, -1);
  ck_assert_int_eq(a->type.axes[1].extent.value, 4);
  char *printed = fz_print(f);
  ck_assert_ptr_nonnull(strstr(printed, "%a = neg %x : f32[?, 4]\n"));
  free(printed);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(question_mark_in_reshape_and_expand_targets_is_inferred) {
  fz_fusion *f = test_parse("fusion @f(%x: f32[?, 4], %y: f32[N, 6], "
                            "%z: f32[b1->?, 3]) {\n"
                            "  %a = reshape %x : f32[2, ?, 2]\n"
                            "  %b = reshape %y : f32[?, 2, 3]\n"
                            "  %c = reshape %y : f32[N, ?]\n"
                            "  %d = broadcast %x dims(0) : f32[b1, ?, 4]\n"
                            "  %e = expand %d : f32[b1->5, ?, ?]\n"
                            "  %g = expand %z : f32[b1->?, 3]\n"
                            "  return %a, %b, %c, %e, %g\n}\n");
  int anon = find_value(f, "x")->type.axes[0].extent.symbol;
  int n = fz_fusion_find_symbol(f, "N");
  int symbols = f->num_symbols;
  /* The one missing factor of a reshape: the operand's symbol... */
  ck_assert_int_eq(find_value(f, "a")->type.axes[1].extent.symbol, anon);
  ck_assert_int_eq(find_value(f, "b")->type.axes[0].extent.symbol, n);
  /* ...or a constant. */
  fz_value *c = find_value(f, "c");
  ck_assert_int_eq(c->type.axes[1].extent.symbol, -1);
  ck_assert_int_eq(c->type.axes[1].extent.value, 6);
  /* expand keeps the axes it does not stretch. */
  fz_value *e = find_value(f, "e");
  ck_assert_int_eq(e->type.axes[1].extent.symbol, anon);
  ck_assert_int_eq(e->type.axes[2].extent.value, 4);
  ck_assert_int_eq(find_value(f, "g")->type.axes[0].expanded_to.symbol,
                   find_value(f, "z")->type.axes[0].expanded_to.symbol);
  /* No symbol was made for a `?` that was inferred. */
  ck_assert_int_eq(symbols, 3);
  char *printed = fz_print(f);
  ck_assert_ptr_nonnull(strstr(printed, "%c = reshape %y : f32[N, 6]\n"));
  ck_assert_ptr_nonnull(strstr(printed, "%e = expand %d : f32[b1->5, ?, 4]\n"));
  fz_fusion *g = test_parse(printed);
  char *again = fz_print(g);
  ck_assert_str_eq(again, printed);
  free(again);
  free(printed);
  fz_fusion_destroy(g);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(broadcast_axes) {
  fz_fusion *f =
      test_parse("fusion @f(%x: f32[b1, N], %y: f32[b1->8, b1->N, b1->?]) {\n"
                 "  return %x, %y\n}\n");
  fz_value *x = find_value(f, "x"), *y = find_value(f, "y");
  ck_assert_int_eq(x->type.axes[0].kind, FZ_AXIS_BROADCAST);
  ck_assert(!x->type.axes[0].expanded);
  ck_assert_int_eq(x->type.axes[0].extent.value, 1);
  ck_assert_int_eq(x->type.axes[1].kind, FZ_AXIS_ITER);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(y->type.axes[i].kind, FZ_AXIS_BROADCAST);
    ck_assert(y->type.axes[i].expanded);
  }
  ck_assert_int_eq(y->type.axes[0].expanded_to.symbol, -1);
  ck_assert_int_eq(y->type.axes[0].expanded_to.value, 8);
  ck_assert_int_eq(y->type.axes[1].expanded_to.symbol,
                   x->type.axes[1].extent.symbol);
  int anon = y->type.axes[2].expanded_to.symbol;
  ck_assert_int_ge(anon, 0);
  ck_assert_ptr_null(f->symbols[anon].name);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(layouts_and_noncontig) {
  fz_fusion *f =
      test_parse("fusion @f(%x: f32[A, B, C] layout(2, 0, 1) noncontig(0), "
                 "%y: f32[A, B, C] noncontig(2)) {\n"
                 "  %a = add %x, %y : f32[A, B, C]\n"
                 "  %b = neg %a : f32[A, B, C] layout(1, 2, 0)\n"
                 "  %c = neg %a : f32[A, B, C] noncontig(1)\n"
                 "  return %b, %c\n}\n");
  fz_value *x = find_value(f, "x"), *y = find_value(f, "y");
  ck_assert(x->type.has_layout);
  ck_assert_int_eq(x->type.alloc_order[0], 2);
  ck_assert_int_eq(x->type.alloc_order[1], 0);
  ck_assert_int_eq(x->type.alloc_order[2], 1);
  /* Logical axis 0 is allocated at position 1. */
  ck_assert(x->type.contiguous[0] && !x->type.contiguous[1] &&
            x->type.contiguous[2]);
  /* An input without layout(...) is row-major. */
  ck_assert(y->type.has_layout);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(y->type.alloc_order[i], i);
  ck_assert(y->type.contiguous[0] && y->type.contiguous[1] &&
            !y->type.contiguous[2]);
  /* An op result without layout(...) has none. */
  ck_assert(!find_value(f, "a")->type.has_layout);
  fz_value *b = find_value(f, "b");
  ck_assert(b->type.has_layout);
  ck_assert_int_eq(b->type.alloc_order[0], 1);
  ck_assert_int_eq(b->type.alloc_order[2], 0);
  /* noncontig alone on a result: row-major, declared. */
  fz_value *c = find_value(f, "c");
  ck_assert(c->type.has_layout);
  ck_assert_int_eq(c->type.alloc_order[1], 1);
  ck_assert(!c->type.contiguous[1]);
  char *printed = fz_print(f);
  ck_assert_ptr_nonnull(
      strstr(printed, "(%x: f32[A, B, C] layout(2, 0, 1) noncontig(0), "
                      "%y: f32[A, B, C] noncontig(2))"));
  ck_assert_ptr_nonnull(strstr(printed, "%a = add %x, %y : f32[A, B, C]\n"));
  ck_assert_ptr_nonnull(
      strstr(printed, ": f32[A, B, C] layout(0, 1, 2) noncontig(1)\n"));
  free(printed);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(literal_operands) {
  fz_fusion *f = test_parse("fusion @f(%x: f32[4], %c: bool[4]) {\n"
                            "  %a = add %x, 3 : f32[4]\n"
                            "  %b = add %a, -2.5e-3 : f32[4]\n"
                            "  %d = max %b, inf : f32[4]\n"
                            "  %e = min %d, -inf : f32[4]\n"
                            "  %g = add %e, nan : f32[4]\n"
                            "  %h = and %c, true : bool[4]\n"
                            "  %k = or %h, false : bool[4]\n"
                            "  return %g, %k\n}\n");
  fz_value *l;
  l = find_value(f, "a")->def->operands[1];
  ck_assert_int_eq(l->kind, FZ_VALUE_LITERAL);
  ck_assert_int_eq(l->type.dtype, FZ_I64);
  ck_assert_int_eq(l->type.rank, 0);
  ck_assert(l->literal.i == 3);
  l = find_value(f, "b")->def->operands[1];
  ck_assert_int_eq(l->type.dtype, FZ_F64);
  ck_assert(l->literal.f == -2.5e-3);
  l = find_value(f, "d")->def->operands[1];
  ck_assert(isinf(l->literal.f) && l->literal.f > 0);
  l = find_value(f, "e")->def->operands[1];
  ck_assert(isinf(l->literal.f) && l->literal.f < 0);
  l = find_value(f, "g")->def->operands[1];
  ck_assert_int_eq(l->type.dtype, FZ_F64);
  ck_assert(isnan(l->literal.f));
  l = find_value(f, "h")->def->operands[1];
  ck_assert_int_eq(l->type.dtype, FZ_BOOL);
  ck_assert(l->literal.i == 1);
  l = find_value(f, "k")->def->operands[1];
  ck_assert(l->literal.i == 0);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(scalars) {
  fz_fusion *f = test_parse("fusion @f(%x: f32[N], %s: f64, %i: i32) {\n"
                            "  %a = mul %i, 2 : i32\n"
                            "  %b = mul %x, %s : f32[N]\n"
                            "  return %a, %b\n}\n");
  fz_value *s = find_value(f, "s"), *a = find_value(f, "a");
  ck_assert_int_eq(s->kind, FZ_VALUE_INPUT);
  ck_assert_int_eq(s->type.dtype, FZ_F64);
  ck_assert_int_eq(s->type.rank, 0);
  ck_assert_int_eq(a->type.rank, 0);
  ck_assert_int_eq(a->type.dtype, FZ_I32);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(ops_carry_their_attributes_and_location) {
  fz_fusion *f = test_parse("fusion @f(%x: f32[N, M]) {\n"
                            "  %s = sum %x dims(1, 0) keepdim : f32[b1, b1]\n"
                            "    %p = permute %x perm(1, 0) : f32[M, N]\n"
                            "  %g = full 2 : f32[3]\n"
                            "  %i = iota start(5) step(-1) : i32[7]\n"
                            "  return %s, %p, %g, %i\n}\n");
  ck_assert_str_eq(f->name, "f");
  fz_op *s = find_value(f, "s")->def;
  ck_assert_int_eq(s->code, FZ_OP_SUM);
  ck_assert_int_eq(s->num_dims, 2);
  ck_assert_int_eq(s->dims[0], 0); /* dims are a set, stored sorted */
  ck_assert_int_eq(s->dims[1], 1);
  ck_assert(s->keepdim);
  ck_assert_int_eq(s->loc.line, 2);
  ck_assert_int_eq(s->loc.col, 3);
  fz_op *p = find_value(f, "p")->def;
  ck_assert_int_eq(p->perm[0], 1);
  ck_assert_int_eq(p->perm[1], 0);
  ck_assert_int_eq(p->loc.line, 3);
  ck_assert_int_eq(p->loc.col, 5);
  fz_op *g = find_value(f, "g")->def;
  ck_assert(g->fill.f == 2.0);
  ck_assert_int_eq(g->num_operands, 0);
  fz_op *i = find_value(f, "i")->def;
  ck_assert(i->iota_start.i == 5);
  ck_assert(i->iota_step.i == -1);
  ck_assert_int_eq(f->num_outputs, 4);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- round trips ---- */

START_TEST(round_trip_design_example) {
  expect_round_trip(
      "fusion @name(%x: f32[N, 128] layout(1, 0), %w: f32[b1, 128], "
      "%eps: f64, %cond: bool[N], %a: f32[N]) {\n"
      "  %s = sum %x dims(1) : f32[N]\n"
      "  %k = sum %x dims(1) keepdim : f32[N, b1]\n"
      "  %b = broadcast %s dims(1) : f32[N, b1]\n"
      "  %e = expand %b : f32[N, b1->128]\n"
      "  %q = squeeze %b dims(1) : f32[N]\n"
      "  %p = permute %x perm(1, 0) : f32[128, N]\n"
      "  %m = mul %e, %x : f32[N, 128] layout(1, 0)\n"
      "  %r = reshape %p : f32[16, 8, N]\n"
      "  %c = cast %s : bf16[N]\n"
      "  %t = mul %s, 0.0001220703125 : f32[N]\n"
      "  %f = full 0.5 : f32[4, N]\n"
      "  %i = iota : i64[N]\n"
      "  %z = where %cond, %a, 0.0 : f32[N]\n"
      "  return %s, %m\n"
      "}\n");
}
END_TEST

START_TEST(round_trip_layer_norm) {
  expect_round_trip("fusion @layer_norm(%x: bf16[M, N], %w: f32[N], "
                    "%eps: f64) {\n"
                    "  %xf = cast %x : f32[M, N]\n"
                    "  %s = sum %xf dims(1) keepdim : f32[M, b1]\n"
                    "  %mean = div %s, 8192 : f32[M, b1]\n"
                    "  %xm = sub %xf, %mean : f32[M, N]\n"
                    "  %sq = mul %xm, %xm : f32[M, N]\n"
                    "  %v = sum %sq dims(1) keepdim : f32[M, b1]\n"
                    "  %var = div %v, 8192 : f32[M, b1]\n"
                    "  %ve = add %var, %eps : f32[M, b1]\n"
                    "  %r = rsqrt %ve : f32[M, b1]\n"
                    "  %n = mul %xm, %r : f32[M, N]\n"
                    "  %wb = broadcast %w dims(0) : f32[b1, N]\n"
                    "  %y = mul %n, %wb : f32[M, N] layout(0, 1)\n"
                    "  %yb = cast %y : bf16[M, N]\n"
                    "  return %yb, %mean, %r\n"
                    "}\n");
}
END_TEST

START_TEST(round_trip_generators_literals_scalars) {
  expect_round_trip("fusion @g(%s: f32, %c: bool) {\n"
                    "  %f = full -1.5 : f32[4, 8]\n"
                    "  %n = full 7 : i32[3]\n"
                    "  %t = full true : bool[2]\n"
                    "  %i = iota start(-3) step(2) : i32[K]\n"
                    "  %j = iota start(2.5) step(-0.5) : f32[10]\n"
                    "  %a = add %s, 1e-7 : f32\n"
                    "  %b = mul %a, 1e20 : f32\n"
                    "  %d = max %b, -inf : f32\n"
                    "  %e = min %d, nan : f32\n"
                    "  %g = mul %e, -0.0 : f32\n"
                    "  %h = add %g, 123456.0 : f32\n"
                    "  %k = where %c, %h, inf : f32 layout()\n"
                    "  return %f, %n, %t, %i, %j, %k\n"
                    "}\n");
}
END_TEST

START_TEST(round_trip_shapes) {
  expect_round_trip("fusion @shapes(%x: f32[2, 3, 4] noncontig(1), "
                    "%y: f32[?]) {\n"
                    "  %p = permute %x perm(2, 0, 1) : f32[4, 2, 3]\n"
                    "  %r = reshape %p : f32[8, 3]\n"
                    "  %s = set %r : f32[8, 3] layout(1, 0) noncontig(0, 1)\n"
                    "  %b = broadcast %y dims(0, 2) : f32[b1, ?, b1]\n"
                    "  %e = expand %b : f32[b1->4, ?, b1->?]\n"
                    "  %q = squeeze %b dims(0) : f32[?, b1]\n"
                    "  return %s, %e, %q\n"
                    "}\n");
}
END_TEST

START_TEST(non_canonical_text_prints_canonically) {
  /* Comments, spacing, dims order, identity input layouts and `?` in
   * results all normalise; the result prints the same again. */
  const char *text = "// leading comment\n"
                     "fusion   @f ( %x :f32[N,4]layout(0,1) ) {\n"
                     "  %s=sum %x dims(1,0)keepdim:f32[b1,?] // trailing\n"
                     "  %t = iota start(0) step(1) : i64[N]\n"
                     "  %u = mul %x, 1.50 : f32[?, ?] noncontig(1, 0)\n"
                     "return %s,%t,%u}";
  fz_fusion *f = test_parse(text);
  char *printed = fz_print(f);
  ck_assert_str_eq(printed, "fusion @f(%x: f32[N, 4]) {\n"
                            "  %s = sum %x dims(0, 1) keepdim : f32[b1, b1]\n"
                            "  %t = iota : i64[N]\n"
                            "  %u = mul %x, 1.5 : f32[N, 4] layout(0, 1) "
                            "noncontig(0, 1)\n"
                            "  return %s, %t, %u\n"
                            "}\n");
  fz_fusion *g = test_parse(printed);
  char *again = fz_print(g);
  ck_assert_str_eq(again, printed);
  free(again);
  free(printed);
  fz_fusion_destroy(g);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(floats_print_shortest_and_stay_floats) {
  static const struct {
    double v;
    const char *text;
  } cases[] = {
      {0.1, "0.1"},
      {100.0, "100.0"},
      {-2.0, "-2.0"},
      {1e20, "1e20"},
      {1.5e-7, "1.5e-7"},
      {0.0001, "0.0001"},
      {1e16, "1e16"},
      {1e15, "1000000000000000.0"},
      {1.0 / 3.0, "0.3333333333333333"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e308"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    fz_fusion *f = fz_fusion_create("f");
    fz_type t = {.dtype = FZ_F64};
    fz_value *x = fz_add_input(f, "x", &t);
    fz_error err = {0};
    fz_value *y =
        fz_binary(f, FZ_OP_ADD, x, fz_literal_float(f, cases[k].v), &err);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(fz_add_output(f, y, &err), FZ_OK);
    char *printed = fz_print(f);
    char want[256];
    snprintf(want, sizeof want, "  %%0 = add %%x, %s : f64\n", cases[k].text);
    ck_assert_msg(strstr(printed, want), "%s\nwant: %s", printed, want);
    fz_fusion *g = test_parse(printed);
    ck_assert(find_value(g, "0")->def->operands[1]->literal.f == cases[k].v);
    free(printed);
    fz_fusion_destroy(g);
    fz_fusion_destroy(f);
  }
}
END_TEST

START_TEST(builder_made_fusion_gets_fresh_numbers) {
  /* Unnamed values are numbered, skipping numbers used as stored names. */
  fz_fusion *f = fz_fusion_create("built");
  int n = fz_fusion_symbol(f, "N");
  fz_type t = {.dtype = FZ_F32, .rank = 1};
  t.axes[0].extent = fz_symbol_extent(n);
  fz_value *x = fz_add_input(f, NULL, &t);
  fz_value *one = fz_add_input(f, "1", &t);
  fz_error err = {0};
  fz_value *a = fz_binary(f, FZ_OP_ADD, x, one, &err);
  fz_value *b = fz_unary(f, FZ_OP_EXP, a, &err);
  int dims[1] = {0};
  fz_value *s = fz_reduce(f, FZ_OP_SUM, b, 1, dims, false, &err);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(fz_add_output(f, s, &err), FZ_OK);
  ck_assert_int_eq(fz_add_output(f, a, &err), FZ_OK);
  const char *want = "fusion @built(%0: f32[N], %1: f32[N]) {\n"
                     "  %2 = add %0, %1 : f32[N]\n"
                     "  %3 = exp %2 : f32[N]\n"
                     "  %4 = sum %3 dims(0) : f32\n"
                     "  return %4, %2\n"
                     "}\n";
  char *printed = fz_print(f);
  ck_assert_str_eq(printed, want);
  free(printed);
  /* A value stored as "0": the numbers move past it. */
  b->name = "0";
  printed = fz_print(f);
  ck_assert_str_eq(printed, "fusion @built(%2: f32[N], %1: f32[N]) {\n"
                            "  %3 = add %2, %1 : f32[N]\n"
                            "  %0 = exp %3 : f32[N]\n"
                            "  %4 = sum %0 dims(0) : f32\n"
                            "  return %4, %3\n"
                            "}\n");
  fz_fusion *g = test_parse(printed);
  char *again = fz_print(g);
  ck_assert_str_eq(again, printed);
  free(again);
  free(printed);
  fz_fusion_destroy(g);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- sizes, number ranges and negative axes ---- */

START_TEST(extent_products_must_fit_int64) {
  expect_error_status(
      "fusion @f(%x: f32[4611686018427387904, 4]) {\n  return %x\n}\n",
      FZ_ERR_INVALID,
      "test.fz:1:15: error: %x: extent product 4611686018427387904 x 4 "
      "overflows int64");
  /* elements fit, bytes do not */
  expect_error_status(
      "fusion @f(%x: f32[N, 2305843009213693952]) {\n  return %x\n}\n",
      FZ_ERR_INVALID,
      "test.fz:1:15: error: %x: 2305843009213693952 elements x 4 bytes "
      "overflows int64");
  /* operands that fit meeting in a result that does not */
  expect_error_status(
      "fusion @f(%a: f32[1099511627776, b1], %b: f32[b1, 1099511627776]) {\n"
      "  %y = add %a, %b : f32[1099511627776, 1099511627776]\n"
      "  return %y\n}\n",
      FZ_ERR_INVALID,
      "test.fz:2:3: error: add: result: extent product 1099511627776 x "
      "1099511627776 overflows int64");
  expect_error_status("fusion @f() {\n"
                      "  %y = full 0 : i8[N, 4611686018427387904, 2]\n"
                      "  return %y\n}\n",
                      FZ_ERR_INVALID,
                      "test.fz:2:3: error: full: result shape: extent "
                      "product 4611686018427387904 x 2 overflows int64");
  /* The largest sizes that fit are fine. */
  fz_fusion *f = test_parse("fusion @f(%x: i8[4611686018427387903, 2]) {\n"
                            "  return %x\n}\n");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(fill_values_must_fit_integer_dtypes) {
  expect_error_status("fusion @f() {\n"
                      "  %y = full 9223372036854775807 : i8[4]\n"
                      "  return %y\n}\n",
                      FZ_ERR_PARSE,
                      "test.fz:2:13: error: the fill value "
                      "9223372036854775807 is out of range of i8 [-128, 127]");
  expect_error_status("fusion @f() {\n  %y = full 1e300 : i32[4]\n"
                      "  return %y\n}\n",
                      FZ_ERR_PARSE,
                      "test.fz:2:13: error: the fill value 1e+300 is out of "
                      "range of i32 [-2147483648, 2147483647]");
  expect_error_status("fusion @f() {\n  %y = full -inf : i64[4]\n"
                      "  return %y\n}\n",
                      FZ_ERR_PARSE,
                      "test.fz:2:13: error: the fill value -inf is out of "
                      "range of i64 [-9223372036854775808, "
                      "9223372036854775807]");
  expect_error_status("fusion @f() {\n  %y = iota start(-129) : i8[4]\n"
                      "  return %y\n}\n",
                      FZ_ERR_PARSE,
                      "test.fz:2:19: error: start -129 is out of range of i8 "
                      "[-128, 127]");
  expect_error_status("fusion @f() {\n  %y = iota step(4294967296) : i32[4]\n"
                      "  return %y\n}\n",
                      FZ_ERR_PARSE,
                      "test.fz:2:18: error: step 4294967296 is out of range "
                      "of i32 [-2147483648, 2147483647]");
  /* In range: an integral float is that integer; float dtypes take any
   * number (IEEE conversion makes 1e300 inf in f32, as in PyTorch). */
  fz_fusion *f = test_parse("fusion @f() {\n"
                            "  %a = full -128 : i8[4]\n"
                            "  %b = full 1e3 : i32[4]\n"
                            "  %c = full 1e300 : f32[4]\n"
                            "  return %a, %b, %c\n}\n");
  ck_assert_int_eq(find_value(f, "a")->def->fill.i, -128);
  ck_assert_int_eq(find_value(f, "b")->def->fill.i, 1000);
  ck_assert(find_value(f, "c")->def->fill.f == 1e300);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(literal_operands_must_fit_integer_dtypes) {
  expect_error_status("fusion @f(%x: i8[4]) {\n"
                      "  %y = add %x, 300 : i8[4]\n"
                      "  return %y\n}\n",
                      FZ_ERR_INVALID,
                      "test.fz:2:3: error: add: operand 1, the literal 300, "
                      "is out of range of i8 [-128, 127], the dtype it "
                      "computes in");
  expect_error_status("fusion @f(%x: i32[4]) {\n"
                      "  %y = ge %x, -9223372036854775808 : bool[4]\n"
                      "  return %y\n}\n",
                      FZ_ERR_INVALID,
                      "test.fz:2:3: error: ge: operand 1, the literal "
                      "-9223372036854775808, is out of range of i32 "
                      "[-2147483648, 2147483647], the dtype it computes in");
  /* converted to a float, or to a dtype that holds it: fine */
  fz_fusion *f = test_parse("fusion @f(%x: i8[4]) {\n"
                            "  %a = div %x, 300 : f32[4]\n"
                            "  %b = add %x, 1e300 : f32[4]\n"
                            "  %c = add %x, -128 : i8[4]\n"
                            "  return %a, %b, %c\n}\n");
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(float_literals_overflow_and_underflow_alike) {
  expect_error("fusion @f(%x: f32[4]) {\n  %y = add %x, 1e-999 : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:16: error: float literal underflows to zero (write "
               "0.0 for zero)");
  expect_error("fusion @f(%x: f32[4]) {\n  %y = add %x, -0.1e-330 : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:16: error: float literal underflows to zero (write "
               "0.0 for zero)");
  expect_error("fusion @f() {\n  %y = full -1e999 : f32[4]\n"
               "  return %y\n}\n",
               "test.fz:2:13: error: float literal is out of range (write inf "
               "for infinity)");
  /* Zero spelled any way, and subnormals, are numbers f64 holds. */
  fz_fusion *f = test_parse("fusion @f(%x: f64[4]) {\n"
                            "  %a = add %x, 0e-999 : f64[4]\n"
                            "  %b = add %x, 0.000e5 : f64[4]\n"
                            "  %c = add %x, 4.9e-324 : f64[4]\n"
                            "  return %a, %b, %c\n}\n");
  ck_assert(find_value(f, "a")->def->operands[1]->literal.f == 0.0);
  ck_assert(find_value(f, "b")->def->operands[1]->literal.f == 0.0);
  ck_assert(find_value(f, "c")->def->operands[1]->literal.f == 0x1p-1074);
  fz_fusion_destroy(f);
}
END_TEST

START_TEST(negative_dims_count_from_the_end) {
  fz_fusion *f = test_parse("fusion @f(%x: f32[N, 8, b1]) {\n"
                            "  %s = sum %x dims(-1, 0) : f32[8]\n"
                            "  %q = squeeze %x dims(-1) : f32[N, 8]\n"
                            "  %b = broadcast %x dims(-1) : f32[N, 8, b1, b1]\n"
                            "  %p = permute %x perm(-1, 0, -2) : "
                            "f32[b1, N, 8]\n"
                            "  return %s, %q, %b, %p\n}\n");
  char *text = fz_print(f);
  ck_assert_msg(strstr(text, "%s = sum %x dims(0, 2) : f32[8]") &&
                    strstr(text, "%q = squeeze %x dims(2) : f32[N, 8]") &&
                    strstr(text, "dims(3) : f32[N, 8, b1, b1]") &&
                    strstr(text, "perm(2, 0, 1)"),
                "%s", text);
  free(text);
  fz_fusion_destroy(f);
  expect_error("fusion @f(%x: f32[4, 4]) {\n"
               "  %y = sum %x dims(0, -3) : f32\n  return %y\n}\n",
               "test.fz:2:23: error: axis -3 is out of range for an operand "
               "of rank 2");
  expect_error("fusion @f(%x: f32[4]) {\n"
               "  %y = broadcast %x dims(-3) : f32[4, b1]\n  return %y\n}\n",
               "test.fz:2:26: error: axis -3 is out of range for the result "
               "of rank 2");
  expect_error("fusion @f(%x: f32[4, 4]) {\n"
               "  %y = sum %x dims(1, -1) : f32[4]\n  return %y\n}\n",
               "test.fz:2:23: error: axis 1 appears twice in dims");
  expect_error("fusion @f(%x: f32[4, 5]) {\n"
               "  %y = permute %x perm(-3, 0) : f32[5, 4]\n  return %y\n}\n",
               "test.fz:2:24: error: axis -3 is out of range for an operand "
               "of rank 2");
  /* Layouts list axes as they are: no wrapping there. */
  expect_error("fusion @f(%x: f32[4, 4] layout(-1, 0)) {\n  return %x\n}\n",
               "test.fz:1:32: error: axis -1 is out of range");
}
END_TEST

static Suite *parser_suite(void) {
  Suite *s = suite_create("parser");
  TCase *errors = tcase_create("errors");
  tcase_add_test(errors, error_shows_line_and_caret);
  tcase_add_test(errors, caret_keeps_tabs_aligned);
  tcase_add_test(errors, type_mismatches);
  tcase_add_test(errors, names_and_keywords);
  tcase_add_test(errors, misplaced_tokens);
  tcase_add_test(errors, lexical_errors);
  tcase_add_test(errors, integer_limits);
  tcase_add_test(errors, ranks_axes_and_layouts);
  tcase_add_test(errors, generator_values);
  tcase_add_test(errors, builder_errors_are_invalid_at_the_op);
  tcase_add_test(errors, parse_at_numbers_lines_from_first_line);
  tcase_add_test(errors, bad_arguments);
  tcase_add_test(errors, length_bounds_the_text);
  tcase_add_test(errors, extent_products_must_fit_int64);
  tcase_add_test(errors, fill_values_must_fit_integer_dtypes);
  tcase_add_test(errors, literal_operands_must_fit_integer_dtypes);
  tcase_add_test(errors, float_literals_overflow_and_underflow_alike);
  tcase_add_test(errors, negative_dims_count_from_the_end);
  suite_add_tcase(s, errors);
  TCase *built = tcase_create("built");
  tcase_add_test(built, symbols_are_shared_by_name);
  tcase_add_test(built, question_mark_is_fresh_and_matches_anything);
  tcase_add_test(built,
                 question_mark_in_reshape_and_expand_targets_is_inferred);
  tcase_add_test(built, broadcast_axes);
  tcase_add_test(built, layouts_and_noncontig);
  tcase_add_test(built, literal_operands);
  tcase_add_test(built, scalars);
  tcase_add_test(built, ops_carry_their_attributes_and_location);
  suite_add_tcase(s, built);
  TCase *trips = tcase_create("round_trips");
  tcase_add_test(trips, round_trip_design_example);
  tcase_add_test(trips, round_trip_layer_norm);
  tcase_add_test(trips, round_trip_generators_literals_scalars);
  tcase_add_test(trips, round_trip_shapes);
  tcase_add_test(trips, non_canonical_text_prints_canonically);
  tcase_add_test(trips, floats_print_shortest_and_stay_floats);
  tcase_add_test(trips, builder_made_fusion_gets_fresh_numbers);
  suite_add_tcase(s, trips);
  return s;
}

int main(void) { return test_run_suite(parser_suite()); }
