/* test_arena.c - arenas: fz_arena_absorb hands one arena's memory to
 * another, which then owns it (the schedulers build each attempt in a
 * scratch arena and keep only the accepted plan's). Leaks and double
 * frees show under the sanitizers. */
#include <string.h>

#include "test_util.h"

/* A block of n bytes, each its index + seed. */
static unsigned char *filled(fz_arena *a, size_t n, unsigned char seed) {
  unsigned char *p = fz_arena_alloc(a, n);
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(i + seed);
  return p;
}

static void ck_filled(const unsigned char *p, size_t n, unsigned char seed) {
  size_t i = 0;
  while (i < n && p[i] == (unsigned char)(i + seed))
    i++;
  ck_assert_msg(i == n, "byte %zu of %zu changed", i, n);
}

START_TEST(absorbed_memory_lives_as_long_as_the_absorber) {
  fz_arena *into = fz_arena_create();
  fz_arena *from = fz_arena_create();
  unsigned char *kept = filled(into, 100, 1);
  /* several blocks in from: small ones and one larger than a block */
  unsigned char *small = filled(from, 40, 2);
  unsigned char *large = filled(from, 200 * 1024, 3);
  unsigned char *last = filled(from, 60 * 1024, 4);
  fz_arena_absorb(into, from);
  /* into keeps allocating, in its own block or new ones */
  unsigned char *after = filled(into, 16, 5);
  unsigned char *more = filled(into, 128 * 1024, 6);
  ck_filled(kept, 100, 1);
  ck_filled(small, 40, 2);
  ck_filled(large, 200 * 1024, 3);
  ck_filled(last, 60 * 1024, 4);
  ck_filled(after, 16, 5);
  ck_filled(more, 128 * 1024, 6);
  fz_arena_destroy(into);
}
END_TEST

START_TEST(empty_arenas_absorb_and_are_absorbed) {
  fz_arena *into = fz_arena_create();
  fz_arena_absorb(into, fz_arena_create()); /* nothing to take */
  fz_arena *from = fz_arena_create();
  unsigned char *p = filled(from, 32, 7);
  fz_arena_absorb(into, from); /* into had nothing */
  ck_filled(p, 32, 7);
  ck_filled(filled(into, 32, 8), 32, 8);
  fz_arena_destroy(into);
}
END_TEST

/* A reset arena keeps one block and serves from its start again, zeroed
 * as ever; what it held before is gone (the sanitizers see a use). */
START_TEST(reset_arenas_serve_again_from_one_block) {
  fz_arena *a = fz_arena_create();
  fz_arena_reset(a); /* empty: nothing to keep */
  unsigned char *first = filled(a, 100, 4);
  filled(a, 70 * 1024, 5);  /* requests larger than a block: their own */
  filled(a, 300 * 1024, 6);
  fz_arena_reset(a);
  unsigned char *again = fz_arena_alloc(a, 100);
  ck_assert_ptr_eq(again, first); /* the first block, from its start */
  for (int i = 0; i < 100; i++)
    ck_assert_int_eq(again[i], 0);
  unsigned char *more = filled(a, 1000, 7);
  fz_arena *keep = fz_arena_create();
  fz_arena_absorb(keep, a); /* a reset arena is absorbed like any */
  ck_filled(more, 1000, 7);
  fz_arena_destroy(keep);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("arena");
  TCase *tc = tcase_create("absorb");
  tcase_add_test(tc, absorbed_memory_lives_as_long_as_the_absorber);
  tcase_add_test(tc, empty_arenas_absorb_and_are_absorbed);
  tcase_add_test(tc, reset_arenas_serve_again_from_one_block);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
