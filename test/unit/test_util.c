/* test_util.c - helpers shared by the unit tests. */
#include "test_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fz_fusion *test_parse(const char *text) {
  fz_fusion *f = NULL;
  fz_error err = {0};
  fz_status st = fz_parse("test.fz", text, strlen(text), &f, &err);
  ck_assert_msg(st == FZ_OK, "parse failed: %s", err.message);
  return f;
}

int test_run_suite(Suite *suite) {
  SRunner *runner = srunner_create(suite);
  /* No fork: the CUDA driver does not survive fork(), and sanitizers
   * report leaks more clearly in one process. */
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

const char *test_source_path(const char *relative) {
  static char path[4096];
  const char *root = getenv("FZ_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/%s", root ? root : ".", relative);
  return path;
}

fz_host_tensor test_host_tensor(fz_dtype dtype, void *data, int rank, ...) {
  fz_host_tensor t = {.dtype = dtype, .rank = rank, .data = data};
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++)
    t.sizes[i] = va_arg(ap, int);
  va_end(ap);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    t.strides[i] = s;
    s *= t.sizes[i];
  }
  return t;
}
