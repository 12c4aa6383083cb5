/* test_util.h - helpers shared by the check-based unit tests. */
#ifndef FZ_TEST_UTIL_H
#define FZ_TEST_UTIL_H

#include <check.h>

#include "fz/fz.h"
#include "fz/ir.h"

/* Parse text or fail the test with the parser's message. */
fz_fusion *test_parse(const char *text);
/* Run a Suite built by make() and return a process exit code. */
int test_run_suite(Suite *suite);
/* Path of a file under the source tree (FZ_SOURCE_DIR), static buffer. */
const char *test_source_path(const char *relative);
/* A row-major host tensor of `rank` sizes (ints, after rank) over data,
 * for tests that hand the interpreter literal arrays. */
fz_host_tensor test_host_tensor(fz_dtype dtype, void *data, int rank, ...);

#endif
