/* test_fusions.h - fusion texts that many unit tests schedule and lower.
 *
 * Macros, not variables, so that a test can put them in a static table
 * of strings or paste them into a longer text. */
#ifndef FZ_TEST_FUSIONS_H
#define FZ_TEST_FUSIONS_H

/* Softmax over the rows of %x: t[M, N] (t a dtype: "f32", "bf16"), in
 * fusion @name: the amax, the sum of exponentials and the division, one
 * inner persistent plan of two row reductions. */
#define FZ_TEST_SOFTMAX(name, t)                                               \
  "fusion @" name "(%x: " t "[M, N]) {\n"                                      \
  "  %m = amax %x dims(1) keepdim : " t "[M, b1]\n"                            \
  "  %me = expand %m : " t "[M, b1->N]\n"                                      \
  "  %d = sub %x, %me : " t "[M, N]\n"                                         \
  "  %e = exp %d : " t "[M, N]\n"                                              \
  "  %s = sum %e dims(1) keepdim : " t "[M, b1]\n"                             \
  "  %se = expand %s : " t "[M, b1->N]\n"                                      \
  "  %y = div %e, %se : " t "[M, N]\n"                                         \
  "  return %y\n"                                                              \
  "}\n"

/* Row sums of %x: f32[M, N] used back in the row, and a column sum over
 * the rows, in fusion @name: one inner-outer plan (outputs %y: [M, N],
 * %c: [N]). */
#define FZ_TEST_ROWS_AND_COLUMNS(name)                                         \
  "fusion @" name "(%x: f32[M, N]) {\n"                                        \
  "  %s = sum %x dims(1) keepdim : f32[M, b1]\n"                               \
  "  %se = expand %s : f32[M, b1->N]\n"                                        \
  "  %y = mul %x, %se : f32[M, N]\n"                                           \
  "  %c = sum %x dims(0) : f32[N]\n"                                           \
  "  return %y, %c\n"                                                          \
  "}\n"

#endif
